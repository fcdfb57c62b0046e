"""--changed-since REF: the checks whose definition file, referenced script, declared inputs or
(an assertions check) artifact differ between the git revision REF and the work tree.

A check without `inputs:` is always selected: nothing says what it reads. So is a check whose
files lie outside the project root, or whose inputs match files git ignores: git cannot say
whether those changed since REF.

A dataset case whose family declares `inputs:` reads its dataset files only through its own
row (as its cache key does): a changed dataset selects the cases whose row changed since REF,
found by expanding the family again from the files as they were there (`CaseRows.past`).
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from eval_banana.core.errors import ChangeSelectionError, ProjectStateError
from eval_banana.core.realpaths import real_path
from eval_banana.models.config import Selection
from eval_banana.models.stages import ConfigDoc
from eval_banana.projectstate.git import (
    GitNotStarted,
    GitRefused,
    NotARepository,
    find_repository,
)
from eval_banana.projectstate.links import links_met
from eval_banana.projectstate.patterns import InputPatterns, outermost
from eval_banana.projectstate.prefixes import holding, relative_files, relative_inside
from eval_banana.projectstate.revision import (
    Changes,
    Comparison,
    UnknownRevision,
    commit_named,
    file_at,
    links_at,
    resolve_revision,
)
from eval_banana.settings.folders import own_files, own_folders

if TYPE_CHECKING:
    from eval_banana.datasets.globwalk import FollowedLink


def _no_links() -> Sequence[FollowedLink]:
    return ()


def _looks_nowhere(path: str) -> bool:
    return False


class CaseRows(NamedTuple):
    """A dataset case as --changed-since reads it: affected by its dataset files only when its
    own row differs from what it was at REF (or was not there)."""

    family: str  # the family's check file: one expansion at REF per family
    files: tuple[str, ...]  # its dataset files, root-relative
    digest: str  # the case's definition digest now
    # The family's cases at REF from its dataset files' contents there: check id -> digest, or
    # None when the family cannot be expanded from them (then every case counts as changed).
    past: Callable[[Mapping[str, bytes]], Mapping[str, str] | None]
    # Where its `cases_from` looks (a folder, "" the whole project, or one file; None without
    # one), and whether it names a root-relative path: a dataset file removed since REF is in
    # no list of its files now, yet ids by position may have moved.
    scope: str | None
    names: Callable[[str], bool]
    # The links to folders its `cases_from` glob looks through now: git names a file added or
    # removed behind one by the folder it leads to, never by the path the glob names it by.
    links: Callable[[], Sequence[FollowedLink]] = _no_links
    # Whether its glob looks into the folder at a root-relative path: a link there removed
    # since REF took the files it led to out of the family.
    looks_into: Callable[[str], bool] = _looks_nowhere


class _CheckFiles(NamedTuple):
    """What decides whether one check is affected: its own files and its input patterns."""

    # The check file, its referenced script, its artifact (root-relative), and for one read
    # through a link the file it leads to and the links on its way.
    own: tuple[str, ...]
    patterns: InputPatterns | None  # None: no inputs declared
    outside: bool  # a file of the check lies outside the project root
    rows: tuple[str, ...] = ()  # a dataset case's dataset files: read through its row alone
    rows_scope: str | None = None  # where its `cases_from` looks ("" the whole project)
    # The links to folders its glob looks through, and the folders they lead to in the root.
    rows_links: tuple[str, ...] = ()


class _Reading(NamedTuple):
    """What reading the file at a path depends on, root-relative."""

    # The path itself and, when a symbolic link lies on its way, the file it leads to (None:
    # outside the root).
    paths: list[str | None]
    # The links on its way inside the root (a link to a folder, a chain's links): git counts
    # one by its text, so one pointed elsewhere is a change even where each file is as it was.
    links: list[str]


def _read_through(*, path: str, root: str) -> _Reading:
    plain = os.path.normpath(path)
    found = [relative_inside(path=plain, root=root)]
    real = str(real_path(plain))
    if real == plain:
        return _Reading(paths=found, links=[])  # no link on the way: nothing more to read
    found.append(relative_inside(path=real, root=root))
    return _Reading(paths=found, links=links_met(path=plain, root=root))


def _check_files(*, source: str, definition: dict[str, Any], root: str) -> _CheckFiles:
    files = [source]
    script_path = definition.get("script_path")
    if script_path:
        files.append(os.path.join(os.path.dirname(source), str(script_path)))
    if definition.get("type") == "assertions" and definition.get("artifact"):
        # What an assertions check grades counts whether `inputs:` name it or not, as in its
        # cache key: a changed artifact selects the check.
        files.append(os.path.join(root, str(definition["artifact"])))
    # A file read through a link counts by its path, by the file it leads to and by the links
    # on its way (a link to a folder re-pointed since REF grades another file).
    own: list[str | None] = []
    for path in files:
        reading = _read_through(path=path, root=root)
        own.extend([*reading.paths, *reading.links])
    inputs = definition.get("inputs")
    return _CheckFiles(
        own=tuple(path for path in own if path is not None),
        patterns=InputPatterns(inputs) if inputs is not None else None,
        outside=None in own,
    )


def _check_files_key(*, source: str, definition: dict[str, Any]) -> tuple[Any, ...]:
    """What `_check_files` reads of a check: equal keys give equal files and patterns."""
    inputs = definition.get("inputs")
    return (
        source,
        definition.get("script_path"),
        definition.get("type"),
        definition.get("artifact"),
        tuple(inputs) if inputs is not None else None,
    )


def _shared(
    *, made: dict[tuple[Any, ...], _CheckFiles], source: str, definition: dict[str, Any], root: str
) -> _CheckFiles:
    """The check's files, made once per key (one patterns object the answers can be keyed by)."""
    key = _check_files_key(source=source, definition=definition)
    found = made.get(key)
    if found is None:
        found = made[key] = _check_files(source=source, definition=definition, root=root)
    return found


