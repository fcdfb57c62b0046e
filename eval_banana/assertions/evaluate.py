"""Reading an artifact and evaluating assertions on it; every undecidable case fails."""

from __future__ import annotations

import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from eval_banana.assertions.artifactdata import ArtifactUnusable, parse_artifact
from eval_banana.assertions.operators import (
    OPERATORS,
    VERDICTS,
    ExpectedFrom,
    NotEvaluated,
    describe,
    json_kind,
    operand_text,
    operator_for,
)
from eval_banana.assertions.paths import (
    ArtifactPathError,
    Each,
    Index,
    Key,
    PathSyntaxError,
    Segment,
    describe_location,
    parse_path,
    resolve_artifact,
)
from eval_banana.core.lfs import FETCH_HINT, pointer_size, pointer_words
from eval_banana.core.lookalike import alike_note, python_quoted, reveal_for
from eval_banana.core.realpaths import path_trouble
from eval_banana.core.textfiles import unicode_said

# Artifacts are parsed whole; beyond this size the check fails instead of exhausting memory.
# A YAML one costs several times more memory per byte than JSON: it is held to a smaller cap,
# artifactdata.MAX_YAML_ARTIFACT_BYTES.
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
# The failing elements of a `[*]` a reason tells; the others are counted, not described (a
# million-element array would otherwise cost a million messages nobody reads).
TOLD_ELEMENTS = 3


class AssertionLike(Protocol):
    """What evaluation needs of an assertion (the pydantic models satisfy it)."""

    @property
    def path(self) -> str: ...

    @property
    def op(self) -> str: ...


@dataclass(frozen=True)
class AssertionOutcome:
    """One assertion's verdict; `message` says why it failed (or 'holds').

    `evaluated` is False for a failure that says nothing of the artifact: it was unusable, the
    assertion is malformed, or a value at its path could not be looked at."""

    path: str
    op: str
    ok: bool
    message: str
    evaluated: bool = True

    def as_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "path": self.path,
            "op": self.op,
            "ok": self.ok,
            "message": self.message,
        }
        if not self.evaluated:
            shown["evaluated"] = False
        return shown


@dataclass(frozen=True)
class LoadedArtifact:
    """The parsed artifact, or `problem` (naming the artifact) when it cannot be used."""

    relative_path: str
    document: Any = None
    format: str | None = None
    problem: str | None = None


def _read_bytes(*, path: Path, max_bytes: int) -> bytes:
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            raise ArtifactUnusable("is a directory, not a file")
        if not stat.S_ISREG(mode):
            # Opening a FIFO or a device could block the run forever.
            raise ArtifactUnusable("is not a regular file")
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise ArtifactUnusable("does not exist") from None
    except OSError as exc:
        raise ArtifactUnusable(f"cannot be read: {path_trouble(exc)}") from None
    if len(data) > max_bytes:
        raise ArtifactUnusable(f"is larger than {max_bytes} bytes")
    return data


def load_artifact(
    *, project_root: Path, artifact: str, max_bytes: int = MAX_ARTIFACT_BYTES
) -> LoadedArtifact:
    """Read and parse the artifact at `artifact` (relative to `project_root`), never raising."""
    try:
        path = resolve_artifact(project_root=project_root, text=artifact)
        data = _read_bytes(path=path, max_bytes=max_bytes)
        lfs_size = pointer_size(data)
        if lfs_size is not None:
            # Parsed, a pointer is a YAML string or broken JSON: the check would fail on
            # every assertion for a reason that is not the artifact's.
            raise ArtifactUnusable(
                f"is {pointer_words(size=lfs_size)}, not the file itself: {FETCH_HINT}"
            )
        try:
            # utf-8-sig: a leading byte-order mark is tolerated, as for check files.
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            said = unicode_said(data)
            raise ArtifactUnusable(said or f"is not UTF-8 text: {exc.reason}") from None
        if not text.strip():
            raise ArtifactUnusable("is empty")
        document, kind = parse_artifact(data=data, text=text, suffix=path.suffix.lower())
    except ArtifactPathError as exc:
        return LoadedArtifact(relative_path=artifact, problem=str(exc))
    except ArtifactUnusable as exc:
        return LoadedArtifact(relative_path=artifact, problem=f"artifact {artifact} {exc}")
    return LoadedArtifact(relative_path=artifact, document=document, format=kind)


def headline(*, path: str, op: str, value: Any) -> str:
    """How an assertion is named in messages: `steps lengthAtLeast 2`."""
    if op not in OPERATORS or op == "exists":
        return f"{path} {op}"
    return f"{path} {op} {operand_text(value=value)}"


