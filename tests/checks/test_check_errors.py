"""Check-file errors in our words, located by line, and `eb validate --json`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EbResult, check_yaml, judge_yaml
from tests.processes import eb_process

REPO = Path(__file__).resolve().parents[2]
ENTRY_KEYS = ["kind", "message", "file", "field_path", "hint", "line", "column"]
ERROR_KEYS = ["kind", "message", "file", "field_path", "hint"]  # `eb run --json`'s error shape

TWO_ERRORS = """\
schema_version: 1
id: a
type: deterministic
description: d
script: pass
expct: fail
tags: fast
"""


def _json(result: EbResult) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(result.stdout)
    assert document["exit_code"] == result.exit_code
    return document


def test_validate_json_on_a_valid_project(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a"), "eval_checks/b.yaml": check_yaml("b")})
    result = eb("validate", "--cwd", str(root), "--json")
    assert result.exit_code == 0
    assert _json(result) == {"ok": True, "checks": 2, "errors": [], "warnings": [], "exit_code": 0}
    assert result.stderr == ""


def test_validate_json_lists_every_field_error_with_its_line_and_fix(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {
            "eval_checks/a.yaml": TWO_ERRORS,
            "eval_checks/b.yaml": "schema_version: 1\nid: b\ntype: judge\ndescription: d\n",
            "eval_checks/ok.yaml": check_yaml("ok"),
        }
    )
    result = eb("validate", "--cwd", str(root), "--json")
    assert result.exit_code == 2
    document = _json(result)
    assert document["ok"] is False and document["checks"] == 0 and document["warnings"] == []
    a_file, b_file = (str(root / "eval_checks" / name) for name in ("a.yaml", "b.yaml"))
    assert [list(entry) for entry in document["errors"]] == [ENTRY_KEYS] * 3
    assert document["errors"] == [
        {
            "kind": "definition_error",
            "message": "unknown key 'expct' in a deterministic check",
            "file": a_file,
            "field_path": "deterministic.expct",
            "hint": "did you mean 'expect'? Otherwise delete it.",
            "line": 6,
            "column": 1,
        },
        {
            "kind": "definition_error",
            "message": "tags must be a list, not the text 'fast'",
            "file": a_file,
            "field_path": "deterministic.tags",
            "hint": "write `tags: [fast]`, or one `- item` per line below `tags:`.",
            "line": 7,
            "column": 7,
        },
        {
            "kind": "definition_error",
            "message": "unknown check type 'judge'",
            "file": b_file,
            "field_path": "type",
            "hint": "The check types are: deterministic, harness_judge, assertions.",
            "line": 3,
            "column": 7,
        },
    ]
    # The first failure in the shape `eb run --json` prints, for tools that read either.
    assert list(document["error"]) == ERROR_KEYS
    assert document["error"]["message"].startswith(
        f"Invalid check definition in {a_file}: 2 validation errors\n"
    )


def test_validate_s_closing_count_counts_every_error_json_lists(
    project: Callable[..., Path],
) -> None:
    # A file with two field errors is one message ("2 validation errors") but two errors in
    # --json: the closing count said "5 problems" beside six listed errors.
    files = {f"eval_checks/c{i}.yaml": f"schema_version: 1\nid: c{i}\n" for i in range(4)}
    root = project({**files, "eval_checks/two.yaml": TWO_ERRORS})
    text = eb_process(root, "validate")
    assert text.returncode == 2
    listed = _json_of(eb_process(root, "validate", "--json"))["errors"]
    assert len(listed) == 6
    two = root.resolve() / "eval_checks" / "two.yaml"
    assert text.stderr.splitlines()[-1] == (
        f"6 problems in 5 files: 2 in {two}, 1 in {root.resolve() / 'eval_checks' / 'c0.yaml'}, "
        f"1 in {root.resolve() / 'eval_checks' / 'c1.yaml'}, and more in 2 other files"
    )


def _json_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(done.stdout)
    assert document["exit_code"] == done.returncode
    return document


def test_validate_json_for_file_level_errors_and_readiness(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {
            "eval_checks/dup.yaml": "schema_version: 1\nid: a\nid: b\n",
            "eval_checks/bad.yaml": "id: [unclosed\n",
            "eval_checks/old.yaml": "schema_version: 1\nid: o\ntype: llm_judge\n",
        }
    )
    document = _json(eb("validate", "--cwd", str(root), "--json"))
    by_file = {Path(entry["file"]).name: entry for entry in document["errors"]}
    assert by_file["dup.yaml"]["line"] == 3 and by_file["dup.yaml"]["column"] == 1
    assert "duplicate key 'id' (line 3)" in by_file["dup.yaml"]["message"]
    assert by_file["bad.yaml"]["message"].startswith("Failed to parse YAML in ")
    assert by_file["bad.yaml"]["line"] == 2  # where the parser gave up
    assert (by_file["old.yaml"]["field_path"], by_file["old.yaml"]["line"]) == ("type", 3)
    assert by_file["old.yaml"]["column"] == 7

    missing = project(
        {"eval_checks/s.yaml": check_yaml("s").replace("script: 'pass'", "script_path: gone.py")}
    )
    for name in ("dup.yaml", "bad.yaml", "old.yaml"):
        (missing / "eval_checks" / name).unlink()
    ready = _json(eb("validate", "--cwd", str(missing), "--json"))
    assert ready["ok"] is False and ready["exit_code"] == 2
    (entry,) = ready["errors"]
    assert entry["field_path"] == "deterministic.script_path"
    assert entry["message"].startswith("Deterministic script not found: ")


def test_a_plain_equals_sign_or_merge_key_as_a_value_is_told_at_its_line_with_the_quote(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # YAML 1.1 reads a plain `=` and `<<` as keys of its own, which PyYAML builds no value for:
    # told as a dataset tells them, not as "could not determine a constructor" and indentation.
    root = project(
        {
            "eval_checks/eq.yaml": check_yaml("eq").replace(
                "description: Check eq.", "description: ="
            ),
            "eval_checks/merge.yaml": check_yaml("merge", tags=["a", "<<"]),
        }
    )
    document = _json(eb("validate", "--cwd", str(root), "--json"))
    by_file = {Path(entry["file"]).name: entry for entry in document["errors"]}
    equals, merge = by_file["eq.yaml"], by_file["merge.yaml"]
    assert (equals["line"], equals["column"]) == (4, 14)
    assert "line 4: '=' reads as YAML 1.1's default-value key" in equals["message"]
    assert "quote it ('=') to keep the text" in equals["message"]
    assert equals["hint"] == "quote the value to keep it as text"
    assert merge["line"] == 6 and "'<<' reads as YAML 1.1's merge key" in merge["message"]
    assert "constructor" not in equals["message"] + merge["message"]

    (root / "eval_checks" / "eq.yaml").write_text(check_yaml("eq").replace("Check eq.", "'='"))
    (root / "eval_checks" / "merge.yaml").write_text(check_yaml("merge", tags=["a", "'<<'"]))
    assert eb("validate", "--cwd", str(root)).exit_code == 0


_TINY_EXPECTED = """\
schema_version: 1
id: tiny
type: assertions
description: d
artifact: out.json
assert:
  - {path: small, op: equals, value: 5.0e-324}
  - {path: zero, op: equals, value: 0.0e-5}
  - {path: price, op: equals, value: 1.0e-400}
