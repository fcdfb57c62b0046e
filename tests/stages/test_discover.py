"""Discovery rules: nested folders, extensions, exclusions, symlinks, order."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from eval_banana.models.config import DEFAULT_EXCLUDE_DIRS, Selection, Settings
from eval_banana.models.stages import ConfigDoc
from eval_banana.stagefiles.layout import envelope
from eval_banana.stages.discover import discover
from tests.conftest import EbResult, check_yaml
from tests.processes import eb_process


def _config(
    root: Path,
    *,
    exclude: list[str] | None = None,
    check_dir: str | None = None,
    output_dir: str | None = None,
) -> ConfigDoc:
    settings = Settings()
    if exclude is not None:
        settings.discovery.exclude_dirs = exclude
    if output_dir is not None:
        settings.core.output_dir = output_dir
    return ConfigDoc.model_validate(
        {
            "$schema": "x",
            "tool_version": "0",
            "run_id": "r",
            "created_at": "now",
            "project_root": str(root),
            "config_file": None,
            "settings": settings,
            "sources": {},
            "selection": Selection(check_dir=check_dir),
        }
    )


def _found(root: Path, **kwargs: object) -> list[str]:
    doc = discover(config=_config(root, **kwargs), inputs={})  # type: ignore[arg-type]
    return [Path(item.path).relative_to(root.resolve()).as_posix() for item in doc.files]


def test_nested_folders_and_both_extensions(tmp_path: Path) -> None:
    for relative in [
        "eval_checks/a.yaml",
        "eval_checks/deeper/b.yml",
        "src/api/eval_checks/c.yaml",
        "src/api/eval_checks/eval_checks/d.yaml",
        "eval_checks/notes.txt",
        "eval_checks/x.YAML",
        "eval_checks/x.yaml.bak",
        "other/e.yaml",
        "Eval_Checks/f.yaml",
    ]:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(check_yaml(Path(relative).stem))
    assert _found(tmp_path) == [
        "eval_checks/a.yaml",
        "eval_checks/deeper/b.yml",
        "src/api/eval_checks/c.yaml",
        "src/api/eval_checks/eval_checks/d.yaml",
    ]


@pytest.mark.parametrize("excluded", DEFAULT_EXCLUDE_DIRS)
def test_every_default_exclusion_is_pruned_outside_and_inside(
    tmp_path: Path, excluded: str
) -> None:
    (tmp_path / excluded / "eval_checks").mkdir(parents=True)
    (tmp_path / excluded / "eval_checks" / "decoy.yaml").write_text(check_yaml("decoy"))
    (tmp_path / "eval_checks" / excluded).mkdir(parents=True)
    (tmp_path / "eval_checks" / excluded / "decoy2.yaml").write_text(check_yaml("decoy2"))
    (tmp_path / "eval_checks" / "real.yaml").write_text(check_yaml("real"))
    assert _found(tmp_path) == ["eval_checks/real.yaml"]


def test_configured_exclusion_replaces_the_defaults(tmp_path: Path) -> None:
    for folder in ["generated", "node_modules"]:
        (tmp_path / folder / "eval_checks").mkdir(parents=True)
        (tmp_path / folder / "eval_checks" / f"{folder}.yaml").write_text(check_yaml(folder))
    assert _found(tmp_path, exclude=["generated"]) == ["node_modules/eval_checks/node_modules.yaml"]


def test_hidden_folders_other_than_excluded_are_walked(tmp_path: Path) -> None:
    (tmp_path / ".github" / "eval_checks").mkdir(parents=True)
    (tmp_path / ".github" / "eval_checks" / "ci.yaml").write_text(check_yaml("ci"))
    assert _found(tmp_path) == [".github/eval_checks/ci.yaml"]


def _plant(root: Path, relative: str) -> None:
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_text(check_yaml(Path(relative).stem))


def test_eb_s_own_output_cache_and_history_folders_are_not_walked(tmp_path: Path) -> None:
    # They hold only what eb wrote and grow with every run kept; a decoy check planted in
    # each proves the walk never enters them, while the rest of `.eval-banana/` is walked.
    for relative in [
        ".eval-banana/results/20261204_000000_abcd1234/eval_checks/decoy_run.yaml",
        ".eval-banana/cache/eval_checks/decoy_cache.yaml",
        ".eval-banana/history/eval_checks/decoy_history.yaml",
        "out/20261204_000001_abcd1234/eval_checks/decoy_configured_output.yaml",
        "out/.lock",
        ".eval-banana/eval_checks/kept.yaml",
        "eval_checks/real.yaml",
    ]:
        _plant(tmp_path, relative)
    assert _found(tmp_path, output_dir="out") == [
        ".eval-banana/eval_checks/kept.yaml",
        "eval_checks/real.yaml",
    ]


def test_an_output_folder_holding_the_user_s_checks_stays_the_project_s(tmp_path: Path) -> None:
    # `--output-dir ci` beside `ci/eval_checks/`: skipped whole, its checks vanished and a
    # failing gate passed. The runs in it are still left out, by their config stage.
    _plant(tmp_path, "ci/eval_checks/gate.yaml")
    _plant(tmp_path, "ci/20261204_000000_abcd1234/checks/scaffold/eval_checks/decoy.yaml")
    _run_folder(tmp_path / "ci/20261204_000000_abcd1234")
    _plant(tmp_path, "eval_checks/real.yaml")
    assert _found(tmp_path, output_dir="ci") == [
        "ci/eval_checks/gate.yaml",
        "eval_checks/real.yaml",
    ]
    # An output folder that is a check folder itself keeps its checks too.
    assert _found(tmp_path, output_dir="eval_checks") == [
        "ci/eval_checks/gate.yaml",
        "eval_checks/real.yaml",
    ]


def _run_folder(folder: Path) -> None:
    """`folder` made a run folder as eb makes one: its config stage names eb's schema."""
    schema = envelope(stage="config", run_id="r", inputs={})["$schema"]
    (folder / "stages").mkdir(parents=True)
    (folder / "stages" / "config.json").write_text(json.dumps({"$schema": schema}))


