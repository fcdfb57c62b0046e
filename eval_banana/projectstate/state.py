"""The project state as a record: every file of a project and its git blob id.

`ProjectState` holds the ids a read found (reading it is `reading.read_project_state`), the
files git ignores listed apart, and what is asked of it afterwards: one file's id (an ignored
file hashed on first use), a digest over all or some of its files, the files globs select, and
the `StateDiff` between two states.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import Literal, NamedTuple

from eval_banana.core.errors import ProjectStateError
from eval_banana.projectstate.blobs import ObjectFormat, file_blob_id
from eval_banana.projectstate.patterns import InputPatterns

StateSource = Literal["git", "walk"]
_DIGEST_PREFIX = b"eval-banana/project-state/v1\0"


class StateDiff(NamedTuple):
    """What differs between two states (or between a revision and the work tree)."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]

    @property
    def paths(self) -> frozenset[str]:
        return frozenset((*self.added, *self.removed, *self.changed))

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


class ProjectState:
    """The files of a project root (POSIX paths relative to it) and their blob ids."""

    def __init__(
        self,
        *,
        root: str,
        source: StateSource,
        ids: Mapping[str, str],
        object_format: ObjectFormat = "sha1",
        ignored: Iterable[str] = (),
    ) -> None:
        self.root = root
        self.source = source
        self.object_format = object_format
        self._ids = dict(ids)
        self.paths: list[str] = sorted(self._ids)
        self.ignored: list[str] = sorted(set(ignored) - self._ids.keys())
        self._ignored_ids: dict[str, str | None] = {}
        self._digest: str | None = None

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def files(self) -> Mapping[str, str]:
        """Path -> blob id of every file in the state."""
        return self._ids

    def id_of(self, path: str) -> str | None:
        """The blob id of a file of the state or of an ignored file (hashed on first use)."""
        known = self._ids.get(path)
        if known is not None:
            return known
        if path not in self._ignored_ids:
            self._ignored_ids[path] = hash_file(root=self.root, path=path, fmt=self.object_format)
        return self._ignored_ids[path]

    def digest(self) -> str:
        """`sha256:<hex>` over every (path, id) of the state, in path order."""
        if self._digest is None:
            ids = self._ids
            self._digest = _digest(
                object_format=self.object_format,
                paths=self.paths,
                ids=[ids[path] for path in self.paths],
            )
        return self._digest

    def digest_of(self, *, paths: Sequence[str]) -> str:
        """`sha256:<hex>` over (path, id) of `paths` (a subset, in the order given)."""
        ids = [self.id_of(path) or "-" for path in paths]
        return _digest(object_format=self.object_format, paths=paths, ids=ids)

    def select(self, *, patterns: InputPatterns, include_ignored: bool = True) -> list[str]:
        """The paths `patterns` match: files of the state and, by default, ignored files."""
        found = patterns.select(self.paths)
        if include_ignored and self.ignored:
            extra = [p for p in patterns.select(self.ignored) if self.id_of(p) is not None]
            found = sorted({*found, *extra})
        return found

    def diff(self, other: ProjectState) -> StateDiff:
        """What `other` (the newer state) adds, removes and changes relative to this one."""
        old, new = self._ids, other._ids
        return StateDiff(
            added=tuple(sorted(new.keys() - old.keys())),
            removed=tuple(sorted(old.keys() - new.keys())),
            changed=tuple(sorted(p for p in old.keys() & new.keys() if old[p] != new[p])),
        )


def _digest(*, object_format: ObjectFormat, paths: Sequence[str], ids: Sequence[str]) -> str:
    # Paths cannot hold NUL and ids are hex, so NUL-separated fields are unambiguous.
    text = "\0".join(chain.from_iterable(zip(paths, ids, strict=True)))
    digest = hashlib.sha256(_DIGEST_PREFIX)
    digest.update(object_format.encode() + b"\0")
    digest.update(text.encode("utf-8", "surrogateescape"))
    return f"sha256:{digest.hexdigest()}"


def hash_file(*, root: str, path: str, fmt: ObjectFormat) -> str | None:
    """The blob id of `root/path` (None when it is no file); an unreadable file is a
    ProjectStateError naming it."""
    full = os.path.join(root, path)
    try:
        return file_blob_id(path=full, object_format=fmt)
    except OSError as exc:
        raise ProjectStateError(
            f"Cannot read {full}: {exc.strerror or exc}",
            file=full,
            hint="make the file readable, or move it out of the project",
        ) from None
