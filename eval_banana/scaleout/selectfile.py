"""Reading `eb run --select FILE`: an `eb plan` document, a JSON list of ids, or one id a line.

What it yields is recorded in config.json (the selection's `select`): the file's digest, every
id it names (the plan), the plan digest, and the ids this run executes. With `--shard K/N` the
run executes part K of the plan: the plan's own assignment when it was cut into N shards
(`eb plan --shards N`, by hash or by history), else the hash split of `--shard K/N`.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.checks.shard import in_shard, rows_digest
from eval_banana.core.errors import UsageError
from eval_banana.core.textfiles import unicode_said
from eval_banana.core.words import first_and_count, plural
from eval_banana.models.config import SELECT_STDIN, PlanSelection, Shard
from eval_banana.models.plan import PLAN_KIND, PlanDocument
from eval_banana.stagefiles.schemafiles import packaged_schema_problem

STDIN = SELECT_STDIN
_FORMS_HINT = (
    "Give an `eb plan --format json` document, a JSON list of check ids, or one check id per "
    "line ('#' starts a comment)."
)


def _label(source: str) -> str:
    return "standard input" if source == STDIN else source


_UTF8_HINT = (
    "Save the file as UTF-8 (in PowerShell: Set-Content -Encoding utf8, or "
    "Out-File -Encoding utf8 in place of `>`)."
)


def _refuse(
    message: str, *, source: str, field_path: str | None = None, hint: str = _FORMS_HINT
) -> UsageError:
    return UsageError(
        f"--select {_label(source)}: {message}",
        file=None if source == STDIN else source,
        field_path=field_path,
        hint=hint,
    )


def _text(*, data: bytes, source: str) -> str:
    """The file's text: UTF-8, a leading byte order mark ignored (Notepad and Windows
    PowerShell's `Out-File -Encoding utf8` write one, as for check files and the config).
    Anything else is refused: an id decoded by a guess would be another id."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        said = unicode_said(data)
        raise _refuse(
            f"the file {said}"
            if said is not None
            else f"is not valid UTF-8 ({exc.reason} at byte {exc.start})",
            source=source,
            hint=_UTF8_HINT,
        ) from None
    # UTF-16 or UTF-32 of ASCII letters without a mark is valid UTF-8, NUL bytes between them.
    said = unicode_said(data) if "\x00" in text else None
    if said is not None:
        raise _refuse(f"the file {said}", source=source, hint=_UTF8_HINT)
    return text.removeprefix("\ufeff")


def _read_bytes(*, source: str, cwd: Path) -> bytes:
    if source == STDIN:
        return sys.stdin.buffer.read()
    path = Path(source) if Path(source).is_absolute() else cwd / source
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _refuse(f"cannot be read ({exc.strerror or exc})", source=source) from None


def _ids_of_list(*, document: list[Any], source: str) -> list[str]:
    for position, item in enumerate(document):
        if not isinstance(item, str) or not item.strip():
            raise _refuse(
                f"item {position} is {item!r}, not a check id", source=source, field_path=None
            )
    return [item.strip() for item in document]


def _plan_of(*, document: dict[str, Any], source: str) -> PlanDocument:
    if document.get("kind") != PLAN_KIND:
        raise _refuse(
            f"a JSON object that is not an `eb plan` document (kind is {document.get('kind')!r}, "
            f"expected {PLAN_KIND!r})",
            source=source,
            field_path="kind",
        )
    problem = packaged_schema_problem(document, name="plan")
    if problem is not None:
        raise _refuse(f"is not a valid plan document: {problem}", source=source)
    return PlanDocument.model_validate(document)


def _lines(*, text: str) -> list[str]:
    found = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in found if line]


def _names_no_check(*, plan: PlanDocument | None, source: str) -> UsageError:
    """An empty file, or a plan whose every check is skipped: the second is a well-made `eb
    plan` document, so the hint says why it holds nothing to run, not how to write one."""
    if plan is None or not plan.skipped:
        return _refuse("names no check", source=source)
    skipped = [repr(entry.id) for entry in plan.skipped]
    return _refuse(
        f"names no check to run: every check of its plan is skipped "
        f"({first_and_count(skipped, shown=5)})",
        source=source,
        hint="Their files say `skip:`, so no run would start them. Plan a selection that "
        "holds a check that runs, or remove `skip:` from the checks to run.",
    )


def _no_duplicates(*, ids: list[str], source: str) -> None:
    seen: set[str] = set()
    repeated: set[str] = set()
    for check_id in ids:
        (repeated if check_id in seen else seen).add(check_id)
    twice = sorted(repeated)
    if twice:
        raise _refuse(f"names {', '.join(repr(i) for i in twice)} more than once", source=source)


