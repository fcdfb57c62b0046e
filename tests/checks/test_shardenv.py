"""`--shard auto`: each CI engine's job index and count, 0- or 1-based, read into eb's K/N."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from eval_banana.checks.shard import parse_shard, shard_of
from eval_banana.checks.shardenv import AUTO_VARIABLES
from eval_banana.core.errors import UsageError
from eval_banana.models.config import Shard
from tests.conftest import EbResult, check_yaml
from tests.processes import eb_process

# (engine's index variable, its total variable, the index of its first job)
ENGINES = [
    ("CI_NODE_INDEX", "CI_NODE_TOTAL", 1),
    ("BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", 0),
    ("CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", 0),
    ("JOB_COMPLETION_INDEX", "EVAL_BANANA_SHARD_TOTAL", 0),
    ("SYSTEM_JOBPOSITIONINPHASE", "SYSTEM_TOTALJOBSINPHASE", 1),
]


@pytest.mark.parametrize(("index_var", "total_var", "first"), ENGINES)
def test_each_engine_first_and_last_job_are_shards_1_and_n(
    index_var: str, total_var: str, first: int
) -> None:
    names = [index_var, total_var]
    first_job = {index_var: str(first), total_var: "4"}
    last_job = {index_var: str(first + 3), total_var: "4"}
    assert parse_shard(text="auto", environ=first_job) == Shard(index=1, total=4, variables=names)
    assert parse_shard(text="auto", environ=last_job) == Shard(index=4, total=4, variables=names)
    # One past the last job (or before the first) names no shard: a usage error naming the range.
    for outside in (first + 4, first - 1):
        if outside < 0:
            continue
        with pytest.raises(UsageError, match=f"{index_var}={outside} .*between {first} and"):
            parse_shard(text="auto", environ={index_var: str(outside), total_var: "4"})


def test_eb_own_variable_is_k_of_n() -> None:
    assert parse_shard(text="auto", environ={"EVAL_BANANA_SHARD": " 2/3 "}) == Shard(
        index=2, total=3, variables=["EVAL_BANANA_SHARD"]
    )
    for bad, message in (("2", "not of the form K/N"), ("0/3", "between 1 and 3"), ("x/3", "")):
        with pytest.raises(UsageError, match=f"EVAL_BANANA_SHARD.*{message}"):
            parse_shard(text="auto", environ={"EVAL_BANANA_SHARD": bad})


def test_nothing_set_lists_every_variable_looked_for() -> None:
    with pytest.raises(UsageError, match="found no shard index") as caught:
        parse_shard(text="auto", environ={"PATH": "/bin", "CI": "true"})
    for name in AUTO_VARIABLES:
        assert name in caught.value.message
    assert "--shard K/N" in (caught.value.hint or "")


def test_two_engines_that_agree_are_both_recorded() -> None:
    environ = {
        "CIRCLE_NODE_INDEX": "1",
        "CIRCLE_NODE_TOTAL": "3",
        "EVAL_BANANA_SHARD": "2/3",
    }
    shard = parse_shard(text="auto", environ=environ)
    assert (shard.index, shard.total) == (2, 3)
    assert shard.variables == ["CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", "EVAL_BANANA_SHARD"]


@pytest.mark.parametrize(
    "environ",
    [
        # Same number, different base: CircleCI's 1 is the second job, GitLab's the first.
        {
            "CIRCLE_NODE_INDEX": "1",
            "CIRCLE_NODE_TOTAL": "3",
            "CI_NODE_INDEX": "1",
            "CI_NODE_TOTAL": "3",
        },
        # Same job, different counts.
        {
            "BUILDKITE_PARALLEL_JOB": "0",
            "BUILDKITE_PARALLEL_JOB_COUNT": "2",
            "EVAL_BANANA_SHARD": "1/3",
        },
    ],
)
def test_two_engines_that_disagree_are_a_usage_error(environ: dict[str, str]) -> None:
    with pytest.raises(UsageError, match="names two shards") as caught:
        parse_shard(text="auto", environ=environ)
    for name in environ:
        assert name in caught.value.message


@pytest.mark.parametrize(("index_var", "total_var", "first"), ENGINES)
def test_half_an_engine_pair_is_a_usage_error(index_var: str, total_var: str, first: int) -> None:
    with pytest.raises(UsageError, match=f"{index_var} is set but {total_var} is not"):
        parse_shard(text="auto", environ={index_var: str(first)})
    with pytest.raises(UsageError, match=f"{total_var} is set but {index_var} is not"):
        parse_shard(text="auto", environ={total_var: "2"})
    with pytest.raises(UsageError, match=f"{total_var}='two' is not a whole number"):
        parse_shard(text="auto", environ={index_var: str(first), total_var: "two"})


@pytest.mark.parametrize(("index_var", "total_var", "first"), ENGINES)
def test_a_count_of_one_without_its_index_names_no_shard(
    index_var: str, total_var: str, first: int
) -> None:
    """GitLab sets CI_NODE_TOTAL=1 in every job without `parallel:` (and no CI_NODE_INDEX):
    one job of one is no shard, so eb's own variable decides, and alone it is no shard found."""
    shard = parse_shard(text="auto", environ={total_var: "1", "EVAL_BANANA_SHARD": "2/3"})
    assert shard == Shard(index=2, total=3, variables=["EVAL_BANANA_SHARD"])
    with pytest.raises(UsageError, match="found no shard index in the environment"):
        parse_shard(text="auto", environ={total_var: "1"})


