"""The input state of checks: which project files each check reads now, and their digest.

A check with `inputs:` reads the files its patterns match (tracked, untracked or ignored,
outside the excluded folders); a check without reads the whole project (every file git tracks
plus untracked files it does not ignore, or every file outside the excluded folders). Neither
holds eb's own files: its config file, the calibration record, and what runs write beside
their run folders (the JUnit file, --result-out, the step summary; see settings/folders.py). The
project state is read once, and only as much of it as the checks at hand need.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval_banana.core.errors import ProjectStateError
from eval_banana.core.log import Logger
from eval_banana.core.suggest import closest
from eval_banana.core.words import visible
from eval_banana.models.stages import ConfigDoc, PlannedCheck, ProblemModel
from eval_banana.projectstate.links import folder_link_on_the_way
from eval_banana.projectstate.patterns import (
    InputPatterns,
    escaped,
    literal_prefix,
    literal_slip,
    normalize,
    outermost,
)
from eval_banana.projectstate.prefixes import relative_files
from eval_banana.projectstate.reading import read_project_state
from eval_banana.projectstate.state import ProjectState
from eval_banana.projectstate.tracking import tracked_among
from eval_banana.settings.folders import own_files, own_folders

if TYPE_CHECKING:
    from eval_banana.assertions.shared import SharedArtifacts

logger = Logger("eval_banana.checks.inputs")


def pattern_meant(*, pattern: str, root: str | Path) -> str | None:
    """What a pattern that matches nothing was most likely written for: its first folder that
    does not exist replaced by the folder beside it most like it (`srcc/**` -> `src/**`), or,
    for a plain file path, the file beside it most like it; None when nothing is close."""
    body = normalize(pattern)
    prefix = literal_prefix(body)
    names = prefix.split("/") if prefix else []
    plain_file = prefix == body
    here = Path(root)
    for index, name in enumerate(names):
        last = index == len(names) - 1
        if (here / name).is_dir() and not (plain_file and last):
            here = here / name
            continue
        if (here / name).exists():
            return None
        try:
            entries = [e.name for e in os.scandir(here) if e.is_dir() != (plain_file and last)]
        except OSError:
            return None
        near = closest(name, entries)
        if near is None:
            return None
        written = "/".join(names[: index + 1])
        return "/".join([*names[:index], near]) + body[len(written) :]
    return None


def declared_inputs(definition: dict[str, Any]) -> tuple[str, ...] | None:
    """A definition's `inputs:` patterns, or None when it declares none."""
    inputs = definition.get("inputs")
    return None if inputs is None else tuple(str(pattern) for pattern in inputs)


