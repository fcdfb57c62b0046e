"""Runs take turns on a folder: a run's checks hold it shared, a change to it waits for none."""

from __future__ import annotations

from pathlib import Path

from eval_banana.core.turns import LOCK_NAME, alone, alone_in_folder, sharing, sharing_folder


def test_an_output_folder_is_no_runs_alone_while_another_runs_checks_beside_it(
    tmp_path: Path,
) -> None:
    with sharing_folder(folder=tmp_path), alone_in_folder(folder=tmp_path) as ours:
        assert ours is False
    with alone_in_folder(folder=tmp_path) as ours:
        assert ours is True
    assert list(tmp_path.iterdir()) == []  # the folder itself is the lock: no file added


def test_a_folder_that_cannot_be_locked_is_no_other_runs_turn(tmp_path: Path) -> None:
    with alone_in_folder(folder=tmp_path / "missing") as ours:
        assert ours is True


def test_a_cache_is_no_runs_alone_while_another_runs_checks_with_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with sharing(folder=cache, create=True), alone(folder=cache) as ours:
        assert ours is False
    with alone(folder=cache) as ours:
        assert ours is True
    assert (cache / LOCK_NAME).is_file()
