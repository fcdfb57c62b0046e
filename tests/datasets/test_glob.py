"""A `cases_from` glob names files: which ones, and where it never looks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_banana.core.errors import DefinitionError
from eval_banana.datasets.casesfrom import dataset_paths
from eval_banana.datasets.globwalk import Skipped, dataset_scope, names_path
from eval_banana.datasets.sources import CaseLimit
from eval_banana.projectstate.patterns import file_pattern_regex
from eval_banana.stagefiles.layout import envelope


def _tree(root: Path, files: list[str]) -> None:
    for relative in files:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")


def _found(root: Path, pattern: str, skipped: Skipped) -> list[str]:
    paths = dataset_paths(pattern=pattern, root=root, check_file="c.yaml", skipped=skipped)
    return [path.relative_to(root).as_posix() for path in paths]


def test_a_glob_matches_files_by_their_own_path(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        [
            "a.jsonl",
            "data/b.jsonl",
            "data/deep/c.jsonl",
            "data/d.csv",
            "data/e.jsonl/inner.txt",  # a folder named like a dataset holds no dataset
            ".hidden/f.jsonl",
            "node_modules/pkg/g.jsonl",
            "out/runs/h.jsonl",
        ],
    )
    skipped = Skipped(names=frozenset({"node_modules"}), folders=frozenset({str(tmp_path / "out")}))
    assert _found(tmp_path, "**/*.jsonl", skipped) == [
        ".hidden/f.jsonl",
        "a.jsonl",
        "data/b.jsonl",
        "data/deep/c.jsonl",
    ]
    assert _found(tmp_path, "data/*.jsonl", skipped) == ["data/b.jsonl"]
    assert _found(tmp_path, "data/**/*.jsonl", skipped) == ["data/b.jsonl", "data/deep/c.jsonl"]
    assert _found(tmp_path, "data/[bd].*", skipped) == ["data/b.jsonl", "data/d.csv"]
    assert _found(tmp_path, "nowhere/*.jsonl", skipped) == []
    # Named under a skipped folder on purpose, a glob still does not read it: it says why it
    # matches nothing there (and, with nothing there to match, is just empty).
    with pytest.raises(DefinitionError, match="looks in node_modules/, where no glob looks"):
        _found(tmp_path, "node_modules/**/*.jsonl", skipped)
    assert _found(tmp_path, "node_modules/**/*.csv", skipped) == []
    with pytest.raises(DefinitionError, match=r"looks in out/runs/, where no glob looks \(it is"):
        _found(tmp_path, "out/runs/*.jsonl", skipped)


def test_a_glob_names_a_path_as_it_would_find_the_file_there(tmp_path: Path) -> None:
    # --changed-since asks of files removed since REF: named exactly when, were the file
    # there, the glob would find it.
    files = [
        "a.jsonl",
        "data/b.jsonl",
        "data/deep/c.jsonl",
        "data/d.csv",
        ".hidden/f.jsonl",
        "node_modules/pkg/g.jsonl",
        "out/runs/h.jsonl",
    ]
    _tree(tmp_path, files)
    skipped = Skipped(names=frozenset({"node_modules"}), folders=frozenset({str(tmp_path / "out")}))
    for pattern in ("**/*.jsonl", "data/*.jsonl", "data/**/*.jsonl", "data/[bd].*", "./data/*"):
        found = _found(tmp_path, pattern, skipped)
        named = [
            path
            for path in files
            if names_path(pattern=pattern, path=path, root=tmp_path, skipped=skipped)
        ]
        assert named == sorted(found, key=files.index), pattern
    assert names_path(pattern="./data/b.jsonl", path="data/b.jsonl", root=tmp_path, skipped=skipped)
    assert [dataset_scope(p) for p in ("**/*.jsonl", "data/**/x*.csv", "./data/b.jsonl")] == [
        "",
        "data",
        "data/b.jsonl",
    ]


def test_a_folder_does_not_stand_for_its_files_in_a_dataset_glob() -> None:
    regex = file_pattern_regex("data/*.jsonl")
    assert regex.fullmatch("data/x.jsonl")
    assert not regex.fullmatch("data/x.jsonl/inner.txt")
    assert not regex.fullmatch("data/sub/x.jsonl")
    assert file_pattern_regex("**/*.jsonl").fullmatch("x.jsonl")


def test_a_file_a_glob_matches_that_is_no_dataset_names_the_glob_narrowed(tmp_path: Path) -> None:
    """The error is about the glob: its hint narrows it to the kind of the datasets it found."""
    from eval_banana.datasets.expand import expand_family

    _tree(tmp_path, ["data/a.csv", "data/b.csv", "data/c.jsonl", "data/notes.txt"])
    (tmp_path / "data/a.csv").write_text("name\nx\n")
    (tmp_path / "data/b.csv").write_text("name\ny\n")
    found = {}
    for pattern in ("data/*", "data/*.*", "data/**"):
        expansion = expand_family(
            definition={
                "id": "f",
                "type": "deterministic",
                "description": "d",
                "cases_from": pattern,
            },
            check_file="c.yaml",
            project_root=tmp_path,
            max_cases=CaseLimit(limit=10),
            skipped=Skipped(names=frozenset(), folders=frozenset()),
        )
        (problem,) = [p for p in expansion.problems if "data/notes.txt" in p.message]
        # Told at the check file's glob, which is what to fix.
        assert problem.file == "c.yaml" and problem.field_path == "cases_from"
        assert problem.message.startswith(f"cases_from '{pattern}' in c.yaml matches data/notes")
        found[pattern] = problem.hint
    assert found == {
        pattern: f"narrow the glob to the dataset files, e.g. cases_from: '{narrowed}'"
        for pattern, narrowed in (
            ("data/*", "data/*.csv"),
            ("data/*.*", "data/*.csv"),
            ("data/**", "data/**/*.csv"),
        )
    }


def test_the_narrowed_glob_spells_the_suffix_as_the_dataset_files_do(tmp_path: Path) -> None:
    # `data/*.jsonl` was suggested beside `rows.JSONL`: on Linux it matches nothing.
    from eval_banana.datasets.expand import expand_family

    _tree(tmp_path, ["data/rows.JSONL", "data/notes.txt"])
    (tmp_path / "data/rows.JSONL").write_text('{"name": "x"}\n')
    expansion = expand_family(
        definition={"id": "f", "type": "deterministic", "description": "d", "cases_from": "data/*"},
        check_file="c.yaml",
        project_root=tmp_path,
        max_cases=CaseLimit(limit=10),
        skipped=Skipped(names=frozenset(), folders=frozenset()),
    )
    (problem,) = expansion.problems
    assert problem.hint == "narrow the glob to the dataset files, e.g. cases_from: 'data/*.JSONL'"


def _run_folder(folder: Path) -> None:
    """`folder` made a run folder as eb makes one: its config stage names eb's schema."""
    schema = envelope(stage="config", run_id="r", inputs={})["$schema"]
    (folder / "stages").mkdir(parents=True)
    (folder / "stages" / "config.json").write_text(json.dumps({"$schema": schema}))


