"""The `assertions` runner: real artifacts on disk in, a CheckResult out; failures are data."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from eval_banana.core.stem import artifact_stem
from eval_banana.models.assertions import AssertionsCheck
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import PlannedCheck
from eval_banana.runners.assertions import run_assertions
from eval_banana.runners.base import RunContext
from tests.builders import fake_digest, lfs_pointer, make_config
from tests.processes import eb_process

CANARIES = Path(__file__).parent.parent / "fixtures" / "canaries" / "assertions"
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$")


def definition(**overrides: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "schema_version": 1,
        "id": "plan_names_tests",
        "type": "assertions",
        "description": "The plan has at least two steps and some step names a test.",
        "tags": ["plan"],
        "artifact": "out/plan.json",
        "assert": [
            {"path": "steps", "op": "lengthAtLeast", "value": 2},
            {"path": "steps[*].test", "op": "exists"},
            {"path": "title", "op": "matches", "value": "^Release"},
        ],
    }
    document.update(overrides)
    # What validate stores in the plan: the normalized check, dumped by alias.
    return AssertionsCheck.model_validate(document).model_dump(mode="json", by_alias=True)


def run(*, project_root: Path, run_dir: Path, document: dict[str, Any]) -> CheckResult:
    check = PlannedCheck(
        id=document["id"],
        type=document["type"],
        description=document["description"],
        source_path=str(project_root / "eval_checks" / f"{document['id']}.yaml"),
        stem=artifact_stem(check_id=document["id"]),
        check_definition_sha256=fake_digest(document["id"]),
        definition=document,
    )
    ctx = RunContext(
        check=check,
        config=make_config(project_root=project_root),
        harness=None,
        run_dir=run_dir,
        project_root=project_root,
        base_env={},
        placeholder_env={},
    )
    return run_assertions(ctx)


def write_plan(root: Path, plan: Any, name: str = "out/plan.json") -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(plan), encoding="utf-8")


GOOD_PLAN = {
    "title": "Release plan",
    "steps": [{"name": "build"}, {"name": "verify", "test": "t.py"}],
}


def test_all_assertions_hold(tmp_path: Path) -> None:
    write_plan(tmp_path, GOOD_PLAN)
    result = run(project_root=tmp_path, run_dir=tmp_path / "run", document=definition())
    assert result.status == "passed" and result.score == 1
    assert result.observed_status == "passed" and result.expect == "pass"
    assert result.check_type == "assertions"
    assert result.tags == ["plan"]
    assert result.reason == "all 3 assertions hold"
    assert result.error_detail is None and result.exit_code is None
    assert result.details == {
        "artifact": "out/plan.json",
        "assertions": [
            {
                "path": "steps",
                "op": "lengthAtLeast",
                "ok": True,
                "message": "steps lengthAtLeast 2: holds",
            },
            {
                "path": "steps[*].test",
                "op": "exists",
                "ok": True,
                "message": "steps[*].test exists: holds",
            },
            {
                "path": "title",
                "op": "matches",
                "ok": True,
                "message": 'title matches "^Release": holds',
            },
        ],
    }
    assert ISO_UTC.match(result.started_at) and ISO_UTC.match(result.completed_at)
    assert result.duration_ms >= 0


def test_failing_assertions_are_all_listed_and_never_an_error(tmp_path: Path) -> None:
    write_plan(tmp_path, {"title": "Release plan", "steps": [{"name": "build"}]})
    result = run(project_root=tmp_path, run_dir=tmp_path / "run", document=definition())
    assert result.status == "failed" and result.score == 0
    assert result.error_detail is None
    assert result.reason == (
        "2 of 3 assertions failed: "
        "steps lengthAtLeast 2: length is 1 (an array of 1 element); "
        "steps[*].test exists: the only element of steps does not satisfy it: "
        "path not found: steps[0] has no key 'test'"
    )
    assert [item["ok"] for item in result.details["assertions"]] == [False, False, True]


def test_missing_artifact_fails_every_assertion_naming_the_artifact(tmp_path: Path) -> None:
    result = run(project_root=tmp_path, run_dir=tmp_path / "run", document=definition())
    assert result.status == "failed"
    assert result.reason is not None and result.reason.startswith("3 of 3 assertions failed: ")
    messages = [item["message"] for item in result.details["assertions"]]
    assert all(message.endswith(": artifact out/plan.json does not exist") for message in messages)


def test_unparsable_artifact_fails_every_assertion(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "plan.json").write_text('{"steps": [', encoding="utf-8")
    result = run(project_root=tmp_path, run_dir=tmp_path / "run", document=definition())
    assert result.status == "failed"
    assert all(
        "artifact out/plan.json is not valid JSON" in item["message"]
        for item in result.details["assertions"]
    )
    assert len(result.details["assertions"]) == 3


@pytest.mark.parametrize("name", ["out/plan.json", "out/plan.yaml"])
def test_an_artifact_checked_out_without_its_lfs_content_names_the_pointer_and_the_fix(
    tmp_path: Path, name: str
) -> None:
    """Parsed, a pointer is broken JSON or a YAML string, whose assertions would fail for
    reasons that are not the artifact's ('steps' not found); each says what the file is."""
    content = json.dumps(GOOD_PLAN).encode()
    (tmp_path / "out").mkdir()
    (tmp_path / name).write_bytes(lfs_pointer(content))
    result = run(
        project_root=tmp_path, run_dir=tmp_path / "run", document=definition(artifact=name)
    )
    assert result.status == "failed"
    told = (
        f"artifact {name} is a Git LFS pointer to a file of {len(content):,} bytes, not the "
        "file itself: fetch the files Git LFS tracks: `git lfs pull` (in GitHub Actions, "
        "actions/checkout with `lfs: true`)"
    )
    messages = [item["message"] for item in result.details["assertions"]]
    assert len(messages) == 3 and all(message.endswith(f": {told}") for message in messages)
    (tmp_path / name).write_bytes(content)  # fetched: the same check passes
    again = run(
        project_root=tmp_path, run_dir=tmp_path / "run2", document=definition(artifact=name)
    )
    assert again.status == "passed", again.reason


