"""`eb update`: rerun exactly the stages `eb status` finds not ok, and within execute only the
checks whose result is out of date. Reads its reasons from `eval_banana.status`; runs stages
through `eval_banana.rerun`."""

from eval_banana.update.runner import update_run

__all__ = ["update_run"]
