"""Artifacts that several assertions checks of one run grade, parsed once between them.

A family whose cases all grade one file (`artifact: out/prices.json`, `path: prices.{{ case.sku }}`)
would otherwise parse that file once per case: 1,000 cases over a 5 MB artifact spent 12 s
parsing it again and again. The parsed document is kept while checks that grade it are still
to come, and let go after the last of them, so memory holds only artifacts still in use.

A kept document is reused only while the file's stat is the one it was read under (device,
inode, size, modification and change times in nanoseconds, as git's index trusts them): a
check that rewrites an artifact mid-run makes the next reader parse the new bytes.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from eval_banana.assertions.evaluate import MAX_ARTIFACT_BYTES, LoadedArtifact, load_artifact
from eval_banana.core.readback import Stamp, path_stamp


class _Kept(NamedTuple):
    stamp: Stamp
    loaded: LoadedArtifact


class SharedArtifacts:
    """Loads artifacts for one run's assertions checks, parsing a shared one once.

    `readers` is every artifact text that checks still to run will load, once per load: a
    text that occurs once is read as without this class, and never kept.
    """

    def __init__(
        self, *, project_root: Path, readers: Iterable[str], max_bytes: int = MAX_ARTIFACT_BYTES
    ) -> None:
        self._project_root = project_root
        self._root = str(project_root)
        self._max_bytes = max_bytes
        self._left = Counter(readers)
        self._shared = frozenset(text for text, count in self._left.items() if count > 1)
        self._kept: dict[str, _Kept] = {}
        # One lock per shared artifact, all made here: the set is known before any reader.
        self._locks = {text: threading.Lock() for text in self._shared}

    def _read(self, *, artifact: str) -> LoadedArtifact:
        return load_artifact(
            project_root=self._project_root, artifact=artifact, max_bytes=self._max_bytes
        )

    def load(self, *, artifact: str) -> LoadedArtifact:
        """The artifact as `load_artifact` reads it, parsed again only when its file changed."""
        if artifact not in self._shared:
            # Its only reader: nothing to share.
            return self._read(artifact=artifact)
        # One reader parses while the others of the same artifact wait for its document.
        with self._locks[artifact]:
            left = self._left[artifact]
            self._left[artifact] = max(left - 1, 0)
            # The file the path leads to now, symlinks followed; None when it cannot be
            # stat'ed (then nothing is kept). Not resolved first: a kept document was parsed
            # from a file the full check placed inside the project, and the same stamp is the
            # same file with the same bytes, wherever a swapped link would lead.
            stamp = path_stamp(f"{self._root}/{artifact}")
            kept = self._kept.get(artifact)
            if stamp is not None and kept is not None and kept.stamp == stamp:
                loaded = kept.loaded
            else:
                loaded = self._read(artifact=artifact)
            if stamp is None or left < 2:
                # The last reader the plan foresaw (or a later one): let the document go.
                self._kept.pop(artifact, None)
            else:
                self._kept[artifact] = _Kept(stamp=stamp, loaded=loaded)
            return loaded

    @property
    def kept(self) -> int:
        """How many parsed artifacts are held now (for tests: none once every reader is done)."""
        return len(self._kept)
