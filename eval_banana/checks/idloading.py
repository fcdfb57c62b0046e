"""The check files `--check-id` names, loaded alone: an id, a glob of ids or a
`<family>[<case>]` selector each finds its files (by scanning their bytes for the value, or by an
index of every file's id when many values are asked), and what matched nothing is told with a
did-you-mean. The other files are not validated, so `--check-id` never pays for a whole
project's problems."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from eval_banana.checks.definition import validate_mapping
from eval_banana.checks.idselectors import (
    case_part_matches,
    id_matches_pattern,
    is_id_pattern,
    may_match_cases_of,
    pattern_prefix,
    plainly_named_family,
    split_case_selector,
)
from eval_banana.checks.loading import (
    Holder,
    Loaded,
    Reader,
    id_holders,
    model_of,
    parse_each,
    problem_model,
)
from eval_banana.core.errors import DefinitionError, Problem
from eval_banana.core.suggest import SUGGESTED_AT_MOST, closest
from eval_banana.core.words import plural
from eval_banana.datasets.keys import is_family
from eval_banana.models.stages import ProblemModel

if TYPE_CHECKING:  # loaded only for 200 values or more (most runs give a few)
    from eval_banana.checks.globcandidates import GlobCandidates

# From this many --check-id values on, every file's id is read once and each value looked up:
# scanning every file's bytes for each value costs values x files (1,000 ids over 2,000 files
# took a second). Fewer values are cheaper scanned: a file without the value is never parsed,
# and parsing one costs about what 200 scans of its bytes do (65 against 0.35 microseconds for
# a check file of W3's).
_INDEX_FROM = 200


class _Files:
    """The check files a selection looks among: scanned for each value, or indexed by id (and,
    for the `globs` among the values, by which ids each glob matches)."""

    def __init__(
        self, *, paths: list[str], read: Reader, indexed: bool, globs: Sequence[str] = ()
    ) -> None:
        self.paths = paths
        self.read = read
        self._globs = globs
        self._glob_candidates: GlobCandidates | None = None
        self._parsed: list[Holder] | None = None
        self._by_id: dict[str, list[Holder]] = {}
        self._unparsed: list[tuple[bytes, ProblemModel]] = []
        self._ids: list[str] | None = None
        if indexed:
            self._parsed = []
            for holder, data, problem in parse_each(paths=paths, marker=b"", read=read):
                if problem is not None:
                    # Told only where a value it holds might have been its id.
                    self._unparsed.append((data, problem))
                elif holder is not None:
                    self._parsed.append(holder)
                    self._by_id.setdefault(holder.check_id, []).append(holder)

    def holders(self, *, marker: bytes, warnings: list[ProblemModel]) -> Iterator[Holder]:
        """The files whose bytes hold `marker`, parsed (those that cannot be are warnings)."""
        if self._parsed is None:
            yield from id_holders(
                paths=self.paths, marker=marker, read=self.read, warnings=warnings
            )
            return
        self._unparsed_holding(marker=marker, warnings=warnings)
        yield from (holder for holder in self._parsed if marker in holder.data)

    def glob_holders(
        self, *, glob: str, marker: bytes, warnings: list[ProblemModel]
    ) -> Iterator[tuple[Holder, bool]]:
        """Of the files `holders` gives, those `glob` (stripped) can load, each with whether
        it matches the file's id. Indexed: only the files whose id it matches or whose case
        ids it may match (`GlobCandidates`), found without trying it on every file."""
        if self._parsed is None:
            for holder in self.holders(marker=marker, warnings=warnings):
                yield holder, id_matches_pattern(check_id=holder.check_id, pattern=glob)
            return
        if self._glob_candidates is None:
            from eval_banana.checks.globcandidates import GlobCandidates

            self._glob_candidates = GlobCandidates(globs=self._globs, holders=self._parsed)
        self._unparsed_holding(marker=marker, warnings=warnings)
        for holder, matches in self._glob_candidates.of(glob):
            if marker in holder.data:
                yield holder, matches

    def _unparsed_holding(self, *, marker: bytes, warnings: list[ProblemModel]) -> None:
        """Add to `warnings` the unparsable files whose bytes hold `marker`."""
        warnings.extend(problem for data, problem in self._unparsed if marker in data)

    def ids(self) -> list[str]:
        """Every file's stripped id, read once however many values name no check."""
        if self._ids is None:
            holders = self._parsed
            if holders is None:
                holders = list(
                    id_holders(paths=self.paths, marker=b"", read=self.read, warnings=[])
                )
            self._ids = [holder.check_id for holder in holders]
        return self._ids

    def with_id(self, *, check_id: str, warnings: list[ProblemModel]) -> list[Holder]:
        """The files whose stripped id is `check_id` (in path order)."""
        marker = check_id.encode()
        if self._parsed is None:
            return [
                holder
                for holder in self.holders(marker=marker, warnings=warnings)
                if holder.check_id == check_id
            ]
        self._unparsed_holding(marker=marker, warnings=warnings)
        return [holder for holder in self._by_id.get(check_id, []) if marker in holder.data]


