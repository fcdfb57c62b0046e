"""`python -m eval_banana` is the same as `eb`."""

from eval_banana.cli import entry

entry()