class CheckInputs:
    """Input files and digests for a set of check definitions, from one read of the project."""

    def __init__(
        self,
        *,
        config: ConfigDoc,
        definitions: Iterable[dict[str, Any]],
        known: Mapping[str, bytes] | None = None,
    ) -> None:
        """`known`: file contents this run read already, by absolute resolved path (discovery's
        check files), hashed from memory where the project state is read by walking it."""
        self._known = known
        declared = [declared_inputs(definition) for definition in definitions]
        self._patterns = {inputs: InputPatterns(inputs) for inputs in declared if inputs}
        self._whole = any(inputs is None for inputs in declared)
        self._config = config
        self._state: ProjectState | None = None
        self._matched: dict[tuple[str, ...], list[str]] = {}
        self._digests: dict[tuple[str, ...], str] = {}
        self._whole_digest: str | None = None
        self._own_paths: frozenset[str] | None = None
        self._excluded: dict[tuple[tuple[str, ...] | None, tuple[str, ...]], str] = {}

    def _prefixes(self) -> list[str] | None:
        if self._whole:
            return None
        found: set[str] = set()
        for patterns in self._patterns.values():
            prefixes = patterns.prefixes
            if prefixes is None:
                return None
            found.update(prefixes)
        return outermost(found)

    @property
    def state(self) -> ProjectState:
        """The project state (read on first use)."""
        if self._state is None:
            config = self._config
            self._state = read_project_state(
                root=config.project_root,
                excluded_names=config.settings.discovery.exclude_dirs,
                skip_folders=own_folders(config=config),
                prefixes=self._prefixes(),
                include_ignored=bool(self._patterns),
                known=self._known,
            )
        return self._state

    def files(self, *, inputs: tuple[str, ...]) -> list[str]:
        """The project-relative paths the patterns match now, sorted."""
        if inputs not in self._matched:
            patterns = self._patterns.get(inputs) or InputPatterns(inputs)
            matched = self.state.select(patterns=patterns)
            own = self._own()
            self._matched[inputs] = (
                [path for path in matched if path not in own] if own else matched
            )
        return self._matched[inputs]

    @property
    def root(self) -> str:
        """The project root the patterns are relative to."""
        return self._config.project_root

    @property
    def excluded_names(self) -> Sequence[str]:
        """The folder names `[discovery] exclude_dirs` leaves out (of the ignored files)."""
        return self._config.settings.discovery.exclude_dirs

    def unmatched(self, *, inputs: tuple[str, ...]) -> list[str]:
        """The plain (not `!`) patterns of `inputs` that match no file now: a typo there keys
        the check on nothing, and its verdict would be reused whatever changes."""
        if self.files(inputs=inputs) and len(inputs) == 1:
            return []
        own = self._own()
        return [
            pattern
            for pattern in inputs
            if not pattern.startswith("!")
            and all(path in own for path in self.state.select(patterns=InputPatterns([pattern])))
        ]

    def _own(self) -> frozenset[str]:
        """eb's own files inside the project (relative): no state a verdict is keyed on holds
        them, declared or not."""
        if self._own_paths is None:
            self._own_paths = relative_files(
                root=self.state.root, files=own_files(config=self._config)
            )
        return self._own_paths

    def digest(self, *, inputs: tuple[str, ...] | None, excluding: tuple[str, ...] = ()) -> str:
        """`sha256:<hex>` of what a check reads: its matched files, or the whole project.

        `excluding`: project-relative files left out (a dataset case's family files, whose
        content its definition digest holds: editing one row must not touch the other cases).
        """
        if excluding:
            return self._digest_without(inputs=inputs, excluding=excluding)
        if inputs is None:
            return self._whole_project_digest()
        if inputs not in self._digests:
            self._digests[inputs] = self.state.digest_of(paths=self.files(inputs=inputs))
        return self._digests[inputs]

    def digest_before_modes(self, *, inputs: tuple[str, ...], excluding: tuple[str, ...]) -> str:
        """What an eb before file modes recorded as `digest(inputs=..., excluding=...)` for
        declared inputs: `eb status` tells by it an earlier eb's run folder whose files are as
        they were. Never a cache key."""
        left_out = frozenset(excluding)
        paths = [p for p in self.files(inputs=inputs) if p not in left_out]
        return self.state.digest_before_modes(paths=paths)

    def _digest_without(self, *, inputs: tuple[str, ...] | None, excluding: tuple[str, ...]) -> str:
        key = (inputs, excluding)
        found = self._excluded.get(key)
        if found is None:
            paths = self._read_paths(inputs=inputs, excluding=excluding)
            found = self._excluded[key] = self.state.digest_of(paths=paths)
        return found

    def _read_paths(
        self, *, inputs: tuple[str, ...] | None, excluding: tuple[str, ...]
    ) -> list[str]:
        """The files a digest of (`inputs`, `excluding`) is over, sorted."""
        left_out = frozenset(excluding)
        if inputs is None:
            own = self._own()
            return [p for p in self.state.paths if p not in own and p not in left_out]
        return [p for p in self.files(inputs=inputs) if p not in left_out]

    def read_again(self, *, definitions: Iterable[dict[str, Any]]) -> CheckInputs:
        """A reader of the same project for `definitions` that reads its files as they are
        now (this one keeps the state it took)."""
        return CheckInputs(config=self._config, definitions=definitions)

    def changed_since(
        self, *, earlier: CheckInputs, inputs: tuple[str, ...] | None, excluding: tuple[str, ...]
    ) -> list[str]:
        """The files of what a check reads (`digest`'s arguments) added, removed or changed
        between `earlier`'s read of the project and this one's, sorted; none when the digests
        agree (then no file is compared)."""
        before = earlier.digest(inputs=inputs, excluding=excluding)
        if self.digest(inputs=inputs, excluding=excluding) == before:
            return []
        old = set(earlier._read_paths(inputs=inputs, excluding=excluding))
        new = set(self._read_paths(inputs=inputs, excluding=excluding))
        return [
            path
            for path in sorted(old | new)
            if path not in old
            or path not in new
            or earlier.state.read_identity_of(path) != self.state.read_identity_of(path)
        ]

    def _whole_project_digest(self) -> str:
        """The state of every project file except eb's own config and calibration files."""
        if self._whole_digest is None:
            state = self.state
            own = self._own()
            if own.isdisjoint(state.files):
                self._whole_digest = state.digest()
            else:
                kept = [path for path in state.paths if path not in own]
                self._whole_digest = state.digest_of(paths=kept)
        return self._whole_digest