def test_a_run_folder_is_not_walked_wherever_it_lies(tmp_path: Path) -> None:
    # Written with --output-dir, as a shard, or copied in: no setting names it, its config
    # stage tells it. A check's evidence there may look like checks.
    runs = ["ci-out/20261206_000000_abcd1234", "shards/1/20261206_000001_abcd1234", "merged"]
    for run in runs:
        _plant(tmp_path, f"{run}/checks/scaffold/eval_checks/decoy.yaml")
        _run_folder(tmp_path / run)
    # Inside a check folder too: every YAML file below one is otherwise a check.
    _plant(tmp_path, "eval_checks/out/checks/scaffold/decoy.yaml")
    _run_folder(tmp_path / "eval_checks/out")
    # A stages/config.json that is not eb's marks nothing.
    _plant(tmp_path, "pipeline/stages/config.json")
    _plant(tmp_path, "pipeline/eval_checks/kept.yaml")
    _plant(tmp_path, "eval_checks/real.yaml")
    expected = ["eval_checks/real.yaml", "pipeline/eval_checks/kept.yaml"]
    assert _found(tmp_path) == expected
    # The project root is never taken for one, and a --check-dir is read as asked.
    _run_folder(tmp_path)
    assert _found(tmp_path) == expected
    assert _found(tmp_path, check_dir="merged") == ["merged/checks/scaffold/eval_checks/decoy.yaml"]


# A check that makes a project of its own in its evidence folder, as a check of eb's own
# scaffolding would: its check file lies in the run folder, wherever the run was sent.
SCAFFOLD = """\
schema_version: 1
id: scaffold
type: deterministic
description: makes a project
script: |
  import json, pathlib, sys
  folder = pathlib.Path(json.load(open(sys.argv[1]))["output_dir"]) / "eval_checks"
  folder.mkdir()
  (folder / "made.yaml").write_text("schema_version: 1\\nid: made\\ntype: deterministic\\n"
      "description: made\\nscript: raise SystemExit(1)\\n")
"""


def test_a_check_file_a_run_left_in_its_output_folder_is_not_found_later(
    project: Callable[..., Path],
) -> None:
    root = project({"eval_checks/scaffold.yaml": SCAFFOLD})

    first = eb_process(root, "run", "--output-dir", "ci-out")
    assert first.returncode == 0, first.stdout + first.stderr
    assert list(root.glob("ci-out/*/checks/*/eval_checks/made.yaml"))
    listed = eb_process(root, "list")
    assert listed.returncode == 0, listed.stderr
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == ["scaffold"]
    again = eb_process(root, "run")
    assert again.returncode == 0 and "Score: 1/1" in again.stdout, again.stdout + again.stderr


def test_an_output_folder_that_is_the_project_root_does_not_hide_the_project(
    tmp_path: Path,
) -> None:
    _plant(tmp_path, "eval_checks/real.yaml")
    _plant(tmp_path, "sub/eval_checks/deeper.yaml")
    assert _found(tmp_path, output_dir="") == [
        "eval_checks/real.yaml",
        "sub/eval_checks/deeper.yaml",
    ]


