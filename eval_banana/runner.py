"""Import-compatible home of the public digest API (B-174)."""

from eval_banana.definition import compute_check_definition_sha256

__all__ = ["compute_check_definition_sha256"]
