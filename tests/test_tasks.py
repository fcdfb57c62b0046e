"""The Invoke collection (`invoke eval ...`) run as a user runs it: `python -m invoke` in a
project whose tasks.py imports it. Each task must mean what the same `eb` command means."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval_banana.stagefiles.layout import STAGE_NAMES
from tests.conftest import check_yaml
from tests.processes import python_process

TASKS = "from eval_banana.tasks import ns\n"
CONFIG = '[core]\noutput_dir = "results"\n\n[harness]\nagent = "claude"\n'


def invoke(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return python_process(root, "-m", "invoke", *args)


def newest_harness_settings(root: Path) -> dict[str, Any]:
    run = max(root.glob("results/*/stages/config.json"), key=lambda path: path.stat().st_mtime)
    settings: dict[str, Any] = json.loads(run.read_text())["settings"]["harness"]
    return settings


def test_an_empty_option_value_is_passed_on_not_dropped(project: Callable[..., Path]) -> None:
    # docs/rerunning-stages.md: `invoke eval --harness-agent ""` is "no agent", as in eb run.
    root = project({"eval_checks/ok.yaml": check_yaml("ok"), "tasks.py": TASKS}, config=CONFIG)
    configured = invoke(root, "eval")
    assert configured.returncode == 0, configured.stdout + configured.stderr
    assert newest_harness_settings(root)["agent"] == "claude"  # not given: the config's agent
    emptied = invoke(root, "eval", "--harness-agent", "")
    assert emptied.returncode == 0, emptied.stdout + emptied.stderr
    assert newest_harness_settings(root)["agent"] is None


def test_verbose_in_one_task_leaves_the_next_task_quiet(project: Callable[..., Path]) -> None:
    root = project({"eval_checks/ok.yaml": check_yaml("ok"), "tasks.py": TASKS}, config=CONFIG)
    assert invoke(root, "eval").returncode == 0
    done = invoke(root, "eval.report", "--args", "--verbose", "eval.status")
    assert done.returncode == 0, done.stdout + done.stderr
    # Invoke's own debug records of the second task: the root logger was left at DEBUG.
    assert "debug: Executing <Call 'status'" not in done.stderr, done.stderr


def test_update_after_an_emptied_option_and_a_config_edit(project: Callable[..., Path]) -> None:
    root = project({"eval_checks/ok.yaml": check_yaml("ok"), "tasks.py": TASKS}, config=CONFIG)
    emptied = invoke(root, "eval", "--harness-agent", "")
    assert emptied.returncode == 0, emptied.stdout + emptied.stderr
    config = root / ".eval-banana" / "config.toml"
    config.write_text(config.read_text() + "# an edit\n")
    updated = invoke(root, "eval.update")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert newest_harness_settings(root)["agent"] is None


def _help_example(task: str) -> list[str]:
    """The words of the `--args` example `invoke --help eval.<task>` gives."""
    from eval_banana.tasks import collection

    found = re.search(r"e\.g\. '([^']*)'", collection.tasks[task].help["args"])
    assert found is not None, collection.tasks[task].help
    return shlex.split(found.group(1))


def test_each_tasks_help_example_runs(project: Callable[..., Path]) -> None:
    """`invoke --help eval.update` advertised `--args "--pass-threshold 0.5"`, which eb update
    refuses; each stage task's example is one its stage reads."""
    root = project(
        {"eval_checks/login.yaml": check_yaml("login"), "tasks.py": TASKS}, config=CONFIG
    )
    assert invoke(root, "eval").returncode == 0
    for task in [*STAGE_NAMES, "update"]:
        args = _help_example(task)
        done = invoke(root, f"eval.{task}", "--args", shlex.join(args))
        assert done.returncode == 0, f"{task} --args {args}: {done.stdout}{done.stderr}"


def test_an_args_value_with_an_unbalanced_quote_is_a_usage_error(
    project: Callable[..., Path],
) -> None:
    """`--args` that cannot be split as a shell splits it (an unbalanced quote) ends the task
    with eb's usage-error code, 2, and one line naming the value: never a traceback, whose
    exit 1 would read as a failed run."""
    root = project({"eval_checks/ok.yaml": check_yaml("ok"), "tasks.py": TASKS}, config=CONFIG)
    assert invoke(root, "eval", "--harness-agent", "").returncode == 0
    for task, args in (
        ("eval", "--tag 'fast"),
        ("eval.score", "--pass-threshold '0.5"),
        ("eval.update", '--verbose "x'),
    ):
        refused = invoke(root, task, "--args", args)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "Traceback" not in refused.stderr
        (line,) = refused.stderr.splitlines()
        assert line.startswith(f"error: --args {args!r} cannot be split into flags: ")
        assert "No closing quotation" in line