class _NoSuchId(DefinitionError):
    """No check file has the id asked for. Its "did you mean" reads every file's id, so it is
    worked out only where the error is told (a family loader that tries an id and moves on
    never pays for it)."""


def _load_by_id(*, files: _Files, check_id: str, warnings: list[ProblemModel]) -> list[Loaded]:
    """Relaxed mode: only the file whose stripped id matches is loaded strictly. A file that
    cannot be parsed but holds the id is added to `warnings`, also when no file has the id
    (it may be why)."""
    needle = check_id.strip()
    matches = [
        (path, data, document)
        for path, data, document, _ in files.with_id(check_id=needle, warnings=warnings)
    ]
    if not matches:
        raise _NoSuchId(f"No check found with id '{check_id}'", field_path="check_id")
    if len(matches) > 1:
        joined = ", ".join(path for path, _, _ in matches)
        raise DefinitionError(
            f"Duplicate check id '{check_id}' found in: {joined}",
            file=matches[1][0],
            field_path="id",
        )
    path, data, document = matches[0]
    definition = validate_mapping(document=document, path=path, data=data)
    return [Loaded(path=path, data=data, definition=definition)]


def _id_hint(*, files: _Files, check_id: str, suggest: bool) -> str:
    """A did-you-mean among every check file's id (only an id that matched nothing pays for
    reading them all, once), and where to see them."""
    near = closest(check_id, files.ids()) if suggest else None
    listed = "`eb list` shows every check id (`eb list --cases` every case of a dataset family)"
    return f"did you mean '{near}'? {listed}" if near is not None else listed


# Where to see a family's case ids, after a did-you-mean that names one (or none).
CASES_LISTED = "`eb list --cases` shows every case id"

# A family's case ids, as it expands (the validate stage knows how).
CaseIds = Callable[[Loaded], Collection[str]]


def _family_hint(
    *, files: _Files, written: tuple[str, str], case_ids: CaseIds | None, suggest: bool
) -> str | None:
    """A did-you-mean for a `<family>[<case glob>]` value whose family id names no check: its
    family id compared with every check file's id as a plain id is, and its case part with the
    cases of the family that names as a case selector's is (letter case first, then spelling).
    None when no family is near; only a value that matched nothing pays for it."""
    named, asked = written
    near = closest(named, files.ids()) if suggest and not is_id_pattern(named) else None
    family = _case_selector_family(files=files, selector=f"{near}[]") if near else None
    if family is None:
        return None
    cases = case_ids(family) if case_ids is not None else ()
    if case_part_matches(asked=asked, case_ids=cases):
        meant: str | None = asked
    else:
        meant = closest(asked, cases) if not is_id_pattern(asked) else None
    if meant is None:
        return f"did you mean the family '{near}'? {CASES_LISTED}"
    return f"did you mean '{near}[{meant}]'? {CASES_LISTED}"


def _unreadable_hint(*, value: str, unreadable: list[ProblemModel]) -> str:
    """Where a value that names no check may be declared: in files that cannot be parsed."""
    names = ", ".join(dict.fromkeys(problem.file or "?" for problem in unreadable))
    what = f"an id matching '{value}'" if is_id_pattern(value) else f"the id '{value}'"
    may = "it may" if len(unreadable) == 1 else "they may"
    return f"{names} cannot be parsed, and {may} declare {what}: fix the problem told below"


