"""Import-compatible home of the public digest API (docs/compatibility.md#definition-digest)."""

from eval_banana.checks.definition import compute_check_definition_sha256

__all__ = ["compute_check_definition_sha256"]