def _dealt_to_no_part(*, plan: PlanDocument, source: str) -> None:
    """A plan cut into N parts must put each check in one of them: an entry without a shard, or
    with one outside 1..N (a hand edit, an engine that dealt the plan again), would run in no
    part, and the merged run would lack it."""
    total = plan.shards
    if total is None:
        return
    stray = [entry for entry in plan.checks if entry.shard is None or entry.shard > total]
    if not stray:
        return
    named = [
        f"{entry.id!r} (shard {'null' if entry.shard is None else entry.shard})" for entry in stray
    ]
    raise _refuse(
        f"the plan was made with --shards {total}, but {plural(count=len(stray), noun='check')} "
        f"{'is' if len(stray) == 1 else 'are'} in no part 1..{total}: "
        f"{first_and_count(named, shown=5)}",
        source=source,
        field_path="checks[].shard",
        hint=f"Give each check a shard from 1 to {total}, or make the plan again with "
        f"`eb plan --shards {total} --format json`.",
    )


def _matches_its_digest(*, plan: PlanDocument, source: str) -> None:
    """A plan's checks must give its own plan_digest: one whose list was trimmed or edited
    after `eb plan` wrote it (a scheduler dropping a check) would have its parts run, and
    merge, without what it dropped. No project is needed to tell, and no --allow-stale-plan
    lets it through: that is for a project changed since the plan, not for the plan itself."""
    own = rows_digest(rows=[(e.source, e.id, e.definition_digest) for e in plan.checks])
    if own == plan.plan_digest:
        return
    raise _refuse(
        f"the plan's check list does not match its own plan_digest ({plan.plan_digest}; its "
        f"{plural(count=len(plan.checks), noun='check')} give {own}): it was edited after "
        "`eb plan` wrote it (a check added, dropped or changed)",
        source=source,
        field_path="checks",
        hint="Pass the plan as `eb plan` wrote it, or make it again with `eb plan` (select "
        "fewer checks there, with --check-id or --tag, rather than by editing the file).",
    )


def _part(*, plan: PlanDocument | None, ids: list[str], shard: Shard | None) -> list[str]:
    """The ids this run executes: all, or part K of N."""
    if shard is None:
        return list(ids)
    if plan is not None and plan.shards is not None:
        if plan.shards != shard.total:
            raise UsageError(
                f"--shard {shard.index}/{shard.total} cuts the plan into {shard.total} parts, "
                f"but it was made with --shards {plan.shards}",
                hint=f"Run its parts with --shard K/{plan.shards}.",
            )
        return [entry.id for entry in plan.checks if entry.shard == shard.index]
    return [check_id for check_id in ids if in_shard(check_id=check_id, shard=shard)]


class SelectFile(NamedTuple):
    """A `--select` file read: the selection it makes, and `--shard K/N` as the file splits it."""

    select: PlanSelection
    shard: Shard | None


def _split_by(*, plan: PlanDocument | None, shard: Shard | None) -> Shard | None:
    """`shard` recording the split that deals this run's part: the plan's own (by hash or by
    history) when it was made with --shards, else the hash. No worker reads its history for
    it, so no history digest is recorded (nor compared by `eb merge`)."""
    if shard is None:
        return None
    dealt = plan.balance if plan is not None and plan.shards is not None else None
    return shard.model_copy(update={"balance": dealt or "hash", "history_digest": None})


def read_select(
    *, source: str, cwd: Path, shard: Shard | None, allow_stale_plan: bool
) -> SelectFile:
    """The selection file read and checked on its own (the project is checked by validate)."""
    data = _read_bytes(source=source, cwd=cwd)
    text = _text(data=data, source=source)
    plan: PlanDocument | None = None
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise _refuse(f"is not valid JSON ({exc})", source=source) from None
        if isinstance(document, list):
            form, ids = "list", _ids_of_list(document=document, source=source)
        elif isinstance(document, dict):
            plan = _plan_of(document=document, source=source)
            _matches_its_digest(plan=plan, source=source)
            _dealt_to_no_part(plan=plan, source=source)
            form, ids = "plan", [entry.id for entry in plan.checks]
        else:
            raise _refuse("holds neither a list nor a plan document", source=source)
    else:
        form, ids = "lines", _lines(text=text)
    if not ids:
        raise _names_no_check(plan=plan, source=source)
    _no_duplicates(ids=ids, source=source)
    select = PlanSelection(
        file=source,
        file_sha256=f"sha256:{hashlib.sha256(data).hexdigest()}",
        form=form,  # type: ignore[arg-type]
        plan_ids=ids,
        plan_digest=plan.plan_digest if plan is not None else None,
        definition_digests=(
            {entry.id: entry.definition_digest for entry in plan.checks} if plan else {}
        ),
        ids=_part(plan=plan, ids=ids, shard=shard),
        skipped_ids=[entry.id for entry in plan.skipped] if plan is not None else [],
        allow_stale_plan=allow_stale_plan,
    )
    return SelectFile(select=select, shard=_split_by(plan=plan, shard=shard))