def _no_glob_match(pattern: str) -> _NoSuchId:
    return _NoSuchId(
        f"No check id matches --check-id pattern '{pattern}'",
        field_path="check_id",
        hint="Patterns are shell-style and case-sensitive: * any text, ? one character, "
        "[abc] one of a, b, c. `eb list` shows every id (`eb list --cases` every case's).",
    )


class _GlobLoad(NamedTuple):
    """What one glob loads: the files whose id it matches, and the families it may match
    cases of (which cases they have is known once they expand)."""

    chosen: list[Loaded]
    case_bound: list[Loaded]
    left_out: list[ProblemModel]  # families it may match cases of that cannot be loaded


def _load_by_pattern(*, files: _Files, pattern: str, warnings: list[ProblemModel]) -> _GlobLoad:
    """Relaxed mode for a glob: every file whose stripped id matches is loaded strictly, and
    every family whose case ids (`<family>[<case id>]`) it may match by its literal start. A
    value that names a family outright (`plainly_named_family`) looks at no other family: its
    brackets never stand for the last character of one's id (`qa_judg[refund-1]` is not all
    of `qa_judge`), and it can match none of their cases.

    As for an exact id, other files are not validated; a file that cannot be parsed is a
    warning when it might have matched (its bytes hold the pattern's literal prefix). Every
    problem of the matching files is raised at once (the first, carrying the others).
    """
    needle = pattern.strip()
    start = pattern_prefix(needle)
    named = plainly_named_family(needle)
    by_id: dict[str, list[tuple[str, bytes, dict[str, object]]]] = {}
    families: dict[str, list[Holder]] = {}
    for holder, id_matched in files.glob_holders(
        glob=needle, marker=start.encode(), warnings=warnings
    ):
        path, data, document, found_id = holder
        if named is not None and found_id != named and is_family(document):
            continue
        if id_matched:
            by_id.setdefault(found_id, []).append((path, data, document))
        elif is_family(document) and may_match_cases_of(start=start, family=found_id):
            families.setdefault(found_id, []).append(holder)
    if not by_id and not families:
        raise _no_glob_match(pattern)
    loaded: list[Loaded] = []
    problems: list[DefinitionError] = []
    for check_id, matches in by_id.items():
        if len(matches) > 1:
            joined = ", ".join(path for path, _, _ in matches)
            problems.append(
                DefinitionError(
                    f"Duplicate check id '{check_id}' found in: {joined}",
                    file=matches[1][0],
                    field_path="id",
                )
            )
            continue
        path, data, document = matches[0]
        try:
            definition = validate_mapping(document=document, path=path)
        except DefinitionError as exc:
            problems.append(exc)
            continue
        loaded.append(Loaded(path=path, data=data, definition=definition))
    if problems:
        first = problems[0]
        raise DefinitionError(
            first.message,
            file=first.file,
            field_path=first.field_path,
            hint=first.hint,
            problems=tuple(
                Problem(message=p.message, file=p.file, field_path=p.field_path, hint=p.hint)
                for p in problems[1:]
            ),
        )
    left_out: list[ProblemModel] = []
    case_bound = _load_case_bound(families=families, left_out=left_out)
    return _GlobLoad(chosen=loaded, case_bound=case_bound, left_out=left_out)


def family_left_out(*, family: str, path: str) -> ProblemModel:
    """The warning before the problems of a family a glob may match cases of: which cases it
    has cannot be known, so none of them is selected (as a file that cannot be parsed but may
    hold an id is told, not fatal)."""
    return ProblemModel(
        message=f"Family '{family}' ({path}) cannot be loaded, so no --check-id glob looked "
        "among its cases",
        file=path,
        hint=f"fix the problem told below (`eb validate --check-id {family}` tells it as an error)",
    )


def _load_case_bound(
    *, families: Mapping[str, list[Holder]], left_out: list[ProblemModel]
) -> list[Loaded]:
    """The families a glob may match cases of, each validated; one that is not valid, or
    whose id two files declare, is added to `left_out` instead."""
    loaded: list[Loaded] = []
    for family, holders in families.items():
        path = holders[0].path
        try:
            if len(holders) > 1:
                joined = ", ".join(holder.path for holder in holders)
                raise DefinitionError(
                    f"Duplicate check id '{family}' found in: {joined}",
                    file=holders[1].path,
                    field_path="id",
                )
            definition = validate_mapping(
                document=holders[0].document, path=path, data=holders[0].data
            )
        except DefinitionError as exc:
            left_out.append(family_left_out(family=family, path=path))
            left_out.append(problem_model(exc))
            left_out.extend(model_of(p) for p in exc.problems)
            continue
        loaded.append(Loaded(path=path, data=holders[0].data, definition=definition))
    return loaded


