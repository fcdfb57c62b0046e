"""eval_banana: a staged, fail-closed evaluation runner (eval-banana compatible)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eval_banana.core.version import tool_version

if TYPE_CHECKING:
    from eval_banana.checks.definition import compute_check_definition_sha256

__version__ = tool_version()

__all__ = ["__version__", "compute_check_definition_sha256"]


def __getattr__(name: str) -> Any:
    # Lazy: `import eval_banana` (and so every `eb` command) must not pay for the models.
    if name == "compute_check_definition_sha256":
        from eval_banana.checks.definition import compute_check_definition_sha256

        return compute_check_definition_sha256
    raise AttributeError(f"module 'eval_banana' has no attribute {name!r}")