def test_shard_auto_in_a_gitlab_job_without_parallel_reads_eb_own_variable(
    project: Callable[..., Path],
) -> None:
    """`eb list --shard auto` as a GitLab job without `parallel:` starts it: GitLab's lone
    CI_NODE_TOTAL=1 is no shard, EVAL_BANANA_SHARD (or a Kubernetes pair) is the shard."""
    files = {f"eval_checks/c{index:02d}.yaml": check_yaml(f"c{index:02d}") for index in range(9)}
    root = project(files)
    base = {name: value for name, value in os.environ.items() if name not in AUTO_VARIABLES}
    gitlab = {**base, "GITLAB_CI": "true", "CI_NODE_TOTAL": "1"}
    expected = [
        f"c{index:02d}" for index in range(9) if shard_of(check_id=f"c{index:02d}", total=3) == 2
    ]
    assert expected
    for variables in (
        {"EVAL_BANANA_SHARD": "2/3"},
        {"JOB_COMPLETION_INDEX": "1", "EVAL_BANANA_SHARD_TOTAL": "3"},
    ):
        done = eb_process(root, "list", "--shard", "auto", env={**gitlab, **variables})
        assert done.returncode == 0, done.stderr
        assert [line.split("\t")[0] for line in done.stdout.splitlines()] == expected
    # A count above one without its index is still a misconfigured GitLab job.
    refused = eb_process(root, "list", "--shard", "auto", env={**gitlab, "CI_NODE_TOTAL": "3"})
    assert refused.returncode == 2
    assert "CI_NODE_TOTAL is set but CI_NODE_INDEX is not" in refused.stderr


def test_zero_jobs_or_more_than_any_matrix_runs_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="total must lie between 1 and 10,000"):
        parse_shard(text="auto", environ={"CIRCLE_NODE_INDEX": "0", "CIRCLE_NODE_TOTAL": "0"})
    with pytest.raises(UsageError, match="total must lie between 1 and 10,000"):
        parse_shard(
            text="auto", environ={"CIRCLE_NODE_INDEX": "0", "CIRCLE_NODE_TOTAL": "1000000000"}
        )


def test_run_with_shard_auto_records_the_variables_in_config_json(
    eb: Callable[..., EbResult],
    project: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = {f"eval_checks/c{index:02d}.yaml": check_yaml(f"c{index:02d}") for index in range(9)}
    root = project(files, config='[core]\noutput_dir = "runs"\n')
    for name in AUTO_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # Buildkite's third job of three (0-based 2) is eb's shard 3/3.
    monkeypatch.setenv("BUILDKITE_PARALLEL_JOB", "2")
    monkeypatch.setenv("BUILDKITE_PARALLEL_JOB_COUNT", "3")
    run_dir = tmp_path / "shard"
    result = eb(
        "run", "--cwd", str(root), "--shard", "auto", "--output-dir", str(run_dir), "--flat-output"
    )
    assert result.exit_code == 0, result.stderr
    config = json.loads((run_dir / "stages" / "config.json").read_text())
    assert config["selection"]["shard"] == {
        "index": 3,
        "total": 3,
        "variables": ["BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT"],
        "balance": "hash",
        "history_digest": None,
    }
    report = json.loads((run_dir / "report.json").read_text())
    ran = [check["check_id"] for check in report["checks"]]
    expected = [f"c{index:02d}" for index in range(9)]
    assert ran == [c for c in expected if shard_of(check_id=c, total=3) == 3]
    # A second engine that disagrees stops the run before any folder is written.
    monkeypatch.setenv("CI_NODE_INDEX", "2")
    monkeypatch.setenv("CI_NODE_TOTAL", "3")
    refused = eb("run", "--cwd", str(root), "--shard", "auto")
    assert refused.exit_code == 2
    assert "names two shards" in refused.stderr and "CI_NODE_INDEX=2" in refused.stderr
    assert not (root / "runs").exists()


def test_a_shard_with_one_slash_too_many_is_not_of_the_form_k_of_n(
    project: Callable[..., Path],
) -> None:
    """`2/3/4` was read as K=2 and N='3/4' and reported as "N is not a whole number": the
    form is what is wrong, from EVAL_BANANA_SHARD as from --shard."""
    root = project(
        {"eval_checks/c01.yaml": check_yaml("c01")}, config='[core]\noutput_dir = "runs"\n'
    )
    base = {name: value for name, value in os.environ.items() if name not in AUTO_VARIABLES}
    from_environment = eb_process(
        root, "run", "--shard", "auto", env={**base, "EVAL_BANANA_SHARD": "2/3/4"}
    )
    assert from_environment.returncode == 2
    assert "EVAL_BANANA_SHARD='2/3/4' is not of the form K/N" in from_environment.stderr
    assert "whole number" not in from_environment.stderr
    from_flag = eb_process(root, "run", "--shard", "2/3/4", env=base)
    assert from_flag.returncode == 2
    assert "--shard '2/3/4' is not of the form K/N" in from_flag.stderr
    assert "whole number" not in from_flag.stderr.splitlines()[0]
    assert not (root / "runs").exists()
