"""Records: the light models eb writes, their pydantic twins, and the start-up they protect."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval_banana.core.record import Field, Record, RecordShapeError, to_pydantic
from eval_banana.models.report import ReportJson
from eval_banana.models.stages import ProblemModel, ScoreDoc, StageEnvelope
from eval_banana.stagefiles.layout import stage_path
from eval_banana.stagefiles.read import STAGE_MODELS
from tests.conftest import REPO, STANDIN_AGENTS, check_yaml, judge_yaml

DEMO = REPO / "examples" / "demo"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo-run")
    subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(DEMO), "--output-dir", str(out)],
        capture_output=True,
        check=False,
        timeout=120,
    )
    (run_dir,) = list(out.iterdir())
    return run_dir


@pytest.mark.parametrize("stage", list(STAGE_MODELS))
def test_stage_files_round_trip_through_record_and_twin_alike(demo_run: Path, stage: str) -> None:
    document = json.loads(stage_path(run_dir=demo_run, stage=stage).read_text())
    model = STAGE_MODELS[stage]
    from_record = model.model_validate(document).model_dump(mode="json", by_alias=True)
    from_twin = to_pydantic(model).model_validate(document).model_dump(mode="json", by_alias=True)
    assert from_record == document
    # Same keys in the same (declaration) order as the pydantic twin, and the same values.
    assert json.dumps(from_record) == json.dumps(from_twin)


def test_report_json_round_trips(demo_run: Path) -> None:
    document = json.loads((demo_run / "report.json").read_text())
    dumped = ReportJson.model_validate(document).model_dump(mode="json")
    twin = to_pydantic(ReportJson).model_validate(document).model_dump(mode="json")
    assert dumped == {key: document[key] for key in dumped}
    assert list(dumped) == [key for key in twin if key in dumped]


def _score(**overrides: object) -> ScoreDoc:
    values: dict[str, object] = {
        "$schema": "x",
        "tool_version": "0",
        "run_id": "r",
        "created_at": "t",
        "total_checks": 1,
        "passed_checks": 1,
        "failed_checks": 0,
        "errored_checks": 0,
        "points_earned": 1,
        "total_points": 1,
        "percentage": 100,
        "pass_threshold": 1,
        "meets_threshold": True,
        "run_passed": True,
        "status": "passed",
    }
    values.update(overrides)
    return ScoreDoc.model_validate(values)


def test_an_int_for_a_float_field_dumps_as_a_float_like_pydantic() -> None:
    score = _score()
    assert score.percentage == 100.0 and type(score.percentage) is float
    assert json.dumps(score.model_dump()["percentage"]) == "100.0"
    twin = to_pydantic(ScoreDoc).model_validate(score.model_dump(by_alias=True))
    assert twin.model_dump(mode="json")["percentage"] == 100.0


def test_aliases_defaults_and_declaration_order() -> None:
    score = _score()
    assert score.schema_uri == "x"
    dumped = score.model_dump(by_alias=True)
    assert "$schema" in dumped and "schema_uri" not in dumped
    assert list(dumped)[:3] == ["$schema", "schema_version", "stage"]
    assert dumped["stage"] == "score" and dumped["not_run_checks"] == 0


def test_missing_and_unknown_fields_are_refused() -> None:
    with pytest.raises(TypeError, match="message"):
        ProblemModel()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="colour"):
        ProblemModel(message="m", colour="red")  # type: ignore[call-arg]
    with pytest.raises(RecordShapeError, match="colour"):
        ProblemModel.model_validate({"message": "m", "colour": "red"})


def test_model_validate_takes_each_field_by_alias_or_name_and_fills_the_rest() -> None:
    class Item(Record):
        schema_uri: str = Field(alias="$schema")
        count: float = 0.0
        tags: list[str] = Field(default_factory=list)

    by_alias = Item.model_validate({"$schema": "a", "count": 2})
    assert by_alias == Item(schema_uri="a", count=2.0)
    assert type(by_alias.count) is float  # as pydantic turns an int into a float field's float
    assert Item.model_validate({"schema_uri": "b"}).schema_uri == "b"
    # A default factory runs for each record: two records never share one list.
    first, second = Item.model_validate({"$schema": "a"}), Item.model_validate({"$schema": "a"})
    first.tags.append("x")
    assert second.tags == []
    # A document of another shape is a ValueError, as a file that is not JSON is: a reader
    # that says nothing of an unreadable file catches both with one clause.
    with pytest.raises(RecordShapeError, match="missing required field 'schema_uri'"):
        Item.model_validate({"count": 1})
    with pytest.raises(RecordShapeError, match="has no field 'colour'"):
        Item.model_validate({"$schema": "a", "colour": "red"})
    with pytest.raises(ValueError, match="Item needs a mapping, got NoneType"):
        Item.model_validate(None)

    class Open(Record):
        model_config = {"extra": "allow"}
        name: str

    assert Open.model_validate({"name": "n", "more": 1}) == Open(name="n")


def test_nested_records_are_built_from_mappings() -> None:
    class Outer(Record):
        problems: list[ProblemModel]
        first: ProblemModel | None = None
        by_name: dict[str, ProblemModel] = Field(default_factory=dict)

    outer = Outer.model_validate(
        {
            "problems": [{"message": "a"}],
            "first": {"message": "b"},
            "by_name": {"x": {"message": "c"}},
        }
    )
    assert outer.problems == [ProblemModel(message="a")]
    assert outer.first == ProblemModel(message="b")
    assert outer.by_name["x"].message == "c"
    assert Outer.model_validate({"problems": [], "first": None}).first is None


def test_a_shared_mutable_default_is_refused_at_declaration() -> None:
    with pytest.raises(TypeError, match=r"Bad\.tags: use Field\(default_factory=\.\.\.\)"):

        class Bad(Record):
            tags: list[str] = []  # noqa: RUF012 - the mistake under test

    class Good(Record):
        tags: list[str] = Field(default_factory=list)

    first, second = Good(), Good()
    first.tags.append("x")
    assert second.tags == []


def test_model_copy_leaves_the_original_alone() -> None:
    problem = ProblemModel(message="a", hint="h")
    changed = problem.model_copy(update={"message": "b"})
    assert (problem.message, changed.message, changed.hint) == ("a", "b", "h")
    envelope_fields = list(StageEnvelope.model_fields)
    assert envelope_fields[:2] == ["schema_uri", "schema_version"]


def _judge_project(root: Path, *, checks: dict[str, str]) -> Path:
    """A project whose judges run the stand-in claude (put on PATH by `_python`)."""
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\n\n[harness]\nagent = "claude"\ntimeout_seconds = 30\n'
    )
    (root / "eval_checks").mkdir()
    for name, text in checks.items():
        (root / "eval_checks" / f"{name}.yaml").write_text(text)
    return root


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PATH"] = f"{STANDIN_AGENTS}{os.pathsep}{env['PATH']}"
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("command", ["list", "validate", "run"])
def test_everyday_commands_never_import_what_their_start_up_cannot_afford(
    tmp_path: Path, command: str
) -> None:
    # The start-up budget of issue 7 (pydantic ~70 ms, jsonschema ~40 ms, logging ~3 ms).
    root = _judge_project(
        tmp_path / "proj",
        checks={
            "det": check_yaml("det"),
            "judge": judge_yaml("judge", instructions="Is it fine?\nstandin: score=1 reason=fine"),
            # A family with inline cases, as `eb init`'s example has: read without the models.
            "family": check_yaml("family", script="pass").replace(
                "description: Check family.",
                "description: 'case {{ case.name }}'\ncases: [{id: a, name: A}, {name: B}]",
            ),
        },
    )
    probe = (
        "import sys\n"
        "from eval_banana.cli import main\n"
        f"code = main([{command!r}, '--cwd', {str(root)!r}])\n"
        "heavy = ('pydantic', 'jsonschema', 'rich', 'logging', 'concurrent.futures')\n"
        "heavy = sorted(m for m in heavy if m in sys.modules)\n"
        "print('HEAVY', heavy, code)\n"
    )
    done = _python("-c", probe)
    assert "HEAVY [] 0" in done.stdout, done.stdout + done.stderr


def test_eb_validate_and_eb_list_import_none_of_what_only_a_run_needs(tmp_path: Path) -> None:
    # Reading the step summary's variable name once pulled in the reporting package, and with
    # it execute, the runners and report.html's assets: 10 ms of every `eb validate`.
    root = _judge_project(tmp_path / "proj", checks={"det": check_yaml("det")})
    probe = (
        "import sys\n"
        "from eval_banana.cli import main\n"
        f"codes = [main(['validate', '--cwd', {str(root)!r}]), main(['list', '--cwd', {str(root)!r}])]\n"
        "run_only = ('eval_banana.reporting', 'eval_banana.stages.execute', "
        "'eval_banana.execution', "
        "'eval_banana.stages.report', 'eval_banana.reporttext', 'eval_banana.runners', "
        "'eval_banana.history')\n"
        "print('RUN-ONLY', sorted(m for m in run_only if m in sys.modules), codes)\n"
    )
    done = _python("-c", probe)
    assert "RUN-ONLY [] [0, 0]" in done.stdout, done.stdout + done.stderr


def test_runner_warnings_reach_stderr_in_the_cli_format_without_loading_logging_before(
    tmp_path: Path,
) -> None:
    # eval_banana.core.log defers `import logging` to the first warning; the CLI's format still applies.
    root = _judge_project(
        tmp_path / "proj",
        checks={"quiet": judge_yaml("quiet", instructions="Decide.\nstandin: mode=no_verdict")},
    )
    done = _python("-m", "eval_banana", "run", "--cwd", str(root))
    assert done.returncode == 1
    assert "warning: Harness judge check quiet failed:" in done.stderr
    assert "eval_banana." not in done.stderr  # users see no module names


@pytest.mark.parametrize("command", ["validate", "run"])
def test_the_calibration_gate_stays_within_the_start_up_budget(
    tmp_path: Path, command: str
) -> None:
    # With require_calibration on, the guard reads calibration.json on every run: still light.
    judge = judge_yaml("judge", instructions="Is it fine?\nstandin: needs=answer.txt:fine")
    judge += (
        'calibration: [{"name": "fine", "expect": "pass", "files": {"answer.txt": "fine"}}, '
        '{"name": "broken", "expect": "fail", "files": {"answer.txt": "broken"}}]\n'
    )
    root = _judge_project(tmp_path / "proj", checks={"judge": judge})
    (root / "answer.txt").write_text("fine")
    calibrated = _python("-m", "eval_banana", "calibrate", "--cwd", str(root))
    assert calibrated.returncode == 0, calibrated.stdout + calibrated.stderr
    probe = (
        "import sys\n"
        "from eval_banana.cli import main\n"
        f"code = main([{command!r}, '--cwd', {str(root)!r}, '--require-calibration'])\n"
        "heavy = ('pydantic', 'jsonschema', 'rich', 'logging', 'concurrent.futures')\n"
        "heavy = sorted(m for m in heavy if m in sys.modules)\n"
        "print('HEAVY', heavy, code)\n"
    )
    done = _python("-c", probe)
    assert "HEAVY [] 0" in done.stdout, done.stdout + done.stderr


def test_the_eb_process_scans_its_long_lived_objects_less_often() -> None:
    """A run keeps tens of thousands of records alive to its end; at Python's default the
    collector walks them again every 700 allocations."""
    import gc

    from eval_banana.cli import _tune_collector

    before = gc.get_threshold()
    try:
        _tune_collector()
        assert gc.get_threshold() == (50_000, *before[1:])
        assert gc.get_freeze_count() > 0  # what start-up imported is no longer scanned
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_eb_validate_warns_with_its_hint_and_still_imports_nothing_a_run_needs(
    tmp_path: Path,
) -> None:
    # A judge family without calibration cases warns on every `eb validate`: printing that
    # warning with its hint once pulled in the console, and with it the reporting package.
    family = (
        judge_yaml("qa")
        .replace("description: Judge qa.", "description: 'answer {{ case.q }}'")
        .replace("type: harness_judge", "type: harness_judge\ncases: [{id: a, q: one}]")
    )
    root = _judge_project(tmp_path / "proj", checks={"qa": family})
    probe = (
        "import sys\n"
        "from eval_banana.cli import main\n"
        f"code = main(['validate', '--cwd', {str(root)!r}])\n"
        "run_only = ('eval_banana.reporting', 'eval_banana.stages.execute', "
        "'eval_banana.runners', 'rich')\n"
        "print('RUN-ONLY', sorted(m for m in run_only if m in sys.modules), code)\n"
    )
    done = _python("-c", probe)
    assert "RUN-ONLY [] 0" in done.stdout, done.stdout + done.stderr
    assert "warning: Judge family 'qa'" in done.stderr and "\n  hint: " in done.stderr
