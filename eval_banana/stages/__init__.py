"""The pipeline's stages, in order: config, discover, validate, guard, execute, score, report."""

from eval_banana.models.stages import STAGE_FILES, STAGE_NAMES

__all__ = ["STAGE_FILES", "STAGE_NAMES"]