def _case_selector_family(*, files: _Files, selector: str) -> Loaded | None:
    """The family a `<family>[<case pattern>]` selector names, when that id is a family."""
    written = split_case_selector(selector)
    if written is None:
        return None
    family = written[0]
    if not family or is_id_pattern(family):
        return None
    try:
        loaded = _load_by_id(files=files, check_id=family, warnings=[])
    except DefinitionError:
        return None
    return loaded[0] if is_family(loaded[0].definition) else None


class UnmatchedGlob(NamedTuple):
    """A glob that matched no check id, but may match a case of a family it loaded: its
    problem is told when none of their cases matches, with the files that cannot be parsed
    or the families that cannot be loaded, which might have held a match (warnings when one
    does)."""

    glob: str
    problem: ProblemModel
    might_match: list[ProblemModel]  # files (and families) that could not be read for it


class OutsideCheckDir(NamedTuple):
    """Where a `--check-id` value that names no check under `--check-dir` may still name one:
    `find` gives the project's check files outside the folder (`check_dir`, as given) whose
    check the value selects, as the user reads their paths (walked only once asked)."""

    check_dir: str
    find: Callable[[str], list[str]]


def files_selected_by(*, holders: Sequence[Holder], value: str) -> list[str]:
    """The paths of `holders` whose check the `--check-id` value selects, read from their ids
    alone: a `<family>[<case glob>]` value's family, the ids a glob matches (never a family a
    value names no case of), or the exact id. No definition is validated, so a problem in one
    file never hides where another defines the value."""
    needle = value.strip()
    written = split_case_selector(needle)
    if written is not None and written[0] and not is_id_pattern(written[0]):
        family = [h.path for h in holders if h.check_id == written[0] and is_family(h.document)]
        if family:
            return family
    if not is_id_pattern(needle):
        return [holder.path for holder in holders if holder.check_id == needle]
    named = plainly_named_family(needle)
    return [
        holder.path
        for holder in holders
        if id_matches_pattern(check_id=holder.check_id, pattern=needle)
        and not (named is not None and holder.check_id != named and is_family(holder.document))
    ]


def _left_out_by_check_dir(*, value: str, paths: list[str], check_dir: str) -> _NoSuchId:
    """The error for a value whose checks all lie outside `--check-dir`: it names where, so
    that `eb list` (which lists them) does not contradict it."""
    first = paths[0]
    if is_id_pattern(value):
        others = plural(count=len(paths) - 1, noun="more file")
        found = (
            f"the check in {first} matches it, and --check-dir leaves it out"
            if len(paths) == 1
            else f"the checks in {first} and {others} match it, and --check-dir leaves them out"
        )
        message = (
            f"No check id under --check-dir {check_dir} matches --check-id pattern "
            f"'{value}': {found}"
        )
    else:
        message = (
            f"No check found with id '{value}' under --check-dir {check_dir}: it is defined "
            f"in {first}, which --check-dir leaves out"
        )
    return _NoSuchId(
        message,
        file=first,
        field_path="check_id",
        hint=f"leave out --check-dir to select it, or pass a --check-dir that holds {first}",
    )


class IdSelection(NamedTuple):
    """What `--check-id` values load; a problem selects nothing."""

    checks: list[Loaded]
    problems: list[ProblemModel]
    warnings: list[ProblemModel]
    # The families loaded only because a glob may match some of their case ids: a problem
    # found when they expand is a warning, as it is for them here.
    case_bound: frozenset[str] = frozenset()
    unmatched: tuple[UnmatchedGlob, ...] = ()