def _prefixes(*, checks: Sequence[_CheckFiles]) -> list[str] | None:
    """The paths git must compare for these checks; None when one pattern may match anywhere."""
    found: set[str] = set()
    for check in checks:
        assert check.patterns is not None
        prefixes = check.patterns.prefixes
        if prefixes is None:
            return None
        found.update(prefixes)
        found.update(check.own)
        found.update(check.rows)
        found.update(check.rows_links)
        if check.rows_scope is not None:
            if not check.rows_scope:
                return None  # a dataset glob over the whole project
            found.add(check.rows_scope)  # where a dataset file may have been removed
    return outermost(found)


def _no_repository_error(*, exc: NotARepository, root: str) -> ChangeSelectionError:
    """What stops --changed-since before any comparison: no git, git refusing the checkout
    (saying what it said), or no checkout at all."""
    hint = "run eb in a git checkout, or leave out --changed-since"
    message = f"--changed-since needs a git repository: {root} is not inside one"
    if isinstance(exc, GitNotStarted):
        message = f"--changed-since needs git: {exc.message}"
        hint = "install git, or put it on PATH, or leave out --changed-since"
    elif isinstance(exc, GitRefused):
        message = f"--changed-since needs a git repository: {exc.message}"
        hint = (
            "run eb in a checkout git reads (git status there says why not), or leave out "
            "--changed-since"
        )
        if exc.other_owner is not None:
            hint = (
                "the checkout belongs to another user (as in a CI container), and git reads "
                "such a checkout only once told to trust it: git config --global --add "
                f"safe.directory {exc.other_owner}"
            )
    return ChangeSelectionError(message, field_path="changed_since", hint=hint)


