"""eb's own folders inside a project: run folders and the verdict cache never count as project
files (for the cache key, for --changed-since, for a judge's view of the project)."""

from __future__ import annotations

from pathlib import Path

from eval_banana.models.stages import ConfigDoc


def cache_dir(*, config: ConfigDoc) -> Path:
    """The configured cache folder, joined to the project root when relative."""
    return Path(config.project_root) / config.settings.cache.dir


def own_folders(*, config: ConfigDoc) -> list[Path]:
    """The output folder and the cache folder (wherever they are configured)."""
    root = Path(config.project_root)
    output = config.settings.core.output_dir
    return [root / output if output else root, cache_dir(config=config)]