def input_lines(*, config: ConfigDoc, definitions: Sequence[dict[str, Any]]) -> list[list[str]]:
    """For `eb list --inputs`: per definition, the lines that describe what it reads. Its
    patterns and the files they match are shown with their control characters as `\\xNN`: a
    pattern or a file name with a line break (both come with a pull request) would otherwise
    start a line of eb's output, which GitHub Actions runs as a `::` workflow command."""
    reader = CheckInputs(config=config, definitions=definitions)
    out: list[list[str]] = []
    for definition in definitions:
        inputs = declared_inputs(definition)
        if inputs is None:
            out.append(["  inputs: not declared (the whole project counts)"])
            continue
        matched = reader.files(inputs=inputs)
        noun = "file" if len(matched) == 1 else "files"
        shown = ", ".join(visible(pattern) for pattern in inputs) or "(none)"
        header = f"  inputs: {shown} ({len(matched)} {noun})"
        out.append([header, *(f"    {visible(path)}" for path in matched)])
    return out


def declared_reader(*, config: ConfigDoc, checks: Sequence[PlannedCheck]) -> CheckInputs | None:
    """A reader of the files the checks' `inputs:` name (none of the whole project), or None
    when no check declares any."""
    definitions = [c.definition for c in checks if declared_inputs(c.definition) is not None]
    return CheckInputs(config=config, definitions=definitions) if definitions else None


def unmatched_inputs(
    *, checks: Sequence[PlannedCheck], reader: CheckInputs | None
) -> list[ProblemModel]:
    """A warning for each `inputs:` pattern that matches no file now (once per check file:
    a family's cases share theirs). Such a check is keyed on nothing there, so a typo
    (`srcc/**`) would let its verdict be reused whatever changes in `src/`. The patterns a
    family's rows fill (`prompts/{{ case.file }}`) that match no file are one warning for the
    family, however many of its cases name a missing file."""
    from eval_banana.projectstate.git import NotARepository

    if reader is None:
        return []
    # In check order, a single check's patterns once per file, a family's cases together.
    groups: dict[tuple[str, str, tuple[str, ...]], list[tuple[str, tuple[str, ...]]]] = {}
    for check in checks:
        declared = declared_inputs(check.definition)
        if not declared:
            continue
        if check.family is None:
            groups.setdefault((check.source_path, check.id, declared), [(check.id, declared)])
        else:
            group = groups.setdefault((check.source_path, check.family, ()), [])
            group.append((check.case_id or check.id, declared))
    found: list[ProblemModel] = []
    try:
        for (source_path, name, _), cases in groups.items():
            found.extend(
                _unmatched_of_file(name=name, source_path=source_path, cases=cases, reader=reader)
            )
    except (ProjectStateError, NotARepository, OSError):
        return []  # the run's input digests say why, once
    return found


# How many of a family's cases that name a missing file its warning shows.
_CASES_SHOWN = 3


