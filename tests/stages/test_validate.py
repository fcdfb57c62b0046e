"""Validation rules and messages through `eb validate` and `eb list`."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from eval_banana.runner import compute_check_definition_sha256
from tests.conftest import EbResult, check_yaml, judge_yaml
from tests.processes import eb_process

HEAD = "schema_version: 1\nid: c1\ndescription: A check.\n"


def _validate(project: Callable[..., Path], eb: Callable[..., EbResult], body: str) -> EbResult:
    root = project({"eval_checks/c.yaml": body})
    return eb("validate", "--cwd", str(root))


D = "schema_version: 1\nid: a\ntype: deterministic\ndescription: d\n"


@pytest.mark.parametrize(
    ("body", "where", "message", "hint"),
    [
        (
            "id: a\ntype: deterministic\ndescription: d\nscript: pass\n",
            "deterministic.schema_version (line 1, column 1)",
            "missing required key 'schema_version'",
            "add `schema_version: 1`",
        ),
        (
            "schema_version: 2\nid: a\ntype: deterministic\ndescription: d\nscript: pass\n",
            "deterministic.schema_version (line 1, column 17)",
            "schema_version must be the integer 1, not the number 2",
            "write `schema_version: 1`",
        ),
        (
            "schema_version: true\nid: a\ntype: deterministic\ndescription: d\nscript: pass\n",
            "deterministic.schema_version (line 1, column 17)",
            "schema_version must be the integer 1, not the boolean true",
            "1.0, true and '1' are not accepted",
        ),
        (
            "schema_version: 1.0\nid: a\ntype: deterministic\ndescription: d\nscript: pass\n",
            "deterministic.schema_version (line 1, column 17)",
            "schema_version must be the integer 1, not the number 1.0",
            "write `schema_version: 1`",
        ),
        (
            "schema_version: 1\nid: '  '\ntype: deterministic\ndescription: d\nscript: pass\n",
            "deterministic.id (line 2, column 5)",
            "id must be non-empty",
            "give the check a name",
        ),
        (
            "schema_version: 1\nid: a.b\ntype: deterministic\ndescription: d\nscript: pass\n",
            "deterministic.id (line 2, column 5)",
            "id must match ^[a-zA-Z0-9_-]+$, not 'a.b'",
            "e.g. `id: a_b`",
        ),
        (
            "schema_version: 1\nid: 123\ntype: deterministic\ndescription: d\nscript: pass\n",
            "deterministic.id (line 2, column 5)",
            "id must be text, not the number 123",
            "quote it: id: '123'",
        ),
        (
            D + "script: pass\ntags: [web, 5]\n",
            "deterministic.tags.1 (line 6, column 13)",
            "this value must be text, not the number 5",
            "hint: quote it: '5'.",  # a list item has no key to write before it
        ),
        (
            "schema_version: 1\nid: yes\ntype: deterministic\ndescription: d\nscript: pass\n",
            "deterministic.id (line 2, column 5)",
            "id must be text, not the boolean true",
            "YAML reads unquoted yes, no, on, off, true and false as booleans",
        ),
        (
            "schema_version: 1\nid: a\ntype: deterministic\ndescription: '   '\nscript: pass\n",
            "deterministic.description (line 4, column 14)",
            "description must be non-empty",
            "what the check verifies",
        ),
        (
            D + "script: pass\nextra: 1\n",
            "deterministic.extra (line 6, column 1)",
            "unknown key 'extra' in a deterministic check",
            "delete it; the keys here are schema_version, id, description, tags, expect",
        ),
        (
            D + "script: pass\nexpct: fail\n",
            "deterministic.expct (line 6, column 1)",
            "unknown key 'expct' in a deterministic check",
            "did you mean 'expect'? Otherwise delete it.",
        ),
        (
            D + "scrpt_path: x.py\n",
            "deterministic.scrpt_path (line 5, column 1)",
            "unknown key 'scrpt_path' in a deterministic check",
            "did you mean 'script_path'?",
        ),
        (
            D + "script: pass\ninstructions: Is it good?\n",
            "deterministic.instructions (line 6, column 1)",
            "unknown key 'instructions' in a deterministic check",
            "'instructions' belongs to harness_judge checks",
        ),
        (
            D + "script: pass\ntimeout_seconds: 5\n",
            "deterministic.timeout_seconds (line 6, column 1)",
            "unknown key 'timeout_seconds' in a deterministic check",
            "[core] check_timeout_seconds",
        ),
        (
            D + "script: pass\ntarget_paths: [a.txt]\n",
            "deterministic.target_paths (line 6, column 1)",
            "unknown key 'target_paths' in a deterministic check",
            "target_paths was removed: name the files in `instructions`",
        ),
        (
            D,
            "deterministic (line 1, column 1)",
            "a deterministic check needs exactly one of script or script_path; neither is set",
            "add `script: |` followed by indented Python, or `script_path:`",
        ),
        (
            D + "script: pass\nscript_path: x.py\n",
            "deterministic (line 6, column 1)",
            "both script and script_path are set; a deterministic check takes exactly one",
            "delete one",
        ),
        (
            D + "script: ''\n",
            "deterministic (line 5, column 1)",
            "script must be non-empty",
            "write the script",
        ),
        (
            "schema_version: 1\nid: a\ntype: harness_judge\ndescription: d\ninstructions: ' '\n",
            "harness_judge.instructions (line 5, column 15)",
            "instructions must be non-empty",
            "the question the judge must answer",
        ),
        (
            "schema_version: 1\nid: a\ntype: harness_judge\ndescription: d\n",
            "harness_judge.instructions (line 1, column 1)",
            "missing required key 'instructions'",
            "add `instructions:`",
        ),
        (
            "schema_version: 1\nid: a\ntype: harness_judge\ndescription: d\ninstructions: i\n"
            "script: pass\n",
            "harness_judge.script (line 6, column 1)",
            "unknown key 'script' in a harness_judge check",
            "'script' belongs to deterministic checks",
        ),
        (
            D + "script: pass\ntags: fast\n",
            "deterministic.tags (line 6, column 7)",
            "tags must be a list, not the text 'fast'",
            "write `tags: [fast]`",
        ),
        (
            D + "script: pass\nexpect: maybe\n",
            "deterministic.expect (line 6, column 9)",
            "expect must be pass or fail, not the text 'maybe'",
            "`expect: fail` for a control check",
        ),
        (
            "schema_version: 1\nid: a\ntype: determinstic\ndescription: d\nscript: pass\n",
            "type (line 3, column 7)",
            "unknown check type 'determinstic'",
            "did you mean 'deterministic'? The check types are: deterministic, harness_judge, "
            "assertions.",
        ),
        (
            "schema_version: 1\nid: a\ndescription: d\nscript: pass\n",
            "type (line 1, column 1)",
            "missing required key 'type'",
            "add `type:` with one of: deterministic, harness_judge, assertions.",
        ),
        (
            "schema_version: 1\nid: a\ntype: assertions\ndescription: d\nartifact: out.json\n"
            "assert:\n  - path: a\n    op: equal\n    value: 1\n",
            "assertions.assert.0.op (line 8, column 9)",
            "unknown assertion op 'equal'",
            "did you mean 'equals'?",
        ),
        (
            "schema_version: 1\nid: a\ntype: assertions\ndescription: d\nartifact: out.json\n"
            "assert:\n  - {path: a, op: lengthAtLeast, value: 2, vaule: 3}\n",
            "assertions.assert.0.lengthAtLeast.vaule (line 7, column 44)",
            "unknown key 'vaule' in an assertion with op lengthAtLeast",
            "did you mean 'value'?",
        ),
    ],
)
def test_field_errors_name_file_field_line_problem_and_fix(
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
    body: str,
    where: str,
    message: str,
    hint: str,
) -> None:
    result = _validate(project, eb, body)
    assert result.exit_code == 2
    path = str(project({}) / "eval_checks" / "c.yaml")
    assert result.stderr.startswith(f"Invalid check definition in {path}: 1 validation error\n")
    block = result.stderr.split("\n", 1)[1]
    assert block.startswith(f"{where}\n  {message}\n  hint: "), block
    assert hint in block
    # Our words only: none of the validation library's sentences or links.
    for phrase in ("Input should", "Extra inputs", "Field required", "Input tag", "pydantic"):
        assert phrase not in result.stderr
    assert "Traceback" not in result.stderr


def test_a_misspelt_required_key_is_reported_missing_and_unknown(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    result = _validate(
        project,
        eb,
        "schema_version: 1\nid: a\ntype: assertions\ndescription: d\nartifact: out.json\n"
        "assertions:\n  - {path: a, op: exists}\n",
    )
    assert ": 2 validation errors\n" in result.stderr
    assert (
        "assertions.assert (line 1, column 1)\n  missing required key 'assert'\n" in result.stderr
    )
    assert (
        "assertions.assertions (line 6, column 1)\n"
        "  unknown key 'assertions' in an assertions check\n"
        "  hint: did you mean 'assert'? Otherwise delete it.\n" in result.stderr
    )


def test_unknown_type_without_a_close_match_lists_the_types(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    unknown = _validate(project, eb, HEAD + "type: banana\n")
    assert "type (line 4, column 7)\n  unknown check type 'banana'\n" in unknown.stderr
    assert "did you mean" not in unknown.stderr
    assert "The check types are: deterministic, harness_judge, assertions." in unknown.stderr


def test_llm_judge_rename_takes_precedence(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    result = _validate(project, eb, "id: x.y\ntype: llm_judge\n")
    assert result.exit_code == 2
    assert "Check type 'llm_judge' was renamed to 'harness_judge' in " in result.stderr
    assert "Update the 'type' field in your YAML to 'harness_judge'." in result.stderr


def test_a_dataset_left_in_eval_checks_is_told_as_one(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """Every .yaml file in eval_checks/ is read as a check, so a family's YAML dataset kept
    beside it fails as a check: the hint says where datasets go, which the mapping-only hint of
    any other non-check YAML (a bare text) does not."""
    root = project({})
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "rows.yaml").write_text("- {id: a, q: x}\n- {id: b, q: y}\n")
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 2
    assert "a list is a dataset's shape" in result.stderr
    assert "keep datasets outside it (data/rows.yaml, named by the family's cases_from)" in (
        result.stderr
    )
    (root / "eval_checks" / "rows.yaml").write_text("just text\n")
    result = eb("validate", "--cwd", str(root))
    assert "top-level YAML must be a mapping" in result.stderr
    assert "a dataset's shape" not in result.stderr


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"- a\n- b\n", "top-level YAML must be a mapping"),
        (b"", "top-level YAML must be a mapping"),
        (b"id: [unclosed\n", "Failed to parse YAML in "),
        (b"id: \xff\xfe\n", "Failed to decode YAML in "),
        # Windows PowerShell's `>` writes UTF-16: said so, not "invalid start byte".
        (
            "schema_version: 1\nid: a\n".encode("utf-16"),
            "as UTF-8: the file is UTF-16 text, not UTF-8 (it starts with a UTF-16 byte order "
            "mark)\nhint: save the file as UTF-8",
        ),
        # UTF-32's byte order mark starts with UTF-16's: told as UTF-32, as a dataset is.
        (
            "schema_version: 1\nid: a\n".encode("utf-32"),
            "as UTF-8: the file is UTF-32 text, not UTF-8 (it starts with a UTF-32 byte order "
            "mark)\nhint: save the file as UTF-8",
        ),
        # Without a mark, UTF-16 of ASCII letters decodes as UTF-8 (a NUL after each letter).
        (
            "schema_version: 1\nid: a\n".encode("utf-16-le"),
            "as UTF-8: the file is UTF-16 text without a byte order mark, not UTF-8",
        ),
        (b"schema_version: 1\nid: a\nid: b\n", "duplicate key 'id' (line 3)"),
    ],
)
def test_file_level_errors(
    project: Callable[..., Path], eb: Callable[..., EbResult], raw: bytes, expected: str
) -> None:
    root = project({})
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "c.yaml").write_bytes(raw)
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 2
    assert expected in result.stderr
    assert str(root / "eval_checks" / "c.yaml") in result.stderr


def test_yaml_merge_keys_read_as_eval_banana_reads_them_and_a_real_repeat_still_fails(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # `<<: *base` (a YAML merge key) made the duplicate-key check ask PyYAML to build the
    # merge tag itself: "could not determine a constructor", for a file eval-banana reads.
    check = (
        "schema_version: 1\nid: merged\ntype: assertions\ndescription: d\n"
        "artifact: out.json\nassert:\n"
        "  - &base {path: a, op: equals, value: 1}\n"
        "  - <<: *base\n    path: b\n"
    )
    root = project({"eval_checks/c.yaml": check, "out.json": '{"a": 1, "b": 1}'})
    ran = eb("run", "--cwd", str(root))
    assert ran.exit_code == 0, ran.stderr
    assert "all 2 assertions hold" in ran.stdout, ran.stdout
    # A key written twice beside the merge is still a repeat.
    (root / "eval_checks" / "c.yaml").write_text(check + "    path: c\n")
    refused = eb("validate", "--cwd", str(root))
    assert refused.exit_code == 2 and "duplicate key 'path' (line 10)" in refused.stderr


def test_several_errors_in_one_file_and_every_bad_file_are_reported_in_one_pass(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {
            "eval_checks/a.yaml": "schema_version: 2\nid: a.b\ntype: deterministic\n"
            "description: ''\nscript: pass\n",
            "eval_checks/b.yaml": "schema_version: 1\nid: b\ntype: nope\ndescription: d\n",
            "eval_checks/ok.yaml": check_yaml("ok"),
        }
    )
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 2
    assert "3 validation errors" in result.stderr
    assert "deterministic.schema_version" in result.stderr
    assert "deterministic.id" in result.stderr
    assert "deterministic.description" in result.stderr
    assert "b.yaml" in result.stderr and "unknown check type 'nope'" in result.stderr


def test_duplicate_ids_name_both_files(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {"eval_checks/a.yaml": check_yaml("same"), "x/eval_checks/b.yaml": check_yaml("same")}
    )
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 2
    first, second = root / "eval_checks" / "a.yaml", root / "x" / "eval_checks" / "b.yaml"
    assert f"Duplicate check id 'same' found in {first} and {second}\nid (line 2, column 5)" in (
        result.stderr
    )
    entry = json.loads(eb("validate", "--cwd", str(root), "--json").stdout)["errors"][0]
    assert (entry["file"], entry["field_path"], entry["line"]) == (str(second), "id", 2)


def test_ids_are_case_sensitive_and_stripped(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {
            "eval_checks/a.yaml": check_yaml("Judge"),
            "eval_checks/b.yaml": check_yaml("judge").replace("id: judge", "id: '  judge  '"),
        }
    )
    listed = eb("list", "--cwd", str(root))
    assert listed.exit_code == 0
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == ["Judge", "judge"]


def test_no_checks_found_fails_validate_unless_allowed(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"README.md": "nothing here"})
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 2 and "No checks found" in result.stderr
    allowed = eb("validate", "--cwd", str(root), "--allow-empty")
    assert allowed.exit_code == 0 and "Validated 0 checks successfully." in allowed.stdout
    listed = eb("list", "--cwd", str(root))
    assert listed.exit_code == 0 and listed.stdout == ""
    # The plan says so in a field of its own, which `eb list` and --allow-empty read (never
    # the message's words), and a bad check file beside nothing else is no "nothing found".
    eb("validate", "--cwd", str(root), "--run-dir", str(root / "out"))
    plan = json.loads((root / "out" / "stages" / "plan.json").read_text())
    assert plan["no_checks"] is True and not plan["ok"]
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "bad.yaml").write_text("schema_version: 1\nid: bad\n")
    broken = eb("validate", "--cwd", str(root), "--allow-empty", "--run-dir", str(root / "out"))
    assert broken.exit_code == 2
    assert json.loads((root / "out" / "stages" / "plan.json").read_text())["no_checks"] is False
    assert eb("list", "--cwd", str(root)).exit_code == 2


def test_validate_success_message(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a"), "eval_checks/b.yml": check_yaml("b")})
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 0
    assert result.stdout == "Validated 2 checks successfully.\n"


def test_validate_refuses_missing_script_path(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/a.yaml": HEAD + "type: deterministic\nscript_path: absent.py\n"})
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 2
    # The message names the check file and the line of its script_path, not just the script.
    assert (
        f"Deterministic script not found: {root / 'eval_checks' / 'absent.py'} "
        f"(script_path: absent.py in {root / 'eval_checks' / 'a.yaml'}:5)"
    ) in result.stderr


def test_run_refuses_a_missing_script_path_as_validate_does(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # `eb validate` is green only when `eb run` could start: both refuse, with the same text.
    root = project(
        {
            "eval_checks/a.yaml": HEAD + "type: deterministic\nscript_path: absent.py\n",
            "eval_checks/b.yaml": check_yaml("b", script="open('ran.txt', 'w')"),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    message = (
        f"Deterministic script not found: {root / 'eval_checks' / 'absent.py'} "
        f"(script_path: absent.py in {root / 'eval_checks' / 'a.yaml'}:5)"
    )
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 2
    assert message in result.stderr and "hint: Fix script_path" in result.stderr
    assert "eval_banana." not in result.stderr  # no logger names on the console
    assert not (root / "ran.txt").exists()  # nothing ran
    (run_dir,) = list((root / "runs").iterdir())
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    assert plan["ok"] is False
    assert plan["errors"][0]["field_path"] == "deterministic.script_path"
    assert not (run_dir / "report.json").exists()
    assert message in eb("validate", "--cwd", str(root)).stderr
    listed = eb("list", "--cwd", str(root))  # listing still works: it runs nothing
    assert listed.exit_code == 0 and len(listed.stdout.splitlines()) == 2


@pytest.mark.parametrize("content", ["", "\n   \n\t\n", "\ufeff\n"])
def test_a_blank_script_path_file_is_refused_as_a_blank_inline_script_is(
    project: Callable[..., Path], content: str
) -> None:
    # An emptied script would exit 0 whatever it was meant to check: a pass that proves
    # nothing. It is refused when validated, and when a run plans it after validate was green.
    root = project(
        {
            "eval_checks/a.yaml": HEAD + "type: deterministic\nscript_path: rule.py\n",
            "eval_checks/rule.py": "raise SystemExit('the rule')\n",
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    assert eb_process(root, "validate").returncode == 0
    (root / "eval_checks" / "rule.py").write_text(content, encoding="utf-8")
    message = (
        f"Deterministic script is blank: {root / 'eval_checks' / 'rule.py'} "
        f"(script_path: rule.py in {root / 'eval_checks' / 'a.yaml'}:5): a check with an "
        "empty script could never fail; write the check's rule in it, or point script_path "
        "at the script that holds it"
    )
    validated = eb_process(root, "validate")
    assert validated.returncode == 2
    assert message in validated.stderr and "hint: Fix script_path" in validated.stderr
    ran = eb_process(root, "run", "--json")
    assert ran.returncode == 2 and json.loads(ran.stdout)["error"]["message"].startswith(
        "Deterministic script is blank: "
    )
    (run_dir,) = list((root / "runs").iterdir())
    assert not (run_dir / "report.json").exists()


def test_validate_refuses_unknown_agent_and_uninjectable_effort(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/j.yaml": judge_yaml("j")})
    unknown = eb("validate", "--cwd", str(root), "--harness-agent", "nosuch")
    assert unknown.exit_code == 2 and "Unknown harness agent: nosuch" in unknown.stderr
    root2 = project(
        {"eval_checks/j.yaml": judge_yaml("j")},
        config='[harness]\nagent = "gemini"\nreasoning_effort = "high"\n',
    )
    effort = eb("validate", "--cwd", str(root2))
    assert effort.exit_code == 2
    assert "cannot inject the selected reasoning effort 'high'" in effort.stderr


def test_an_unknown_agent_is_told_where_it_was_named_with_the_agent_meant(
    project: Callable[..., Path], eb: Callable[..., EbResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = '[harness]\nagent = "mine"\n\n[agents.mine]\ncommand = ["tools/agent.py"]\n'
    root = project({"eval_checks/j.yaml": judge_yaml("j")}, config=config)
    config_file = str(root / ".eval-banana" / "config.toml")
    monkeypatch.setenv("EVAL_BANANA_HARNESS_AGENT", "mien")
    by_variable = eb("validate", "--cwd", str(root), "--json")
    assert by_variable.exit_code == 2
    (error,) = json.loads(by_variable.stdout)["errors"]
    assert error["message"] == "Unknown harness agent: mien"  # eval-banana's text, as it was
    assert (error["file"], error["field_path"], error["line"]) == (None, "harness.agent", None)
    assert error["hint"].startswith(
        "EVAL_BANANA_HARNESS_AGENT=mien names it; did you mean 'mine' ([agents.mine])? "
        "Otherwise use an [agents.*] table's name (mine), a built-in agent (claude, "
    )
    by_flag = eb("validate", "--cwd", str(root), "--harness-agent", "cladue")
    assert "hint: --harness-agent cladue names it; did you mean 'claude'? " in by_flag.stderr
    monkeypatch.delenv("EVAL_BANANA_HARNESS_AGENT")
    (root / ".eval-banana" / "config.toml").write_text(config.replace('"mine"\n\n', '"mien"\n\n'))
    in_file = eb("validate", "--cwd", str(root), "--json")
    (error,) = json.loads(in_file.stdout)["errors"]
    assert (error["file"], error["field_path"], error["line"]) == (
        config_file,
        "harness.agent",
        2,
    )
    assert error["hint"].startswith(
        f"[harness] agent = \"mien\" in {config_file} (line 2) names it; did you mean 'mine'"
    )


def test_guard_without_agent_names_first_offender(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {"b/eval_checks/j.yaml": judge_yaml("j2"), "a/eval_checks/j.yaml": judge_yaml("j1")}
    )
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 2
    offender = root / "a" / "eval_checks" / "j.yaml"
    assert (
        "harness_judge check requires a harness but none is configured (first offender: "
        f"{offender}). Fix: set [harness] agent in .eval-banana/config.toml or pass "
        "--harness-agent on the command line." in result.stderr
    )


def test_an_agent_cleared_by_an_empty_variable_or_flag_names_it_not_the_file(
    project: Callable[..., Path], eb: Callable[..., EbResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file names an agent; the variable (a CI variable left unset) or the flag set empty
    # clears it, so setting [harness] agent in the file, as the fix once said, changes nothing.
    root = project(
        {"eval_checks/j.yaml": judge_yaml("j1")},
        config='[harness]\nagent = "fake"\n[agents.fake]\ncommand = ["true"]\n',
    )
    monkeypatch.setenv("EVAL_BANANA_HARNESS_AGENT", "")
    by_variable = eb("validate", "--cwd", str(root))
    assert by_variable.exit_code == 2
    assert (
        "Fix: EVAL_BANANA_HARNESS_AGENT is set but empty, which means no agent: set it to an "
        "agent's name, or unset it to use [harness] agent from the config file."
    ) in by_variable.stderr, by_variable.stderr
    assert ".eval-banana/config.toml or pass" not in by_variable.stderr
    monkeypatch.delenv("EVAL_BANANA_HARNESS_AGENT")
    by_flag = eb("validate", "--cwd", str(root), "--harness-agent", "")
    assert by_flag.exit_code == 2
    assert (
        "Fix: --harness-agent was given empty, which means no agent: pass an agent's name."
    ) in by_flag.stderr, by_flag.stderr


def test_check_id_is_relaxed_and_matches_stripped_id(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {
            "eval_checks/target.yaml": check_yaml("abc").replace("id: abc", "id: ' abc '"),
            "eval_checks/broken.yaml": "schema_version: [\n",
            "eval_checks/dup1.yaml": check_yaml("dup"),
            "eval_checks/dup2.yaml": check_yaml("dup"),
        }
    )
    listed = eb("list", "--cwd", str(root), "--check-id", "abc")
    assert listed.exit_code == 0
    assert listed.stdout.startswith("abc\tdeterministic\t")
    missing = eb("list", "--cwd", str(root), "--check-id", "zzz")
    assert missing.exit_code == 2 and "No check found with id 'zzz'" in missing.stderr
    dup = eb("list", "--cwd", str(root), "--check-id", "dup")
    assert dup.exit_code == 2
    assert (
        f"Duplicate check id 'dup' found in: {root / 'eval_checks' / 'dup1.yaml'}, "
        f"{root / 'eval_checks' / 'dup2.yaml'}" in dup.stderr
    )


def test_check_id_target_is_validated_strictly(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/t.yaml": "schema_version: 1\nid: t\ntype: deterministic\n"})
    result = eb("list", "--cwd", str(root), "--check-id", "t")
    assert result.exit_code == 2 and "Invalid check definition in " in result.stderr


def test_tags_select_with_or_semantics(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {
            "eval_checks/a.yaml": check_yaml("a", tags=["fast"]),
            "eval_checks/b.yaml": check_yaml("b", tags=["slow"]),
            "eval_checks/c.yaml": check_yaml("c", tags=["other", "Fast"]),
        }
    )
    result = eb("list", "--cwd", str(root), "--tag", "fast", "--tag", "slow")
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == ["a", "b"]


def test_check_dir_narrows_check_id(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {"one/eval_checks/a.yaml": check_yaml("a"), "two/eval_checks/b.yaml": check_yaml("b")}
    )
    found = eb("list", "--cwd", str(root), "--check-dir", "two")
    assert [line.split("\t")[0] for line in found.stdout.splitlines()] == ["b"]
    outside = eb("list", "--cwd", str(root), "--check-dir", "two", "--check-id", "a")
    assert outside.exit_code == 2 and "No check found with id 'a'" in outside.stderr


def test_list_prints_tsv_in_discovery_order(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/b.yaml": check_yaml("b"), "eval_checks/a.yaml": check_yaml("a")})
    result = eb("list", "--cwd", str(root))
    # Files relative to the project root; the count and the root on stderr, off the TSV.
    assert result.stdout.splitlines() == [
        "a\tdeterministic\tCheck a.\teval_checks/a.yaml",
        "b\tdeterministic\tCheck b.\teval_checks/b.yaml",
    ]
    assert result.stderr == f"2 checks listed (project root: {root.resolve()})\n"


# The digest, computed here independently from eval-banana's framing
# (docs/compatibility.md#definition-digest).
def _framed(*components: tuple[bytes, bytes]) -> str:
    data = b"eval-banana/check-definition-sha256/v1\x00"
    for name, content in components:
        data += struct.pack(">Q", len(name)) + name + struct.pack(">Q", len(content)) + content
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_digest_of_inline_check(tmp_path: Path) -> None:
    raw = b'schema_version: 1\nid: vec_inline\ntype: deterministic\ndescription: Vector one.\nscript: "pass"\n'
    (tmp_path / "c.yaml").write_bytes(raw)
    expected = _framed((b"definition.yaml", raw))
    assert expected == "sha256:e9656c213ab99beaed98e0706b7170783e40efe595767d9da46eb1b03594fa1e"
    assert compute_check_definition_sha256(source_path=tmp_path / "c.yaml") == expected


def test_digest_of_script_path_check_and_missing_script(tmp_path: Path) -> None:
    raw = b"schema_version: 1\nid: vec_ref\ntype: deterministic\ndescription: Vector two.\nscript_path: check.py\n"
    (tmp_path / "c.yaml").write_bytes(raw)
    (tmp_path / "check.py").write_bytes(b'print("ok")\n')
    expected = _framed((b"definition.yaml", raw), (b"referenced-script", b'print("ok")\n'))
    assert expected == "sha256:eaba0a80c81fd8665e222fe38e8a93be8610325127ecaddf8ee54b1a3a3ce5c8"
    assert compute_check_definition_sha256(source_path=tmp_path / "c.yaml") == expected
    (tmp_path / "check.py").unlink()
    missing = _framed((b"definition.yaml", raw), (b"referenced-script-unavailable", b""))
    assert compute_check_definition_sha256(source_path=tmp_path / "c.yaml") == missing


def test_digest_api_is_keyword_only_and_raises_value_error(tmp_path: Path) -> None:
    import eval_banana

    (tmp_path / "bad.yaml").write_text("id: [\n")
    with pytest.raises(TypeError):
        compute_check_definition_sha256(tmp_path / "bad.yaml")  # type: ignore[misc]
    with pytest.raises(ValueError, match="Failed to parse YAML in "):
        eval_banana.compute_check_definition_sha256(source_path=tmp_path / "bad.yaml")
    with pytest.raises(FileNotFoundError):
        compute_check_definition_sha256(source_path=tmp_path / "absent.yaml")


@pytest.mark.parametrize(
    ("field", "dataset"),
    [("cases", "cases:\n  - id: one\n  - id: two\n"), ("cases_from", "cases_from: rows.jsonl\n")],
    ids=["cases", "cases_from"],
)
def test_digest_api_refuses_a_dataset_family_naming_where_its_cases_digests_are(
    tmp_path: Path, field: str, dataset: str
) -> None:
    # It returned a digest of the whole family file, which `eb run` reports nowhere: each case
    # has a digest of its own. eval-banana 0.5.0 refused the file (no `cases` field there).
    (tmp_path / "rows.jsonl").write_text('{"id": "one"}\n{"id": "two"}\n')
    (tmp_path / "fam.yaml").write_text(f"{D}script: pass\n{dataset}")
    with pytest.raises(ValueError) as raised:
        compute_check_definition_sha256(source_path=tmp_path / "fam.yaml")
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'fam.yaml'}: `{field}` makes this file a dataset")
    assert "`eb plan --json` (definition_digest)" in message
    assert "report.json (check_definition_sha256)" in message


def test_validate_refuses_an_agent_missing_from_path_as_run_does(tmp_path: Path) -> None:
    # `eb validate` is green only when `eb run` could start: a judge whose agent CLI is not on
    # PATH stops both, with the same message; --allow-missing-agent (the pre-commit hook's
    # machines) keeps it a warning.
    root = tmp_path / "proj"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text('[harness]\nagent = "codex"\n')
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "j.yaml").write_text(
        "schema_version: 1\nid: j\ntype: harness_judge\ndescription: d\ninstructions: Judge.\n"
    )
    environ = {**os.environ, "PATH": str(tmp_path / "empty-bin")}

    def eb(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "eval_banana", *args, "--cwd", str(root)],
            capture_output=True,
            text=True,
            env=environ,
            timeout=60,
        )

    validated, ran = eb("validate"), eb("run")
    assert (validated.returncode, ran.returncode) == (2, 2)
    assert "'codex'" in validated.stderr and "not found on PATH" in validated.stderr
    # the same message (validate also warns that the judge has no calibration cases)
    missing = [line for line in ran.stderr.splitlines() if "not found on PATH" in line]
    assert missing and set(missing) <= set(validated.stderr.splitlines())
    lenient = eb("validate", "--allow-missing-agent")
    assert lenient.returncode == 0, lenient.stderr
    assert "warning: " in lenient.stderr and "not found on PATH" in lenient.stderr


def test_a_script_path_that_is_a_symlink_loop_is_refused_as_a_missing_script(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # Python 3.11's Path.resolve raised RuntimeError at the loop: a traceback, exit 1.
    root = project({"eval_checks/a.yaml": HEAD + "type: deterministic\nscript_path: lp.py\n"})
    os.symlink("lp.py", root / "eval_checks" / "lp.py")
    message = (
        f"Deterministic script not found: {root / 'eval_checks' / 'lp.py'} "
        f"(script_path: lp.py in {root / 'eval_checks' / 'a.yaml'}:5)"
    )
    for command in ("validate", "run"):
        result = eb(command, "--cwd", str(root))
        assert result.exit_code == 2, (command, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr


def test_a_run_dir_that_is_a_file_or_a_link_loop_is_a_usage_error_naming_it(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")})
    (root / "notes.txt").write_text("mine\n")
    os.symlink("loop", root / "loop")
    for given, why in (("notes.txt", "Not a directory"), ("loop", "a symbolic link loop")):
        result = eb("validate", "--cwd", str(root), "--run-dir", str(root / given))
        assert result.exit_code == 2, result.stderr
        assert f"--run-dir {root / given}: cannot make {root / given / 'stages'}: {why}" in (
            result.stderr
        )
        assert "Traceback" not in result.stderr
    assert (root / "notes.txt").read_text() == "mine\n"