def _setup_error(*, exc: Exception, revision: str, named: str, root: str) -> ChangeSelectionError:
    """`revision`: what was compared with (the commit pinned); `named`: it as told."""
    if isinstance(exc, NotARepository):
        return _no_repository_error(exc=exc, root=root)
    message = exc.message if isinstance(exc, ProjectStateError) else str(exc)
    hint = "check the state of the repository (git status)"
    if isinstance(exc, UnknownRevision):
        hint = _revision_hint(exc=exc, revision=revision, named=named)
    return ChangeSelectionError(
        f"--changed-since {named}: {message}", field_path="changed_since", hint=hint
    )


def _revision_hint(*, exc: UnknownRevision, revision: str, named: str) -> str:
    """What to give --changed-since instead, by why `revision` names no commit."""
    if exc.problem == "range":
        base = revision.split("..")[0] or "main"
        return (
            "--changed-since compares with one commit, not a range: give the base alone "
            f"({base}) or where the branch left it ($(git merge-base {base} HEAD))"
        )
    if exc.problem == "not_a_name":
        return (
            "give a branch, a tag or a commit id (git reads a value starting with '-' as an option)"
        )
    if revision != named:
        # The commit pinned when the run was made: a rebase and gc may have removed it.
        return (
            f"the run was pinned to commit {revision}, which the repository no longer holds "
            "(rewritten by a rebase and pruned, or never fetched here): start a new run with "
            "eb run --changed-since <ref>, or fetch that commit"
        )
    return (
        f"fetch {revision} first (a shallow CI checkout may lack it: fetch it, or check out "
        "with the full history)"
    )


def pin_changed_since(*, config: ConfigDoc) -> ConfigDoc:
    """`config` with the commit its --changed-since revision names now recorded beside it, so
    the run's plan made again later (`eb update` after a commit, a branch that moved) compares
    with the same commit and selects as the run did. One recorded already stays: the run is
    the one it was. When git cannot name one, nothing is recorded, and the validate stage
    tells why as it always has."""
    selection = config.selection
    if selection.changed_since is None or selection.changed_since_commit is not None:
        return config
    commit = commit_named(root=config.project_root, revision=selection.changed_since)
    if commit is None:
        return config
    pinned = selection.model_copy(update={"changed_since_commit": commit})
    return config.model_copy(update={"selection": pinned})


def pinned_commit_gone(*, selection: Selection, root: str) -> bool:
    """Whether the selection is pinned to a commit the repository no longer holds (a rebase
    rewrote it and gc pruned it): a plan made again cannot select as the run did. False when
    git cannot say (no work tree, no git): whoever compares tells why."""
    commit = selection.changed_since_commit
    if selection.changed_since is None or commit is None:
        return False
    try:
        resolve_revision(repo=find_repository(root=root), revision=commit)
    except UnknownRevision as exc:
        return exc.problem == "unknown"
    except (NotARepository, GitNotStarted, ProjectStateError):
        return False
    return False


def pinned_commit_gone_words(*, selection: Selection) -> str:
    """What `eb status` and a stale validate say of a pin `pinned_commit_gone` found gone."""
    return (
        f"--changed-since {selection.changed_since} is pinned to commit "
        f"{selection.changed_since_commit}, which the repository no longer holds (rewritten "
        "by a rebase and pruned, say): the run's selection cannot be made again; start a new "
        "run with eb run --changed-since <ref>"
    )


def compared_revision(*, selection: Selection) -> str | None:
    """What --changed-since compares with: the commit its revision named when the run was made,
    else (a run made before eb recorded it, or git could not name one) the revision itself."""
    return selection.changed_since_commit or selection.changed_since


def _named_revision(*, selection: Selection, revision: str) -> str:
    """The revision as a message names it: as given, and the commit it was pinned to."""
    given = selection.changed_since or revision
    if selection.changed_since_commit is None or given == selection.changed_since_commit:
        return given
    return f"{given} (commit {selection.changed_since_commit}, as when the run was made)"


