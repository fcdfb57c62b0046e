"""A family's `inputs:` patterns filled per case: each case is keyed on, and selected by, the
files its own row names; a placeholder in a field no row fills is a definition error."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EbResult
from tests.gitrepo import commit_all, init_repo

CONFIG = """\
[discovery]
exclude_dirs = [".eval-banana", ".git"]

[cache]
mode = "on"
"""

# Each case reads its own prompt file, which its `inputs:` pattern names by the row's field.
PROMPT_FAMILY = """\
schema_version: 1
id: prompts
type: deterministic
description: "prompt {{ case.file }}"
inputs: ["prompts/{{ case.file }}"]
cases: [{id: a, file: a.txt}, {id: b, file: b.txt}, {id: c, file: "c[1].txt"}]
script: |
  import json, sys
  case = json.load(open(sys.argv[1]))["case"]
  open("ran.log", "a").write(case["id"] + "\\n")
  sys.exit(0 if "good" in open("prompts/" + case["file"]).read() else 1)
"""


def _project(tmp_path: Path, family: str = PROMPT_FAMILY) -> Path:
    return init_repo(
        tmp_path / "repo",
        {
            ".eval-banana/config.toml": CONFIG,
            "eval_checks/prompts.yaml": family,
            "prompts/a.txt": "good\n",
            "prompts/b.txt": "good\n",
            "prompts/c[1].txt": "good\n",
            "prompts/c1.txt": "good\n",  # what `c[1].txt` would match were it read as a glob
        },
    )


def _run(eb: Callable[..., EbResult], root: Path) -> tuple[dict[str, str], list[str]]:
    """Each case's status, and the cases whose script ran (the others were cached)."""
    log = root / "ran.log"
    log.unlink(missing_ok=True)
    ran = eb("run", "--cwd", str(root), "--json")
    report: dict[str, Any] = json.loads(ran.stdout)
    scripts = sorted(log.read_text().split()) if log.exists() else []
    return {check["check_id"]: check["status"] for check in report["checks"]}, scripts


