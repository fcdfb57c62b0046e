"""How a dataset family's cases changed since its plan was made (`eb status`, `eb update`): a
row edited, gone, added or replaced outside a partial plan, or the family's own file or script,
each told against the file it is in."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.core.realpaths import real_path
from eval_banana.models.config import Selection
from eval_banana.models.stages import ConfigDoc, PlanDoc, PlannedCheck


def shown_path(*, path: str, root: str) -> str:
    """`path` as `eb status` names it: relative to the project root, as given when outside."""
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


def script_changed_words(*, check: PlannedCheck, now: str, root: str) -> str:
    """A check's changed `script_path` script, named as its check file names it. When that
    path (a symbolic link) leads to another file now (`now`, followed) than the one the plan
    froze (the plan's `script_path`), both are named: the check file is as it was."""
    shown = shown_path(path=now, root=root)
    written = check.definition.get("script_path")
    if not check.script_path or now == check.script_path or not isinstance(written, str):
        return f"{shown} changed"
    named = os.path.normpath(Path(check.source_path).parent / written)
    then = shown_path(path=check.script_path, root=root)
    return f"{shown_path(path=named, root=root)} changed (it leads to {shown} now, not {then})"


def rows_added(*, doc: PlanDoc, families: dict[str, FamilyNow]) -> dict[str, str]:
    """Cases a family has now that its plan never held: rows added to its dataset. Each
    planned case is compared with its row, so rows only added would otherwise go unseen. A
    family planned whole names its new cases; one planned in part is compared by the ids of
    all its cases the plan recorded before the selection narrowed it, so a row outside the
    selection counts too (a row replaced by another as well as one added), and once the plan
    is rebuilt (under the same selection) it is not told again."""
    added: dict[str, str] = {}
    planned: dict[str, set[str]] = {}
    first: dict[str, PlannedCheck] = {}
    for check in doc.checks:
        if check.family is not None:
            planned.setdefault(check.family, set()).add(check.case_id or "")
            first.setdefault(check.family, check)
    for family, check in first.items():
        now = families[check.source_path]
        size = doc.family_sizes.get(family)
        if now.family_digest is None or size is None:
            continue
        if len(planned[family]) == size:
            # The whole family was planned: the new cases are exactly those not in it.
            for case_id in now.unskipped:
                if case_id not in planned[family]:
                    added[f"{family}[{case_id}]"] = f"row added to {now.rows[case_id]}"
            continue
        reason = _family_ids_changed(
            recorded=doc.family_case_ids.get(family),
            size=size,
            planned=planned[family],
            now=now,
        )
        if reason is not None:
            added[family] = f"{family}: {reason}"
    return added


def _family_ids_changed(
    *, recorded: str | None, size: int, planned: set[str], now: FamilyNow
) -> str | None:
    """Why a family the plan holds in part has other cases now than it had (None: the same
    ids, or a change its planned cases gone from it tell on their own)."""
    from eval_banana.datasets.keys import case_ids_digest

    count = len(now.unskipped) - size
    # Named as they are now: a glob's new file holds the new rows, not the old files.
    datasets = ", ".join(now.files) or "its dataset"
    if recorded is None:
        # A plan written before its family's ids were recorded: by the count alone.
        return f"{count} row{'s' if count > 1 else ''} added to {datasets}" if count > 0 else None
    if case_ids_digest(now.unskipped) == recorded:
        return None
    # A planned case gone is told as its own row gone: when the ids it took away are all that
    # changed, the family has nothing more to say.
    gone = planned.difference(now.unskipped)
    if gone and case_ids_digest((*now.unskipped, *gone)) == recorded:
        return None
    if count > 0:
        return f"{count} row{'s' if count > 1 else ''} added to {datasets}"
    if count < 0:
        return f"{-count} row{'s' if count < -1 else ''} removed from {datasets}"
    return f"rows replaced or renamed in {datasets} (the same count, other ids)"


def files_changed(
    *, doc: PlanDoc, families: dict[str, FamilyNow], told: set[str]
) -> dict[str, str]:
    """Families whose `cases_from` names other files now than the plan's `family_files` (a
    dataset file renamed or moved, its rows as they were), when no change of their cases is
    told already: the plan names the family's files, which execute leaves out of each case's
    inputs, so a plan that names the old ones is rebuilt (and no case is judged again for its
    own dataset under another name)."""
    changed: dict[str, str] = {}
    for check in doc.checks:
        family, planned = check.family, tuple((check.family_files or [])[1:])
        now = families.get(check.source_path)
        if family is None or family in told or family in changed or now is None:
            continue
        if now.family_digest is None or now.files == planned:
            continue
        shown_now = ", ".join(now.files) or "no file"
        shown_then = ", ".join(planned) or "no file"
        changed[family] = f"{family}: its dataset is {shown_now} now, not {shown_then}"
    return changed


def dataset_files_now(*, source_path: str, config: ConfigDoc) -> tuple[str, ...] | None:
    """The project-relative files a family's `cases_from` names now, in order (its plan's
    `family_files` after the check file, once the plan is made again); None when the check
    file cannot be read or names no `cases_from` (a family of its own `cases:` alone)."""
    from eval_banana.checks.definition import parse_yaml_mapping
    from eval_banana.core.errors import DefinitionError
    from eval_banana.datasets.casesfrom import matched_files
    from eval_banana.datasets.globwalk import dataset_skipped

    try:
        document = parse_yaml_mapping(data=Path(source_path).read_bytes(), path=source_path)
    except (OSError, DefinitionError):
        return None
    pattern = document.get("cases_from")
    if not isinstance(pattern, str):
        return None
    root = Path(config.project_root)
    skipped = dataset_skipped(config=config)
    return tuple(matched_files(pattern=pattern, root=root, check_file=source_path, skipped=skipped))


class FamilyNow(NamedTuple):
    """A family as it expands now: case id -> definition digest, its own digest (None when it
    no longer loads or expands), and the ids of its cases that are not skipped, in order (a
    skipped case is never planned, so it is never a planned case gone missing or a new one)."""

    digests: dict[str, str]
    family_digest: str | None
    unskipped: tuple[str, ...]
    rows: dict[str, str]  # case id -> the file its row is in now, project-relative
    files: tuple[str, ...]  # the family's dataset files now
    values: dict[str, Any] | None = None  # case id -> its row now
    script_alone: str | None = None  # its script's change, when all of the family that changed
    # The `family_picks` digests its plan's selection records of it now (this eb's, an earlier
    # eb's), when the plan recorded one.
    picks: frozenset[str] | None = None
    family: str | None = None  # its id, when `picks` is asked for


def case_change(
    *, check: PlannedCheck, now: FamilyNow, config: ConfigDoc, file_rows: list[int] | None
) -> str | None:
    """Why a case's recorded digest is not its digest now: its row (the family's own
    definition is as it was), the family's check file, or the row gone (from the file the
    plan's `file_rows` place it in); None: unchanged."""
    family_now = now.family_digest
    current = now.digests.get(check.case_id or "")
    if current == check.check_definition_sha256:
        return None
    shown = shown_path(path=check.source_path, root=config.project_root)
    datasets = ", ".join((check.family_files or [])[1:]) or "its dataset"
    if family_now is None or family_now != check.family_definition_sha256:
        return now.script_alone or f"{shown} or its dataset changed"
    # Worded for one case or several alike: `a[1], a[4]: row changed in data/a.jsonl`.
    if current is None:
        return f"row gone from {_file_of(check=check, file_rows=file_rows) or datasets}"
    if now.values is not None and now.values.get(check.case_id or "") == check.case:
        # The same row under another digest: the run was made by an eb that framed a case's
        # digest otherwise (a row without an id now frames its place too).
        return "digest made anew by this eb version (the row is as it was)"
    return f"row changed in {now.rows.get(check.case_id or '', datasets)}"


def _file_of(*, check: PlannedCheck, file_rows: list[int] | None) -> str | None:
    """The family file a case's row was in when planned, by its place in the family's rows
    (None: a plan that did not record its files' rows)."""
    files = check.family_files or []
    if file_rows is None or check.case_index is None or len(file_rows) != len(files):
        return None
    end = 0
    for name, rows in zip(files, file_rows, strict=True):
        end += rows
        if check.case_index < end:
            return name
    return None


def family_as_now(
    *, check: PlannedCheck, config: ConfigDoc, run_dir: Path, picks: Selection | None = None
) -> FamilyNow:
    """The family `check` belongs to, as it expands now; with `picks` (the plan's selection),
    what that selection picks of its cases too (`picks_changed`)."""
    from eval_banana.checks.rowpicks import picks_as_recorded
    from eval_banana.checks.units import family_now

    expansion = family_now(source_path=check.source_path, config=config)
    if expansion is None:
        return FamilyNow(digests={}, family_digest=None, unskipped=(), rows={}, files=())
    # A dataset row names its file relative to the project already; an item of the check
    # file's own `cases:` names the check file, made relative once.
    own = shown_path(path=check.source_path, root=config.project_root)
    return FamilyNow(
        digests={case.case_id: case.digest for case in expansion.cases},
        family_digest=expansion.family_digest,
        unskipped=tuple(
            case.case_id for case in expansion.cases if not case.definition.get("skip")
        ),
        rows={
            case.case_id: own if case.origin.inline_index is not None else case.origin.file
            for case in expansion.cases
        },
        files=tuple(expansion.files[1:]),
        values={case.case_id: case.row for case in expansion.cases},
        script_alone=None
        if expansion.family_digest in (None, check.family_definition_sha256)
        else _family_script_alone(check=check, config=config, run_dir=run_dir),
        picks=None if picks is None else picks_as_recorded(cases=expansion.cases, selection=picks),
        family=check.family,
    )


def picked_source(*, relative: str, config: ConfigDoc) -> str:
    """The check file a plan's `family_picks` names, as its planned cases name it."""
    return str(Path(config.project_root) / relative)


def picks_changed(
    *, doc: PlanDoc, families: dict[str, FamilyNow], config: ConfigDoc, told: set[str]
) -> dict[str, str]:
    """Families some of whose rows the selection left out, of which the same selection picks
    other rows now (`checks.rowpicks`): a row it left out may be picked now (it gained the tag
    a `--tag` run selected) or one it picked be left out. What the selection does not pick by
    counts for nothing here (tags under `--check-id` or `-k`, a row's other fields): only
    --changed-since reads a row's other fields, and its selection is made again whole
    (`definitionchanges._pinned_selection_changed`). `families`: those already expanded
    (planned ones); `told`: families whose change is told already (a planned row changed,
    rows added)."""
    changed: dict[str, str] = {}
    for relative, recorded in doc.family_picks.items():
        source = picked_source(relative=relative, config=config)
        now = families.get(source)
        if now is None or now.picks is None:
            now = _picks_as_now(source=source, config=config, selection=doc.selection)
        if now is None or now.picks is None or recorded in now.picks:
            continue
        family = now.family or relative
        if family in told:
            continue
        datasets = ", ".join(now.files) or "its dataset"
        changed[family] = (
            f"{family}: a row's id, tags or skip changed in {datasets}, by which the selection "
            "picks rows"
        )
    return changed


def _picks_as_now(*, source: str, config: ConfigDoc, selection: Selection) -> FamilyNow | None:
    """A family the plan holds no case of, as `selection` picks its cases now (None: its check
    file no longer loads or expands, which the discover stage tells)."""
    from eval_banana.checks.rowpicks import picks_as_recorded
    from eval_banana.checks.units import family_now
    from eval_banana.core.caseid import family_of

    expansion = family_now(source_path=source, config=config)
    if expansion is None or expansion.family_digest is None:
        return None
    return FamilyNow(
        digests={case.case_id: case.digest for case in expansion.cases},
        family_digest=expansion.family_digest,
        unskipped=(),
        rows={},
        files=tuple(expansion.files[1:]),
        picks=picks_as_recorded(cases=expansion.cases, selection=selection),
        family=next((family_of(case.check_id) for case in expansion.cases), None),
    )


def _family_script_alone(*, check: PlannedCheck, config: ConfigDoc, run_dir: Path) -> str | None:
    """How the family's `script_path` script changed (`script_changed_words`) when it is all
    of the family that changed: its check file, over the script the plan froze, makes the
    digest the plan recorded. None: the check file changed (or the family has no frozen
    script)."""
    from eval_banana.checks.units import family_digest_over

    if not check.script_path or not check.snapshot:
        return None
    try:
        frozen = (run_dir / check.snapshot).read_bytes()
    except OSError:
        return None
    then = family_digest_over(source_path=check.source_path, script=frozen)
    if then is None or then != check.family_definition_sha256:
        return None
    now = real_path(Path(check.source_path).parent / str(check.definition.get("script_path")))
    return script_changed_words(check=check, now=str(now), root=config.project_root)
