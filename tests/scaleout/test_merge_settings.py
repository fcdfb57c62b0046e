"""`eb merge` refuses shards that ran with different settings that shape the verdict: the merged
run takes the first shard's settings, and would pass by its rules what another shard failed by
its own."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from eval_banana.models.stages import ConfigDoc, ExecuteDoc
from eval_banana.scaleout.mergedstages import OUTPUT_SETTINGS
from eval_banana.scaleout.shardset import MATCHING_SETTINGS, setting_value
from eval_banana.settings.table import SETTINGS, VERDICT_SETTINGS, SettingSpec
from eval_banana.stagefiles.read import read_stage_file
from eval_banana.stages.report import build_report
from eval_banana.stages.score import score
from tests.conftest import REPO, EbResult, check_yaml

# Sample 1 passes and sample 2 fails: a flaky check under --fail-on-flaky.
FLAKY = """\
schema_version: 1
id: flaky
type: deterministic
description: sample 1 passes, sample 2 fails
repeats: 2
aggregate: any
script: |
  import json, sys
  context = json.load(open(sys.argv[1]))
  sys.exit(0 if context["output_dir"].endswith(".s1") else 1)
"""
PLAIN = [f"plain_{letter}" for letter in "abcdef"]


def _write_project(root: Path) -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("[core]\n")
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "flaky.yaml").write_text(FLAKY)
    for check_id in PLAIN:
        (root / "eval_checks" / f"{check_id}.yaml").write_text(check_yaml(check_id))
    return root


def _run(eb: Callable[..., EbResult], project: Path, out: Path, *flags: str) -> EbResult:
    return eb("run", "--cwd", str(project), "--output-dir", str(out), "--flat-output", *flags)


def _flaky_shard(eb: Callable[..., EbResult], project: Path) -> int:
    """The shard of two that holds the flaky check, as `eb plan --shards 2` deals it."""
    planned = eb("plan", "--cwd", str(project), "--shards", "2", "--json")
    assert planned.exit_code == 0, planned.stderr
    checks = json.loads(planned.stdout)["checks"]
    return int(next(check["shard"] for check in checks if check["id"] == "flaky"))


def test_a_shard_run_with_fail_on_flaky_is_not_merged_with_one_run_without(
    eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    flaky_project = _write_project(tmp_path / "project")
    flaky = _flaky_shard(eb, flaky_project)
    strict = tmp_path / "strict"
    assert (
        _run(eb, flaky_project, strict, "--shard", f"{flaky}/2", "--fail-on-flaky").exit_code == 1
    )
    lenient = tmp_path / "lenient"
    assert _run(eb, flaky_project, lenient, "--shard", f"{3 - flaky}/2").exit_code == 0
    merged = tmp_path / "merged"
    result = eb("merge", str(lenient), str(strict), "--output-dir", str(merged), "--flat-output")
    # Taking the first shard's setting, the merge passed what the strict shard failed.
    assert result.exit_code == 2, result.stdout + result.stderr
    assert not merged.exists()
    assert (
        f"Cannot merge: {strict} (shard {flaky}/2) ran with core.fail_on_flaky = true (from "
        f"--fail-on-flaky), {lenient} (shard {3 - flaky}/2) with false (the default)"
    ) in result.stderr
    assert "Run every shard with the same core.fail_on_flaky (--fail-on-flaky, " in result.stderr
    # Both strict, the merged run fails as the one-machine run does.
    again = tmp_path / "lenient-no-more"
    _run(eb, flaky_project, again, "--shard", f"{3 - flaky}/2", "--fail-on-flaky")
    result = eb("merge", str(again), str(strict), "--output-dir", str(merged), "--flat-output")
    assert result.exit_code == 1, result.stdout + result.stderr
    assert _run(eb, flaky_project, tmp_path / "one", "--fail-on-flaky").exit_code == 1


def test_the_merged_report_states_the_environment_the_shards_checks_ran_under(
    eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    """Each shard's checks rerun under `eb stage execute --env-policy allowlist`: the merged
    report stated config.json's policy and lists, not the ones the checks ran under."""
    project = _write_project(tmp_path / "project")
    allowlist = (
        "--env-policy", "allowlist", "--env-allow", "KEEP_ME", "--env-allow-prefix", "APP_",
    )  # fmt: skip
    shards = [str(tmp_path / f"shard-{k}") for k in (1, 2)]
    for k, shard in enumerate(shards, start=1):
        assert _run(eb, project, Path(shard), "--shard", f"{k}/2").exit_code == 0
        rerun = eb("stage", "execute", "--cwd", str(project), "--run-dir", shard, *allowlist)
        assert rerun.exit_code == 0, rerun.stderr
        for stage in ("score", "report"):  # the shard's folder as its rerun leaves it
            assert eb("stage", stage, "--cwd", str(project), "--run-dir", shard).exit_code == 0
    merged = tmp_path / "merged"
    result = eb("merge", *shards, "--output-dir", str(merged), "--flat-output")
    assert result.exit_code == 0, result.stdout + result.stderr
    report = json.loads((merged / "report.json").read_text())
    assert (report["env_policy"], report["env_allow"], report["env_allow_prefixes"]) == (
        "allowlist",
        ["KEEP_ME"],
        ["APP_"],
    )