"""

_TINY_CASES = """\
schema_version: 1
id: rows
type: assertions
description: d
artifact: out.json
cases:
  - id: one
    price: {was: [-2.5E-330]}
assert:
  - {path: price, op: exists}
"""


def test_a_number_too_close_to_zero_to_read_is_told_at_its_field_with_the_fix(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """YAML reads `1.0e-400` as 0.0, which nobody wrote: an expected value and a check file's
    own cases are told at their field and line, as a dataset row is; a zero written with an
    exponent and a small number a program reads are fine, and `1e-400` (text in YAML 1.1) is
    not told to be written as 0.0."""
    root = project(
        {
            "eval_checks/tiny.yaml": _TINY_EXPECTED,
            "eval_checks/rows.yaml": _TINY_CASES,
            "eval_checks/text.yaml": _TINY_CASES.replace("id: rows", "id: text").replace(
                "{was: [-2.5E-330]}", "1e-400"
            ),
        }
    )
    document = _json(eb("validate", "--cwd", str(root), "--json"))
    by_file = {Path(entry["file"]).name: entry for entry in document["errors"]}
    assert sorted(by_file) == ["rows.yaml", "text.yaml", "tiny.yaml"]
    tiny = by_file["tiny.yaml"]
    assert (tiny["field_path"], tiny["line"], tiny["column"]) == ("assert.2.value", 9, 38)
    assert tiny["message"] == (
        f"Invalid check definition in {root / 'eval_checks' / 'tiny.yaml'}: assert.2.value: the "
        "value is the number 1.0e-400, below the smallest number a program reads from JSON "
        "(about 5e-324): read, it would be 0 (line 9, column 38)"
    )
    assert tiny["hint"] == "write 0 if zero is meant, or quote the number to keep it as text"
    rows = by_file["rows.yaml"]
    assert (rows["field_path"], rows["line"]) == ("cases.0.price.was.0", 8)
    assert "the number -2.5E-330, below the smallest number" in rows["message"]
    text = by_file["text.yaml"]
    assert text["line"] == 8 and "0.0" not in text["message"]
    assert (
        "reads a number too close to zero to read (it would be 0): write 0 if zero is meant, "
        in (text["message"])
    )

    (root / "eval_checks" / "tiny.yaml").write_text(_TINY_EXPECTED.replace("1.0e-400", "0"))
    (root / "eval_checks" / "rows.yaml").write_text(_TINY_CASES.replace("-2.5E-330", "'-2.5E-330'"))
    (root / "eval_checks" / "text.yaml").unlink()
    assert eb("validate", "--cwd", str(root)).exit_code == 0


_HUGE_EXPECTED = """\
schema_version: 1
id: huge
type: assertions
description: d
artifact: out.json
cases:
  - id: one
    big: {was: [1.5e+308]}