# Comparisons started by `prefetch`, by (project root, revision), until changed_checks takes one.
_STARTED: dict[tuple[str, str], Comparison] = {}


def prefetch(*, config: ConfigDoc) -> None:
    """Start git's comparison for `--changed-since` now, before the check files are found.

    git's commands then run on the other core while eb walks the project and reads the check
    files, instead of after. Started for the whole root, with the ignored files listed: what
    the checks need is only known once they are read, and `changed_checks` keeps that part.
    Any problem is left for `changed_checks` to report with its usual message.
    """
    revision = compared_revision(selection=config.selection)
    key = (config.project_root, revision or "")
    if revision is None or key in _STARTED:
        return
    try:
        _STARTED[key] = Comparison.start(
            root=config.project_root, revision=revision, skip_folders=own_folders(config=config)
        )
    except (NotARepository, ProjectStateError, OSError):
        return
    if len(_STARTED) == 1:
        atexit.register(_close_started)


def _close_started() -> None:
    """No git command eb started outlives it, even when the run ended before the selection."""
    while _STARTED:
        _STARTED.popitem()[1].close()


def _compare(
    *,
    config: ConfigDoc,
    revision: str,
    prefixes: Sequence[str] | None,
    with_ignored: bool,
) -> Changes:
    """What changed since `revision`: the prefetched comparison, or one started now."""
    root = config.project_root
    skip = own_folders(config=config)
    comparison = _STARTED.pop((root, revision), None) or Comparison.start(
        root=root,
        revision=revision,
        prefixes=prefixes,
        with_ignored=with_ignored,
        skip_folders=skip,
    )
    try:
        return comparison.finish(
            prefixes=prefixes,
            skip_folders=skip,
            with_ignored=with_ignored,
            excluded_names=config.settings.discovery.exclude_dirs,
        )
    finally:
        comparison.close()


def changed_checks(
    *,
    config: ConfigDoc,
    revision: str,
    checks: Sequence[tuple[str, dict[str, Any]]],
    cases: Sequence[CaseRows | None] = (),
) -> list[int]:
    """Positions of the checks affected by what changed since `revision`; `cases`, beside
    `checks`: which of them are dataset cases, read by their row (None for the others)."""
    root = config.project_root
    # The cases of a family share their files and patterns: each is worked out once, and
    # below each distinct one is matched once against what changed (10,000 cases against
    # 3,000 changed files took 10 s when every case matched them again).
    made: dict[tuple[Any, ...], _CheckFiles] = {}
    files = [_shared(made=made, source=source, definition=d, root=root) for source, d in checks]
    rows: list[CaseRows | None] = list(cases) if cases else [None] * len(files)
    reads: dict[tuple[str, ...], _DatasetReads] = {}  # a family's cases share their files
    linked: dict[str, tuple[str, ...]] = {}  # family -> where its glob's links are and lead
    for position, case in enumerate(rows):
        if case is not None:
            read = reads.get(case.files)
            if read is None:
                read = reads[case.files] = _dataset_reads(files=case.files, root=root)
            if case.family not in linked:
                # Asked only of a family read by its rows: one without `inputs:` is selected
                # whole anyway, and its links would cost a walk for nothing.
                reads_rows = files[position].patterns is not None
                linked[case.family] = _link_paths(case=case) if reads_rows else ()
            files[position] = files[position]._replace(
                rows=read.paths,
                rows_scope=case.scope,
                rows_links=linked[case.family],
                outside=files[position].outside or read.outside,
            )
    compared = [f for f in files if f.patterns is not None and not f.outside]
    try:
        # Called even when no check needs a comparison: an unknown REF is always an error.
        found = _compare(
            config=config,
            revision=revision,
            prefixes=_prefixes(checks=compared),
            with_ignored=bool(compared),
        )
    except (NotARepository, ProjectStateError) as exc:
        named = _named_revision(selection=config.selection, revision=revision)
        raise _setup_error(exc=exc, revision=revision, named=named, root=root) from None
    # eb's own files (the failures every run remembers, its JUnit file...) are never what a
    # check reads, as they are no part of its cache key.
    own = relative_files(root=root, files=own_files(config=config))
    # A committed link whose file changed behind it counts as changed, as its cache key does.
    paths = (found.diff.paths | found.followed.keys()) - own
    changed = sorted(paths)
    ignored_paths = [path for path in found.ignored if path not in own]
    ignored = frozenset(ignored_paths)  # asked of every case: a set, not a list walked each time
    # A submodule whose recorded commit changed is one path: patterns naming files in it match it.
    submodules = sorted(paths & found.submodules)
    answers: dict[_CheckFiles, bool] = {}
    affected: list[bool] = []
    for check in files:
        answer = answers.get(check)
        if answer is None:
            answer = answers[check] = _affected(
                check=check,
                paths=paths,
                changed=changed,
                submodules=submodules,
                ignored=ignored_paths,
                ignored_set=ignored,
            )
        affected.append(answer)
    pasts: dict[str, Mapping[str, str] | None] = {}
    moved: dict[str, bool] = {}  # family -> a dataset file of it was added or removed
    for position, case in enumerate(rows):
        if affected[position] or case is None:
            continue
        read = reads[case.files]
        if case.family not in moved:
            moved[case.family] = _files_moved(
                case=case, read=read, found=found
            ) or _rows_in_submodules(case=case, read=read, submodules=submodules)
        if moved[case.family]:
            affected[position] = True
            continue
        if paths.isdisjoint(read.paths):
            continue
        if case.family not in pasts:
            pasts[case.family] = _past_cases(case=case, read=read, found=found)
        past = pasts[case.family]
        affected[position] = past is None or past.get(checks[position][1]["id"]) != case.digest
    return [position for position, hit in enumerate(affected) if hit]