def _missing_key(node: dict[Any, Any], name: str) -> str:
    """A key a path names that the object lacks, quoted; and a key it has that prints alike,
    both with the difference shown."""
    for key in node:
        if isinstance(key, str):
            reveal = reveal_for(expected=name, found=key)
            if reveal != "none":
                shown, theirs = (
                    python_quoted(name, reveal=reveal),
                    python_quoted(key, reveal=reveal),
                )
                return f"{shown} but has {theirs} ({alike_note(reveal)})"
    return repr(name)


class _Walker:
    """Resolves one path against a document with any-element fan-out, failing closed."""

    def __init__(
        self,
        *,
        segments: tuple[Segment, ...],
        op: str,
        value: Any,
        expected_from: ExpectedFrom | None = None,
    ) -> None:
        self._segments = segments
        self._operator = operator_for(op=op, expected_from=expected_from)
        self._verdict = VERDICTS[op]
        self._value = value
        self._fans_out = any(isinstance(segment, Each) for segment in segments)
        # (id(container), segment index) -> verdict: YAML aliases can share one container among
        # many places, and without this a chain of aliases makes the walk exponential. A
        # reason needs no such memo: it tells one element of each `[*]` in full (see
        # `_any_element`), so it is walked once per level, and each at its own location.
        self._held: dict[tuple[int, int], bool] = {}
        # A value at the path the operator could not look at; when the path then fails, that
        # value might have made it hold, so the failure says nothing of the artifact.
        self.not_evaluated = False
        # Why, for one among the elements a `[*]` judges without telling (None: none was).
        self.untold_not_evaluated: str | None = None

    def _operate(self, *, found: Any) -> str | None:
        try:
            return self._operator(found=found, value=self._value)
        except NotEvaluated as exc:
            self.not_evaluated = True
            return str(exc)

    def _verdict_of(self, *, found: Any) -> bool:
        try:
            return self._verdict(found=found, value=self._value)
        except NotEvaluated as exc:
            self.not_evaluated = True
            self.untold_not_evaluated = self.untold_not_evaluated or str(exc)
            return False

    def walk(
        self, *, node: Any, index: int, location: tuple[Segment, ...], brief: bool = False
    ) -> str | None:
        """None when the rest of the path from `node` satisfies the operator, else why not.
        `brief`: a `[*]` below with several elements is said to fail, its elements untold."""
        if index == len(self._segments):
            failure = self._operate(found=node)
            if failure is None or not self._fans_out:
                return failure
            return f"at {describe_location(segments=location)}: {failure}"
        return self._step(node=node, index=index, location=location, brief=brief)

    def holds(self, *, node: Any, index: int) -> bool:
        """Whether `walk` from `node` returns None, found without saying why not."""
        if index == len(self._segments):
            return self._verdict_of(found=node)
        if not isinstance(node, dict | list):
            return False  # a scalar has no key or element for the rest of the path
        key = (id(node), index)
        if key not in self._held:
            self._held[key] = self._step_holds(node=node, index=index)
        return self._held[key]

    def _step_holds(self, *, node: dict[Any, Any] | list[Any], index: int) -> bool:
        segment = self._segments[index]
        if isinstance(segment, Key):
            if not isinstance(node, dict) or segment.name not in node:
                return False
            return self.holds(node=node[segment.name], index=index + 1)
        if not isinstance(node, list):
            return False
        if isinstance(segment, Index):
            inside = segment.position < len(node)
            return inside and self.holds(node=node[segment.position], index=index + 1)
        return any(self.holds(node=element, index=index + 1) for element in node)

    def _step(
        self, *, node: Any, index: int, location: tuple[Segment, ...], brief: bool
    ) -> str | None:
        segment = self._segments[index]
        where = describe_location(segments=location)
        if isinstance(segment, Key):
            if not isinstance(node, dict):
                return (
                    f"path not found: {where} is {describe(value=node)}, not an object, "
                    f"so it has no key {segment.name!r}"
                )
            if segment.name not in node:
                return f"path not found: {where} has no key {_missing_key(node, segment.name)}"
            return self.walk(
                node=node[segment.name],
                index=index + 1,
                location=location + (segment,),
                brief=brief,
            )
        if not isinstance(node, list):
            wanted = "[*]" if isinstance(segment, Each) else f"[{segment.position}]"
            return (
                f"path not found: {where} is {describe(value=node)}, not an array, "
                f"so it has no element {wanted}"
            )
        if isinstance(segment, Index):
            if segment.position >= len(node):
                return (
                    f"path not found: {where} has no element [{segment.position}] "
                    f"(it is {describe(value=node)})"
                )
            return self.walk(
                node=node[segment.position],
                index=index + 1,
                location=location + (segment,),
                brief=brief,
            )
        if brief and len(node) > 1:
            if self.holds(node=node, index=index):
                return None
            return f"none of the {len(node)} elements of {where} satisfies it"
        return self._any_element(
            node=node, index=index, location=location, where=where, brief=brief
        )

    def _any_element(
        self,
        *,
        node: list[Any],
        index: int,
        location: tuple[Segment, ...],
        where: str,
        brief: bool,
    ) -> str | None:
        if not node:
            return f"path not found: {where} is an empty array, so no element can satisfy [*]"
        told: list[str] = []
        for position, element in enumerate(node):
            if len(told) < TOLD_ELEMENTS:
                # The first element's reason is told in full, the next ones' only down to their
                # own `[*]`: told in full at each level, a reason would hold 3**depth of them.
                failure = self.walk(
                    node=element,
                    index=index + 1,
                    location=location + (Index(position),),
                    brief=brief or bool(told),
                )
                if failure is None:
                    return None
                told.append(failure)
            elif self.holds(node=element, index=index + 1):
                return None
        if len(node) == 1:
            return f"the only element of {where} does not satisfy it: {told[0]}"
        if any(isinstance(segment, Each) for segment in self._segments[index + 1 :]):
            # The first element's reason may list elements of its own: kept apart from these.
            told[0] = f"({told[0]})"
        untold = len(node) - len(told)
        more = [f"and {untold} more"] if untold else []
        listed = " | ".join([*told, *more])
        return f"none of the {len(node)} elements of {where} satisfies it: {listed}"


