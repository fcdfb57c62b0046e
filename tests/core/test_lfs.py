"""Git LFS pointer files are told apart from the files they stand in for."""

from __future__ import annotations

import hashlib

from eval_banana.core.lfs import pointer_size

CONTENT = b'{"id": "q1", "question": "Can I return it?"}\n' * 50
OID = hashlib.sha256(CONTENT).hexdigest()
POINTER = f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize {len(CONTENT)}\n"


def test_a_pointer_gives_the_size_of_the_file_it_stands_in_for() -> None:
    assert pointer_size(POINTER.encode()) == len(CONTENT)
    # Line ends turned into CRLF by a checkout, and the name pointers carried before the
    # format's release, are pointers too; so is one with an extension line before its oid.
    assert pointer_size(POINTER.replace("\n", "\r\n").encode()) == len(CONTENT)
    early = POINTER.replace("git-lfs.github.com", "hawser.github.com")
    assert pointer_size(early.encode()) == len(CONTENT)
    extended = POINTER.replace("\noid", "\next-0-foo sha256:" + "0" * 64 + "\noid")
    assert pointer_size(extended.encode()) == len(CONTENT)


def test_files_that_only_look_like_one_are_not_pointers() -> None:
    assert pointer_size(CONTENT) is None
    assert pointer_size(b"") is None
    # The version line without an oid (a note about the format), an oid that is no digest.
    assert pointer_size(b"version https://git-lfs.github.com/spec/v1\nsize 3\n") is None
    assert pointer_size(POINTER.replace(OID, "x" * 64).encode()) is None
    # Another first line: a dataset whose first row merely mentions a pointer.
    assert pointer_size(b"id,text\n" + POINTER.encode()) is None
    # A pointer is under 1024 bytes: a larger file starting the same way is content.
    assert pointer_size(POINTER.encode() + b"x" * 1024) is None