def _unmatched_of_file(
    *,
    name: str,
    source_path: str,
    cases: Sequence[tuple[str, tuple[str, ...]]],
    reader: CheckInputs,
) -> list[ProblemModel]:
    """The warnings of one check file's checks (a single check, or a family's `cases`, each
    its case id and its filled patterns): a pattern that matches no file in every case, as
    written, once; the patterns that match none in only some cases (filled from their rows)
    summed up in one warning naming how many cases, the first few patterns and the fix."""
    unmatched_by_inputs: dict[tuple[str, ...], list[str]] = {}
    per_case: list[tuple[str, list[str]]] = []
    for case_id, declared in cases:
        if declared not in unmatched_by_inputs:
            unmatched_by_inputs[declared] = reader.unmatched(inputs=declared)
        per_case.append((case_id, unmatched_by_inputs[declared]))
    everywhere = [
        pattern
        for pattern in per_case[0][1]
        if all(pattern in unmatched for _, unmatched in per_case[1:])
    ]
    found = [
        _unmatched_warning(name=name, source_path=source_path, pattern=pattern, reader=reader)
        for pattern in everywhere
    ]
    missing = [
        (case_id, [pattern for pattern in unmatched if pattern not in everywhere])
        for case_id, unmatched in per_case
    ]
    missing = [(case_id, patterns) for case_id, patterns in missing if patterns]
    if missing:
        found.append(
            _family_warning(
                family=name,
                source_path=source_path,
                missing=missing,
                cases=len(per_case),
                reader=reader,
            )
        )
    return found


def _unmatched_warning(
    *, name: str, source_path: str, pattern: str, reader: CheckInputs
) -> ProblemModel:
    """The warning of one pattern that matches no file, for a check or a whole family."""
    why, hint = _why_unmatched(pattern=pattern, reader=reader)
    return ProblemModel(
        message=f"Check '{name}': inputs pattern {pattern!r} matches no file, so no change "
        f"there reruns it{why}",
        file=source_path,
        field_path="inputs",
        hint=hint,
    )


def _family_warning(
    *,
    family: str,
    source_path: str,
    missing: Sequence[tuple[str, list[str]]],
    cases: int,
    reader: CheckInputs,
) -> ProblemModel:
    """One warning for a family's cases whose rows fill an `inputs:` pattern naming no file:
    how many, the first few cases with their patterns (the first with its likeliest cause)."""
    shown: list[str] = []
    for case_id, patterns in missing[:_CASES_SHOWN]:
        why = _why_unmatched(pattern=patterns[0], reader=reader)[0] if not shown else ""
        written = ", ".join(repr(pattern) for pattern in patterns)
        shown.append(f"case {case_id!r}: {written}{why}")
    more = len(missing) - len(shown)
    if more:
        shown.append(f"and {more} more")
    noun = "case's" if len(missing) == 1 else "cases'"
    return ProblemModel(
        message=f"Family '{family}': {len(missing)} of its {cases} {noun} inputs patterns, "
        f"filled from their rows, match no file ({'; '.join(shown)}), so no change there "
        "reruns them",
        file=source_path,
        field_path="inputs",
        hint="add the files the rows name, or fix the row fields that fill the pattern "
        "(`eb list --inputs` shows what each case's patterns match)",
    )


def _why_unmatched(*, pattern: str, reader: CheckInputs) -> tuple[str, str]:
    """What the warning of a pattern that matches nothing adds to its message (the console
    shows a warning's message alone), and its hint: the likeliest cause that shows, first a
    folder `[discovery] exclude_dirs` leaves out, then a link to a folder on its way, then a
    glob character in a file's name, then a near name."""
    root = str(reader.root)
    folder = excluded_folder(pattern=pattern, names=reader.excluded_names)
    if folder is not None:
        return (
            f" ({folder!r} is a folder [discovery] exclude_dirs leaves out, "
            "which no pattern reaches into)",
            f"take {folder.rstrip('/').rsplit('/', 1)[-1]!r} out of [discovery] "
            "exclude_dirs to key the check on it, or drop the pattern",
        )
    through = _through_folder_link(pattern=pattern, root=root)
    if through is not None:
        return through
    meant = pattern_meant(pattern=pattern, root=root)
    guess = f" (did you mean {meant!r}?)" if meant is not None else ""
    slip = literal_slip(pattern=pattern, root=root)
    if slip is not None:
        guess = f" ({slip})"
    hint = (
        "fix the pattern (`eb list --inputs` shows what each matches), "
        "or drop it if what it named is gone"
    )
    return guess, hint