assert:
  - {path: x, op: equals, value: 1.0e+999}
"""


def test_a_number_too_large_to_read_is_told_at_its_field_not_graded_as_null(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """YAML reads `1.0e+999` as infinity, which JSON cannot say: the plan wrote it as null and
    `equals` passed on a null artifact. It is told at its field and line, as `.inf` is, in an
    expected value and a check file's own cases alike; a large number a program reads is fine."""
    root = project({"eval_checks/huge.yaml": _HUGE_EXPECTED, "out.json": '{"x": null}'})
    result = eb("run", "--cwd", str(root), "--no-html", "--json")
    assert result.exit_code == 2
    error = _json(result)["error"]
    assert error["field_path"] == "assert.0.value"
    assert error["message"] == (
        f"Invalid check definition in {root / 'eval_checks' / 'huge.yaml'}: assert.0.value: the "
        "value is the number 1.0e+999, beyond the largest number a program reads from JSON "
        "(about 1.8e308): read, it would be Infinity, which JSON cannot say (line 10, column 34)"
    )
    assert error["hint"] == "write a smaller number, or quote the number to keep it as text"

    huge = root / "eval_checks" / "huge.yaml"
    huge.write_text(_HUGE_EXPECTED.replace("1.0e+999", "null").replace("1.5e+308", "-1.0e+999"))
    document = _json(eb("validate", "--cwd", str(root), "--json"))
    (entry,) = document["errors"]
    assert (entry["field_path"], entry["line"]) == ("cases.0.big.was.0", 8)
    assert "the number -1.0e+999, beyond the largest" in entry["message"]
    assert "it would be -Infinity" in entry["message"]

    huge.write_text(_HUGE_EXPECTED.replace("1.0e+999", "null"))
    assert eb("run", "--cwd", str(root), "--no-html").exit_code == 0


