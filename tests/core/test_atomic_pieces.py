"""Writing a big text in pieces: the file holds exactly the joined text, or nothing new; a
report a user named is never written over a link that loops."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import pytest

from eval_banana.core.files import write_named_file, write_pieces_atomic


def test_the_pieces_make_the_file_and_a_lone_surrogate_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    write_pieces_atomic(path=path, pieces=["<p>", "Crème ✓", "\ud800", "</p>\n"])
    assert path.read_bytes() == "<p>Crème ✓?</p>\n".encode()


def test_a_failure_half_way_leaves_the_earlier_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    path.write_text("the earlier page", encoding="utf-8")

    def pieces() -> Iterator[str]:
        yield "<p>half"
        raise RuntimeError("rendering failed")

    with pytest.raises(RuntimeError):
        write_pieces_atomic(path=path, pieces=pieces())
    assert path.read_text(encoding="utf-8") == "the earlier page"
    assert [item.name for item in tmp_path.iterdir()] == ["report.html"]


def test_a_named_report_never_replaces_a_link_that_loops(tmp_path: Path) -> None:
    # A link made a loop after the run's checks of the path: the report was renamed over it.
    loop = tmp_path / "loop.xml"
    loop.symlink_to(loop.name)
    with pytest.raises(OSError) as raised:
        write_named_file(path=loop, data=b"<xml/>\n")
    assert raised.value.errno == errno.ELOOP
    assert loop.is_symlink() and [item.name for item in tmp_path.iterdir()] == ["loop.xml"]