def _other_value(spec: SettingSpec) -> object:
    """A valid value of the setting other than its default."""
    default = spec.default
    others: dict[str, object] = {
        "path": "elsewhere",
        "optional_path": "elsewhere.xml",
        "threshold": 0.25 if default == 0.5 else 0.5,
        "optional_string": "other",
        "folder_names": ["other"],
        "name_list": ["OTHER_NAME"],
        "string_table": {"OTHER_NAME": "other"},
        "glob_list": ["other/**"],
        "repeat_count": 3 if default == 2 else 2,
        "boolean": not default,
        "ignored": "other",
    }
    if spec.kind == "choice":
        return next(choice for choice in spec.choices if choice != default)
    if spec.kind == "non_negative_number":
        assert isinstance(default, int | float)
        return float(default) + 1.5
    if spec.kind in ("integer", "positive_integer", "non_negative_integer", "count"):
        assert isinstance(default, int)
        return default + 3
    return others[spec.kind]


def _as_text(value: object) -> str:
    """How an environment variable spells a value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


def test_the_settings_shards_must_share_are_the_ones_the_table_marks() -> None:
    assert {
        "core.pass_threshold",
        "core.fail_on_flaky",
        "core.repeats",
        "core.maxfail",
        "execution.env",
        "harness.agent",
    } <= set(MATCHING_SETTINGS)
    # The merge's own outputs are never the shards' to agree on.
    assert not set(MATCHING_SETTINGS) & set(OUTPUT_SETTINGS)


@pytest.mark.parametrize(
    "spec", [spec for spec in VERDICT_SETTINGS if spec.env], ids=lambda spec: spec.name
)
def test_every_setting_that_shapes_the_verdict_must_agree(
    spec: SettingSpec,
    eb: Callable[..., EbResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = _write_project(tmp_path / "project")
    first = tmp_path / "first"
    assert _run(eb, project, first, "--shard", "1/2").exit_code == 0
    assert spec.env is not None  # one set only in the config file is tested below
    value = _other_value(spec)
    monkeypatch.setenv(spec.env, _as_text(value))
    other = tmp_path / "other"
    ran = _run(eb, project, other, "--shard", "2/2")
    assert ran.exit_code in (0, 1), ran.stderr
    monkeypatch.delenv(spec.env)
    merged = tmp_path / "merged"
    result = eb("merge", str(first), str(other), "--output-dir", str(merged), "--flat-output")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"{other} (shard 2/2) ran with {spec.name} = " in result.stderr
    assert f"(from {spec.env}), {first} (shard 1/2) with " in result.stderr
    assert not merged.exists()


def test_every_setting_the_score_and_report_state_is_one_shards_must_share(
    eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    """A setting that changes score.json or report.json (the verdict or what the report says)
    when it alone changes is marked in the settings table: a new one cannot be forgotten."""
    project = _write_project(tmp_path / "project")
    run_dir = tmp_path / "run"
    assert _run(eb, project, run_dir).exit_code == 0
    config: ConfigDoc = read_stage_file(run_dir=run_dir, stage="config").doc
    execute: ExecuteDoc = read_stage_file(run_dir=run_dir, stage="execute").doc

    def stated(doc: ConfigDoc) -> object:
        scored = score(config=doc, execute=execute, inputs={})
        report = build_report(run_dir=run_dir, config=doc, execute=execute, score=scored)
        written = scored.model_dump(mode="json")
        del written["created_at"]  # when, not what
        return (written, report)

    baseline = stated(config)
    unmarked = []
    for spec in SETTINGS:
        if spec.section == "agents" or spec.name in OUTPUT_SETTINGS:
            continue
        settings = config.settings.model_copy(deep=True)
        section = getattr(settings, spec.section)
        setattr(section, spec.key, _other_value(spec))
        assert setting_value(settings=settings, name=spec.name) != setting_value(
            settings=config.settings, name=spec.name
        )
        changed = stated(config.model_copy(update={"settings": settings}))
        if changed != baseline and not spec.shapes_verdict:
            unmarked.append(spec.name)
    assert unmarked == []


def test_the_docs_name_every_setting_shards_must_share() -> None:
    page = (REPO / "docs" / "scale-out.md").read_text()
    settings_paragraph = page[page.index("- **Settings.**") : page.index("- **Exit code.**")]
    assert [name for name in MATCHING_SETTINGS if f"`{name}`" not in settings_paragraph] == []


def test_shards_that_chose_other_time_limits_merge_into_a_run_that_is_up_to_date(
    eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    """Shard 2 ran under `--check-timeout-seconds 600` (each job's own budget): the merged run
    was stale as soon as it was made, its checks compared with the first shard's limit in
    config.json, and `eb update` ran them again under it."""
    project = _write_project(tmp_path / "project")
    shards = [tmp_path / f"shard-{k}" for k in (1, 2)]
    assert _run(eb, project, shards[0], "--shard", "1/2").exit_code in (0, 1)
    longer = ("--check-timeout-seconds", "600")
    assert _run(eb, project, shards[1], "--shard", "2/2", *longer).exit_code in (0, 1)
    merged = tmp_path / "merged"
    result = eb(
        "merge",
        "--cwd",
        str(project),
        *map(str, shards),
        "--output-dir",
        str(merged),
        "--flat-output",
    )
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    status = eb("status", "--cwd", str(project), "--run-dir", str(merged))
    assert "stale" not in status.stdout, status.stdout
    # A limit the configuration changes since is one neither shard ran under: stale again.
    config = project / ".eval-banana" / "config.toml"
    config.write_text("[core]\ncheck_timeout_seconds = 45\n")
    status = eb("status", "--cwd", str(project), "--run-dir", str(merged))
    assert "[core] check_timeout_seconds changed" in status.stdout, status.stdout