def _through_folder_link(*, pattern: str, root: str) -> tuple[str, str] | None:
    """The words for a pattern whose folders pass a symbolic link to a folder (`out/**` with
    `out -> build`), which no pattern follows: git records such a link by its text alone, so
    nothing below it is a file of the project's state. None when its way holds no such link.
    Asked only of a pattern that matched nothing: a walk of the project never reads links."""
    body = normalize(pattern)
    found = folder_link_on_the_way(path=literal_prefix(body), root=root)
    if found is None:
        return None
    link, target, leads_to = found
    if leads_to is None:
        return (
            f" ({link!r} is a symbolic link to {target!r}, a folder outside the project, "
            "and no pattern follows a link to a folder)",
            "no pattern reaches outside the project: drop the pattern, or bring the files it "
            f"meant into the project (the pattern {link!r} keys the check on where the link "
            "leads)",
        )
    where = f"the folder {leads_to!r}" if leads_to else "the project root"
    if target != leads_to:
        where = f"{target!r}, {where}"
    rest = body[len(link) :].lstrip("/")
    real = "/".join(part for part in (escaped(leads_to), rest) if part) or "**"
    return (
        f" ({link!r} is a symbolic link to {where}, and no pattern follows a link to a folder)",
        f"name the folder's real path instead, {real!r} (add {link!r} too, so that pointing "
        f"the link elsewhere counts), or list the files you mean by their paths in "
        f"{leads_to or '.'!r}",
    )


def excluded_folder(*, pattern: str, names: Iterable[str]) -> str | None:
    """The folder (`build/`) a pattern points into whose name `[discovery] exclude_dirs`
    leaves out, or None: the parts before the first wildcard are the pattern's folders."""
    excluded = set(names)
    parts: list[str] = []
    for part in pattern.strip("/").split("/"):
        if any(char in part for char in "*?["):
            break
        parts.append(part)
        if part in excluded:
            return "/".join(parts) + "/"
    return None


def artifact_ids(*, checks: Iterable[PlannedCheck], project_root: Path) -> dict[str, str]:
    """Assertions check id -> the git blob id of the artifact it grades, or `absent`. The
    artifact always counts, whether `inputs:` name it or git ignores it: it is what the verdict
    is about. Each path is read once (a family's cases often grade one file); a run computes
    them once, for its cache keys and for execute.json, which `eb status` compares."""
    by_path: dict[str, str] = {}
    found: dict[str, str] = {}
    for check in checks:
        if check.type != "assertions":
            continue
        artifact = artifact_of(check)
        if artifact not in by_path:
            by_path[artifact] = artifact_id(artifact=artifact, project_root=project_root)
        found[check.id] = by_path[artifact]
    return found


def artifact_of(check: PlannedCheck) -> str:
    """The project-relative path an assertions check grades, as its plan holds it."""
    return str(check.definition.get("artifact") or "")


def artifact_id(*, artifact: str, project_root: Path) -> str:
    """The git blob id of the artifact at `artifact` now, or `absent`; a symbolic link's id
    holds its text and the id of the file it leads to, the bytes the check grades."""
    from eval_banana.projectstate.blobs import read_identity

    found = read_identity(path=str(project_root / artifact))
    return "absent" if found is None else found.id


