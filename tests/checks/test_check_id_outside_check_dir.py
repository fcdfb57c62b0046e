"""`--check-id` of a check that exists, but outside `--check-dir`: the error says where it is
and that `--check-dir` left it out, rather than that no such check exists."""

from __future__ import annotations

from pathlib import Path

from tests.cache.rig import script_check
from tests.processes import eb_process


def _project(root: Path) -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana/config.toml").write_text("")
    (root / "eval_checks/web").mkdir(parents=True)
    (root / "eval_checks/web/login.yaml").write_text(script_check("login", script="pass\n"))
    (root / "eval_checks/api_health.yaml").write_text(script_check("api_health", script="pass\n"))
    return root


def test_an_id_outside_check_dir_is_told_as_left_out_by_it(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    for command in ("run", "list"):
        result = eb_process(
            root, command, "--check-dir", "eval_checks/web", "--check-id", "api_health"
        )
        assert result.returncode == 2, result.stdout + result.stderr
        assert (
            "No check found with id 'api_health' under --check-dir eval_checks/web: it is "
            "defined in eval_checks/api_health.yaml, which --check-dir leaves out"
        ) in result.stderr
        assert "eb list` shows every check id" not in result.stderr
    assert not (root / ".eval-banana/results").exists()  # nothing ran, nothing is left


def test_a_glob_matching_only_outside_check_dir_is_told_so(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    result = eb_process(root, "run", "--check-dir", "eval_checks/web", "--check-id", "api_*")
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "No check id under --check-dir eval_checks/web matches --check-id pattern 'api_*': the "
        "check in eval_checks/api_health.yaml matches it, and --check-dir leaves it out"
    ) in result.stderr


def test_an_id_no_check_has_anywhere_is_still_no_check(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    result = eb_process(root, "run", "--check-dir", "eval_checks/web", "--check-id", "nope")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "No check found with id 'nope'\n" in result.stderr
    selected = eb_process(root, "run", "--check-dir", "eval_checks/web", "--check-id", "login")
    assert selected.returncode == 0, selected.stdout + selected.stderr


def test_a_problem_in_a_file_outside_check_dir_never_hides_where_the_check_is(
    tmp_path: Path,
) -> None:
    """Outside --check-dir: a check file with an unknown key that a glob also matches, a
    second file declaring the same id with that problem, and one whose YAML does not parse.
    Each value is still told as left out by --check-dir, naming the files that declare it
    (the one that cannot be parsed is named nowhere); the problems are not told here."""
    root = _project(tmp_path / "proj")
    bad = script_check("api_status", script="pass\n") + "bogus: 1\n"
    (root / "eval_checks/api_status.yaml").write_text(bad)
    (root / "eval_checks/old").mkdir()
    twin = script_check("api_health", script="pass\n") + "bogus: 1\n"
    (root / "eval_checks/old/api_health.yaml").write_text(twin)
    (root / "eval_checks/broken.yaml").write_text("id: api_broken\nscript: [unclosed\n")
    values = ("--check-id", "api_*", "--check-id", "api_health")
    result = eb_process(root, "validate", "--check-dir", "eval_checks/web", *values)
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "No check id under --check-dir eval_checks/web matches --check-id pattern 'api_*': the "
        "checks in eval_checks/api_health.yaml and 2 more files match it, and --check-dir "
        "leaves them out"
    ) in result.stderr
    assert (
        "No check found with id 'api_health' under --check-dir eval_checks/web: it is "
        "defined in eval_checks/api_health.yaml, which --check-dir leaves out"
    ) in result.stderr
    assert "bogus" not in result.stderr and "broken.yaml" not in result.stderr
