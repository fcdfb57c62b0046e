"""The project state as a record: every file of a project, its git blob id and git's mode.

`ProjectState` holds the ids and modes a read found (reading it is
`reading.read_project_state`), the files git ignores listed apart, and what is asked of it
afterwards: one file's id (an ignored file hashed on first use), a digest over all or some of its
files, the files globs select, and the `StateDiff` between two states.
"""

from __future__ import annotations

import hashlib
import os
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import Literal, NamedTuple

from eval_banana.core.errors import ProjectStateError
from eval_banana.projectstate.blobs import (
    REGULAR,
    SUBMODULE,
    SYMLINK,
    FileIdentity,
    ObjectFormat,
    file_identity,
    followed_identity,
)
from eval_banana.projectstate.patterns import InputPatterns

StateSource = Literal["git", "walk"]
# v2: each file counts by its mode too (v1 keys, blind to a chmod, never match).
_DIGEST_PREFIX = b"eval-banana/project-state/v2\0"
# v1, before modes: only `eb status` computes it, to tell a run folder an earlier eb made whose
# files are as they were from one whose files changed. No key is ever made of it.
_BEFORE_MODES_PREFIX = b"eval-banana/project-state/v1\0"
_LINK_TEXT = SYMLINK + ":"  # how a link's identity text begins (`_identity_text`)


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
    """The files of a project root (POSIX paths relative to it), their blob ids and modes.

    `modes` need only hold the files that are not regular (100644) ones: executables, links
    and submodules, as git records them; a mode for a path outside `ids` is dropped.
    """

    def __init__(
        self,
        *,
        root: str,
        source: StateSource,
        ids: Mapping[str, str],
        modes: Mapping[str, str] | None = None,
        object_format: ObjectFormat = "sha1",
        ignored: Iterable[str] = (),
        untracked: Iterable[str] = (),
    ) -> None:
        """`untracked`: the files of `ids` git lists but does not track (a git read's)."""
        self.root = root
        self.source = source
        self.object_format = object_format
        self._ids = dict(ids)
        self._modes = {
            path: mode
            for path, mode in (modes or {}).items()
            if mode != REGULAR and path in self._ids
        }
        self.paths: list[str] = sorted(self._ids)
        self.ignored: list[str] = sorted(set(ignored) - self._ids.keys())
        self._untracked = frozenset(untracked)
        self._ignored_ids: dict[str, FileIdentity | None] = {}
        self._followed: dict[str, FileIdentity] = {}  # links, with the file each leads to
        self._holds_links = SYMLINK in self._modes.values()
        self.submodules: list[str] = sorted(
            path for path, mode in self._modes.items() if mode == SUBMODULE
        )
        self._ignored_links = False  # an ignored file hashed so far is a link
        self._digest: str | None = None

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def files(self) -> Mapping[str, str]:
        """Path -> blob id of every file in the state."""
        return self._ids

    @property
    def modes(self) -> Mapping[str, str]:
        """Path -> git's mode of every file in the state that is not a regular (100644) one."""
        return self._modes

    def tracked(self, *, paths: Iterable[str]) -> list[str]:
        """Those of `paths` git tracks, in their order: none of a state read by a walk."""
        if self.source != "git":
            return []
        return [path for path in paths if path in self._ids and path not in self._untracked]

    def mode_of(self, path: str) -> str:
        """git's mode of a file of the state (100644 for a regular one)."""
        return self._modes.get(path, REGULAR)

    def identity_of(self, path: str) -> FileIdentity | None:
        """The mode and blob id of a file of the state or of an ignored file (hashed on first
        use); None for neither."""
        known = self._ids.get(path)
        if known is not None:
            return FileIdentity(self._modes.get(path, REGULAR), known)
        if path not in self._ignored_ids:
            found = hash_file(root=self.root, path=path, fmt=self.object_format)
            self._ignored_links |= found is not None and found.mode == SYMLINK
            self._ignored_ids[path] = found
        return self._ignored_ids[path]

    def id_of(self, path: str) -> str | None:
        """The blob id of a file of the state or of an ignored file (hashed on first use)."""
        found = self.identity_of(path)
        return None if found is None else found.id

    def read_identity_of(self, path: str) -> FileIdentity | None:
        """`identity_of(path)` as a check reading the file sees it: a symbolic link with the
        file it leads to now (blobs.followed_identity), read once; any other file as it is."""
        found = self.identity_of(path)
        if found is None or found.mode != SYMLINK:
            return found
        return self._through_link(path=path, link=found)

    def _through_link(self, *, path: str, link: FileIdentity) -> FileIdentity:
        followed = self._followed.get(path)
        if followed is None:
            full = os.path.join(self.root, path)
            try:
                followed = followed_identity(path=full, link=link, object_format=self.object_format)
            except OSError as exc:
                raise _unreadable(full=full, exc=exc) from None
            self._followed[path] = followed
        return followed

    def digest(self) -> str:
        """`sha256:<hex>` over every (path, mode, id) of the state, in path order; a symbolic
        link counts with the file it leads to (`read_identity_of`)."""
        if self._digest is None:
            paths = self.paths
            identities = [self._ids[path] for path in paths]
            # Nearly every file is a regular one: only the few others get their mode added,
            # and only links are read beyond what the listing found.
            for path, mode in self._modes.items():
                at = bisect_left(paths, path)
                identity = FileIdentity(mode, identities[at])
                if mode == SYMLINK:
                    identity = self._through_link(path=path, link=identity)
                identities[at] = _identity_text(identity)
            self._digest = _digest(
                object_format=self.object_format, paths=paths, identities=identities
            )
        return self._digest

    def digest_of(self, *, paths: Sequence[str]) -> str:
        """`sha256:<hex>` over (path, mode, id) of `paths` (a subset, in the order given); a
        symbolic link counts with the file it leads to (`read_identity_of`)."""
        identities = [_identity_text(self.identity_of(path)) for path in paths]
        # Only links are read beyond the listing, and nearly every state has none.
        if self._holds_links or self._ignored_links:
            for at, path in enumerate(paths):
                if identities[at].startswith(_LINK_TEXT):
                    identities[at] = _identity_text(self.read_identity_of(path))
        return _digest(object_format=self.object_format, paths=paths, identities=identities)

    def digest_before_modes(self, *, paths: Sequence[str]) -> str:
        """The digest an eb before file modes (v1) made of `paths`: over (path, id) alone."""
        identities = [self.id_of(path) or "-" for path in paths]
        return _digest(
            object_format=self.object_format,
            paths=paths,
            identities=identities,
            prefix=_BEFORE_MODES_PREFIX,
        )

    def select(self, *, patterns: InputPatterns, include_ignored: bool = True) -> list[str]:
        """The paths `patterns` match: files of the state and, by default, ignored files. A
        submodule is matched by a pattern that names or may name a file inside it: the state
        holds it as one entry, the commit it records, and what a check reads there is that."""
        found = patterns.select(self.paths, submodules=self.submodules)
        if include_ignored and self.ignored:
            extra = [p for p in patterns.select(self.ignored) if self.id_of(p) is not None]
            found = sorted({*found, *extra})
        return found

    def diff(self, other: ProjectState) -> StateDiff:
        """What `other` (the newer state) adds, removes and changes relative to this one."""
        old, new = self._ids, other._ids
        # A chmod or a file turned into a link (the same blob) changes the mode alone.
        modes = self._modes.keys() | other._modes.keys()
        return StateDiff(
            added=tuple(sorted(new.keys() - old.keys())),
            removed=tuple(sorted(old.keys() - new.keys())),
            changed=tuple(
                sorted(
                    p
                    for p in old.keys() & new.keys()
                    if old[p] != new[p] or (p in modes and self.mode_of(p) != other.mode_of(p))
                )
            ),
        )