def select_ids(
    *,
    paths: list[str],
    check_ids: list[str],
    read: Reader,
    case_ids: CaseIds | None = None,
    outside: OutsideCheckDir | None = None,
) -> IdSelection:
    """Relaxed selection by id or glob: the checks, and the families a glob may match cases of.
    `case_ids` gives a family's case ids, for the did-you-mean of a `<family>[<case>]` value
    whose family id names no check (without it, that hint names the family alone). `outside`:
    where a value that names no check among `paths` (the files under `--check-dir`) is looked
    for, to say that the folder left its check out."""
    selected: dict[str, Loaded] = {}
    case_bound: dict[str, Loaded] = {}
    unmatched: list[UnmatchedGlob] = []
    warnings: list[ProblemModel] = []
    problems: list[ProblemModel] = []
    files = _Files(
        paths=paths,
        read=read,
        indexed=len(check_ids) >= _INDEX_FROM,
        globs=[value.strip() for value in check_ids if is_id_pattern(value)],
    )
    families: dict[str, Loaded | None] = {}  # `<family>[...]` values: each family loaded once
    missing = 0  # exact ids that name no check
    for check_id in check_ids:
        written = split_case_selector(check_id)
        named = written[0] if written is not None else None
        if named is not None and named not in families:
            families[named] = _case_selector_family(files=files, selector=check_id)
        family = families.get(named) if named is not None else None
        if family is not None:
            selected[family.path] = family
            continue
        unreadable: list[ProblemModel] = []  # files that hold the value but cannot be parsed
        try:
            if is_id_pattern(check_id):
                found = _load_by_pattern(files=files, pattern=check_id, warnings=unreadable)
                loaded = found.chosen
                case_bound.update((item.path, item) for item in found.case_bound)
                if not loaded:
                    # Only a case of those families can match it: told once they expand.
                    unmatched.append(
                        UnmatchedGlob(
                            glob=check_id.strip(),
                            problem=problem_model(
                                _told_no_such_id(
                                    error=_no_glob_match(check_id),
                                    value=check_id,
                                    unreadable=unreadable,
                                )
                            ),
                            might_match=[*unreadable, *found.left_out],
                        )
                    )
                    continue
                warnings.extend(found.left_out)
            else:
                loaded = _load_by_id(files=files, check_id=check_id, warnings=unreadable)
        except _NoSuchId as exc:
            _told_no_such_id(error=exc, value=check_id, unreadable=unreadable)
            elsewhere = outside.find(check_id) if outside is not None and not unreadable else []
            if outside is not None and elsewhere:
                left_out = _left_out_by_check_dir(
                    value=check_id, paths=elsewhere, check_dir=outside.check_dir
                )
                problems.append(problem_model(left_out))
                continue
            if not unreadable and not is_id_pattern(check_id):
                missing += 1
                exc.hint = _id_hint(
                    files=files, check_id=check_id.strip(), suggest=missing <= SUGGESTED_AT_MOST
                )
            elif not unreadable and written is not None:
                # `QA[refund-01]` reads as a glob, a character class for its brackets: its
                # family id is compared as a plain id is, then its case part.
                missing += 1
                hint = _family_hint(
                    files=files,
                    written=written,
                    case_ids=case_ids,
                    suggest=missing <= SUGGESTED_AT_MOST,
                )
                exc.hint = hint or exc.hint
            problems.append(problem_model(exc))
            problems.extend(unreadable)
            continue
        except DefinitionError as exc:
            problems.append(problem_model(exc))
            problems.extend(model_of(p) for p in exc.problems)
            continue
        warnings.extend(unreadable)
        for item in loaded:
            selected[item.path] = item
    unique_warnings = list({(w.file, w.message): w for w in warnings}.values())
    if problems:
        unique = list({(p.file, p.message): p for p in problems}.values())
        return IdSelection(checks=[], problems=unique, warnings=unique_warnings)
    bound_only = frozenset(case_bound) - frozenset(selected)
    selected.update((path, case_bound[path]) for path in bound_only)
    return IdSelection(
        checks=[selected[path] for path in sorted(selected)],
        problems=[],
        warnings=unique_warnings,
        case_bound=bound_only,
        unmatched=tuple(unmatched),
    )


def _told_no_such_id(*, error: _NoSuchId, value: str, unreadable: list[ProblemModel]) -> _NoSuchId:
    """`error`, hinting at the files that cannot be parsed and hold the value, when there are
    any: the id is most likely in a file whose YAML is broken, so say so, not only that no
    check has it (a broken edit of a check read as a missing check)."""
    if unreadable:
        error.hint = _unreadable_hint(value=value.strip(), unreadable=unreadable)
    return error