def tracked_digests(
    *,
    checks: Sequence[PlannedCheck],
    reader: CheckInputs | None,
    artifacts: Mapping[str, str],
    project_root: Path,
) -> dict[str, str] | None:
    """Check id -> `sha256:<hex>` of the files git tracks among what it reads: the files its
    `inputs:` match (its family files left out, as in `input_digests`) and an assertions
    check's artifact (`artifacts`: its id, `artifact_ids`); only checks with either. These tell
    the commit (and local changes to it) a check ran on, never a build output git does not
    track, which the job that merges shards need not hold. None outside a git work tree."""
    graded = [check for check in checks if check.id in artifacts]
    tracked_artifacts = tracked_among(
        root=project_root, paths=sorted({artifact_of(check) for check in graded})
    )
    if tracked_artifacts is None:
        return None
    declared = {
        check.id: patterns
        for check in checks
        if (patterns := declared_inputs(check.definition)) is not None
    }
    if declared and (reader is None or reader.state.source != "git"):
        return None  # git lists nothing of the project (an ignored folder)
    found: dict[str, str] = {}
    for check in checks:
        parts: list[str] = []
        patterns = declared.get(check.id)
        if patterns is not None and reader is not None:
            left_out = frozenset(check.family_files or ())
            files = [path for path in reader.files(inputs=patterns) if path not in left_out]
            parts.append(reader.state.digest_of(paths=reader.state.tracked(paths=files)))
        if check.id in artifacts:
            artifact = artifact_of(check)
            tracked = artifact in tracked_artifacts
            parts.append(f"{artifact}\0{artifacts[check.id]}" if tracked else "")
        if parts:
            found[check.id] = _tracked_digest(parts)
    return found


def _tracked_digest(parts: Sequence[str]) -> str:
    digest = hashlib.sha256(b"eval-banana/tracked-inputs/v1\0")
    digest.update("\0\0".join(parts).encode("utf-8", "surrogateescape"))
    return f"sha256:{digest.hexdigest()}"


# --- a run's use of them (the execute stage) ---------------------------------------------------


def run_inputs(
    *, config: ConfigDoc, checks: list[PlannedCheck], given: CheckInputs | None
) -> CheckInputs | None:
    """The one reader of input states for this run: the caller's, else one over the checks
    the cache keys (every check) or, with the cache off, only those that declare `inputs:`."""
    if given is not None:
        return given
    caching = config.settings.cache.mode != "off"
    definitions = [
        check.definition
        for check in checks
        if caching or declared_inputs(check.definition) is not None
    ]
    return CheckInputs(config=config, definitions=definitions) if definitions else None


def shared_artifacts(*, project_root: Path, checks: list[PlannedCheck]) -> SharedArtifacts | None:
    """The run's assertions artifacts, each parsed once however many of `checks` grade it;
    None when no assertions check is to run (their module is then never imported)."""
    if not any(check.type == "assertions" for check in checks):
        return None
    from eval_banana.assertions.shared import SharedArtifacts

    return SharedArtifacts(
        project_root=project_root,
        readers=(artifact_of(check) for check in checks if check.type == "assertions"),
    )


def input_digests(*, checks: list[PlannedCheck], reader: CheckInputs | None) -> dict[str, str]:
    """Check id -> digest of what its `inputs:` match now; empty when the state is unreadable
    (eb status then cannot see input changes, as for a check without `inputs:`)."""
    from eval_banana.projectstate.git import NotARepository

    digests: dict[str, str] = {}
    if reader is None:
        return digests
    try:
        for check in checks:
            declared = declared_inputs(check.definition)
            if declared is not None:
                # A case's family files are in its definition digest, as in its cache key:
                # editing one row leaves the other cases' inputs as they were.
                digests[check.id] = reader.digest(
                    inputs=declared, excluding=tuple(check.family_files or ())
                )
    except (ProjectStateError, NotARepository, OSError):
        logger.warning("Could not read the checks' input files", exc_info=True)
        return {}
    return digests


def tracked_input_digests(
    *,
    checks: list[PlannedCheck],
    reader: CheckInputs | None,
    artifacts: Mapping[str, str],
    project_root: Path,
) -> dict[str, str]:
    """`tracked_digests` as execute.json records them: none outside a git work tree, nor when
    the state is unreadable (`eb merge` then compares every file, as `input_digests` hold it)."""
    from eval_banana.projectstate.git import NotARepository

    try:
        found = tracked_digests(
            checks=checks, reader=reader, artifacts=artifacts, project_root=project_root
        )
    except (ProjectStateError, NotARepository, OSError):
        logger.warning("Could not tell which of the checks' input files git tracks", exc_info=True)
        return {}
    return found or {}
