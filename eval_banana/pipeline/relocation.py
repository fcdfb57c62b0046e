"""Which project a run folder belongs to now.

stages/config.json records the project's absolute root. A project folder moved or copied
(`mv a b`, `cp -r a b`) takes its run folders along, and the recorded root is then another
folder, or none. A run belongs to the project it sits in, at the place its own configured
output folder gives it there; what `eb status` and `eb update` judge is that project, never
the one the run was made in.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.errors import RunFolderError
from eval_banana.core.realpaths import real_path
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.rundir import output_base


class Relocation(NamedTuple):
    """A run folder that now sits in another project than the one it was made in."""

    made_in: Path
    now_in: Path

    def reason(self) -> str:
        return (
            f"this run was made in {self.made_in}; its folder now sits in {self.now_in}, "
            "so it belongs to that project now"
        )


def _same_folder(*, one: Path, other: Path) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:
        return one == other


def _places_made(*, config: ConfigDoc) -> tuple[Path, ...]:
    """Where the run folder was made: in its output folder, or the folder itself (--flat-output)."""
    base = real_path(output_base(config=config))
    return (base / config.run_id, base)


def relocation(*, run_dir: Path, config: ConfigDoc) -> Relocation | None:
    """The project `run_dir` belongs to now, when it is not the recorded one (None: it is, or
    the run folder moved alone while its project stayed). Refuses a run folder that left a
    project which is gone, when it sits nowhere that project kept its runs."""
    run_dir = real_path(run_dir)
    made_in = Path(config.project_root)
    places = _places_made(config=config)
    if any(_same_folder(one=place, other=run_dir) for place in places):
        return None
    for place in places:
        if not place.is_relative_to(made_in):
            continue  # an output folder outside the project: it did not move with it
        inside = place.relative_to(made_in).parts
        if inside and run_dir.parts[len(run_dir.parts) - len(inside) :] == inside:
            now_in = Path(*run_dir.parts[: len(run_dir.parts) - len(inside)])
            return Relocation(made_in=made_in, now_in=now_in)
    if made_in.is_dir():
        return None  # the run folder was moved on its own; its project is where it was
    raise RunFolderError(
        f"This run was made in {made_in}, which is gone, and its folder {run_dir} does not "
        "sit where that project kept its runs, so eb cannot tell which project it belongs to",
        file=str(run_dir),
        hint=f"put the project back at {made_in}, or move the run folder into the project's "
        "output folder; or start a new run there with `eb run`",
    )