class _DatasetReads(NamedTuple):
    """A family's dataset files as reading them depends on them (`_read_through`, as an
    artifact's): each path as written and, when a symbolic link lies on its way (to a folder
    as well as to the file), the file it leads to."""

    paths: tuple[str, ...]  # root-relative: as written, the links on the way, where they lead
    behind: Mapping[str, str]  # a file as written -> the file a link on its way leads to
    links: frozenset[str]  # the links on the way: one retargeted since REF hides its past rows
    outside: bool  # one leads outside the project root: git cannot say whether it changed


def _dataset_reads(*, files: Sequence[str], root: str) -> _DatasetReads:
    paths: list[str] = []
    behind: dict[str, str] = {}
    links: set[str] = set()
    outside = False
    for file in files:
        reading = _read_through(path=os.path.join(root, file), root=root)
        plain, *led = reading.paths
        paths.append(file)
        outside = outside or plain is None
        links.update(reading.links)
        for target in led:
            if target is None:
                outside = True
                continue
            behind[file] = target
            paths.append(target)
    paths.extend(sorted(links))
    return _DatasetReads(paths=tuple(paths), behind=behind, links=frozenset(links), outside=outside)


def _link_paths(*, case: CaseRows) -> tuple[str, ...]:
    """The root-relative paths of the links a family's glob looks through, and of the folders
    they lead to inside the root: where git names a dataset file of it added or removed."""
    found: list[str] = []
    for link in case.links():
        found.extend(path for path in (link.at, link.leads_to) if path is not None)
    return tuple(found)