def _identity_text(identity: FileIdentity | None) -> str:
    """A file's part of a digest: its blob id, with git's mode before it unless it is a regular
    file (the text of nearly every file is then its id alone); "-" for no file."""
    if identity is None:
        return "-"
    return identity.id if identity.mode == REGULAR else f"{identity.mode}:{identity.id}"


def _digest(
    *,
    object_format: ObjectFormat,
    paths: Sequence[str],
    identities: Sequence[str],
    prefix: bytes = _DIGEST_PREFIX,
) -> str:
    # Paths cannot hold NUL and identities are hex, digits and ":", so NUL-separated fields
    # are unambiguous.
    text = "\0".join(chain.from_iterable(zip(paths, identities, strict=True)))
    digest = hashlib.sha256(prefix)
    digest.update(object_format.encode() + b"\0")
    digest.update(text.encode("utf-8", "surrogateescape"))
    return f"sha256:{digest.hexdigest()}"


def hash_file(*, root: str, path: str, fmt: ObjectFormat) -> FileIdentity | None:
    """The mode and blob id of `root/path` (None when it is no file); an unreadable file is a
    ProjectStateError naming it."""
    full = os.path.join(root, path)
    try:
        return file_identity(path=full, object_format=fmt)
    except OSError as exc:
        raise _unreadable(full=full, exc=exc) from None


def _unreadable(*, full: str, exc: OSError) -> ProjectStateError:
    """A file of the state (or the file a link of it leads to) eb cannot read."""
    return ProjectStateError(
        f"Cannot read {full}: {exc.strerror or exc}",
        file=full,
        hint="make the file readable, or move it out of the project",
    )