def test_a_glob_never_looks_in_a_run_folder_wherever_it_lies(tmp_path: Path) -> None:
    # No setting names these folders (written with --output-dir, as shards, copied in): each
    # is told by its config stage, and the project root never is one.
    _tree(
        tmp_path,
        [
            "data/a.jsonl",
            "ci-out/20261206_000000_abcd1234/checks/qa.transcript.jsonl",
            "shards/1/20261206_000001_abcd1234/checks/case/seen.jsonl",
            "merged/checks/qa.transcript.jsonl",
            "pipeline/rows.jsonl",  # beside a stages/config.json that is not eb's
        ],
    )
    for run in ("ci-out/20261206_000000_abcd1234", "shards/1/20261206_000001_abcd1234", "merged"):
        _run_folder(tmp_path / run)
    _tree(tmp_path, ["pipeline/stages/config.json"])
    skipped = Skipped(names=frozenset(), folders=frozenset())
    assert _found(tmp_path, "**/*.jsonl", skipped) == ["data/a.jsonl", "pipeline/rows.jsonl"]
    named = [
        path
        for path in ("ci-out/20261206_000000_abcd1234/checks/x.jsonl", "merged/checks/x.jsonl")
        if names_path(pattern="**/*.jsonl", path=path, root=tmp_path, skipped=skipped)
    ]
    assert named == []
    with pytest.raises(DefinitionError, match=r"looks in merged/checks/, where no glob looks \(it"):
        _found(tmp_path, "merged/checks/*.jsonl", skipped)
    # The root itself is never taken for a run folder: nothing would be left to look in.
    _run_folder(tmp_path)
    assert _found(tmp_path, "**/*.jsonl", skipped) == ["data/a.jsonl", "pipeline/rows.jsonl"]


def test_a_glob_follows_links_to_folders_but_never_into_ebs_own(tmp_path: Path) -> None:
    """A link is followed as `ls` follows it, each folder read once: a file reached through
    two links is named through the one whose path sorts first. A link into a run folder or an
    excluded folder does not make its files the project's."""
    _tree(tmp_path, ["shared/a.jsonl", "data/own.jsonl", "node_modules/pkg/n.jsonl"])
    _run_folder(tmp_path / "runs" / "r1")
    _tree(tmp_path, ["runs/r1/checks/t.jsonl"])
    for link, target in (
        ("data/zz", "../shared"),
        ("data/mm", "../shared"),
        ("data/run", "../runs/r1/checks"),
        ("data/pkg", "../node_modules/pkg"),
    ):
        (tmp_path / link).symlink_to(target)
    skipped = Skipped(names=frozenset({"node_modules"}), folders=frozenset())
    assert _found(tmp_path, "data/**/*.jsonl", skipped) == ["data/mm/a.jsonl", "data/own.jsonl"]
    assert _found(tmp_path, "data/*/*.jsonl", skipped) == ["data/mm/a.jsonl"]
    # Named through the link it is read by, a path there is one the glob names.
    assert names_path(
        pattern="data/*/*.jsonl", path="data/zz/b.jsonl", root=tmp_path, skipped=skipped
    )
