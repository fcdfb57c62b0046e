"""Git LFS pointer files: the small text file a checkout without the LFS content leaves where a
large tracked file belongs (a dataset, a graded artifact). Read as that file, a pointer looks
like a broken dataset or document; it is told for what it is, with the fix."""

from __future__ import annotations

import re

# A pointer is under 1024 bytes: a `version` line naming the pointer format (released, or the
# name pointers made before the release carry), then `key value` lines, `oid sha256:<hex>` and
# `size <bytes>` among them.
_MAX_POINTER_BYTES = 1024
_VERSIONS = (
    b"version https://git-lfs.github.com/spec/v1\n",
    b"version https://hawser.github.com/spec/v1\n",
)
_OID = re.compile(rb"^oid sha256:[0-9a-f]{64}$", re.MULTILINE)
_SIZE = re.compile(rb"^size (\d+)$", re.MULTILINE)

FETCH_HINT = (
    "fetch the files Git LFS tracks: `git lfs pull` (in GitHub Actions, actions/checkout with "
    "`lfs: true`)"
)


def pointer_size(data: bytes) -> int | None:
    """The size of the file `data` stands in for when it is a Git LFS pointer; None otherwise."""
    if len(data) >= _MAX_POINTER_BYTES:
        return None
    text = data.replace(b"\r\n", b"\n")  # a checkout that turned its line ends into CRLF
    if not text.startswith(_VERSIONS) or _OID.search(text) is None:
        return None
    size = _SIZE.search(text)
    return int(size.group(1)) if size is not None else None


def pointer_words(*, size: int) -> str:
    """What such a file is, for a message: `a Git LFS pointer to a file of 12,345 bytes`."""
    return f"a Git LFS pointer to a file of {size:,} bytes"
