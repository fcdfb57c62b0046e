"""Stage files in a run folder: where each lives, and reading one back with its schema first."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.core.errors import StageFileError
from eval_banana.core.files import sha256_bytes, sha256_file
from eval_banana.core.readback import (
    NotRegularFile,
    Stamp,
    TooDeep,
    loads_json,
    read_regular_stamped,
)
from eval_banana.models.stages import STAGE_MODELS
from eval_banana.stagefiles.agreement import inconsistency
from eval_banana.stagefiles.identity import refuse_other_run
from eval_banana.stagefiles.schemacheck import compile_schema

__all__ = [
    "STAGE_INPUTS",
    "STAGE_MODELS",
    "StageRead",
    "read_stage",
    "read_stage_file",
    "refuse_stale_chain",
    "stage_digest",
    "upstream_digests",
]
from eval_banana.core.version import tool_version
from eval_banana.stagefiles.layout import STAGE_NAMES, stage_path

# Which upstream stage files each stage reads.
STAGE_INPUTS: dict[str, tuple[str, ...]] = {
    "config": (),
    "discover": ("config",),
    "validate": ("config", "discover"),
    "guard": ("config", "validate"),
    "execute": ("config", "validate", "guard"),
    "score": ("config", "execute"),
    "report": ("config", "execute", "score"),
}
assert tuple(STAGE_MODELS) == STAGE_NAMES


@cache
def _schema(stage: str) -> dict[str, Any]:
    from eval_banana.stagefiles.schemafiles import packaged_schema

    schema: dict[str, Any] = json.loads(packaged_schema(f"stages/{stage}"))
    return schema


@cache
def _quick_check(stage: str) -> Callable[[Any], bool] | None:
    """The fast yes/no check of a stage file (None: only jsonschema can judge this schema)."""
    return compile_schema(_schema(stage))


@cache
def _validator(stage: str) -> Any:
    # jsonschema costs ~40 ms to import, and seconds on a 10,000-result file: it is asked only
    # to explain a file the quick check refused (or to judge one the quick check cannot).
    from eval_banana.stagefiles.schemacheck import json_validator

    return json_validator(_schema(stage))


def _json_path(parts: Any) -> str:
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts)


def _remake(stage: str, *, first: bool = False) -> str:
    """How to make a stage file again. The config stage is remade from the request its own file
    records, so a run folder without a readable one has nothing to remake it from."""
    if stage == "config":
        advice = (
            "start a new run with eb run (stages/config.json records how this run was made, "
            "and every stage of the folder is rebuilt from it)"
        )
    else:
        advice = f"rerun the {stage} stage: eb stage {stage}"
    return advice[0].upper() + advice[1:] if first else advice


def _refuse_schema_errors(*, path: Path, stage: str, document: Any) -> None:
    """jsonschema's account of why `document` is not a valid stage file (none: it is one)."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(stage).iter_errors(document))
    if error is not None:
        where = _json_path(error.absolute_path)
        raise StageFileError(
            f"Stage file {path} is invalid at {where}: {error.message}",
            file=str(path),
            field_path=where,
            hint=f"Expected a {stage} stage file of schema_version 1; {_remake(stage)}.",
        )


class StageRead(NamedTuple):
    """A stage file read back and checked: its model, the bytes it was read from, and their
    digest when reading needed it (a vouched read), so nobody hashes them twice."""

    doc: Any
    data: bytes
    digest: str | None = None

    def sha256(self) -> str:
        """`sha256:<hex>` of the file's bytes."""
        return self.digest if self.digest is not None else sha256_bytes(data=self.data)


def read_stage(*, run_dir: Path, stage: str) -> Any:
    """Parse a stage file, check it against its published schema, and return its model."""
    return read_stage_file(run_dir=run_dir, stage=stage).doc


# Stage files this process has read and found valid (schema, consistency), by stage and the
# stamp of the file read: `eb update` and `eb status` read plan.json up to six times, and
# checking a 10,000-check plan again each time was most of their work. An edited file has
# another stamp (eb replaces files, whose inode changes; an edit in place changes the times).
_CHECKED: set[tuple[str, Stamp]] = set()


