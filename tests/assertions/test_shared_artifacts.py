"""One run's assertions checks that grade one artifact parse it once between them, and never
grade bytes that have changed since it was parsed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from eval_banana.assertions.shared import SharedArtifacts


def _write(path: Path, document: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")


def test_readers_of_one_artifact_share_one_parse_and_it_is_let_go_after_the_last(
    tmp_path: Path,
) -> None:
    _write(tmp_path / "out" / "prices.json", {"prices": {"apple": 1.2}})
    shared = SharedArtifacts(project_root=tmp_path, readers=["out/prices.json"] * 3)
    first = shared.load(artifact="out/prices.json")
    assert first.problem is None
    assert first.document == {"prices": {"apple": 1.2}}
    assert shared.kept == 1
    # The same parsed document, not a second parse of the same bytes.
    assert shared.load(artifact="out/prices.json").document is first.document
    last = shared.load(artifact="out/prices.json")
    assert last.document is first.document
    assert shared.kept == 0  # nobody is left to read it: its memory is given back


def test_an_artifact_read_once_is_never_kept(tmp_path: Path) -> None:
    _write(tmp_path / "out" / "a.json", {"a": 1})
    _write(tmp_path / "out" / "b.json", {"b": 2})
    shared = SharedArtifacts(project_root=tmp_path, readers=["out/a.json", "out/b.json"])
    assert shared.load(artifact="out/a.json").document == {"a": 1}
    assert shared.load(artifact="out/b.json").document == {"b": 2}
    assert shared.kept == 0
    # A reader the plan did not foresee (a repeated sample, say) still reads the file.
    assert shared.load(artifact="out/a.json").document == {"a": 1}
    assert shared.kept == 0


def test_an_artifact_rewritten_between_readers_is_parsed_again(tmp_path: Path) -> None:
    artifact = tmp_path / "out" / "answer.json"
    _write(artifact, {"answer": "Paris"})
    shared = SharedArtifacts(project_root=tmp_path, readers=["out/answer.json"] * 4)
    assert shared.load(artifact="out/answer.json").document == {"answer": "Paris"}
    # A check of the run rewrites it: same size, and a time set back to the first one's, so
    # only the change time (and the inode, for a replaced file) tells the bytes apart.
    before = artifact.stat()
    replacement = artifact.with_name("answer.json.tmp")
    _write(replacement, {"answer": "Lyons"})
    os.replace(replacement, artifact)
    os.utime(artifact, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert shared.load(artifact="out/answer.json").document == {"answer": "Lyons"}
    # Written in place by another process (same inode), the size differs.
    subprocess.run(
        [sys.executable, "-c", f"open({str(artifact)!r}, 'w').write('{{\"answer\": \"Rome\"}}')"],
        check=True,
    )
    assert shared.load(artifact="out/answer.json").document == {"answer": "Rome"}
    artifact.unlink()
    gone = shared.load(artifact="out/answer.json")
    assert gone.problem == "artifact out/answer.json does not exist"
    assert shared.kept == 0


def test_a_folder_swapped_for_a_link_out_of_the_project_is_never_graded(tmp_path: Path) -> None:
    # A kept document is reused while the file the path leads to keeps its stamp; a check that
    # swaps the artifact's folder for a link to a file elsewhere changes that file, and the
    # next reader goes the full way, which refuses a path leading out of the project.
    project = tmp_path / "project"
    _write(project / "out" / "prices.json", {"prices": {"apple": 1.2}})
    _write(tmp_path / "elsewhere" / "prices.json", {"prices": {"apple": 0}})
    shared = SharedArtifacts(project_root=project, readers=["out/prices.json"] * 3)
    assert shared.load(artifact="out/prices.json").document == {"prices": {"apple": 1.2}}
    os.rename(project / "out", project / "out.old")
    (project / "out").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    for _ in range(2):
        swapped = shared.load(artifact="out/prices.json")
        assert swapped.document is None
        assert swapped.problem == "artifact out/prices.json resolves outside the project root"


def test_a_problem_is_told_to_every_reader_alike(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "broken.json").write_text("{not json", encoding="utf-8")
    shared = SharedArtifacts(project_root=tmp_path, readers=["out/broken.json"] * 2)
    problems = {shared.load(artifact="out/broken.json").problem for _ in range(2)}
    assert len(problems) == 1
    (problem,) = problems
    assert problem is not None and problem.startswith("artifact out/broken.json is not valid JSON")
    outside = SharedArtifacts(project_root=tmp_path, readers=["../x.json"] * 2)
    assert outside.load(artifact="../x.json").problem is not None
    assert outside.kept == 0


def test_readers_on_several_threads_get_one_document(tmp_path: Path) -> None:
    _write(tmp_path / "out" / "big.json", {"rows": list(range(200_000))})
    readers = 8
    shared = SharedArtifacts(project_root=tmp_path, readers=["out/big.json"] * readers)
    documents: list[object] = []
    start = threading.Barrier(readers)

    def read() -> None:
        start.wait()
        documents.append(shared.load(artifact="out/big.json").document)

    threads = [threading.Thread(target=read) for _ in range(readers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(documents) == readers
    # Those who came while the first parsed waited for its document instead of parsing too.
    assert len({id(document) for document in documents}) == 1
    assert shared.kept == 0


FAMILY = """\
schema_version: 1
id: prices
type: assertions
description: "the price of {{ case.sku }}"
cases:
  - {sku: apple, price: 1.2}
  - {sku: pear, price: 0.8}
  - {sku: plum, price: 0.5}
  - {sku: fig, price: 9.9}
artifact: out/prices.json
assert:
  - path: "prices.{{ case.sku }}"
    op: equals
    value: "{{ case.price }}"
"""


def test_a_run_parses_the_artifact_its_cases_share_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import eval_banana.assertions.shared as shared
    from eval_banana.stages.discover import discover
    from eval_banana.stages.execute import execute
    from eval_banana.stages.validate import validate
    from tests.builders import make_config, make_guard

    root = tmp_path / "project"
    (root / "eval_checks").mkdir(parents=True)
    (root / "eval_checks" / "prices.yaml").write_text(FAMILY, encoding="utf-8")
    _write(root / "out" / "prices.json", {"prices": {"apple": 1.2, "pear": 0.8, "plum": 0.5}})
    config = make_config(project_root=root, max_parallel_checks=4)
    contents: dict[str, bytes] = {}
    discovered = discover(config=config, inputs={}, contents=contents)
    plan = validate(config=config, discovered=discovered, inputs={}, contents=contents).plan
    assert [check.id for check in plan.checks] == [
        "prices[1]",
        "prices[2]",
        "prices[3]",
        "prices[4]",
    ]
    parsed: list[str] = []
    reading = shared.load_artifact

    def counted(**kwargs: Any) -> Any:
        parsed.append(kwargs["artifact"])
        return reading(**kwargs)

    monkeypatch.setattr(shared, "load_artifact", counted)
    done = execute(
        config=config,
        plan=plan,
        guard=make_guard(),
        run_dir=tmp_path / "run",
        cancel=threading.Event(),
    )
    statuses = {result.check_id: result.status for result in done.results}
    assert statuses == {
        "prices[1]": "passed",
        "prices[2]": "passed",
        "prices[3]": "passed",
        "prices[4]": "failed",  # no price for fig
    }
    assert parsed == ["out/prices.json"]  # four cases, one parse
