"""Assertion paths: parsing text into segments, and rendering concrete locations."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from eval_banana.core.realpaths import real_path

# `parse_path`'s grammar as a regex; a test keeps them equal.
_BRACKET = r"\[(?:[0-9]+|\*)\]"
_KEY = r"[^.\[\]]+"


# JSONPath writes the document's root as `$` (`$.a`, `$[0]`); a path here starts at that root
# already, so a first key `$` is refused rather than looked up (docs/assertions.md#paths).
_JSONPATH_ROOT = "$"
_NOT_THE_ROOT = r"(?!\$(?:[.\[]|(?![\s\S])))"


def _path_pattern(bracket: str) -> str:
    return (
        rf"^{_NOT_THE_ROOT}(?:{_KEY}(?:{bracket})*|(?:{bracket})+)"
        rf"(?:\.{_KEY}(?:{bracket})*)*$"
    )


PATH_PATTERN = _path_pattern(_BRACKET)
# A dataset family's `{{ case.<field> }}` placeholder, as the published check schema allows it
# where the family fills a value in (an index, a length): the schema cannot see whether the
# file is a family, so it accepts the placeholder and `eb validate` refuses it elsewhere.
CASE_PLACEHOLDER = r"\{\{\s*case\.[^\s{}]+\s*\}\}"
# A value that is one placeholder and nothing else, not even a space (a length the row gives).
WHOLE_PLACEHOLDER_PATTERN = rf"^{CASE_PLACEHOLDER}$"
# PATH_PATTERN for editors (check.schema.json): an index may also be a placeholder.
EDITOR_PATH_PATTERN = _path_pattern(rf"\[(?:[0-9]+|\*|{CASE_PLACEHOLDER})\]")

_MAX_PATH_CHARS = 1000


# Named tuples, not dataclasses: every check file's validation parses paths, and importing
# dataclasses (with inspect) cost it more than the parsing.
class Key(NamedTuple):
    """Look up an own key of an object, matched exactly."""

    name: str


class Index(NamedTuple):
    """Take element `position` of an array."""

    position: int


class Each(NamedTuple):
    """`[*]`: any element of an array may satisfy the rest of the path."""


Segment = Key | Index | Each


class PathSyntaxError(ValueError):
    """A path that breaks the path syntax; always a definition error, never a failed assertion.
    `hint` says how to write it when the message alone does not."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def _fail(*, text: str, at: int, problem: str) -> PathSyntaxError:
    return PathSyntaxError(f"invalid path {text!r}: {problem} at character {at + 1}")


def _jsonpath_root(*, text: str) -> PathSyntaxError:
    """A path written from JSONPath's root (`$.a`): the fix is the same path without it."""
    rest = text[len(_JSONPATH_ROOT) :].removeprefix(".")
    try:
        parse_path(text=rest)
        fix = f"write `{rest}`: a path starts at the artifact's top level."
    except PathSyntaxError:
        fix = "write the path from the artifact's top level, without `$` (`title`, `[0].id`)."
    return PathSyntaxError(
        f"invalid path {text!r}: '$' (JSONPath's root) is not part of an assertion path",
        hint=fix,
    )


def _parse_bracket(*, text: str, start: int) -> tuple[Segment, int]:
    """Parse `[n]` or `[*]` starting at `start` (a '['); return it and the index after ']'."""
    close = text.find("]", start + 1)
    if close == -1:
        raise _fail(text=text, at=start, problem="unclosed bracket '['")
    inner = text[start + 1 : close]
    if inner == "*":
        return Each(), close + 1
    # ASCII digits only: str.isdigit() would accept other scripts' digits.
    if not inner or not all("0" <= char <= "9" for char in inner):
        raise _fail(
            text=text, at=start, problem=f"index {inner!r} is not a non-negative integer or '*'"
        )
    return Index(int(inner)), close + 1


def parse_path(*, text: str) -> tuple[Segment, ...]:
    """Parse a path such as `steps[*].test` or `[0].name`; raise PathSyntaxError when invalid."""
    if not isinstance(text, str):
        raise PathSyntaxError("path must be a string")
    if not text:
        raise PathSyntaxError("invalid path '': the path is empty")
    if len(text) > _MAX_PATH_CHARS:
        raise PathSyntaxError(
            f"path is {len(text)} characters long; the limit is {_MAX_PATH_CHARS}"
        )
    segments: list[Segment] = []
    position = 0
    length = len(text)
    first = True
    while True:
        # One dot-separated part: an optional key, then any number of brackets.
        start = position
        while position < length and text[position] not in ".[]":
            position += 1
        key = text[start:position]
        if first and key == _JSONPATH_ROOT:
            raise _jsonpath_root(text=text)
        if key:
            segments.append(Key(key))
        elif not (first and position < length and text[position] == "["):
            # Brackets may stand alone only at the very start.
            raise _fail(text=text, at=start, problem="empty segment")
        while position < length and text[position] == "[":
            segment, position = _parse_bracket(text=text, start=position)
            segments.append(segment)
        if position == length:
            return tuple(segments)
        char = text[position]
        if char == "]":
            raise _fail(text=text, at=position, problem="']' without a matching '['")
        if char != ".":
            raise _fail(text=text, at=position, problem=f"unexpected {char!r} after ']'")
        position += 1
        first = False
        if position == length:
            raise _fail(text=text, at=position - 1, problem="empty segment after the last '.'")


def render_path(*, segments: tuple[Segment, ...] | list[Segment]) -> str:
    """The text of a (concrete or pattern) path; the empty path is the artifact's top level."""
    parts: list[str] = []
    for segment in segments:
        if isinstance(segment, Key):
            parts.append(f".{segment.name}" if parts else segment.name)
        elif isinstance(segment, Index):
            parts.append(f"[{segment.position}]")
        else:
            parts.append("[*]")
    return "".join(parts)


def describe_location(*, segments: tuple[Segment, ...] | list[Segment]) -> str:
    """A location for messages: the rendered path, or 'the top level' for the root."""
    return render_path(segments=segments) or "the top level"


class ArtifactPathError(ValueError):
    """An artifact path that is empty, absolute, or escapes the project root."""


def check_artifact_path(*, text: str) -> str:
    """Check statically that `text` names a file inside the project root; return it unchanged."""
    if not text.strip():
        raise ArtifactPathError("artifact must be a non-empty path relative to the project root")
    if "\x00" in text:
        raise ArtifactPathError("artifact must not contain a NUL character")
    if text.startswith(("/", "\\")) or (len(text) >= 2 and text[1] == ":" and text[0].isalpha()):
        raise ArtifactPathError(
            f"artifact {text!r} is absolute; give a path relative to the project root"
        )
    depth = 0
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            depth -= 1
            if depth < 0:
                raise ArtifactPathError(f"artifact {text!r} escapes the project root through '..'")
        else:
            depth += 1
    if depth == 0:
        raise ArtifactPathError(f"artifact {text!r} names the project root, not a file in it")
    return text


def resolve_artifact(*, project_root: Path, text: str) -> Path:
    """The artifact's real location; ArtifactPathError when it (or a symlink) leaves the root."""
    check_artifact_path(text=text)
    root = real_path(project_root)
    resolved = real_path(root / text)
    if not resolved.is_relative_to(root):
        raise ArtifactPathError(f"artifact {text} resolves outside the project root")
    return resolved