def read_stage_file(*, run_dir: Path, stage: str, vouched: str | None = None) -> StageRead:
    """`read_stage`, keeping the file's bytes (for a digest or its text, without reading again).

    `vouched` is the digest a later stage of the same run recorded for this file. When the
    bytes have that digest and this version of eb wrote them, they are exactly what eb dumped
    from checked records and its next stage read: the schema and consistency checks could only
    pass, and are skipped (at 10,000 checks they are most of the cost of reading a run back).
    """
    path = stage_path(run_dir=run_dir, stage=stage)
    try:
        data, stamp = read_regular_stamped(path)
        digest = sha256_bytes(data=data) if vouched is not None else None
        # Bytes a later stage vouched for are eb's own, never deep: only others are scanned.
        vouched_for = vouched is not None and digest == vouched
        checked = stamp is not None and (stage, stamp) in _CHECKED
        document = json.loads(data) if vouched_for or checked else loads_json(data)
    except FileNotFoundError:
        raise StageFileError(
            f"Stage file missing: {path}",
            file=str(path),
            hint=f"{_remake(stage, first=True)}."
            if stage == "config"
            else f"Run the pipeline first (eb run), or {_remake(stage)}.",
        ) from None
    except (NotRegularFile, TooDeep) as exc:
        what = exc.strerror if isinstance(exc, NotRegularFile) else str(exc)
        raise StageFileError(
            f"Stage file {path} is {what}",
            file=str(path),
            hint=f"Remove it and {_remake(stage)}.",
        ) from None
    except (OSError, ValueError) as exc:
        raise StageFileError(
            f"Stage file {path} is not valid JSON: {exc}",
            file=str(path),
            field_path="$",
            hint=f"The file is truncated or was edited by hand; {_remake(stage)}.",
        ) from None
    if checked or (vouched_for and _written_by_this_eb(document=document)):
        doc = STAGE_MODELS[stage].model_validate(document)
        _refuse_other_run(run_dir=run_dir, stage=stage, doc=doc)
        return StageRead(doc=doc, data=data, digest=digest)
    quick = _quick_check(stage)
    if quick is None or not quick(document):
        _refuse_schema_errors(path=path, stage=stage, document=document)
    # The schema is generated from the model, so building it cannot fail on a valid file.
    doc = STAGE_MODELS[stage].model_validate(document)
    found = inconsistency(stage=stage, doc=doc)
    if found is not None:
        where, problem = found
        raise StageFileError(
            f"Stage file {path} is inconsistent at {where}: {problem}",
            file=str(path),
            field_path=where,
            hint=f"The file was edited by hand or damaged; {_remake(stage)}.",
        )
    if stamp is not None:
        _CHECKED.add((stage, stamp))
    _refuse_other_run(run_dir=run_dir, stage=stage, doc=doc)
    return StageRead(doc=doc, data=data, digest=digest)


def _refuse_other_run(*, run_dir: Path, stage: str, doc: Any) -> None:
    """A stage file from another run (copied in, or its run_id edited) is refused: a run is the
    one its config.json names, and config.json the one its folder vouches for."""
    config_run_id = None
    # An unreadable config.json is refused by its own reading, which says what is wrong.
    if stage != "config":
        with contextlib.suppress(StageFileError):
            config_run_id = read_stage(run_dir=run_dir, stage="config").run_id
    refuse_other_run(run_dir=run_dir, stage=stage, doc=doc, config_run_id=config_run_id)


def _written_by_this_eb(*, document: Any) -> bool:
    return isinstance(document, dict) and document.get("tool_version") == tool_version()


def stage_digest(*, run_dir: Path, stage: str) -> str | None:
    """The digest of a stage file's bytes; None when it is missing."""
    path = stage_path(run_dir=run_dir, stage=stage)
    try:
        return sha256_file(path=path)
    except FileNotFoundError:
        return None
    except NotRegularFile as exc:
        raise StageFileError(
            f"Stage file {path} is {exc.strerror}",
            file=str(path),
            hint=f"Remove it and {_remake(stage)}.",
        ) from None


def upstream_digests(*, run_dir: Path, stage: str) -> dict[str, str]:
    """Digests of the upstream files a rerun of `stage` reads (they must exist)."""
    digests = {}
    for upstream in STAGE_INPUTS[stage]:
        digest = stage_digest(run_dir=run_dir, stage=upstream)
        if digest is None:
            path = stage_path(run_dir=run_dir, stage=upstream)
            raise StageFileError(
                f"Stage file missing: {path}",
                file=str(path),
                hint=f"{_remake(upstream, first=True)}.",
            )
        digests[upstream] = digest
    return digests


def refuse_stale_chain(*, run_dir: Path, through: str) -> None:
    """Refuse a verdict over stage files that do not chain: each stage file from discover
    through `through` must have been built from the upstream stage files the folder holds now.
    A score over results of an earlier guard or plan (one rebuilt, or refused, since) would
    state a pass that nothing in the folder supports."""
    for stage in STAGE_NAMES[1 : STAGE_NAMES.index(through) + 1]:
        doc = read_stage(run_dir=run_dir, stage=stage)
        for upstream in STAGE_INPUTS[stage]:
            if doc.inputs.get(upstream) != stage_digest(run_dir=run_dir, stage=upstream):
                _refuse_stale(run_dir=run_dir, stage=stage, upstream=upstream)


def _refuse_stale(*, run_dir: Path, stage: str, upstream: str) -> None:
    path = stage_path(run_dir=run_dir, stage=stage)
    relative = stage_path(run_dir=run_dir, stage=upstream).relative_to(run_dir)
    raise StageFileError(
        f"Stage file {path} is stale: {relative} changed since it was built from it",
        file=str(path),
        hint="Run eb update to rebuild every stale stage file, or rerun the stages from "
        f"{stage} on in order (eb stage {stage} first); eb status lists what is stale.",
    )
