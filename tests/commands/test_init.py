"""`eb init`: what it writes, what it refuses, and that the results load and pass."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest
import yaml

from eval_banana.commands.scaffold import EXAMPLE_CASES_PATH, config_template, run_init
from eval_banana.core.errors import ConfigError
from eval_banana.harness.templates import BUILTIN_TEMPLATES
from eval_banana.models.check import CHECK_ADAPTER, DeterministicCheck
from eval_banana.models.config import DEFAULT_EXCLUDE_DIRS, Selection
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.table import NO_EFFECT, SETTINGS
from eval_banana.stages.config import resolve_config
from eval_banana.stages.discover import discover
from tests.processes import eb_process


def resolve(cwd: Path) -> ConfigDoc:
    return resolve_config(
        cwd=cwd,
        cli_values={},
        environ={},
        no_project_config=False,
        selection=Selection(),
        run_id="r",
    )


def test_init_writes_config_schema_and_example(tmp_path: Path) -> None:
    written = run_init(cwd=tmp_path, force=False).written
    root = tmp_path.resolve()
    assert written == [
        root / ".eval-banana" / "config.toml",
        root / ".eval-banana" / "schemas" / "check.schema.json",
        root / "eval_checks" / "example_check.yaml",
        root / "eval_checks" / "example_cases.yaml",
        root / ".eval-banana" / ".gitignore",
    ]
    assert all(path.is_absolute() and path.is_file() for path in written)


def test_written_config_loads_to_the_expected_values(tmp_path: Path) -> None:
    run_init(cwd=tmp_path, force=False)
    doc = resolve(tmp_path)
    core = doc.settings.core
    assert core.output_dir == ".eval-banana/results"
    assert core.pass_threshold == 1.0
    assert core.llm_max_input_chars == 0
    assert core.max_parallel_checks == 4
    assert core.check_timeout_seconds == 900
    assert core.junit_xml is None
    # eb's own folder (run folders, the verdict cache) is never walked for checks.
    assert doc.settings.discovery.exclude_dirs == [".eval-banana", *DEFAULT_EXCLUDE_DIRS]
    assert doc.settings.cache.mode == "on"
    assert doc.settings.cache.dir == ".eval-banana/cache"
    assert doc.settings.cache.max_mb == 256
    # The harness is left commented out, so no agent's model leaks into another's.
    assert doc.settings.harness.agent is None
    assert doc.settings.harness.model is None
    assert doc.settings.harness.reasoning_effort is None
    assert doc.settings.harness.timeout_seconds == 300
    assert doc.settings.agents == {}
    assert doc.settings.execution.env == "inherit"
    assert doc.warnings == []
    for name in ("core.output_dir", "core.pass_threshold", "discovery.exclude_dirs"):
        assert doc.sources[name] == "project"
    assert doc.config_file == str(tmp_path.resolve() / ".eval-banana" / "config.toml")


def test_template_text_rules() -> None:
    text = config_template()
    assert text.startswith("#")
    assert "timeout_seconds = 300" in text
    for legacy in ("deterministic_timeout_seconds", "llm_timeout_seconds", "task_timeout_seconds"):
        assert legacy not in text
    # Every setting that has an env var names it, except those that have no effect: a new
    # project holds no line that changes nothing.
    for spec in SETTINGS:
        if spec.name in NO_EFFECT:
            assert spec.key not in text and (spec.env or "") not in text, spec.name
        elif spec.env:
            assert spec.env in text, spec.env
    assert "core.llm_max_input_chars" in NO_EFFECT
    assert "truncat" not in text
    # No active [harness] table; one commented example per built-in agent.
    assert not re.search(r"^\[harness", text, flags=re.MULTILINE)
    for agent in BUILTIN_TEMPLATES:
        assert re.search(rf'^# agent = "{agent}"', text, flags=re.MULTILINE), agent
    # Sampling and the calibration gate are shown, commented out: a new project has neither.
    for example in ("repeats = 3", "fail_on_flaky = true", "require_calibration = true"):
        assert re.search(rf"^# {example}$", text, flags=re.MULTILINE), example


def _uncomment_examples(text: str, *, agent: str) -> str:
    """Uncomment every commented TOML line, keeping only one `agent = ...` line."""
    lines = []
    for line in text.splitlines():
        match = re.match(r"^# (\[[^\]]+\]|[A-Za-z_][\w-]* = .*)$", line)
        if match and (not match.group(1).startswith("agent = ") or f'"{agent}"' in line):
            lines.append(match.group(1))
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("agent", sorted(BUILTIN_TEMPLATES))
def test_commented_examples_are_valid_and_show_the_builtins(tmp_path: Path, agent: str) -> None:
    run_init(cwd=tmp_path, force=False)
    config = tmp_path / ".eval-banana" / "config.toml"
    config.write_text(_uncomment_examples(config.read_text(), agent=agent), encoding="utf-8")
    doc = resolve(tmp_path)
    assert doc.settings.harness.agent == agent
    assert doc.settings.harness.timeout_seconds == 300
    assert doc.settings.harness.env  # the [harness.env] example
    assert doc.settings.core.junit_xml is not None
    for name in ("codex", "gemini", "claude", "grok"):
        shown = doc.settings.agents[name]
        builtin = BUILTIN_TEMPLATES[name]
        assert shown.shared_flags == builtin.shared_flags
        assert shown.default_model == builtin.default_model
    custom = [name for name in doc.settings.agents if name not in BUILTIN_TEMPLATES]
    assert len(custom) == 1
    assert doc.settings.agents[custom[0]].model_flag is None  # the custom agent's opt-out, shown


def test_example_check_is_a_valid_deterministic_check(tmp_path: Path) -> None:
    run_init(cwd=tmp_path, force=False)
    example = tmp_path / "eval_checks" / "example_check.yaml"
    text = example.read_text(encoding="utf-8")
    assert text.splitlines()[0] == (
        "# yaml-language-server: $schema=../.eval-banana/schemas/check.schema.json"
    )
    data = yaml.safe_load(text)
    check = CHECK_ADAPTER.validate_python(data)
    assert isinstance(check, DeterministicCheck)
    assert check.expect == "pass"
    # The editor schema the modeline points at accepts the file too.
    schema_path = (example.parent / "../.eval-banana/schemas/check.schema.json").resolve()
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    jsonschema.validate(data, schema)


def _run_example(*, project: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    check = CHECK_ADAPTER.validate_python(
        yaml.safe_load((project / "eval_checks" / "example_check.yaml").read_text())
    )
    assert isinstance(check, DeterministicCheck) and check.script
    script = tmp_path / "inline_check.py"
    script.write_text(check.script, encoding="utf-8")
    context = tmp_path / "context.json"
    context.write_text(
        json.dumps(
            {
                "check_id": check.id,
                "description": check.description,
                "project_root": str(project),
                "source_path": str(project / "eval_checks" / "example_check.yaml"),
                "output_dir": str(tmp_path / "evidence"),
            }
        )
    )
    return subprocess.run(
        [sys.executable, str(script), str(context)],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_example_check_passes_in_a_fresh_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    run_init(cwd=project, force=False)
    result = _run_example(project=project, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    # It checks something real: without the config it fails.
    (project / ".eval-banana" / "config.toml").unlink()
    assert _run_example(project=project, tmp_path=tmp_path).returncode != 0


def test_init_refuses_to_overwrite_the_config(tmp_path: Path) -> None:
    config = tmp_path / ".eval-banana" / "config.toml"
    config.parent.mkdir()
    config.write_text("# mine\n")
    with pytest.raises(ConfigError) as info:
        run_init(cwd=tmp_path, force=False)
    assert info.value.message == f"Refusing to overwrite existing file: {config.resolve()}"
    assert info.value.exit_code == 2
    assert config.read_text() == "# mine\n"
    assert not (tmp_path / "eval_checks").exists()  # nothing written at all


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("name", ["example_check.yaml", "example_cases.yaml"])
def test_init_never_overwrites_nor_adds_to_existing_checks(
    tmp_path: Path, name: str, force: bool
) -> None:
    example = tmp_path / "eval_checks" / name
    example.parent.mkdir()
    example.write_text("mine\n")
    outcome = run_init(cwd=tmp_path, force=force)
    assert example.read_text() == "mine\n"
    other = ({"example_check.yaml", "example_cases.yaml"} - {name}).pop()
    assert not (tmp_path / "eval_checks" / other).exists()  # no example beside the user's checks
    root = tmp_path.resolve() / "eval_checks"
    assert sorted(outcome.left) == sorted(
        [f"Kept {root / name} (exists)", f"Left out {root / other} (eval_checks/ holds checks)"]
    )
    assert (tmp_path / ".eval-banana" / "config.toml").is_file()


def test_init_refuses_a_dangling_symlink(tmp_path: Path) -> None:
    config = tmp_path / ".eval-banana" / "config.toml"
    config.parent.mkdir()
    config.symlink_to(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="Refusing to overwrite existing file"):
        run_init(cwd=tmp_path, force=False)


def test_force_overwrites_the_config_and_never_a_check(tmp_path: Path) -> None:
    run_init(cwd=tmp_path, force=False)
    config = tmp_path / ".eval-banana" / "config.toml"
    example = tmp_path / "eval_checks" / "example_check.yaml"
    config.write_text("# edited\n")
    example.write_text("edited\n")
    (tmp_path / "eval_checks" / "example_cases.yaml").unlink()
    run_init(cwd=tmp_path, force=True)
    assert config.read_text(encoding="utf-8") == config_template()
    assert example.read_text(encoding="utf-8") == "edited\n"
    assert not (tmp_path / "eval_checks" / "example_cases.yaml").exists()  # deleted stays so
    # A project whose checks are all gone gets the examples again.
    example.unlink()
    run_init(cwd=tmp_path, force=True)
    assert example.read_text(encoding="utf-8").startswith("# yaml-language-server")
    assert (tmp_path / "eval_checks" / "example_cases.yaml").is_file()


def test_force_onto_a_directory_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / ".eval-banana" / "config.toml").mkdir(parents=True)
    with pytest.raises(ConfigError, match="Cannot write"):
        run_init(cwd=tmp_path, force=True)


def test_cli_init_prints_each_path_and_refuses_with_exit_2(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "eval_banana", "init"]
    env_root = str(Path(__file__).resolve().parents[2])
    env = {"PYTHONPATH": env_root, "PATH": "/usr/bin:/bin"}
    first = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert first.returncode == 0, first.stderr
    config = tmp_path.resolve() / ".eval-banana" / "config.toml"
    assert f"Wrote {config}" in first.stdout.splitlines()
    # It says the cache is on, so a second run reusing verdicts is no surprise.
    assert first.stdout.splitlines()[-1].startswith("The verdict cache is on ([cache] mode")
    second = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 2
    assert f"Refusing to overwrite existing file: {config}" in second.stderr
    forced = subprocess.run(
        [*command, "--force"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert forced.returncode == 0, forced.stderr
    example = tmp_path.resolve() / "eval_checks" / "example_check.yaml"
    assert f"Kept {example} (exists)" in forced.stdout.splitlines()
    assert f"Wrote {example}" not in forced.stdout


def test_init_refuses_a_folder_with_a_line_break_in_its_path_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """As `eb run` refuses that folder; printed raw, the path's second line would be a line of
    its own in a CI log (`::warning::...` a GitHub workflow command)."""
    folder = tmp_path / "a\n::warning::x"
    folder.mkdir()
    done = eb_process(folder, "init")
    assert done.returncode == 2
    assert "a\\x0a::warning::x has a control character in its path" in done.stderr
    assert done.stdout == "" and "\n::warning::" not in done.stderr
    assert list(folder.iterdir()) == []
    assert eb_process(folder, "run").stderr == done.stderr  # eb run says the same


def _git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def test_results_stay_out_of_git_after_init_and_run(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    run_init(cwd=project, force=False)
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": os.environ["PATH"]}
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(project)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    results = project / ".eval-banana" / "results"
    assert any(results.rglob("report.json"))
    status = _git(project, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert sorted(line[3:] for line in status) == [
        ".eval-banana/.gitignore",
        ".eval-banana/config.toml",
        ".eval-banana/schemas/check.schema.json",
        "eval_checks/example_cases.yaml",
        "eval_checks/example_check.yaml",
    ]


def _run_json(project: Path, *args: str) -> tuple[int, dict[str, str]]:
    """`eb run --json ARGS` in `project`: its exit code and each check's status."""
    done = eb_process(project, "run", "--json", *args)
    report = json.loads(done.stdout)
    return done.returncode, {c["check_id"]: c["status"] for c in report["checks"]}


