"""Whether a run ran a narrowed selection, read from the stage files of its folder.

A pull request's run often selects part of the project (`--changed-since origin/main`, `-k`,
`--shard`). Diffed against main's full run, every check it did not select would read as
removed. eb's run folders say what was selected (`stages/config.json`) and which check files
were found (`stages/discover.json`); eval-banana's and a folder whose stage files are gone or
unreadable say nothing, and their checks are compared as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from eval_banana.checks.subset import subset_flag
from eval_banana.core.errors import StageFileError
from eval_banana.core.readback import loads_json, read_regular
from eval_banana.models.config import Selection
from eval_banana.models.stages import ConfigDoc
from eval_banana.stagefiles.read import read_stage

_STAGES = "stages"
_SHOWN_IDS = 3  # --check-id values named before "and N more"


class Narrowed(NamedTuple):
    """A run that did not select every check of its project: `flags` says how, as its command
    line did; `files` are the check files it found (project-relative), None when discovery
    itself was narrowed (`--check-dir`), so a file it did not find may still exist."""

    flags: str
    files: frozenset[str] | None


def selection_flags(selection: Selection) -> str | None:
    """The flags that narrowed `selection`, or None when it selected every check."""
    flags: list[str] = []
    if selection.check_dir is not None:
        flags.append(f"--check-dir {selection.check_dir}")
    shown = selection.check_ids[:_SHOWN_IDS]
    flags += [f"--check-id {check_id}" for check_id in shown]
    if len(selection.check_ids) > len(shown):
        flags.append(f"(and {len(selection.check_ids) - len(shown):,} more --check-id)")
    flags += [f"--tag {tag}" for tag in selection.tags]
    if selection.keyword is not None:
        flags.append(f"-k {selection.keyword!r}")
    if selection.changed_since is not None:
        flags.append(f"--changed-since {selection.changed_since}")
    if selection.last_failed:
        flags.append("--last-failed")
    if selection.select is not None:
        flags.append("--select")
    if selection.subset is not None:
        flags.append(subset_flag(selection.subset))
    if selection.shard is not None:
        flags.append(f"--shard {selection.shard.index}/{selection.shard.total}")
    return " ".join(flags) or None


def _document(path: Path) -> dict[str, object] | None:
    try:
        found = loads_json(read_regular(path))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _recorded_selection(*, run_dir: Path) -> Selection | None:
    """The selection the run's config stage records; None when stages/config.json is missing,
    unreadable or not a config stage (hand-edited, another tool's): checked against its schema
    first, so a `selection` of another shape says nothing, as a broken file does."""
    try:
        config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    except StageFileError:
        return None
    return config.selection


def read_narrowed(*, run_dir: Path) -> Narrowed | None:
    """How the run in `run_dir` was narrowed, or None: it selected every check, or its folder
    does not say (then nothing is inferred)."""
    selection = _recorded_selection(run_dir=run_dir)
    if selection is None:
        return None
    flags = selection_flags(selection)
    if flags is None:
        return None
    if selection.check_dir is not None:
        return Narrowed(flags=flags, files=None)
    discovered = _document(run_dir / _STAGES / "discover.json")
    listed = discovered.get("files") if discovered is not None else None
    if not isinstance(listed, list):
        return Narrowed(flags=flags, files=None)
    files = frozenset(
        str(item["relative_path"])
        for item in listed
        if isinstance(item, dict) and isinstance(item.get("relative_path"), str)
    )
    return Narrowed(flags=flags, files=files)