def test_validate_json_renders_config_errors_and_warnings_in_the_same_shape(
    project: Callable[..., Path], eb: Callable[..., EbResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = project({"eval_checks/a.yaml": check_yaml("a")}, config="[core]\npass_treshold = 1\n")
    document = _json(eb("validate", "--cwd", str(broken), "--json"))
    assert document["ok"] is False and document["exit_code"] == 2
    (entry,) = document["errors"]
    assert list(entry) == ENTRY_KEYS and entry["kind"] == "config_error"
    assert entry["hint"] and "did you mean core.pass_threshold?" in entry["hint"]

    usage = _json(eb("validate", "--cwd", str(broken), "--json", "--no-such-flag"))
    assert usage["errors"][0]["kind"] == "usage_error" and usage["ok"] is False

    judged = project(
        {"eval_checks/j.yaml": judge_yaml("j")},
        config='[harness]\nagent = "claude"\n',
    )
    (judged / "eval_checks" / "a.yaml").unlink()
    without_claude = [
        part
        for part in os.environ["PATH"].split(os.pathsep)
        if not (Path(part) / "claude").exists()
    ]
    monkeypatch.setenv("PATH", os.pathsep.join(without_claude))
    # A missing agent refuses validation as it refuses the run; allowed, it is a warning.
    refused = _json(eb("validate", "--cwd", str(judged), "--json"))
    assert refused["ok"] is False and "claude" in refused["errors"][0]["message"]
    warned = _json(eb("validate", "--cwd", str(judged), "--json", "--allow-missing-agent"))
    assert warned["ok"] is True and warned["checks"] == 1
    # The agent missing from PATH (the judge's lack of calibration cases is another warning).
    (warning,) = [entry for entry in warned["warnings"] if "claude" in entry["message"]]
    assert list(warning) == ENTRY_KEYS and warning["kind"] == "warning"
    assert all(list(entry) == ENTRY_KEYS for entry in warned["warnings"])


def test_eb_run_reports_the_same_located_words(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/a.yaml": TWO_ERRORS})
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 2
    assert "deterministic.expct (line 6, column 1)\n  unknown key 'expct'" in result.stderr
    as_json = json.loads(eb("run", "--cwd", str(root), "--json").stdout)
    assert list(as_json["error"]) == ERROR_KEYS  # unchanged for `eb run --json`


def test_a_calibration_cases_bad_expect_is_told_the_fix_that_validates(
    project: Callable[..., Path],
) -> None:
    # A calibration case's label has no default: the check-level hint (leave `expect` out) would
    # lead to another error.
    case = "calibration:\n  - name: good\n    expect: {expect}\n  - name: bad\n    expect: fail\n"
    judge = judge_yaml("j")
    root = project(
        {"eval_checks/j.yaml": judge + case.format(expect="yes-pass")},
        config='[harness]\nagent = "claude"\n',
    )
    fix = "hint: write `expect: pass` for a known-good case or `expect: fail` for a known-bad one."
    bad = eb_process(root, "validate", "--allow-missing-agent")
    assert bad.returncode == 2
    assert "harness_judge.calibration.0.expect (line 8, column 13)" in bad.stderr
    assert "expect must be pass or fail, not the text 'yes-pass'" in bad.stderr
    assert fix in bad.stderr and "pass is the default" not in bad.stderr
    (root / "eval_checks" / "j.yaml").write_text(judge + case.replace("    expect: {expect}\n", ""))
    left_out = eb_process(root, "validate", "--allow-missing-agent")
    assert left_out.returncode == 2
    assert "missing required key 'expect'" in left_out.stderr and fix in left_out.stderr
    (root / "eval_checks" / "j.yaml").write_text(judge + case.format(expect="pass"))
    fixed = eb_process(root, "validate", "--allow-missing-agent")
    assert fixed.returncode == 0, fixed.stderr


def _modules_loaded(root: Path, *, names: tuple[str, ...]) -> tuple[list[str], int]:
    """Which of `names` `eb validate` of `root` imports, and its exit code."""
    probe = (
        "import json, sys\n"
        "from eval_banana.cli import main\n"
        f"code = main(['validate', '--cwd', {str(root)!r}])\n"
        f"loaded = sorted(n for n in {names!r} if n in sys.modules)\n"
        "print('LOADED', json.dumps([loaded, code]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    line = next(line for line in done.stdout.splitlines() if line.startswith("LOADED"))
    loaded, code = json.loads(line.removeprefix("LOADED"))
    return loaded, code


_POSITIONS = (
    "eval_banana.checks.problems",
    "eval_banana.checks.words",
    "eval_banana.checks.yamlpos",
    "difflib",
)


def test_only_files_that_fail_pay_for_positions_and_suggestions(
    project: Callable[..., Path],
) -> None:
    root = project({f"eval_checks/c{i}.yaml": check_yaml(f"c{i}") for i in range(20)})
    assert _modules_loaded(root, names=_POSITIONS) == ([], 0)
    (root / "eval_checks" / "c7.yaml").write_text(TWO_ERRORS)
    assert _modules_loaded(root, names=_POSITIONS) == (sorted(_POSITIONS), 2)


_MATCHES_CHECK = """\
schema_version: 1
id: m
type: assertions
description: d
artifact: out.json
assert:
  - {path: name, op: matches, value: "^a+$"}
"""


def test_only_a_project_with_a_pattern_pays_for_re2(project: Callable[..., Path]) -> None:
    # RE2's import is some 4 to 7 ms of every start-up; only a `matches` pattern needs it.
    plain = project(
        {
            "eval_checks/a.yaml": "schema_version: 1\nid: a\ntype: deterministic\n"
            "description: d\nscript: pass\n"
        }
    )
    assert _modules_loaded(plain, names=("re2",)) == ([], 0)
    patterned = project({"eval_checks/m.yaml": _MATCHES_CHECK})
    assert _modules_loaded(patterned, names=("re2",)) == (["re2"], 0)
    bad = project({"eval_checks/m.yaml": _MATCHES_CHECK.replace("^a+$", "(?=a)")})
    # RE2 still refuses what it cannot run.
    assert _modules_loaded(bad, names=("re2",)) == (["re2"], 2)
