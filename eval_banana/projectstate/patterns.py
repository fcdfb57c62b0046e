"""Input patterns: globs relative to the project root, matched against project paths.

Semantics (docs/incremental.md):
- `/` separates folders; `*` matches any run of characters within one name, `?` one character,
  `[abc]` / `[!abc]` one character from (or not from) a set. Names starting with `.` match too.
- `**` as a whole segment matches any number of folders, none included: `src/**/*.py` matches
  `src/a.py` and `src/x/y/a.py`; a trailing `/**` matches everything below a folder.
- A pattern that matches a folder matches every file inside it (`docs` = `docs/**`).
- `!pattern` excludes: a file is an input when some plain pattern matches it and no `!` one
  does, whatever the order.
- A pattern may not leave the project root: absolute paths and `..` are refused, and so is `\\`
  (write `/` between folders).

Standard library only: the check models and the pydantic-free fast path both use
`pattern_problem`, so they refuse exactly the same patterns.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from functools import lru_cache

_WILDCARDS = frozenset("*?[")


def pattern_problem(text: object) -> str | None:
    """Why `text` is not a usable input pattern (a phrase), or None when it is one."""
    if type(text) is not str:
        return "must be a string"
    body = text[1:] if text.startswith("!") else text
    if not body.strip():
        return "must be a non-empty glob pattern"
    if "\\" in body:
        return "must use '/' between folders (a backslash is not allowed)"
    if "\x00" in body:
        return "must not contain a NUL character"
    if body.startswith("/") or re.match(r"[A-Za-z]:", body):
        return "escapes the project root (patterns are relative to the project root)"
    if ".." in body.split("/"):
        return "escapes the project root ('..' is not allowed)"
    if not _segments(body):
        return "must name something below the project root"
    try:
        _pattern_regex(body)
    except re.error:
        return "is not a valid glob (check its [...] sets)"
    return None


def _segments(body: str) -> list[str]:
    """The pattern's names, without empty and `.` segments (`./src//a` = `src/a`)."""
    return [segment for segment in body.split("/") if segment not in ("", ".")]


def normalize(text: str) -> str:
    """A valid pattern in its canonical form: `./src/` -> `src`, `!./a//b` -> `!a/b`."""
    negated = text.startswith("!")
    body = "/".join(_segments(text[1:] if negated else text))
    return f"!{body}" if negated else body


def escaped(path: str) -> str:
    """`path` as a pattern that matches exactly that path: each `*`, `?` and `[` in a set of its
    own (`rows[1].jsonl` -> `rows[[]1].jsonl`)."""
    return re.sub(r"[*?\[]", lambda found: f"[{found.group()}]", path)


def literal_slip(*, pattern: str, root: str) -> str | None:
    """What to say of a pattern that matches nothing although a file has its exact name (a
    `[` in `data/rows[1].jsonl` opens a set): the escaped pattern to write; None otherwise."""
    body = normalize(pattern)
    if (
        body.startswith("!")
        or escaped(body) == body
        or not os.path.isfile(os.path.join(root, body))
    ):
        return None
    return (
        f"{body} is a file, but `*`, `?` and `[` are glob characters: write {escaped(body)} "
        "to name it"
    )


def _class_regex(segment: str, start: int) -> tuple[str, int] | None:
    """`[...]` at `start` as a regex class and the index after it; None if it never closes."""
    index = start + 1
    negate = index < len(segment) and segment[index] in "!^"
    if negate:
        index += 1
    if index < len(segment) and segment[index] == "]":
        index += 1  # a `]` first in the set is a member
    close = segment.find("]", index)
    if close < 0:
        return None
    members = _class_members(segment[start + 1 + (1 if negate else 0) : close])
    # A negated class must not match `/` either: names are matched one at a time.
    return ("[^/" + members + "]" if negate else "[" + members + "]"), close + 1


def _class_members(text: str) -> str:
    """The members of a `[...]` set as regex class text: every character literal but `a-z`."""
    out: list[str] = []
    index = 0
    while index < len(text):
        if text[index] == "-" and out and index + 1 < len(text):
            out.append("-" + re.escape(text[index + 1]))
            index += 2
            continue
        out.append(re.escape(text[index]))
        index += 1
    return "".join(out)


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            while index < len(segment) and segment[index] == "*":
                index += 1
            out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            found = _class_regex(segment, index)
            if found is not None:
                out.append(found[0])
                index = found[1]
                continue
            out.append(re.escape(char))
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def _path_regex(body: str) -> str:
    segments = _segments(body)
    parts: list[str] = []
    for position, segment in enumerate(segments):
        last = position == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment_regex(segment) + ("" if last else "/"))
    return "".join(parts)


@lru_cache(maxsize=4096)
def _pattern_regex(body: str) -> re.Pattern[str]:
    # Cached: the same patterns are checked when a file is validated and again when matched.
    # Matching a folder matches what is inside it.
    return re.compile(_path_regex(body) + "(?:/.*)?", re.DOTALL)


@lru_cache(maxsize=256)
def file_pattern_regex(body: str) -> re.Pattern[str]:
    """`body` (normalized) as it names files: the file's own path must match, a folder does not
    stand for its contents (a dataset glob, `data/**/*.jsonl`, names files)."""
    return re.compile(_path_regex(body), re.DOTALL)


@lru_cache(maxsize=256)
def folder_pattern_regex(body: str) -> re.Pattern[str]:
    """The folders below which a file `body` (normalized) names may lie, as a regex over a
    root-relative folder path (`data/*/*.jsonl`: `data` and `data/x`, never `data/x/y`): a
    walk for its files need not enter any other. Past a `**` every folder may hold one."""
    segments = _segments(body)
    # A trailing `**` names every file below its folder; any other last name names files.
    folders = segments if segments[-1] == "**" else segments[:-1]
    below = ""
    for segment in reversed(folders):
        below = "(?:/.*)?" if segment == "**" else f"(?:/{_segment_regex(segment)}{below})?"
    return re.compile(below, re.DOTALL)


