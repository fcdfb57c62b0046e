"""Inputs a fault and fuzz campaign found: each is a setup error naming the file, never a crash."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.builders import newest_run_dir
from tests.conftest import EbResult, check_yaml
from tests.reporting.conftest import run_eb


def _no_traceback(result: EbResult) -> None:
    assert "Traceback" not in result.stderr


def test_a_deeply_nested_config_value_is_a_config_error(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")}, config="x = " + "[" * 1000 + "]" * 1000)
    config = root / ".eval-banana" / "config.toml"
    for command in ("validate", "run", "list"):
        result = eb(command, "--cwd", str(root))
        assert result.exit_code == 2, command
        assert f"Invalid TOML in {config}" in result.stderr and "nested too deeply" in result.stderr
        _no_traceback(result)


# A whole number longer than Python reads: int() refuses it with a ValueError that no parser
# turns into its own error, so it was a traceback from the config, a check file or a dataset.
HUGE = "9" * 5000


def test_a_number_longer_than_python_reads_is_told_at_its_line_in_the_config(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")}, config=f"[core]\nmaxfail = {HUGE}\n")
    config = root / ".eval-banana" / "config.toml"
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"Invalid TOML in {config}: line 2: a whole number longer than 4,300 digits, which eb "
        "does not read"
    ), result.stderr
    _no_traceback(result)


def test_a_number_longer_than_python_reads_is_told_at_its_line_in_a_check_file(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a") + f"timeout_seconds: {HUGE}\n"})
    result = eb("validate", "--cwd", str(root), "--json")
    assert result.exit_code == 2
    (error,) = json.loads(result.stdout)["errors"]
    assert error["message"].endswith(
        "a.yaml: line 6: a whole number longer than 4,300 digits, which eb does not read"
    ), error
    assert (error["line"], error["hint"]) == (
        6,
        "quote it to keep it as text, or write a smaller number",
    )


@pytest.mark.parametrize(
    "written",
    ["0x" + "f" * 4000, "0" + "7" * 4800, "0b" + "1" * 14400, "1" + ":59" * 2500],
    ids=["hexadecimal", "octal", "binary", "base 60"],
)
def test_a_number_in_another_form_longer_than_python_writes_is_told_at_its_line(
    project: Callable[..., Path], eb: Callable[..., EbResult], written: str
) -> None:
    """YAML 1.1 reads these forms at any length; the value then crashed `eb validate` and
    `eb run` with a traceback (exit 1) where it was written as text, not refused as the
    decimal form is."""
    assertion = f"  - {{path: digest, op: equals, value: {written}}}\n"
    check = (
        "schema_version: 1\nid: a\ntype: assertions\ndescription: d\n"
        f"artifact: out/a.json\nassert:\n{assertion}"
    )
    root = project({"eval_checks/a.yaml": check, "out/a.json": '{"digest": 1}'})
    for command in ("validate", "run"):
        result = eb(command, "--cwd", str(root), "--json")
        assert result.exit_code == 2, (command, result.stderr[-500:])
        _no_traceback(result)
    (error,) = json.loads(eb("validate", "--cwd", str(root), "--json").stdout)["errors"]
    assert error["message"].endswith(
        "a.yaml: line 7: a whole number longer than 4,300 digits, which eb does not read"
    ), error
    assert error["line"] == 7


def test_text_tagged_int_is_told_as_no_whole_number_not_as_too_long(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """int() refusing `!!int abc` was taken for a number too long to read; `!!int ""` was a
    traceback."""
    for written, shown in (("!!int abc", "'abc'"), ('!!int ""', "''")):
        check = (
            "schema_version: 1\nid: a\ntype: assertions\ndescription: d\nartifact: out/a.json\n"
            f"assert:\n  - {{path: digest, op: equals, value: {written}}}\n"
        )
        root = project({"eval_checks/a.yaml": check, "out/a.json": '{"digest": 1}'})
        result = eb("validate", "--cwd", str(root))
        assert result.exit_code == 2, result.stderr[-500:]
        _no_traceback(result)
        assert f"{shown} is not a whole number, which its tag !!int asks for" in result.stderr
        assert "4,300" not in result.stderr


def test_a_hexadecimal_config_number_longer_than_python_writes_is_a_config_error(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """TOML reads 0x, 0o and 0b numbers at any length: `eb run` then ended in a traceback."""
    root = project(
        {"eval_checks/a.yaml": check_yaml("a")}, config="[core]\nmaxfail = 0x" + "f" * 4000 + "\n"
    )
    config = root / ".eval-banana" / "config.toml"
    for command in ("validate", "run"):
        result = eb(command, "--cwd", str(root))
        assert result.exit_code == 2, (command, result.stderr[-500:])
        assert result.stderr.startswith(
            f"Invalid TOML in {config}: core.maxfail holds a whole number longer than 4,300 "
            "digits, which eb does not read"
        ), result.stderr
        _no_traceback(result)


def test_a_check_file_whose_name_holds_a_line_break_is_refused_and_shown_escaped(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # A pull request can add `eval_checks/x<newline>::warning::...yaml`: named as it is, the
    # file's every message started a line of its own, which GitHub Actions runs as a command.
    name = "x\n::warning::injected\x1b[2K.yaml"
    root = project({"eval_checks/a.yaml": check_yaml("a"), f"eval_checks/{name}": check_yaml("b")})
    shown = str(root / "eval_checks" / "x\\x0a::warning::injected\\x1b[2K.yaml")
    for command in ("validate", "run", "list"):
        result = eb(command, "--cwd", str(root))
        assert result.exit_code == 2, (command, result.stderr)
        assert f"Check file {shown} has a control character in its name" in result.stderr
        printed = result.stdout + result.stderr
        assert not [line for line in printed.splitlines() if line.startswith("::")], printed
        assert "\x1b" not in printed
        _no_traceback(result)


def _judge_yaml() -> str:
    return (
        "schema_version: 1\nid: j\ntype: harness_judge\ndescription: d\ninstructions: Score it.\n"
    )


@pytest.mark.parametrize(
    ("files", "config", "shown"),
    [
        # Paths a check file names, quoted back when they name nothing.
        (
            {
                "eval_checks/b.yaml": check_yaml("b").replace(
                    "script: ", 'script_path: "x\\n::warning::inj.py"\n# '
                )
            },
            "",
            "(script_path: x\\x0a::warning::inj.py in ",
        ),
        (
            {"eval_checks/b.yaml": check_yaml("b") + 'cases_from: "x\\n::warning::inj.jsonl"\n'},
            "",
            "Dataset x\\x0a::warning::inj.jsonl named by cases_from in ",
        ),
        (
            {
                "eval_checks/b.yaml": check_yaml("b") + 'cases_from: "x\\n::warning::inj"\n',
                "x\n::warning::inj/rows.jsonl": "{}\n",
            },
            "",
            "such as x\\x0a::warning::inj/*.jsonl",
        ),
        # The agent's program, when it is not on PATH.
        (
            {"eval_checks/j.yaml": _judge_yaml()},
            '[harness]\nagent = "mine"\n[agents.mine]\ncommand = ["x\\n::warning::inj"]\n',
            "needs the command 'x\\x0a::warning::inj', which was not found on PATH",
        ),
        # Settings that name a path, an agent or a store: refused, shown as TOML writes them.
        *(
            (
                {"eval_checks/b.yaml": check_yaml("b")},
                f'[{section}]\n{key} = "x\\n::warning::inj"\n',
                # `core.output_dir must ...`, `harness.agent: must ...` (eval-banana's phrase)
                'must not hold a control character, got "x\\n::warning::inj"',
            )
            for section, key in (
                ("core", "output_dir"),
                ("harness", "agent"),
                ("harness", "model"),
                ("cache", "remote"),
            )
        ),
        (
            {"eval_checks/b.yaml": check_yaml("b")},
            '[discovery]\nexclude_dirs = ["x\\n::warning::inj"]\n',
            "must not hold a control character",
        ),
    ],
)
def test_a_path_or_name_with_a_line_break_never_starts_a_line_of_eb_output(
    files: dict[str, str],
    config: str,
    shown: str,
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
) -> None:
    # They were printed as written: a config's output_dir made every run's `Report:` line end
    # in a `::warning::` line of its own, a missing script or dataset path likewise its error.
    root = project(files, config=config)

    def odd_names() -> set[Path]:
        return {path for path in root.rglob("*") if "\n" in path.name}

    written = odd_names()
    for command in ("validate", "run"):
        result = eb(command, "--cwd", str(root))
        assert result.exit_code == 2, (command, result.stderr)
        assert shown in result.stderr, result.stderr
        printed = result.stdout + result.stderr
        assert not [line for line in printed.splitlines() if line.startswith("::")], printed
        _no_traceback(result)
    assert odd_names() == written  # no run folder named with a line break


@pytest.mark.parametrize(
    ("files", "config"),
    [
        # A value the error quotes back: an unknown check type.
        (
            {
                "eval_checks/b.yaml": check_yaml("b").replace(
                    "deterministic", '"x\\n::warning::inj"'
                )
            },
            "",
        ),
        # A key the error names: unknown in a check file, unknown in the config.
        ({"eval_checks/b.yaml": check_yaml("b") + '"x\\n::warning::inj": 1\n'}, ""),
        ({"eval_checks/b.yaml": check_yaml("b")}, '[core]\n"x\\n::warning::inj" = 1\n'),
    ],
)
def test_an_error_quoting_a_files_text_never_starts_a_line_with_it(
    files: dict[str, str], config: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # Check files and the config come with a pull request: a line break in a key or value the
    # error quotes started a line of eb's output, which GitHub Actions runs as a command.
    root = project(files, config=config)
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 2, result.stderr
    assert "x\\x0a::warning::inj" in result.stderr, result.stderr
    printed = result.stdout + result.stderr
    assert not [line for line in printed.splitlines() if line.startswith("::")], printed


def test_an_empty_output_dir_in_the_config_file_is_refused_like_the_environment_one(
    project: Callable[..., Path], eb: Callable[..., EbResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")}, config='[core]\noutput_dir = ""\n')
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 2
    assert "[core] output_dir must not be empty" in result.stderr
    assert not [path for path in root.iterdir() if path.name[:2] == "20"]  # no run folder
    clean = project({"eval_checks/a.yaml": check_yaml("a")}, config="")
    monkeypatch.setenv("EVAL_BANANA_OUTPUT_DIR", "")
    env = eb("run", "--cwd", str(clean))
    assert env.exit_code == 2 and "EVAL_BANANA_OUTPUT_DIR must not be empty" in env.stderr


@pytest.mark.parametrize(
    ("config", "variable", "argv", "said"),
    [
        (
            '[core]\noutput_dir = " "\n',
            None,
            [],
            '[core] output_dir must not be empty or blank, got " "',
        ),
        ("", " ", [], "EVAL_BANANA_OUTPUT_DIR must not be empty or blank, got ' '"),
        ("", None, ["--output-dir", "\t"], '--output-dir must not be empty or blank, got "\\t"'),
        (
            "",
            None,
            ["--cache", "on", "--cache-dir", "  "],
            "--cache-dir must not be empty or blank",
        ),
        ('[history]\ndir = " "\n', None, [], '[history] dir must not be empty or blank, got " "'),
    ],
)
def test_a_blank_folder_is_refused_like_an_empty_one(
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
    monkeypatch: pytest.MonkeyPatch,
    config: str,
    variable: str | None,
    argv: list[str],
    said: str,
) -> None:
    # It passed the rule for an empty folder and made a folder named " " in the project.
    root = project({"eval_checks/a.yaml": check_yaml("a")}, config=config)
    if variable is not None:
        monkeypatch.setenv("EVAL_BANANA_OUTPUT_DIR", variable)
    result = eb("run", "--cwd", str(root), *argv)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert said in result.stderr, result.stderr
    assert sorted(path.name for path in root.iterdir()) == [".eval-banana", "eval_checks"]


def test_empty_cache_and_history_flags_write_nothing_into_the_project_root(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")}, config="")
    result = eb("run", "--cwd", str(root), "--cache", "on", "--cache-dir", "", "--history-dir", "")
    assert result.exit_code == 2
    assert "--cache-dir must not be empty" in result.stderr
    assert sorted(path.name for path in root.iterdir()) == [".eval-banana", "eval_checks"]


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [
        ("id", "!!binary aGVsbG8=", "binary data"),
        ("description", "!!binary aGVsbG8=", "binary data"),
        ("description", "2024-01-02", "a date"),
        ("description", "!!set {a: null}", "a set"),
        ("tags", "[!!binary aGVsbG8=]", "binary data"),
        ("instructions", "!!binary aGVsbG8=", "binary data"),
    ],
)
def test_yaml_tags_that_build_other_types_are_definition_errors(
    project: Callable[..., Path], eb: Callable[..., EbResult], field: str, value: str, kind: str
) -> None:
    lines = {
        "schema_version": "1",
        "id": "judged",
        "type": "harness_judge",
        "description": "A judge.",
        "instructions": "Decide.",
    }
    lines[field] = value
    text = "".join(f"{key}: {text}\n" for key, text in lines.items())
    root = project({"eval_checks/a.yaml": text})
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 2
    location = f"{field}.0" if field == "tags" else field
    assert f"{location}: the value is {kind}" in result.stderr
    assert "hint: quote the value" in result.stderr
    listed = eb("list", "--cwd", str(root))
    assert listed.exit_code == 2 and "hello" not in listed.stdout


ASSERTS = """\
schema_version: 1
id: a
type: assertions
description: d
artifact: out/x.json
assert:
  - path: a[0]
    op: equals
    value: {value}
