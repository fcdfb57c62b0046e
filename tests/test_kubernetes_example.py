"""examples/kubernetes/: the manifests validate against a pinned Kubernetes version, and the
commands the pods run shard, write to the shared volume and merge into one gating verdict."""

from __future__ import annotations

import json
import os
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
EXAMPLE = REPO / "examples" / "kubernetes"
# The schemas kubernetes-validate ships for this release are the ones checked against. 1.31 is
# the oldest minor still supported by the large managed services when this was written, so
# manifests valid there are valid on any cluster a reader is likely to run.
KUBERNETES_VERSION = "1.31"
SHARDS = 4


def _validator() -> str:
    found = Path(sys.executable).parent / "kubernetes-validate"
    assert found.is_file(), "kubernetes-validate is a test dependency: pip install -e '.[test]'"
    return str(found)


def _validate(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_validator(), "--strict", "-k", KUBERNETES_VERSION, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _load(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((EXAMPLE / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def _container(job: dict[str, Any]) -> dict[str, Any]:
    containers = job["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container.get("env", []) if "value" in item}


def test_every_manifest_validates_strictly_against_the_pinned_version(tmp_path: Path) -> None:
    manifests = sorted(EXAMPLE.glob("*.yaml"))
    assert [path.name for path in manifests] == ["merge-job.yaml", "shards-job.yaml", "volume.yaml"]
    done = _validate(*manifests)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(f"against version {KUBERNETES_VERSION}") == 3, done.stdout
    # The validator really reads the fields: a misspelt one is refused under --strict.
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        (EXAMPLE / "shards-job.yaml").read_text().replace("completionMode:", "completionMod:")
    )
    refused = _validate(broken)
    assert refused.returncode == 1 and "completionMod" in refused.stdout


def test_the_jobs_shard_by_index_share_one_volume_and_merge() -> None:
    shards, merge, volume = _load("shards-job.yaml"), _load("merge-job.yaml"), _load("volume.yaml")
    spec = shards["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == SHARDS
    shard_container, merge_container = _container(shards), _container(merge)
    # N is given to --shard auto, and must be the number of indexes Kubernetes hands out.
    assert _env(shard_container)["EVAL_BANANA_SHARD_TOTAL"] == str(SHARDS)
    assert _env(shard_container)["EVAL_RUN"] == _env(merge_container)["EVAL_RUN"]
    assert "--shard auto" in " ".join(shard_container["args"])
    assert "eb merge" in " ".join(merge_container["args"])
    assert merge["spec"]["backoffLimit"] == 0
    claim = volume["metadata"]["name"]
    assert "ReadWriteMany" in volume["spec"]["accessModes"]
    for job, container in ((shards, shard_container), (merge, merge_container)):
        volumes = job["spec"]["template"]["spec"]["volumes"]
        assert [v["persistentVolumeClaim"]["claimName"] for v in volumes] == [claim]
        assert [m["mountPath"] for m in container["volumeMounts"]] == ["/runs"]
        assert container["image"] == shard_container["image"]


def _pod(
    *, container: dict[str, Any], extra: dict[str, str], runs: Path, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """Run a container's command as its pod would, with the shared volume at `runs`."""
    assert container["command"] == ["sh", "-c"]
    script = " ".join(container["args"]).replace("/runs/", f"{runs}/")
    environ = {k: v for k, v in os.environ.items() if k not in AUTO_VARIABLES}
    environ.update(_env(container))
    environ.update(extra)
    environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"
    return subprocess.run(
        ["sh", "-c", script], cwd=cwd, env=environ, capture_output=True, text=True, timeout=300
    )


def _project(root: Path, *, failing: str | None) -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("")
    for index in range(10):
        check_id = f"case_{index:02d}"
        script = "raise SystemExit(1)" if check_id == failing else "pass"
        path = root / "eval_checks" / f"{check_id}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(check_yaml(check_id, script=script))
    return root


def _run_the_example(tmp_path: Path, *, failing: str | None) -> subprocess.CompletedProcess[str]:
    root = _project(tmp_path / "project", failing=failing)
    runs = tmp_path / "runs"
    shard_container = _container(_load("shards-job.yaml"))
    for index in range(SHARDS):
        done = _pod(
            container=shard_container,
            extra={"JOB_COMPLETION_INDEX": str(index)},
            runs=runs,
            cwd=root,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    run = _env(shard_container)["EVAL_RUN"]
    shards = sorted(p.name for p in (runs / run).iterdir() if p.name != "merged")
    assert shards == [f"shard-{i}" for i in range(SHARDS)]
    config = json.loads((runs / run / "shard-2" / "stages" / "config.json").read_text())
    assert config["selection"]["shard"] == {
        "index": 3,
        "total": SHARDS,
        "variables": ["JOB_COMPLETION_INDEX", "EVAL_BANANA_SHARD_TOTAL"],
        "balance": "hash",
        "history_digest": None,
    }
    return _pod(container=_container(_load("merge-job.yaml")), extra={}, runs=runs, cwd=root)


def test_the_pods_commands_shard_and_the_merge_passes_a_green_suite(tmp_path: Path) -> None:
    merged = _run_the_example(tmp_path, failing=None)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    report = json.loads((tmp_path / "runs" / "run-1" / "merged" / "report.json").read_text())
    assert report["total_checks"] == 10 and report["passed_checks"] == 10
    assert (tmp_path / "runs" / "run-1" / "merged" / "junit.xml").is_file()


def test_the_merge_job_fails_when_a_check_fails_and_a_rerun_starts_afresh(tmp_path: Path) -> None:
    merged = _run_the_example(tmp_path, failing="case_07")
    assert merged.returncode == 1, merged.stdout + merged.stderr
    # The same Jobs again (a retried pod, or run.sh a second time) replace their own folders.
    shutil.rmtree(tmp_path / "project")
    again = _run_the_example(tmp_path, failing=None)
    assert again.returncode == 0, again.stdout + again.stderr
