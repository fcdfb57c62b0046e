"""Smaller friction a newcomer meets: YAML syntax errors in our words, "did you mean" for
`[agents.x]` keys and for flags, no flag abbreviations."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EbResult, check_yaml

Eb = Callable[..., EbResult]
Project = Callable[..., Path]


@pytest.mark.parametrize(
    ("text", "where", "what", "hint"),
    [
        (
            'schema_version: 1\nid: y\ntype: deterministic\ndescription: "open\nscript: pass\n',
            "line 6, column 1",
            "found unexpected end of stream (while scanning a quoted scalar at line 4, column 14)",
            "never closed",
        ),
        (
            "schema_version: 1\nid: y\n  type: deterministic\n",
            "line 3, column 7",
            "mapping values are not allowed in this context",
            "indented more than the key above it",
        ),
        (
            "schema_version: 1\nid: [y\n",
            "line 3, column 1",
            "did not find expected ',' or ']' (while parsing a flow sequence at line 2, column 5)",
            "[ list is not closed",
        ),
        ("schema_version: 1\nid: y\n\ttype: x\n", "line 3, column 1", "tab character", "tabs"),
        # A placeholder written as a plain value: YAML reads `{{` as a mapping in a mapping.
        (
            "schema_version: 1\nid: y\ntype: deterministic\ndescription: {{ case.w }} is long\n"
            "cases: [{w: a}]\nscript: pass\n",
            "line 4, column 27",
            "did not find expected key",
            'must be quoted, or YAML reads the braces as a mapping: write description: "{{ case.w '
            '}} is long"',
        ),
        (
            "schema_version: 1\nid: y\ntype: assertions\ndescription: d\ncases: [{p: 1}]\n"
            "artifact: out.json\nassert:\n  - path: p\n    op: equals\n"
            "    value: {{ case.p }}  # the price\n",
            "line 10, column 13",
            "found unhashable key",
            'must be quoted, or YAML reads the braces as a mapping: write value: "{{ case.p }}"',
        ),
        # The one-line (flow) form of an assertion: the line is quoted as it should read.
        (
            "schema_version: 1\nid: y\ntype: assertions\ndescription: d\ncases: [{p: 1}]\n"
            "artifact: out.json\nassert:\n  - {path: p, op: equals, value: {{ case.p }}}\n",
            "line 8, column 35",
            "found unhashable key",
            "must be quoted, or YAML reads the braces as a mapping: write "
            '- {path: p, op: equals, value: "{{ case.p }}"}',
        ),
    ],
)
def test_yaml_syntax_errors_name_file_line_column_problem_and_hint(
    project: Project, eb: Eb, text: str, where: str, what: str, hint: str
) -> None:
    root = project({"eval_checks/y.yaml": text})
    done = eb("validate", "--cwd", str(root))
    assert done.exit_code == 2
    path = root / "eval_checks" / "y.yaml"
    first, second = done.stderr.splitlines()[:2]
    assert first.startswith(f"Failed to parse YAML in {path}: {where}: ")
    assert what in first
    assert second.startswith("hint: ") and hint in second
    assert "<unicode string>" not in done.stderr


def test_agent_table_keys_get_did_you_mean(project: Project, eb: Eb) -> None:
    root = project(
        {"eval_checks/a.yaml": check_yaml("a")},
        config='[agents.mine]\ncomand = ["my-agent"]\nprompt_flg = "--prompt"\n',
    )
    done = eb("validate", "--cwd", str(root))
    assert done.exit_code == 2
    assert "[agents.mine] contains unknown keys: comand, prompt_flg" in done.stderr
    assert "comand: did you mean command?; prompt_flg: did you mean prompt_flag?" in done.stderr


def test_flags_are_never_abbreviated(project: Project, eb: Eb) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")})
    done = eb("run", "--cwd", str(root), "--verbos")
    assert done.exit_code == 2
    assert "unrecognized arguments: --verbos" in done.stderr
    assert "hint: --verbos: did you mean --verbose?" in done.stderr
    assert not (root / ".eval-banana" / "results").exists()  # nothing ran
    # A unique prefix of a real flag is refused too (argparse would take it).
    assert eb("list", "--cwd", str(root), "--check-i", "a").exit_code == 2


@pytest.mark.parametrize(("given", "meant"), [("-v", "--verbose"), ("--lf", "--last-failed")])
def test_pytest_spellings_suggest_ours(project: Project, eb: Eb, given: str, meant: str) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")})
    done = eb("run", "--cwd", str(root), given)
    assert done.exit_code == 2
    assert f"hint: {given}: did you mean {meant}?" in done.stderr


JUDGE_AGENT = """\
import json, sys
print("warming up", file=sys.stderr)
print("the judge's last words on stderr", file=sys.stderr)
print(json.dumps({"score": 0, "reason": "the README has no install section"}))
sys.exit(0)
"""


def test_verbose_shows_what_debugging_a_judge_needs(
    project: Project, eb: Eb, tmp_path: Path
) -> None:
    import json
    import sys

    agent = tmp_path / "judge_agent.py"
    agent.write_text(JUDGE_AGENT)
    command = json.dumps([sys.executable, str(agent)])
    root = project(
        {
            "eval_checks/j.yaml": (
                "schema_version: 1\nid: j\ntype: harness_judge\ndescription: Judge j.\n"
                "instructions: Is there an install section?\n"
            )
        },
        config=(
            '[cache]\nmode = "off"\n[harness]\nagent = "standin"\n'
            f'[agents.standin]\ncommand = {command}\nmodel_flag = ""\n'
        ),
    )
    import subprocess

    def run(*flags: str) -> subprocess.CompletedProcess[str]:
        # A process of its own: logging is configured once per process, as in real use.
        return subprocess.run(
            [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), *flags],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    quiet = run()
    assert quiet.returncode == 1
    assert "debug:" not in quiet.stderr
    done = run("--verbose")
    assert done.returncode == 1
    err = done.stderr
    # The command line run (the prompt as a placeholder), the exit status, the stderr tail...
    assert f"debug: judge j: ran {sys.executable} {agent} '{{prompt}}' (in {root.resolve()})" in err
    assert "debug: judge j: the agent exited with code 0" in err
    assert "debug: judge j: stderr, last 2 lines (all in checks/j-" in err
    assert "  | the judge's last words on stderr" in err
    # ...and where the verdict was found, with what it said.
    assert "debug: judge j: verdict found in checks/j-" in err
    assert ".stdout.txt (stdout: the newest `result` event, else the right-most JSON verdict" in err
    assert "score 0, reason 'the README has no install section'" in err


def test_eb_list_asked_for_json_points_at_eb_plan(project: Project, eb: Eb) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")})
    # Asked for JSON either way, the error itself is JSON (what the caller asked for), with
    # the hint that points at eb plan; in plain text without either.
    done = eb("list", "--cwd", str(root), "--format", "json")
    assert done.exit_code == 2
    formatted = json.loads(done.stdout)
    assert formatted["error"]["hint"].startswith(
        "--format: eb list prints tab-separated lines; `eb plan --json`"
    )
    asked = json.loads(eb("list", "--cwd", str(root), "--json").stdout)
    assert asked["error"]["hint"].startswith("--json: eb list prints tab-separated lines")
    plain = eb("list", "--cwd", str(root), "--format", "yaml")
    assert plain.exit_code == 2 and not plain.stdout
    assert "yaml" in plain.stderr
    planned = eb("plan", "--cwd", str(root), "--json")
    assert planned.exit_code == 0 and '"id": "a"' in planned.stdout


def test_a_folder_holding_a_run_is_named_not_taken_for_a_run(project: Project, eb: Eb) -> None:
    """`eb run --output-dir DIR` makes its run folder under DIR, so passing DIR (a shard job's
    artifact) where a run folder goes is the commonest slip: each command that takes a run
    folder says which one DIR holds, and a folder that does not exist is not listed as a run
    whose every stage is missing."""
    root = project({"eval_checks/a.yaml": check_yaml("a")})
    for shard in ("1/2", "2/2"):
        out = root / f"shard-{shard[0]}"
        done = eb("run", "--cwd", str(root), "--shard", shard, "--output-dir", str(out))
        assert done.exit_code == 0, done.stderr
    parent = root / "shard-1"
    (run,) = (p for p in parent.iterdir())
    held = f"hint: {parent} holds one run folder: pass {run}"
    for command in (
        ("status", "--run-dir", str(parent)),
        ("update", "--run-dir", str(parent)),
        ("stage", "score", "--run-dir", str(parent)),
        ("diff", str(parent), str(run)),
        ("merge", str(parent), str(root / "shard-2"), "--output-dir", str(root / "m")),
    ):
        done = eb(*command, "--cwd", str(root)) if command[0] != "diff" else eb(*command)
        assert done.exit_code == 2, (command, done.stdout, done.stderr)
        assert held in done.stderr, (command, done.stderr)
        assert "missing" not in done.stdout, command
    assert not (root / "m").exists()
    # Two runs in one folder: the newest is named.
    eb("run", "--cwd", str(root), "--shard", "1/2", "--output-dir", str(parent))
    newest = max(
        parent.iterdir(),
        key=lambda p: json.loads((p / "stages" / "config.json").read_text())["run_created_at"],
    )
    done = eb("status", "--cwd", str(root), "--run-dir", str(parent))
    assert f"{parent} holds 2 run folders; the newest is {newest}" in done.stderr
    absent = root / "no-such-run"
    done = eb("status", "--cwd", str(root), "--run-dir", str(absent))
    assert done.exit_code == 2
    assert done.stderr.startswith(f"--run-dir {absent} does not exist")
    assert "stages/config.json" not in done.stdout


def test_a_run_folder_without_its_config_stage_is_told_to_start_anew(
    project: Project, eb: Eb
) -> None:
    """Every stage of a run folder is rebuilt from the request stages/config.json records, so a
    folder without a readable one cannot be rebuilt: no command sends the user round to
    `eb stage config` or `eb update`, which would only fail the same way."""
    root = project({"eval_checks/a.yaml": check_yaml("a")})
    run = root / "broken-run"
    (run / "stages").mkdir(parents=True)
    status = eb("status", "--cwd", str(root), "--run-dir", str(run))
    assert status.exit_code == 1
    assert "config    stages/config.json     missing" in status.stdout
    assert "nothing here can be rebuilt: start a new run with eb run" in status.stdout
    assert "eb update" not in status.stdout
    (run / "stages" / "config.json").write_text("{}")
    for command in (("stage", "config"), ("stage", "discover"), ("update",)):
        done = eb(*command, "--cwd", str(root), "--run-dir", str(run))
        assert done.exit_code == 2, command
        assert "start a new run with eb run" in done.stderr, (command, done.stderr)
        assert "eb stage config" not in done.stderr, command
    (run / "stages" / "config.json").unlink()
    done = eb("stage", "score", "--cwd", str(root), "--run-dir", str(run))
    assert "hint: Start a new run with eb run" in done.stderr


def test_an_option_takes_the_value_double_dash_as_given(
    project: Project, eb: Eb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python 3.11's argparse turned `--check-id=--` into `[]` (a crash), `--output-dir=--`
    into "must be a string, got []", and dropped `--baseline=--` without a word. `--` is a
    valid check id and a possible folder name."""
    root = project(
        {
            "eval_checks/dashes.yaml": check_yaml("--"),
            "eval_checks/other.yaml": check_yaml("other"),
        }
    )
    listed = eb("list", "--cwd", str(root), "--check-id=--")
    assert listed.exit_code == 0, listed.stderr
    assert "1 check listed" in listed.stderr + listed.stdout
    ran = eb("run", "--cwd", str(root), "--check-id=--", "--output-dir=--", "--json")
    assert ran.exit_code == 0, ran.stderr
    assert [check["check_id"] for check in json.loads(ran.stdout)["checks"]] == ["--"]
    assert len(list((root / "--").iterdir())) == 1  # the run folder, under `--`
    monkeypatch.chdir(root)  # --baseline is relative to the folder eb starts in
    baseline = eb("run", "--baseline=--")
    assert baseline.exit_code == 2, baseline.stderr
    assert f"{root / '--'} holds one run folder" in baseline.stderr
    spaced = eb("list", "--cwd", str(root), "--check-id", "--")
    assert spaced.exit_code == 2 and "expected one argument" in spaced.stderr