@lru_cache(maxsize=4096)
def _holder_regex(body: str) -> re.Pattern[str]:
    """The folders below which a path input pattern `body` (normalized) matches may lie, as a
    regex over `/<folder>`: each of its names may be a folder, the last one too (a pattern
    naming a folder means what is inside it); past a `**`, every folder may hold one."""
    below = ""
    for segment in reversed(_segments(body)):
        below = "(?:/.*)?" if segment == "**" else f"(?:/{_segment_regex(segment)}{below})?"
    return re.compile(below, re.DOTALL)


def _whole_folder_regex(body: str) -> re.Pattern[str] | None:
    """For an input pattern `body` (normalized) whose last name is only stars (`vendor/lib/**`,
    `vendor/*`): its folders' pattern, which matches a folder all of whose contents it
    matches; None for any other pattern."""
    head, _, last = body.rpartition("/")
    if not head or set(last) != {"*"}:
        return None
    return _pattern_regex(head)


def could_hold_match(*, regex: re.Pattern[str], folder: str) -> bool:
    """Whether the root-relative `folder` may hold a file the pattern of `regex`
    (`folder_pattern_regex`) names, at any depth."""
    return regex.fullmatch(f"/{folder}") is not None


def literal_prefix(body: str) -> str:
    """The leading names without wildcards (`src/lib/*.py` -> `src/lib`); "" if none."""
    return _literal_prefix(body)


def _literal_prefix(body: str) -> str:
    """The leading names without wildcards (`src/lib/*.py` -> `src/lib`); "" if none."""
    literal: list[str] = []
    for segment in _segments(body):
        if _WILDCARDS.intersection(segment):
            break
        literal.append(segment)
    return "/".join(literal)


def paths_under(paths: Sequence[str], prefix: str) -> Iterable[str]:
    """The paths equal to `prefix` or below it, from a sorted sequence."""
    if not prefix:
        yield from paths
        return
    index = bisect_left(paths, prefix)
    if index < len(paths) and paths[index] == prefix:
        yield paths[index]
    folder = prefix + "/"
    start = bisect_left(paths, folder)
    end = bisect_left(paths, prefix + "0")  # "0" sorts right after "/"
    yield from paths[start:end]


def outermost(prefixes: Iterable[str]) -> list[str]:
    """The prefixes no other one contains (`src`, `src/lib`, `docs` -> `docs`, `src`), sorted."""
    kept: list[str] = []
    for prefix in sorted(set(prefixes)):
        if not kept or not (prefix == kept[-1] or prefix.startswith(kept[-1] + "/")):
            kept.append(prefix)
    return kept


class InputPatterns:
    """A check's `inputs:` list, compiled; `select` picks the matching paths."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(patterns)
        includes = [normalize(p) for p in patterns if not p.startswith("!")]
        excludes = [normalize(p)[1:] for p in patterns if p.startswith("!")]
        self._includes = [(_literal_prefix(p), _pattern_regex(p)) for p in includes]
        self._excludes = [_pattern_regex(p) for p in excludes]
        self._include_bodies = includes
        self._exclude_bodies = excludes

    @property
    def prefixes(self) -> list[str] | None:
        """The literal folders every match lies in (for narrowing a git query); None = any."""
        found = [prefix for prefix, _ in self._includes]
        return None if "" in found else outermost(found)

    def matches(self, path: str) -> bool:
        """Whether the project-relative POSIX `path` is an input."""
        if not any(regex.fullmatch(path) for _, regex in self._includes):
            return False
        return not any(regex.fullmatch(path) for regex in self._excludes)

    def select(self, paths: Sequence[str], *, submodules: Sequence[str] = ()) -> list[str]:
        """The matching paths of a sorted sequence, sorted. Those of them that are submodules
        (`submodules`) are matched as `reaching_into` matches them."""
        found: set[str] = set()
        for prefix, regex in self._includes:
            found.update(path for path in paths_under(paths, prefix) if regex.fullmatch(path))
        if self._excludes:
            found = {p for p in found if not any(rx.fullmatch(p) for rx in self._excludes)}
        if submodules:
            found.difference_update(submodules)
            found.update(self.reaching_into(submodules))
        return sorted(found)

    def reaching_into(self, submodules: Iterable[str]) -> list[str]:
        """Those of `submodules` (paths of git submodules, each one entry counted by the
        commit it records, whose files no listing holds) that the patterns name or may name a
        path inside of (`vendor/lib/lib.py`, `**/*.py`), and that no `!` pattern takes whole
        (`!vendor/lib/**`); sorted. A `!` pattern for some files inside one
        (`!vendor/lib/tests/**`) leaves it in: its commit counts for every file in it."""
        found = [
            path
            for path in submodules
            if any(
                _holder_regex(body).fullmatch(f"/{path}") or regex.fullmatch(path)
                for body, (_, regex) in zip(self._include_bodies, self._includes, strict=True)
            )
        ]
        return sorted(path for path in found if not self._takes_whole(path))

    def _takes_whole(self, folder: str) -> bool:
        """Whether a `!` pattern matches `folder` and so everything inside it."""
        for body, regex in zip(self._exclude_bodies, self._excludes, strict=True):
            if regex.fullmatch(folder):
                return True
            whole = _whole_folder_regex(body)
            if whole is not None and whole.fullmatch(folder):
                return True
        return False
