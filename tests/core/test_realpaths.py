"""real_path: a symbolic link loop is an OSError (strict) or kept as given, never RuntimeError."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from eval_banana.core.realpaths import path_trouble, real_path


def test_a_loop_is_an_oserror_when_strict_and_kept_otherwise(tmp_path: Path) -> None:
    os.symlink("loop", tmp_path / "loop")
    with pytest.raises(OSError) as raised:
        real_path(tmp_path / "loop", strict=True)
    assert raised.value.errno == errno.ELOOP
    assert path_trouble(raised.value) == "a symbolic link loop"
    assert real_path(tmp_path / "loop") == tmp_path.resolve() / "loop"


def test_links_are_followed_as_resolve_follows_them(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert real_path(tmp_path / "link" / "x") == (tmp_path / "link" / "x").resolve()
    assert real_path(tmp_path / "link", strict=True) == (tmp_path / "real").resolve()
    missing = tmp_path / "missing"
    with pytest.raises(FileNotFoundError) as raised:
        real_path(missing, strict=True)
    assert path_trouble(raised.value) == "No such file or directory"