def test_the_example_family_runs_three_cases_each_a_check_of_its_own(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    run_init(cwd=project, force=False)
    family = project / "eval_checks" / "example_cases.yaml"
    data = yaml.safe_load(family.read_text(encoding="utf-8"))
    assert len(data["cases"]) == 3
    # The editor schema the modeline points at accepts the family too.
    schema = json.loads((project / ".eval-banana/schemas/check.schema.json").read_text())
    jsonschema.validate(data, schema)
    done = eb_process(project, "run", "--json", "--cache", "off")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    statuses = {c["check_id"]: c["status"] for c in report["checks"]}
    assert statuses == {
        "example_cases[one_word]": "passed",
        "example_cases[two_words]": "passed",
        "example_cases[extra_spaces]": "passed",
        "example_check": "passed",
    }
    assert [(f["id"], f["cases"], f["passed"]) for f in report["families"]] == [
        ("example_cases", 3, 3)
    ]
    # Each case checks something real: a wrong row fails that case alone, cache on or off.
    family.write_text(
        family.read_text(encoding="utf-8").replace(
            'text: "eval banana", words: 2', 'text: "eval banana", words: 3'
        ),
        encoding="utf-8",
    )
    for cache in ("on", "off"):
        code, statuses = _run_json(project, "--cache", cache)
        assert code == 1
        assert [name for name, status in statuses.items() if status != "passed"] == [
            "example_cases[two_words]"
        ]


def test_the_scaffold_s_checks_never_replay_a_pass_the_project_no_longer_earns(
    tmp_path: Path,
) -> None:
    """Outside git, a check without `inputs:` is keyed on every file outside [discovery]
    exclude_dirs, and the config `eb init` writes excludes .eval-banana/: the example family
    checked files there, and after they were deleted its cached passes were replayed. Whatever
    eb init wrote is deleted now (but the config, which makes the project, and the family),
    the cached run says what a run without the cache says."""
    project = tmp_path / "project"
    project.mkdir()
    written = run_init(cwd=project, force=False).written
    code, first = _run_json(project)
    assert code == 0 and set(first.values()) == {"passed"}
    kept = {
        project.resolve() / ".eval-banana" / "config.toml",
        project.resolve() / EXAMPLE_CASES_PATH,
    }
    for path in written:
        if path not in kept:
            path.unlink()
            cached = _run_json(project)
            assert cached == _run_json(project, "--cache", "off"), path


def test_an_existing_gitignore_is_kept_and_extended_once(tmp_path: Path) -> None:
    ignore = tmp_path / ".eval-banana" / ".gitignore"
    ignore.parent.mkdir()
    ignore.write_text("# mine\nscratch/")  # no final newline
    written = run_init(cwd=tmp_path, force=False).written
    assert ignore.resolve() in written
    extended = (
        "# mine\nscratch/\nresults/\ncache/\nhistory/\nlastfailed.json\nwritten.json\n"
        "# eb init added (and never adds again): results/, cache/, history/, lastfailed.json, "
        "written.json\n"
    )
    assert ignore.read_text() == extended
    # Again (with --force): nothing is added, and the file is not reported as written.
    again = run_init(cwd=tmp_path, force=True).written
    assert ignore.resolve() not in again
    assert ignore.read_text() == extended


@pytest.mark.parametrize("final", ["\r\n", ""])
def test_a_crlf_gitignore_keeps_its_line_endings(tmp_path: Path, final: str) -> None:
    # Read as text, CRLF became LF: the whole file was written back with LF line endings, a
    # diff of every line on Windows. eb's own lines end as the file's do, and a file without
    # a final newline gets one in its style.
    ignore = tmp_path / ".eval-banana" / ".gitignore"
    ignore.parent.mkdir()
    ignore.write_bytes(f"# mine\r\nscratch/{final}".encode())
    assert ignore.resolve() in run_init(cwd=tmp_path, force=False).written
    assert ignore.read_bytes() == (
        b"# mine\r\nscratch/\r\nresults/\r\ncache/\r\nhistory/\r\nlastfailed.json\r\nwritten.json\r\n"
        b"# eb init added (and never adds again): results/, cache/, history/, lastfailed.json, "
        b"written.json\r\n"
    )
    # An entry the user removes later is not added back; the file is left as it is.
    ignore.write_bytes(ignore.read_bytes().replace(b"cache/\r\n", b"", 1))
    before = ignore.read_bytes()
    assert ignore.resolve() not in run_init(cwd=tmp_path, force=True).written
    assert ignore.read_bytes() == before


def test_an_entry_the_user_removed_is_never_added_back(tmp_path: Path) -> None:
    ignore = tmp_path / ".eval-banana" / ".gitignore"
    ignore.parent.mkdir()
    ignore.write_text("# we commit the history\nresults/")  # no final newline
    run_init(cwd=tmp_path, force=False)
    mark = (
        "# eb init added (and never adds again): cache/, history/, lastfailed.json, written.json\n"
    )
    assert ignore.read_text() == (
        f"# we commit the history\nresults/\ncache/\nhistory/\nlastfailed.json\nwritten.json\n{mark}"
    )
    ignore.write_text(f"# we commit the history\nresults/\ncache/\n{mark}")
    before = ignore.stat().st_mtime_ns
    assert ignore.resolve() not in run_init(cwd=tmp_path, force=True).written
    assert ignore.stat().st_mtime_ns == before  # history/ and lastfailed.json stay out
    # An entry eb never added is added once, and the mark grows by it alone.
    ignore.write_text(f"history/\n{mark}")
    run_init(cwd=tmp_path, force=True)
    assert ignore.read_text() == (
        "history/\nresults/\n# eb init added (and never adds again): cache/, history/, "
        "lastfailed.json, written.json, results/\n"
    )


@pytest.mark.parametrize("line", ["results", "/results/", "results/*"])
def test_a_gitignore_that_already_ignores_results_is_left_alone(tmp_path: Path, line: str) -> None:
    ignore = tmp_path / ".eval-banana" / ".gitignore"
    ignore.parent.mkdir()
    text = (
        f"{line}\n{line.replace('results', 'cache')}\n{line.replace('results', 'history')}\n"
        "lastfailed.json\nwritten.json\n"
    )
    ignore.write_text(text)
    before = ignore.stat().st_mtime_ns
    assert ignore.resolve() not in run_init(cwd=tmp_path, force=False).written
    assert ignore.read_text() == text and ignore.stat().st_mtime_ns == before


def test_a_new_project_never_discovers_checks_in_eb_s_own_folders(tmp_path: Path) -> None:
    # A deterministic check may leave anything in its evidence folder, and the cache holds
    # stored files: neither may ever be read as a check.
    run_init(cwd=tmp_path, force=False)
    stray = "schema_version: 1\nid: stray\ntype: deterministic\ndescription: d\nscript: x\n"
    for folder in (
        ".eval-banana/cache/x/eval_checks",
        ".eval-banana/results/r/checks/s/eval_checks",
    ):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "stray.yaml").write_text(stray)
    found = discover(config=resolve(tmp_path), inputs={})
    assert [Path(f.path).name for f in found.files] == ["example_cases.yaml", "example_check.yaml"]


