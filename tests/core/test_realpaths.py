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


def test_eb_resolves_paths_only_through_real_path() -> None:
    """A `.resolve()` left anywhere a user's path can reach is a RuntimeError traceback at a
    link loop on Python 3.11: only eb's own module files are resolved directly."""
    package = Path(__file__).resolve().parent.parent.parent / "eval_banana"
    found = [
        f"{source.relative_to(package)}:{number}: {line.strip()}"
        for source in sorted(package.rglob("*.py"))
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1)
        if ".resolve(" in line
        and "Path(__file__).resolve()" not in line
        # A YAML loader's own tag resolver (`Resolver.resolve`), not a path.
        and "self.resolve(yaml." not in line
    ]
    assert found == [], "use core.realpaths.real_path:\n" + "\n".join(found)