def evaluate_assertion(
    *,
    document: Any,
    path: str,
    op: str,
    value: Any = None,
    expected_from: ExpectedFrom | None = None,
) -> AssertionOutcome:
    """Evaluate one assertion on a parsed artifact; never raises for a bad document.
    `expected_from`: where `value` was written, when known (it words a fix)."""
    name = headline(path=path, op=op, value=value)
    if op not in OPERATORS:
        return _unevaluated(path=path, op=op, message=f"{name}: unknown operator")
    try:
        segments = parse_path(text=path)
    except PathSyntaxError as exc:
        # Validation rejects these first; failing here keeps a bypassed check fail-closed.
        return _unevaluated(path=path, op=op, message=f"{name}: {exc}")
    walker = _Walker(segments=segments, op=op, value=value, expected_from=expected_from)
    try:
        failure = walker.walk(node=document, index=0, location=())
    except RecursionError:
        return _unevaluated(
            path=path, op=op, message=f"{name}: the data is nested too deeply to evaluate"
        )
    if failure is None:
        return AssertionOutcome(path=path, op=op, ok=True, message=f"{name}: holds")
    if walker.untold_not_evaluated is not None:
        failure += f" (one of those could not be evaluated: {walker.untold_not_evaluated})"
    return AssertionOutcome(
        path=path,
        op=op,
        ok=False,
        message=f"{name}: {failure}",
        evaluated=not walker.not_evaluated,
    )


def _unevaluated(*, path: str, op: str, message: str) -> AssertionOutcome:
    return AssertionOutcome(path=path, op=op, ok=False, message=message, evaluated=False)


def evaluate_all(
    *,
    document: Any,
    assertions: Sequence[AssertionLike],
    expected_from: Sequence[ExpectedFrom | None] = (),
) -> list[AssertionOutcome]:
    """Evaluate every assertion (no short-circuit, so every failure is reported).
    `expected_from`: where each assertion's value was written, in order, when known."""
    return [
        evaluate_assertion(
            document=document,
            path=assertion.path,
            op=assertion.op,
            value=getattr(assertion, "value", None),
            expected_from=expected_from[index] if index < len(expected_from) else None,
        )
        for index, assertion in enumerate(assertions)
    ]


def fail_all(*, assertions: Sequence[AssertionLike], problem: str) -> list[AssertionOutcome]:
    """Every assertion fails with the same reason (missing or unusable artifact)."""
    outcomes = []
    for assertion in assertions:
        name = headline(
            path=assertion.path, op=assertion.op, value=getattr(assertion, "value", None)
        )
        outcomes.append(
            _unevaluated(path=assertion.path, op=assertion.op, message=f"{name}: {problem}")
        )
    return outcomes


def summarize(*, outcomes: Sequence[AssertionOutcome]) -> str:
    """One-line reason listing every failing assertion, or that all hold."""
    failed = [outcome for outcome in outcomes if not outcome.ok]
    if not outcomes:
        return "no assertions to evaluate"
    if not failed:
        noun = "assertion holds" if len(outcomes) == 1 else "assertions hold"
        return f"all {len(outcomes)} {noun}" if len(outcomes) > 1 else f"1 {noun}"
    messages = "; ".join(outcome.message for outcome in failed)
    return f"{len(failed)} of {len(outcomes)} assertions failed: {messages}"


__all__ = [
    "AssertionLike",
    "AssertionOutcome",
    "LoadedArtifact",
    "MAX_ARTIFACT_BYTES",
    "evaluate_all",
    "evaluate_assertion",
    "fail_all",
    "headline",
    "json_kind",
    "load_artifact",
    "summarize",
]