"""

INLINE_CASES = """\
schema_version: 1
id: a
type: deterministic
description: d
script: pass
cases:
  - {{id: x, v: {value}}}
"""


@pytest.mark.parametrize(
    ("text", "location", "kind"),
    [
        # The models dumped each as null: an assertion graded `equals null`, a case's field
        # reached its script as None, and a dataset file's .nan was refused all along.
        (ASSERTS.format(value=".nan"), "assert.0.value", "NaN"),
        (ASSERTS.format(value="-.inf"), "assert.0.value", "infinity"),
        (INLINE_CASES.format(value=".inf"), "cases.0.v", "infinity"),
        (INLINE_CASES.format(value="[1, .NaN]"), "cases.0.v.1", "NaN"),
    ],
)
def test_yaml_nan_and_infinity_in_a_check_file_are_definition_errors(
    project: Callable[..., Path], eb: Callable[..., EbResult], text: str, location: str, kind: str
) -> None:
    root = project({"eval_checks/a.yaml": text, "out/x.json": '{"a": [1]}'})
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 2
    assert f"{location}: the value is {kind} (YAML's .nan or .inf), which JSON cannot say" in (
        result.stderr
    )
    assert "hint: write a finite number, or quote the value" in result.stderr
    finite = text.replace(".nan", "1.5").replace(".inf", "1.5").replace(".NaN", "1.5")
    (root / "eval_checks" / "a.yaml").write_text(finite)
    assert eb("validate", "--cwd", str(root)).exit_code == 0


def _run_dir(root: Path) -> Path:
    (run_dir,) = list((root / ".eval-banana" / "results").iterdir())
    return run_dir


@pytest.mark.parametrize(
    ("stage", "file_name", "damage", "field", "rerun"),
    [
        ("guard", "guard.json", lambda d: d.update(ok=False, problems=[]), "$.problems", "execute"),
        ("guard", "guard.json", lambda d: d.update(problems=[{"message": "x"}]), "$.ok", "execute"),
        (
            "validate",
            "plan.json",
            lambda d: d["checks"][0].update(stem="other-stem"),
            "$.checks[0].stem",
            "guard",
        ),
        (
            "validate",
            "plan.json",
            lambda d: d["checks"][0].update(snapshot="../../../etc/passwd"),
            "$.checks[0].snapshot",
            "execute",
        ),
        (
            "validate",
            "plan.json",
            lambda d: d.update(checks=d["checks"] * 2),
            "$.checks",
            "guard",
        ),
        (
            "execute",
            "execute.json",
            lambda d: d["results"][0].update(score=1, status="failed"),
            "$.results[0].score",
            "score",
        ),
        ("execute", "execute.json", lambda d: d.update(not_run=["a"]), "$.not_run", "score"),
        ("score", "score.json", lambda d: d.update(total_checks=5), "$.total_checks", "report"),
        (
            "score",
            "score.json",
            lambda d: d.update(errored_checks=1, failed_checks=0, run_passed=True),
            "$.run_passed",
            "report",
        ),
    ],
)
def test_a_stage_file_whose_fields_disagree_is_refused_naming_the_field(
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
    stage: str,
    file_name: str,
    damage: Callable[[dict[str, object]], None],
    field: str,
    rerun: str,
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a", script="import sys; sys.exit(1)")})
    assert eb("run", "--cwd", str(root)).exit_code == 1
    path = _run_dir(root) / "stages" / file_name
    document = json.loads(path.read_text())
    damage(document)
    path.write_text(json.dumps(document))
    result = eb("stage", rerun, "--run-dir", str(_run_dir(root)))
    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"Stage file {path} is inconsistent at {field}" in result.stderr
    _no_traceback(result)
    status = eb("status", "--run-dir", str(_run_dir(root)))
    assert f"{stage}" in status.stdout and "invalid" in status.stdout


# -- Names that are not UTF-8 ---------------------------------------------------------------------
# Linux lets a file's name be any bytes; Python names a byte that is not UTF-8 with a surrogate,
# which no report can be written with. Each of these ended a run in a traceback, with no report.


def _write_bytes_name(folder: Path, name: bytes, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(os.path.join(os.fsencode(folder), name), "w", encoding="utf-8") as handle:
        handle.write(text)


@pytest.mark.parametrize("which", ["check file", "dataset file"])
def test_a_file_whose_name_is_not_utf8_is_refused_and_shown_escaped(
    which: str, project: Callable[..., Path]
) -> None:
    family = (
        "schema_version: 1\nid: fam\ntype: deterministic\ndescription: 'row {{ case.n }}'\n"
        "cases_from: 'data/*.jsonl'\nscript: pass\n"
    )
    root = project({"eval_checks/a.yaml": check_yaml("a"), "eval_checks/fam.yaml": family})
    _write_bytes_name(root / "data", b"ok.jsonl", '{"n": "1"}\n')
    if which == "check file":
        _write_bytes_name(root / "eval_checks", b"b\xff.yaml", check_yaml("b"))
        told = f"Check file {root}/eval_checks/b\\xff.yaml has a byte that is not UTF-8 in its name"
    else:
        _write_bytes_name(root / "data", b"x\xfe.jsonl", '{"n": "2"}\n')
        told = "matches data/x\\xfe.jsonl, whose name has a byte that is not UTF-8"
    for command in ("validate", "run", "list"):
        result = run_eb(command, "--cwd", str(root))
        assert result.returncode == 2, (command, result.stderr)
        assert told in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_a_project_folder_whose_path_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    root = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"proj\xff")))
    _write_bytes_name(root / "eval_checks", b"a.yaml", check_yaml("a"))
    for command in ("validate", "run", "list", "status"):
        result = run_eb(command, "--cwd", str(root))
        assert result.returncode == 2, (command, result.stderr)
        assert (
            f"The project folder {tmp_path}/proj\\xff has a byte that is not UTF-8 in its path"
        ) in result.stderr
        assert "Traceback" not in result.stderr
    assert not (root / ".eval-banana").exists()  # nothing written


def test_a_file_a_check_makes_is_named_escaped_when_isolation_catches_it(
    project: Callable[..., Path],
) -> None:
    # A check (or a judge talked into it) that makes a file whose name holds a line break and a
    # byte that is not UTF-8: its error named the file as it is, which no result could hold.
    script = "open(b'made-\\xfe\\n::warning::x.txt', 'w').write('x')"
    root = project({"eval_checks/w.yaml": check_yaml("w", script=script)})
    result = run_eb("run", "--cwd", str(root), "--execution-isolation", "detect")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    printed = result.stdout + result.stderr
    assert not [line for line in printed.splitlines() if line.startswith("::")], printed
    report = json.loads(
        (newest_run_dir(root / ".eval-banana" / "results") / "report.json").read_text()
    )
    (check,) = report["checks"]
    assert (
        "The project changed while this check ran: made-\\xfe\\x0a::warning::x.txt"
        in (check["error_detail"])
    )
    assert check["details"]["isolation"]["changed"] == ["made-\\xfe\\x0a::warning::x.txt"]


def test_a_setting_from_the_environment_that_is_not_utf8_is_refused(
    project: Callable[..., Path],
) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")})
    env = {"EVAL_BANANA_OUTPUT_DIR": os.fsdecode(b"out\xff")}
    result = run_eb("run", "--cwd", str(root), **env)
    assert result.returncode == 2, result.stderr
    assert "EVAL_BANANA_OUTPUT_DIR must not hold a byte that is not UTF-8" in result.stderr


# A judge that writes terminal escapes on stderr (clear the screen, retitle the terminal, a
# hyperlink whose target is hidden) and gives a reason holding a right-to-left override.
_HOSTILE_JUDGE = """\
import json, sys
sys.stderr.write(
    "note \\x1b[2J\\x1b]0;pwned\\x07 \\x1b]8;;https://evil.example/\\x1b\\\\click\\x1b]8;;\\x1b\\\\\\n"
)
print(json.dumps({"score": 0, "reason": "bad \\u202edessap nuR\\u202c end"}))
"""


def test_a_judges_stderr_and_a_bidi_control_in_its_reason_are_shown_escaped(
    project: Callable[..., Path],
) -> None:
    # --verbose copied the agent's stderr tail as it came (ESC[2J cleared the terminal), and
    # U+202E in a reason reversed the rest of eb's console line, annotation and report.md line.
    root = project(
        {"eval_checks/j.yaml": _judge_yaml(), "judge.py": _HOSTILE_JUDGE},
        config=(
            f'[harness]\nagent = "hostile"\n[agents.hostile]\ncommand = ["{sys.executable}", '
            '"judge.py"]\nprompt_flag = ""\nmodel_flag = ""\n'
        ),
    )
    result = run_eb("run", "--cwd", str(root), "--verbose", "--annotations", "github")
    assert result.returncode == 1, result.stderr
    assert (
        "  | note \\x1b[2J\\x1b]0;pwned\\x07 \\x1b]8;;https://evil.example/\\x1b\\click"
        "\\x1b]8;;\\x1b\\" in result.stderr.splitlines()
    ), result.stderr
    shown = "bad \\u202edessap nuR\\u202c end"
    lines = result.stdout.splitlines()
    assert f"- j: failed - {shown}" in lines, result.stdout
    assert f"::error file=eval_checks/j.yaml,title=j failed::{shown}" in lines, result.stdout
    run_dir = newest_run_dir(root / ".eval-banana" / "results")
    report_md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "- Reason: bad \\\\u202edessap nuR\\\\u202c end" in report_md.splitlines()
    for text in (result.stdout, result.stderr, report_md):
        assert not [char for char in text if char in "\x1b\x07\u202e\u202c"], text
    # The data keeps the judge's words as they were.
    report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    assert report["checks"][0]["reason"] == "bad \u202edessap nuR\u202c end"


# A check whose `inputs:` pattern, matched file name and description carry what a pull request
# can put there: line breaks that would start a `::` workflow command or a forged verdict line,
# and terminal escapes (clear the screen, retitle the terminal).
_INPUTS_CHECK = """\
schema_version: 1
id: inp
type: deterministic
description: "desc \\e[2J\\e]0;pwned\\a cleared the screen"
inputs: ["nomatch\\n::error::forged-by-inputs-pattern\\nRun passed", "src/**"]
script: print(1)
"""


def _forged(printed: str) -> list[str]:
    """The lines of eb's output that a check's words started: a workflow command, a verdict."""
    return [
        line
        for line in printed.splitlines()
        if line.lstrip().startswith("::") or line.startswith("Run passed")
    ]


def test_eb_list_status_and_update_show_a_checks_inputs_and_words_on_their_own_lines(
    project: Callable[..., Path],
) -> None:
    # They printed the pattern, the file names and the description as written: lines of eb's
    # own stdout began `::error::...` and `Run passed`, and the description's ESC[2J cleared
    # the terminal.
    root = project({"eval_checks/inp.yaml": _INPUTS_CHECK, "src/ok.py": ""})
    (root / "src" / "x\n::error title=forged::from a file name").write_text("")
    pattern = "nomatch\\x0a::error::forged-by-inputs-pattern\\x0aRun passed"
    listed = run_eb("list", "--cwd", str(root), "--inputs")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "inp\tdeterministic\tdesc \\x1b[2J\\x1b]0;pwned\\x07 cleared the screen\teval_checks/inp.yaml",
        f"  inputs: {pattern}, src/** (2 files)",
        "    src/ok.py",
        "    src/x\\x0a::error title=forged::from a file name",
    ]
    assert run_eb("run", "--cwd", str(root)).returncode == 0
    (root / "src" / "new.py").write_text("")
    stale = f"stale  (inp: inputs {pattern}, src/** changed)"
    status = run_eb("status", "--cwd", str(root))
    assert status.returncode == 1, status.stderr
    assert f"execute   stages/execute.json    {stale}" in status.stdout.splitlines()
    updated = run_eb("update", "--cwd", str(root))
    assert updated.returncode == 0, updated.stderr
    assert f"  rerun inp: inputs {pattern}, src/** changed" in updated.stdout.splitlines()
    for printed in (listed, status, updated):
        assert not _forged(printed.stdout + printed.stderr), printed.stdout + printed.stderr
        assert "\x1b" not in printed.stdout + printed.stderr