def test_a_case_reruns_when_the_file_its_row_names_changes_and_no_other(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    # The pattern was never filled: it matched no file, so every case was keyed on nothing and
    # kept its pass after its own prompt file was broken.
    root = _project(tmp_path)
    validated = eb("validate", "--cwd", str(root))
    assert validated.exit_code == 0 and "matches no file" not in validated.stderr
    passing = {"prompts[a]": "passed", "prompts[b]": "passed", "prompts[c]": "passed"}
    assert _run(eb, root) == (passing, ["a", "b", "c"])
    (root / "prompts" / "a.txt").write_text("bad\n")
    assert _run(eb, root) == ({**passing, "prompts[a]": "failed"}, ["a"])
    # A row's value names its file as written, never as a glob: `c[1].txt` is not `c1.txt`.
    (root / "prompts" / "a.txt").write_text("good\n")  # as the first run found it
    (root / "prompts" / "c1.txt").write_text("bad\n")
    assert _run(eb, root) == (passing, [])
    (root / "prompts" / "c[1].txt").write_text("bad\n")
    assert _run(eb, root) == ({**passing, "prompts[c]": "failed"}, ["c"])
    listed = eb("list", "--cwd", str(root), "--cases", "--inputs")
    assert "  inputs: prompts/b.txt (1 file)\n    prompts/b.txt\n" in listed.stdout


def test_changed_since_selects_the_case_whose_file_a_commit_touched(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    root = _project(tmp_path)
    (root / "prompts" / "b.txt").write_text("better\n")
    commit_all(root)
    listed = eb("list", "--cwd", str(root), "--cases", "--changed-since", "HEAD~1")
    assert listed.exit_code == 0, listed.stderr
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == ["prompts[b]"]


@pytest.mark.parametrize(
    ("row", "told", "hint"),
    [
        (
            "{id: d, name: d.txt}",
            "inputs.0: the case has no field 'file'",
            "use {{ case.<field> }} in inputs.0 with a field every row has",
        ),
        (
            "{id: d, file: 3}",
            "inputs.0: field 'file' is a number, not text, where text goes",
            "a placeholder inside text takes a text field: write file as text in the dataset "
            '("1", not 1), or take {{ case.file }} out of inputs.0',
        ),
        (
            "{id: d, file: ../secrets.txt}",
            "inputs.0: field 'file' is '../secrets.txt': filled in, the pattern "
            "'prompts/../secrets.txt' escapes the project root ('..' is not allowed)",
            "a value filling inputs.0 names the file the case reads, below the project root "
            "(a path such as a.txt or sub/a.txt): fix file in the row",
        ),
    ],
    ids=["missing field", "not text", "outside the root"],
)
def test_a_row_that_cannot_fill_an_inputs_pattern_is_told_at_its_row(
    row: str, told: str, hint: str, tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    family = PROMPT_FAMILY.replace('"c[1].txt"}]', f'"c[1].txt"}}, {row}]')
    root = _project(tmp_path, family)
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2, validated.stdout
    (error,) = json.loads(validated.stdout)["errors"]
    check_file = str(root / "eval_checks" / "prompts.yaml")
    assert error["message"] == f"{check_file}: case 'd' (cases item 4): {told}"
    assert error["hint"] == hint


@pytest.mark.parametrize(
    ("field", "written", "said"),
    [
        ("tags.1", 'tags: [smoke, "lang-{{ case.file }}"]', "in tags"),
        ("skip", 'skip: "waiting for {{ case.file }}"', "in skip"),
        ("script_path", 'script_path: "checks/{{ case.file }}.py"', "in script_path"),
        ("script", "script: |\n  print('{{ case.file }}')", "in script"),
    ],
)
def test_a_placeholder_in_a_field_no_row_fills_is_a_definition_error_naming_it(
    field: str, written: str, said: str, tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    # Each was taken as the literal text: a tag `lang-{{ case.file }}` on every case.
    head, script = PROMPT_FAMILY.split("script: |")
    family = head + written + "\n" + ("" if field.startswith("script") else "script: |" + script)
    root = _project(tmp_path, family)
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2, validated.stdout
    (error,) = json.loads(validated.stdout)["errors"]
    assert error["field_path"] == field
    assert error["message"].endswith(
        f"{field}: '{{{{ case.file }}}}' is a dataset placeholder, but eb fills none {said}: "
        "it would be taken as the literal text"
    )
    assert error["line"] is not None and error["hint"]


def test_a_single_checks_inputs_placeholder_is_refused_as_its_artifacts_is(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    single = PROMPT_FAMILY.replace(
        'cases: [{id: a, file: a.txt}, {id: b, file: b.txt}, {id: c, file: "c[1].txt"}]\n', ""
    ).replace("prompt {{ case.file }}", "prompt")
    root = _project(tmp_path, single)
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2, validated.stdout
    (error,) = json.loads(validated.stdout)["errors"]
    assert error["field_path"] == "inputs.0"
    assert (
        "'{{ case.file }}' is a dataset placeholder, but this check has no cases"
        in (error["message"])
    )


def test_a_familys_filled_patterns_naming_no_file_are_one_warning_for_the_family(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    # Each case's filled pattern was warned of alone: 40 rows whose files are missing printed
    # 40 warnings (80 with the shared pattern `notes/**`, told again for every case).
    rows = ", ".join(f"{{id: r{index}, file: r{index}.txt}}" for index in range(40))
    family = PROMPT_FAMILY.replace(
        '"prompts/{{ case.file }}"]', '"prompts/{{ case.file }}", "notes/**"]'
    ).replace('{id: c, file: "c[1].txt"}]', f'{{id: c, file: "c[1].txt"}}, {rows}]')
    root = _project(tmp_path, family)
    for command in ("validate", "run"):
        done = eb(command, "--cwd", str(root))
        warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
        assert warnings == [
            "warning: Check 'prompts': inputs pattern 'notes/**' matches no file, so no change "
            "there reruns it",
            "warning: Family 'prompts': 40 of its 43 cases' inputs patterns, filled from their "
            "rows, match no file (case 'r0': 'prompts/r0.txt' (did you mean "
            "'prompts/b.txt'?); case 'r1': 'prompts/r1.txt'; case 'r2': 'prompts/r2.txt'; and 37 more), so no change there reruns them",
        ], done.stderr
        assert (
            "  hint: add the files the rows name, or fix the row fields that fill the pattern"
            in done.stderr
        )


def test_a_single_checks_unmatched_patterns_are_each_a_warning_as_before(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    single = (
        PROMPT_FAMILY.replace(
            'cases: [{id: a, file: a.txt}, {id: b, file: b.txt}, {id: c, file: "c[1].txt"}]\n',
            "",
        )
        .replace("prompt {{ case.file }}", "prompt")
        .replace('"prompts/{{ case.file }}"]', '"prompts/x.txt", "notes/**"]')
    )
    root = _project(tmp_path, single)
    done = eb("validate", "--cwd", str(root))
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: Check 'prompts': inputs pattern 'prompts/x.txt' matches no file, so no "
        "change there reruns it (did you mean 'prompts/b.txt'?)",
        "warning: Check 'prompts': inputs pattern 'notes/**' matches no file, so no change "
        "there reruns it",
    ], done.stderr