def test_symlinked_folders_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "eval_checks").mkdir(parents=True)
    (outside / "eval_checks" / "far.yaml").write_text(check_yaml("far"))
    root = tmp_path / "root"
    (root / "eval_checks").mkdir(parents=True)
    (root / "eval_checks" / "near.yaml").write_text(check_yaml("near"))
    os.symlink(outside, root / "linked")
    os.symlink(outside / "eval_checks", root / "eval_checks" / "sub")
    assert _found(root) == ["eval_checks/near.yaml"]


def test_yaml_symlink_is_resolved_and_loaded_once(tmp_path: Path) -> None:
    (tmp_path / "eval_checks").mkdir()
    (tmp_path / "eval_checks" / "a.yaml").write_text(check_yaml("a"))
    os.symlink(tmp_path / "eval_checks" / "a.yaml", tmp_path / "eval_checks" / "b.yaml")
    assert _found(tmp_path) == ["eval_checks/a.yaml"]


def test_order_is_code_point_order_of_the_path(tmp_path: Path) -> None:
    for folder in ["a", "a-b"]:
        (tmp_path / folder / "eval_checks").mkdir(parents=True)
        (tmp_path / folder / "eval_checks" / "x.yaml").write_text(
            check_yaml(folder.replace("-", "_"))
        )
    # One ordering everywhere (eval-banana listed and ran in two orders): "a-b/..." < "a/..."
    # in code-point order.
    assert _found(tmp_path) == ["a-b/eval_checks/x.yaml", "a/eval_checks/x.yaml"]


def test_check_dir_collects_any_yaml_below_it(tmp_path: Path) -> None:
    (tmp_path / "suite" / "deep").mkdir(parents=True)
    (tmp_path / "suite" / "deep" / "one.yaml").write_text(check_yaml("one"))
    (tmp_path / "eval_checks").mkdir()
    (tmp_path / "eval_checks" / "two.yaml").write_text(check_yaml("two"))
    assert _found(tmp_path, check_dir="suite") == ["suite/deep/one.yaml"]


def test_missing_check_dir_is_a_usage_error(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")})
    result = eb("validate", "--cwd", str(root), "--check-dir", "typo")
    assert result.exit_code == 2
    assert "typo" in result.stderr and "not a directory" in result.stderr


def test_a_check_dir_outside_the_project_is_walked_with_a_warning(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # It walked the folder without a word; eval-banana walked it too (scripts may rely on
    # that), so eb says it, naming the folder and the project root, rather than refusing it.
    root = project({"eval_checks/a.yaml": check_yaml("a")})
    far = root.parent / "shared"
    far.mkdir()
    (far / "far.yaml").write_text(check_yaml("far"))
    told = (
        f"warning: --check-dir {{given}} is outside the project root {root}: eb walks all of it "
        "for check files, and runs them under this project's settings; pass a folder inside "
        "the project, or --cwd to the project that holds those checks\n"
    )
    for command, given in (("list", str(far)), ("validate", "../shared"), ("run", str(far))):
        result = eb(command, "--cwd", str(root), "--check-dir", given)
        assert result.exit_code == 0, (command, result.stderr)
        shown = given if given == str(far) else f"{given} ({far})"
        assert told.format(given=shown) in result.stderr, (command, result.stderr)
    inside = eb("list", "--cwd", str(root), "--check-dir", str(root / "eval_checks"))
    assert inside.exit_code == 0 and "warning" not in inside.stderr, inside.stderr


def test_dangling_yaml_symlink_is_a_named_error(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")})
    os.symlink(root / "nowhere.yaml", root / "eval_checks" / "gone.yaml")
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 2
    assert "gone.yaml" in result.stderr and "nowhere.yaml" in result.stderr
    assert "Traceback" not in result.stderr


def test_looping_yaml_symlink_is_a_named_error(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")})
    # A link to itself: Python 3.11's Path.resolve raised RuntimeError at it.
    os.symlink("loop.yaml", root / "eval_checks" / "loop.yaml")
    for command in ("list", "validate", "run"):
        result = eb(command, "--cwd", str(root))
        assert result.exit_code == 2, (command, result.stderr)
        assert "Cannot read check file" in result.stderr, (command, result.stderr)
        assert "loop.yaml: a symbolic link loop (target: loop.yaml)" in result.stderr
        assert "Traceback" not in result.stderr