def test_init_below_a_project_s_root_refuses_and_nested_makes_one_without_examples(
    tmp_path: Path,
) -> None:
    """`eb init` in a subfolder of a project made a project there, whose examples the outer
    project's `eb run` then found twice (`Duplicate check id 'example_check'`)."""
    outer = tmp_path.resolve() / "project"
    inner = outer / "src" / "pkg"
    inner.mkdir(parents=True)
    assert eb_process(outer, "init").returncode == 0
    refused = eb_process(inner, "init")
    assert refused.returncode == 2
    config = outer / ".eval-banana" / "config.toml"
    assert refused.stderr.splitlines()[0] == (
        f"Refusing to make a project in {inner}: it is inside the eb project at {outer} "
        f"({config}), whose `eb run` would discover this one's checks too"
    )
    assert "pass --nested" in refused.stderr
    assert list(inner.iterdir()) == []  # nothing written
    # --force overwrites a config; it does not make a nested project.
    assert eb_process(inner, "init", "--force").returncode == 2
    assert eb_process(outer, "run").returncode == 0
    nested = eb_process(inner, "init", "--nested")
    assert nested.returncode == 0, nested.stderr
    assert f"Wrote {inner / '.eval-banana' / 'config.toml'}" in nested.stdout.splitlines()
    assert f"Left out {inner / 'eval_checks' / 'example_check.yaml'} (the project at {outer} " in (
        nested.stdout
    )
    assert not (inner / "eval_checks").exists()
    # The outer project still runs (no example found twice); the nested one is a project.
    assert eb_process(outer, "run", "--cache", "off").returncode == 0
    assert eb_process(inner, "init").stderr.startswith("Refusing to overwrite existing file")


def test_init_force_in_a_nested_project_leaves_the_examples_out(tmp_path: Path) -> None:
    """`eb init --force` in a project made with `--nested` wrote the examples `--nested` left
    out, and the outer project's `eb run` exited 2: `Duplicate check id 'example_check'`."""
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "sub"
    inner.mkdir(parents=True)
    run_init(cwd=outer, force=False)
    run_init(cwd=inner, force=False, nested=True)
    forced = run_init(cwd=inner, force=True)
    assert not (inner / "eval_checks").exists()
    example = inner.resolve() / "eval_checks" / "example_check.yaml"
    assert f"Left out {example} (the project at {outer.resolve()} would discover it too)" in (
        forced.left
    )