def test_yaml_artifact(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "plan.yaml").write_text(yaml.safe_dump(GOOD_PLAN), encoding="utf-8")
    result = run(
        project_root=tmp_path,
        run_dir=tmp_path / "run",
        document=definition(artifact="out/plan.yaml"),
    )
    assert result.status == "passed", result.reason


def test_a_yaml_artifact_that_declares_yaml_1_2_is_read_by_its_rules(
    project: Callable[..., Path],
) -> None:
    """`%YAML 1.2` was read by YAML 1.1's rules without a word: `country: NO` was false and
    `mode: 0755` the octal 493, so assertions written for the declared meaning failed and ones
    for the misreading passed. The directive is followed; without it, YAML 1.1 still reads."""
    body = (
        "country: NO\nmode: 0755\nflags: [on, yes, 1:30, 1_000, 2024-05-01, 0o17, 0x1F, 1e3]\n"
        "none: [~, null, NULL]\nblank:\nok: True\nbase: &b {x: 1}\nmerged: {<<: *b, y: 2}\n"
    )
    declared = [
        '{path: country, op: equals, value: "NO"}',
        "{path: mode, op: equals, value: 755}",
        '{path: flags, op: equals, value: ["on", "yes", "1:30", "1_000", "2024-05-01", 15, 31,'
        " 1000.0]}",
        "{path: none, op: equals, value: [null, null, null]}",
        "{path: blank, op: equals, value: null}",
        "{path: ok, op: equals, value: true}",
        "{path: merged, op: equals, value: {x: 1, y: 2}}",
    ]

    def check(check_id: str, artifact: str, assertions: list[str]) -> str:
        listed = "".join(f"  - {assertion}\n" for assertion in assertions)
        return (
            f"schema_version: 1\nid: {check_id}\ntype: assertions\ndescription: d\n"
            f"artifact: {artifact}\nassert:\n{listed}"
        )

    root = project(
        {
            "out/v12.yaml": "# written by the exporter\n%YAML 1.2\n---\n" + body,
            "out/v11.yaml": body,
            "eval_checks/as_declared.yaml": check("as_declared", "out/v12.yaml", declared),
            "eval_checks/misread.yaml": check(
                "misread",
                "out/v12.yaml",
                [
                    "{path: country, op: equals, value: false}",
                    "{path: mode, op: equals, value: 493}",
                ],
            ),
            "eval_checks/undeclared.yaml": check(
                "undeclared",
                "out/v11.yaml",
                [
                    "{path: country, op: equals, value: false}",
                    "{path: mode, op: equals, value: 493}",
                ],
            ),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    ran = eb_process(root, "run", "--cache", "off")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    lines = {line.split(":")[0]: line for line in ran.stdout.splitlines() if line.startswith("- ")}
    assert lines["- as_declared"] == "- as_declared: passed - all 7 assertions hold"
    assert lines["- undeclared"] == "- undeclared: passed - all 2 assertions hold"
    assert lines["- misread"] == (
        "- misread: failed - 2 of 2 assertions failed: country equals false: found the string "
        '"NO"; mode equals 493: found the number 755'
    )


def test_artifact_is_read_relative_to_the_project_root(tmp_path: Path, monkeypatch: Any) -> None:
    root = tmp_path / "project"
    write_plan(root, GOOD_PLAN)
    elsewhere = tmp_path / "elsewhere"
    write_plan(elsewhere, {"steps": []})
    monkeypatch.chdir(elsewhere)
    result = run(project_root=root, run_dir=tmp_path / "run", document=definition())
    assert result.status == "passed", result.reason


def test_a_hand_broken_plan_definition_is_an_error(tmp_path: Path) -> None:
    document = definition()
    document["assertions"] = document.pop("assert")
    result = run(project_root=tmp_path, run_dir=tmp_path / "run", document=document)
    assert result.status == "error" and result.score == 0
    assert result.error_detail is not None
    assert result.error_detail.startswith("Invalid assertions definition in the plan: ")
    assert "assertions: Extra inputs are not permitted" in result.error_detail


def test_control_check_keeps_its_expectation(tmp_path: Path) -> None:
    write_plan(tmp_path, {"title": "Release plan", "steps": []})
    result = run(
        project_root=tmp_path, run_dir=tmp_path / "run", document=definition(expect="fail")
    )
    # The runner reports what the check reached; judging a control is the execute stage's job.
    assert result.observed_status == "failed" and result.expect == "fail"


@pytest.mark.parametrize(("name", "status"), [("pass.yaml", "passed"), ("fail.yaml", "failed")])
def test_canary_checks(tmp_path: Path, name: str, status: str) -> None:
    # The canary folder is the project root; a known-fail canary that passes breaks the build.
    document = yaml.safe_load((CANARIES / name).read_text(encoding="utf-8"))
    normalized = AssertionsCheck.model_validate(document).model_dump(mode="json", by_alias=True)
    result = run(project_root=CANARIES, run_dir=tmp_path / "run", document=normalized)
    assert result.status == status, result.reason
    if status == "failed":
        failed = [item for item in result.details["assertions"] if not item["ok"]]
        assert [item["path"] for item in failed] == ["steps", "steps[*].test"]


def test_a_jsonpath_root_in_a_path_is_a_definition_error_not_a_caught_defect(
    project: Callable[..., Path],
) -> None:
    # `$.status` would be read as the key `$`, which the artifact lacks: the control would
    # "catch" its seeded defect (status broken) for the path's sake alone.
    control = (
        "schema_version: 1\nid: low_score\ntype: assertions\ndescription: d\nexpect: fail\n"
        "artifact: out.json\nassert:\n  - {path: $.status, op: equals, value: ok}\n"
    )
    root = project(
        {"eval_checks/low_score.yaml": control, "out.json": '{"status": "broken"}'},
        config='[core]\noutput_dir = "runs"\n',
    )
    ran = eb_process(root, "run")
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "assertions.assert.0.equals.path (line 8, column 12)" in ran.stderr
    assert "invalid path '$.status': '$' (JSONPath's root) is not part of an assertion path" in (
        ran.stderr
    )
    assert "hint: write `status`: a path starts at the artifact's top level." in ran.stderr
    (entry,) = json.loads(eb_process(root, "validate", "--json").stdout)["errors"]
    assert entry["file"] == str(root / "eval_checks" / "low_score.yaml")
    assert entry["field_path"] == "assertions.assert.0.equals.path"
    # Following the hint, the control reads the status and catches the defect for real.
    (root / "eval_checks" / "low_score.yaml").write_text(control.replace("$.status", "status"))
    fixed = eb_process(root, "run")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


def test_an_empty_contains_or_matches_value_is_a_definition_error_told_with_every_other(
    project: Callable[..., Path],
) -> None:
    # `contains ""` and `matches ""` hold on every string: a check (or a family's row with an
    # empty cell) would pass whatever the artifact says.
    family = (
        "schema_version: 1\nid: qa\ntype: assertions\ndescription: d\n"
        "cases_from: evals/qa.csv\nartifact: out/answer.json\nassert:\n"
        '  - {path: answer, op: contains, value: "{{ case.must_mention }}"}\n'
        '  - {path: answer, op: matches, value: "{{ case.pattern }}"}\n'
    )
    single = (
        "schema_version: 1\nid: single\ntype: assertions\ndescription: d\n"
        'artifact: out/answer.json\nassert:\n  - {path: answer, op: contains, value: ""}\n'
    )
    root = project(
        {
            "eval_checks/qa.yaml": family,
            "eval_checks/single.yaml": single,
            "evals/qa.csv": "id,must_mention,pattern\ncapital,Paris,Paris\nriver,,\n",
            "out/answer.json": '{"answer": "I do not know"}',
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    validated = eb_process(root, "validate")
    assert validated.returncode == 2, validated.stdout + validated.stderr
    told = validated.stderr
    assert "assertions.assert.0.contains.value (line 7, column 41)" in told
    assert "contains with an empty value holds for every string, so it could never fail" in told
    assert 'to require only that the value is a string, write op: matches with value: "^"' in told
    for place, op in (("assert.0.value", "contains"), ("assert.1.value", "matches")):
        assert (
            f"evals/qa.csv line 3: case 'river': {place}: {op} with an empty value holds for "
            "every string, so it could never fail"
        ) in told
    assert "case 'capital'" not in told
    ran = eb_process(root, "run")
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "passed" not in ran.stdout


def test_a_number_written_as_text_is_told_with_the_fix_of_the_file_it_was_written_in(
    project: Callable[..., Path],
) -> None:
    # "3" is not 3: the fix was "unquote it in the check file" (a YAML error for a
    # placeholder) or "type the CSV field", even when the row was JSON or YAML.
    def family(check_id: str, source: str) -> str:
        return (
            f"schema_version: 1\nid: {check_id}\ntype: assertions\ndescription: d\n{source}\n"
            "artifact: out/t.json\nassert:\n"
            '  - {path: total, op: equals, value: "{{ case.expected }}"}\n'
            '  - {path: total, op: equals, value: "3"}\n'
        )

    root = project(
        {
            "out/t.json": '{"total": 3}',
            "evals/t.jsonl": '{"id": "a", "expected": "3"}\n',
            "evals/t.csv": "id,expected\na,3\n",
            "eval_checks/j.yaml": family("j", "cases_from: evals/t.jsonl"),
            "eval_checks/c.yaml": family("c", "cases_from: evals/t.csv"),
            "eval_checks/y.yaml": family("y", 'cases:\n  - {id: a, expected: "3"}'),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    ran = eb_process(root, "run", "--cache", "off")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    text = "; the expected value is text, not a number: "
    in_check_file = f'total equals "3": found the number 3{text}it is quoted in the check file'
    for check_id, fix in (
        ("j", "it comes from field expected of the case's JSON row: write 3 there, unquoted"),
        ("y", "it comes from field expected of the case's YAML row: write 3 there, unquoted"),
        (
            "c",
            "it comes from field expected of a CSV dataset, whose cells are text: give field "
            "expected a number type in the family's case_schema",
        ),
    ):
        (line,) = [line for line in ran.stdout.splitlines() if line.startswith(f"- {check_id}[a]")]
        assert f'total equals "3": found the number 3{text}{fix};' in line, line
        assert line.endswith(f"{in_check_file}, unquote it"), line


def test_a_reason_says_what_differs_and_what_was_read_as_another_type(
    project: Callable[..., Path],
) -> None:
    # Each of these said only the type found, or something false ("no key "1"" of an object
    # that has the number key 1), or nothing of the text read as a boolean or a number.
    def check(check_id: str, artifact: str, *lines: str, source: str = "") -> str:
        return (
            f"schema_version: 1\nid: {check_id}\ntype: assertions\ndescription: d\n{source}"
            f"artifact: {artifact}\nassert:\n" + "".join(f"  - {line}\n" for line in lines)
        )

    root = project(
        {
            "out/a.json": '{"tags": ["alpha", "beta", "delta"], "meta": {"owner": "ann"}}',
            "out/b.yaml": "codes:\n  1: ok\n",
            "out/flags.json": '{"enabled": true, "limit": null}',
            "out/d.json": '{"country": "NO", "zip": "01234"}',
            "data/flags.csv": "id,expected\nenabled,true\nlimit,null\n",
            "eval_checks/a.yaml": check(
                "a",
                "out/a.json",
                "{path: tags, op: equals, value: [alpha, beta, gamma]}",
                "{path: meta, op: equals, value: {owner: ann, team: infra}}",
            ),
            "eval_checks/b.yaml": check(
                "b", "out/b.yaml", '{path: codes, op: contains, value: "1"}'
            ),
            "eval_checks/c.yaml": check(
                "c",
                "out/flags.json",
                '{path: "{{ case.id }}", op: equals, value: "{{ case.expected }}"}',
                source="cases_from: data/flags.csv\n",
            ),
            "eval_checks/d.yaml": check(
                "d",
                "out/d.json",
                "{path: country, op: equals, value: NO}",
                "{path: zip, op: equals, value: 01234}",
            ),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    ran = eb_process(root, "run", "--cache", "off")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    csv_text = "it comes from field expected of a CSV dataset, whose cells are text: give field "
    for told in (
        'tags equals ["alpha", "beta", "gamma"]: found an array of 3 elements, whose element [2] '
        'is the string "delta", not "gamma"',
        'meta equals {"owner": "ann", "team": "infra"}: found an object with 1 key, without the '
        'key "team"',
        'codes contains "1": found an object with 1 key, which has no key "1" (it has the number '
        "1 as a key, which is not text",
        'enabled equals "true": found the boolean true; the expected value is text, not a '
        f"boolean: {csv_text}expected a boolean type in the family's case_schema",
        'limit equals "null": found null; the expected value is text, not null: '
        f"{csv_text}expected the null type in the family's case_schema and leave its cell empty",
        'country equals false: found the string "NO"; the expected value is the boolean false, '
        "not text: YAML 1.1, which eb's reader follows, reads a plain NO in a check file as "
        'false, so quote it there ("NO") to expect the text',
        'zip equals 668: found the string "01234"; the expected value is the number 668, not '
        "text: YAML 1.1, which eb's reader follows, reads a plain 01234 in a check file as 668, "
        'so quote it there ("01234") to expect the text',
    ):
        assert told in ran.stdout, (told, ran.stdout)


def test_a_reason_names_the_path_of_a_difference_deep_in_an_array_or_object(
    project: Callable[..., Path],
) -> None:
    # A difference below the top level was told only by the type found ("found an object with
    # 1 key"), and `contains` said only "none equal to" of an element that differs in one field.
    root = project(
        {
            "out/a.json": json.dumps(
                {
                    "config": {"a": {"b": [1, 2, {"c": "y"}]}},
                    "steps": [{"id": 1, "needs": []}, {"id": 2, "needs": [1, 3]}],
                }
            ),
            "eval_checks/a.yaml": (
                "schema_version: 1\nid: a\ntype: assertions\ndescription: d\n"
                "artifact: out/a.json\nassert:\n"
                "  - {path: config, op: equals, value: {a: {b: [1, 2, {c: x}]}}}\n"
                "  - {path: steps, op: contains, value: {id: 2, needs: [1]}}\n"
            ),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    ran = eb_process(root, "run", "--cache", "off")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    for told in (
        'config equals {"a": {"b": [1, 2, {"c": "x"}]}}: found an object with 1 key, whose '
        'a.b[2].c is the string "y", not "x"',
        'steps contains {"id": 2, "needs": [1]}: found an array of 2 elements, none equal to '
        '{"id": 2, "needs": [1]}: its nearest object, element [1], is an object with 2 keys, '
        "whose needs is an array of 2 elements, not 1 element",
    ):
        assert told in ran.stdout, (told, ran.stdout)


def grading_a_json(check_id: str, *lines: str) -> str:
    """An assertions check of `out/a.json` with one assertion per line (flow mappings)."""
    return (
        f"schema_version: 1\nid: {check_id}\ntype: assertions\ndescription: d\n"
        "artifact: out/a.json\nassert:\n" + "".join(f"  - {line}\n" for line in lines)
    )


def test_a_plain_yes_no_on_or_off_in_the_check_file_is_told_whatever_text_the_artifact_holds(
    project: Callable[..., Path],
) -> None:
    # The hint was worked out backwards from the artifact's text: `value: NO` against "no" got
    # it, against "No" or "n" none; and `value: false` against "no" was told to quote a `no`
    # the file never wrote. It now follows what the check file writes, at its place.
    root = project(
        {
            "out/a.json": json.dumps(
                {
                    "country": "No",
                    "answer": "n",
                    "said": "no",
                    "flags": {"light": "On"},
                    "codes": ["SE", "DK"],
                }
            ),
            "eval_checks/a.yaml": grading_a_json(
                "a",
                "{path: country, op: equals, value: NO}",
                "{path: answer, op: equals, value: no}",
                "{path: said, op: equals, value: false}",
                "{path: flags, op: equals, value: {light: on}}",
                "{path: codes, op: contains, value: NO}",
                '{path: said, op: equals, value: "No"}',
            ),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    ran = eb_process(root, "run", "--cache", "off")
    assert ran.returncode == 1, ran.stdout + ran.stderr

    def quote(word: str, reading: str) -> str:
        return (
            f"YAML 1.1, which eb's reader follows, reads a plain {word} in a check file as "
            f'{reading}, so quote it there ("{word}") to expect the text'
        )

    for told in (
        'country equals false: found the string "No"; the expected value is the boolean false, '
        f"not text: {quote('NO', 'false')}",
        'answer equals false: found the string "n"; the expected value is the boolean false, '
        f"not text: {quote('no', 'false')}",
        'flags equals {"light": true}: found an object with 1 key, whose light is the string '
        f'"On", not true; the expected value is the boolean true, not text: {quote("on", "true")}',
        "codes contains false: found an array of 2 elements, none equal to false; the expected "
        f"value is the boolean false, not text: {quote('NO', 'false')}",
    ):
        assert told in ran.stdout, (told, ran.stdout)
    # `false` written as a boolean: no word to quote, whatever the artifact's text.
    assert 'said equals false: found the string "no"; flags equals' in ran.stdout, ran.stdout
    assert 'said equals "No": found the string "no" (eval_checks' in ran.stdout, ran.stdout


def assertion_messages(root: Path) -> dict[str, list[str]]:
    """Each check's assertion messages, in order, from the one run under `root`/runs."""
    (run_dir,) = (root / "runs").iterdir()
    told: dict[str, list[str]] = {}
    for result_file in (run_dir / "checks").glob("*.json"):
        result = json.loads(result_file.read_text())
        told[result["check_id"]] = [item["message"] for item in result["details"]["assertions"]]
    return told


def quote_it(*, written: str, expected: str, reading: str) -> str:
    """The fix a reason tells for a plain `written` in the check file, read as `reading`."""
    return (
        f"; the expected value is {expected}, not text: YAML 1.1, which eb's reader follows, "
        f'reads a plain {written} in a check file as {reading}, so quote it there ("{written}") '
        "to expect the text"
    )


def test_a_number_or_null_written_plain_otherwise_than_json_is_told_where_the_file_writes_it(
    project: Callable[..., Path],
) -> None:
    # The hint was worked out backwards from the artifact's text: `value: 668` against "01234"
    # was told to quote a 01234 the file never wrote, and `value: null` a `~`; `value: 01234`
    # against "1234", `value: ~` against "none", `contains 01234`, `value: Null` against "null"
    # and a value left empty were told nothing. It now follows what the check file writes.
    root = project(
        {
            "out/a.json": json.dumps(
                {
                    "zip": "01234",
                    "short_zip": "1234",
                    "tilde": "~",
                    "none": "none",
                    "word": "null",
                    "blank": "",
                    "hex": "31",
                    "time": "1:30",
                    "codes": ["01234", "SE"],
                    "deep": {"rows": [{"n": "none"}]},
                }
            ),
            "eval_checks/a.yaml": grading_a_json(
                "a",
                # Written as JSON writes them: meant as the number and null, whatever the text.
                "{path: zip, op: equals, value: 668}",
                "{path: tilde, op: equals, value: null}",
                "{path: hex, op: equals, value: 31}",
                # Written otherwise: told wherever the artifact holds text there.
                "{path: short_zip, op: equals, value: 01234}",
                "{path: none, op: equals, value: ~}",
                "{path: word, op: equals, value: Null}",
                "{path: blank, op: equals, value: }",
                "{path: hex, op: equals, value: 0x1F}",
                "{path: time, op: equals, value: 1:30}",
                "{path: codes, op: contains, value: 01234}",
                "{path: deep, op: equals, value: {rows: [{n: ~}]}}",
            ),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    ran = eb_process(root, "run", "--cache", "off")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    number, null = "the number 668", "null"
    assert assertion_messages(root)["a"] == [
        'zip equals 668: found the string "01234"',
        'tilde equals null: found the string "~"',
        'hex equals 31: found the string "31"',
        'short_zip equals 668: found the string "1234"'
        + quote_it(written="01234", expected=number, reading="668"),
        'none equals null: found the string "none"'
        + quote_it(written="~", expected=null, reading="null"),
        'word equals null: found the string "null"'
        + quote_it(written="Null", expected=null, reading="null"),
        'blank equals null: found the string ""; the expected value is null, not text: YAML '
        "1.1, which eb's reader follows, reads a value left empty in a check file as null, so "
        "write the text there, quoted, to expect it",
        'hex equals 31: found the string "31"'
        + quote_it(written="0x1F", expected="the number 31", reading="31"),
        'time equals 90: found the string "1:30"'
        + quote_it(written="1:30", expected="the number 90", reading="90"),
        "codes contains 668: found an array of 2 elements, none equal to 668"
        + quote_it(written="01234", expected=number, reading="668"),
        'deep equals {"rows": [{"n": null}]}: found an object with 1 key, whose rows[0].n is '
        'the string "none", not null' + quote_it(written="~", expected=null, reading="null"),
    ]


def test_a_value_with_an_explicit_tag_is_never_told_to_be_quoted(
    project: Callable[..., Path],
) -> None:
    # `value: !!int 01234` asks for the number in words, yet was told to quote the 01234 as
    # a plain 01234 is; so were `!!bool NO`, an anchored tagged value and an alias to it.
    # An untagged 01234 beside them, alone or in a list, is still told.
    root = project(
        {
            "out/a.json": json.dumps({"zip": "01234", "country": "NO", "codes": ["01234"]}),
            "eval_checks/a.yaml": grading_a_json(
                "a",
                "{path: zip, op: equals, value: !!int 01234}",
                "{path: country, op: equals, value: !!bool NO}",
                "{path: zip, op: equals, value: &tagged !!int 01234}",
                "{path: zip, op: equals, value: *tagged}",
                "{path: codes, op: equals, value: [!!int 01234, 01234]}",
                "{path: zip, op: equals, value: 01234}",
            ),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    validated = eb_process(root, "validate")
    assert validated.returncode == 0, validated.stdout + validated.stderr
    ran = eb_process(root, "run", "--cache", "off")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    (run_dir,) = (root / "runs").iterdir()
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    (planned,) = plan["checks"]
    assert planned["plain_words"] == [
        {"assertion": 4, "at": "[1]", "word": "01234"},
        {"assertion": 5, "at": "", "word": "01234"},
    ]
    number = "the number 668"
    assert assertion_messages(root)["a"] == [
        'zip equals 668: found the string "01234"',
        'country equals false: found the string "NO"',
        'zip equals 668: found the string "01234"',
        'zip equals 668: found the string "01234"',
        "codes equals [668, 668]: found an array of 1 element, not 2 elements",
        'zip equals 668: found the string "01234"'
        + quote_it(written="01234", expected=number, reading="668"),
    ]


def test_a_family_value_filled_from_a_row_is_never_told_as_written_in_the_check_file(
    project: Callable[..., Path],
) -> None:
    # A placeholder inside a larger value, filled from a row's 668 or null, was told to quote
    # the artifact's "01234" or "~" "in the check file", which writes only the placeholder.
    # What the family's file itself writes plain is still told, in every case.
    family = (
        "schema_version: 1\nid: fam\ntype: assertions\ndescription: d\n"
        "cases_from: data/rows.jsonl\nartifact: out/f.json\nassert:\n"
        '  - {path: whole, op: equals, value: "{{ case.answer }}"}\n'
        '  - {path: inner, op: equals, value: {v: "{{ case.answer }}"}}\n'
        '  - {path: tilde, op: equals, value: {v: "{{ case.none }}"}}\n'
        '  - {path: tilde, op: equals, value: {v: ~, w: "{{ case.answer }}"}}\n'
    )
    inline = (
        "schema_version: 1\nid: inline\ntype: assertions\ndescription: d\n"
        "cases:\n  - {id: a, answer: 668, none: ~}\nartifact: out/f.json\nassert:\n"
        '  - {path: whole, op: equals, value: "{{ case.answer }}"}\n'
        '  - {path: tilde, op: equals, value: {v: "{{ case.none }}"}}\n'
    )
    root = project(
        {
            "out/f.json": json.dumps(
                {"whole": "01234", "inner": {"v": "01234"}, "tilde": {"v": "~"}}
            ),
            "data/rows.jsonl": json.dumps({"id": "a", "answer": 668, "none": None}) + "\n",
            "eval_checks/fam.yaml": family,
            "eval_checks/inline.yaml": inline,
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    ran = eb_process(root, "run", "--cache", "off")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    told = assertion_messages(root)
    assert told["fam[a]"] == [
        'whole equals 668: found the string "01234"',
        'inner equals {"v": 668}: found an object with 1 key, whose v is the string "01234", '
        "not 668",
        'tilde equals {"v": null}: found an object with 1 key, whose v is the string "~", not null',
        'tilde equals {"v": null, "w": 668}: found an object with 1 key, whose v is the string '
        '"~", not null' + quote_it(written="~", expected="null", reading="null"),
    ]
    assert told["inline[a]"] == [
        'whole equals 668: found the string "01234"',
        'tilde equals {"v": null}: found an object with 1 key, whose v is the string "~", not null',
    ]


def _assertions_check(
    check_id: str, artifact: str, assertions: list[str], *, head: str = ""
) -> str:
    listed = "".join(f"  - {assertion}\n" for assertion in assertions)
    return (
        f"{head}schema_version: 1\nid: {check_id}\ntype: assertions\ndescription: d\n"
        f"artifact: {artifact}\nassert:\n{listed}"
    )


def _outcomes(root: Path) -> dict[str, str]:
    ran = eb_process(root, "run", "--cache", "off")
    assert ran.returncode in (0, 1), ran.stdout + ran.stderr
    return {
        line.split(":")[0][2:]: line.split(": ", 1)[1]
        for line in ran.stdout.splitlines()
        if line.startswith("- ")
    }


def test_a_check_file_that_declares_yaml_1_2_is_read_by_its_rules(
    project: Callable[..., Path],
) -> None:
    """A check file declaring `%YAML 1.2` was read by YAML 1.1's rules: `value: 0755` was the
    octal 493 and `value: NO` false, so an assertion written for the declared meaning failed
    against an artifact holding it. The file is read as it declares; one that declares
    nothing is read by YAML 1.1's rules as before."""
    assertions = ["{path: mode, op: equals, value: 0755}", "{path: country, op: equals, value: NO}"]
    root = project(
        {
            "out/a.json": '{"mode": 755, "country": "NO"}',
            "eval_checks/declared.yaml": _assertions_check(
                "declared", "out/a.json", assertions, head="# exported\n%YAML 1.2\n---\n"
            ),
            "eval_checks/undeclared.yaml": _assertions_check(
                "undeclared", "out/a.json", assertions
            ),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    outcomes = _outcomes(root)
    assert outcomes["declared"] == "passed - all 2 assertions hold"
    assert outcomes["undeclared"].startswith(
        "failed - 2 of 2 assertions failed: mode equals 493: found the number 755"
    ), outcomes


def test_a_yaml_1_2_artifact_value_its_tag_asks_otherwise_is_unusable_at_its_line(
    project: Callable[..., Path],
) -> None:
    """Under `%YAML 1.2`, `!!int 1_000` read silently as 1000, though YAML 1.2 writes no
    number so: the artifact is unusable, told at the value's line."""
    root = project(
        {
            "out/int.yaml": "%YAML 1.2\n---\nn: !!int 1_000\n",
            "eval_checks/int.yaml": _assertions_check(
                "int", "out/int.yaml", ["{path: n, op: exists}"]
            ),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    assert _outcomes(root) == {
        "int": "failed - 1 of 1 assertions failed: n exists: artifact out/int.yaml is unusable: "
        "line 3, column 4: '1_000' is no whole number to YAML 1.2, which the file declares "
        "(%YAML 1.2), though its tag !!int asks for one: YAML 1.2 writes one as decimal digits, "
        "0o octal or 0x hexadecimal, without underscores"
    }


def test_a_yaml_artifact_that_is_explicitly_null_is_graded_as_null(
    project: Callable[..., Path],
) -> None:
    """`--- !!null` was called an empty artifact, as a `---` alone is: it writes the value
    null, and is graded as one."""
    root = project(
        {
            "out/null.yaml": "# nothing found\n--- !!null\n",
            "out/empty.yaml": "---\n",
            "eval_checks/null.yaml": _assertions_check(
                "nulled", "out/null.yaml", ["{path: a, op: exists}"]
            ),
            "eval_checks/empty.yaml": _assertions_check(
                "empty", "out/empty.yaml", ["{path: a, op: exists}"]
            ),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    outcomes = _outcomes(root)
    assert outcomes == {
        "nulled": "failed - 1 of 1 assertions failed: a exists: path not found: the top level "
        "is null, not an object, so it has no key 'a'",
        "empty": "failed - 1 of 1 assertions failed: a exists: artifact out/empty.yaml is empty: "
        "it holds no YAML data, only comments or a document marker (---)",
    }


def test_a_yaml_artifact_value_no_json_value_is_unusable_at_its_line(
    project: Callable[..., Path],
) -> None:
    """`!!set`, `!!omap` and `!!pairs` built a Python set or pairs, which no operator reads
    as JSON: the artifact is unusable, told at the value's line with its tag."""
    artifacts = {
        "set": "tags: !!set {a, b}\n",
        "omap": "n: 1\nsteps: !!omap [{a: 1}, {b: 2}]\n",
        "pairs": "n: 1\nm: 2\nsteps: !!pairs [{a: 1}, {a: 2}]\n",
    }
    files = {f"out/{name}.yaml": text for name, text in artifacts.items()}
    for name in artifacts:
        files[f"eval_checks/{name}.yaml"] = _assertions_check(
            name, f"out/{name}.yaml", ["{path: n, op: exists}"]
        )
    outcomes = _outcomes(project(files, config='[core]\noutput_dir = "runs"\n'))
    assert outcomes["set"].startswith(
        "failed - 1 of 1 assertions failed: n exists: artifact out/set.yaml is unusable: line 1, column 7: a set (a !!set tag), "
        "which JSON has not"
    ), outcomes
    assert "unusable: line 2, column 8: ordered pairs (a !!omap tag)" in outcomes["omap"]
    assert "unusable: line 3, column 8: pairs (a !!pairs tag)" in outcomes["pairs"]