def _files_moved(*, case: CaseRows, read: _DatasetReads, found: Changes) -> bool:
    """Whether a dataset file of the family was added or removed since REF (ids by position
    may have moved: every case counts as changed): one it reads now, or a removed one its
    `cases_from` named, directly or behind a link to a folder it looks through (such a link
    pointed elsewhere, or removed, counts so too)."""
    diff = found.diff
    if not set(read.paths).isdisjoint((*diff.added, *diff.removed)):
        return True
    links = case.links()
    if any(link.at is not None and link.at in diff.paths for link in links):
        return True  # a link the glob looks through added or pointed elsewhere
    named = [name for path in diff.removed for name in _named_by_glob(path=path, links=links)]
    if any(case.names(name) for name in named):
        return True
    # A link to a folder removed since REF: git names the link alone, not the files it led to.
    was_link = [path for path in diff.removed if case.looks_into(path)]
    try:
        return bool(links_at(repo=found.repo, commit=found.commit, paths=was_link))
    except (NotARepository, ProjectStateError):
        return True  # git cannot say what the path was: it may have led to rows


def _rows_in_submodules(*, case: CaseRows, read: _DatasetReads, submodules: Sequence[str]) -> bool:
    """Whether a submodule whose recorded commit changed (`submodules`) may hold rows of the
    family: one holding a dataset file it reads, the file or folder its `cases_from` names, or
    one its glob looks into. git lists no file inside a submodule, so neither its rows then nor
    a dataset file added or removed there can be told: every case counts as changed."""
    if not submodules:
        return False
    inside = [*read.paths, *([f"{case.scope}/"] if case.scope else [])]
    if holding(submodules, inside):
        return True
    return any(case.looks_into(path) for path in submodules)


def _named_by_glob(*, path: str, links: Sequence[FollowedLink]) -> list[str]:
    """The root-relative `path` git names, and the paths a glob looking through `links` names
    it by (`shared/x.jsonl` behind `data/shared -> ../shared`: `data/shared/x.jsonl`)."""
    names = [path]
    for link in links:
        if link.leads_to is not None and path.startswith(link.leads_to + "/"):
            names.append(link.named + path[len(link.leads_to) :])
    return names


def _past_cases(*, case: CaseRows, read: _DatasetReads, found: Changes) -> Mapping[str, str] | None:
    """The family's cases at REF (check id -> digest), expanded from its dataset files as they
    were there (none added or removed since); None when git cannot give one."""
    if not read.links.isdisjoint(found.diff.paths):
        return None  # a link on the way retargeted: the file behind it now is no past of it
    contents: dict[str, bytes] = {}
    try:
        for file in case.files:
            # A dataset read through an unchanged link: the file it leads to, as REF held it.
            if file in found.followed:
                behind = found.followed[file]
                if behind is None:
                    return None  # outside the root: git has no earlier rows of it
                contents[file] = file_at(repo=found.repo, commit=found.commit, path=behind)
            else:
                # git holds no file below a link to a folder: the one the link leads to.
                path = read.behind.get(file, file)
                contents[file] = file_at(repo=found.repo, commit=found.commit, path=path)
    except (NotARepository, ProjectStateError):
        return None
    return case.past(contents)


def _affected(
    *,
    check: _CheckFiles,
    paths: frozenset[str],
    changed: list[str],
    submodules: list[str],
    ignored: list[str],
    ignored_set: frozenset[str],
) -> bool:
    if check.patterns is None or check.outside:
        return True  # nothing says what it reads, or git cannot see all of it
    if not paths.isdisjoint(check.own):
        return True
    if submodules and holding(submodules, check.own):
        # Its check file or script lies in a submodule recorded at another commit: git lists
        # no file there, and the commit stands for each, as for a pattern naming one.
        return True
    if not ignored_set.isdisjoint(check.own):
        return True  # a file of its own git ignores (a generated artifact): git cannot tell
    if not ignored_set.isdisjoint(check.rows):
        return True  # a dataset git ignores: git cannot say whether its row changed
    if check.rows and not paths.isdisjoint(check.rows):
        # Its dataset files are read through its row alone, even where `inputs:` match them.
        changed = [path for path in changed if path not in check.rows]
    return bool(
        check.patterns.select(changed, submodules=submodules) or check.patterns.select(ignored)
    )
