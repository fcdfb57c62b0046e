"""eval_banana: a staged, fail-closed evaluation runner (eval-banana compatible)."""

from eval_banana.definition import compute_check_definition_sha256
from eval_banana.version import tool_version

__version__ = tool_version()

__all__ = ["__version__", "compute_check_definition_sha256"]
