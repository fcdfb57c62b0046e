"""The validate stage's selection: `--check-id` globs, `-k`, `--tag` expressions and `skip:`."""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from types import FrameType

import pytest

from eval_banana.checks.idselectors import IdSelectors
from eval_banana.core.errors import SelectionError
from eval_banana.core.patternset import PatternSet
from eval_banana.models.config import Selection
from eval_banana.stages.config import resolve_config
from eval_banana.stages.discover import discover
from eval_banana.stages.validate import validate
from tests.conftest import EbResult, check_yaml, judge_yaml

Project = Callable[..., Path]
Eb = Callable[..., EbResult]


def skipped_yaml(check_id: str, *, reason: str = "flaky on CI", check_type: str = "det") -> str:
    body = check_yaml(check_id) if check_type == "det" else judge_yaml(check_id)
    return body + f"skip: {json.dumps(reason)}\n"


def ids(result: EbResult) -> list[str]:
    return [line.split("\t")[0] for line in result.stdout.splitlines()]


def plan_of(root: Path, selection: Selection) -> object:
    config = resolve_config(
        cwd=root,
        cli_values={},
        environ={},
        no_project_config=False,
        selection=selection,
        run_id="run-1",
    )
    return validate(config=config, discovered=discover(config=config, inputs={}), inputs={}).plan


# --- --check-id globs ------------------------------------------------------------------------


def test_check_id_glob_selects_every_matching_id(project: Project, eb: Eb) -> None:
    root = project(
        {
            f"eval_checks/{name}.yaml": check_yaml(name)
            for name in ("judge_tone", "judge_facts", "Judge_upper", "lint", "judgement")
        }
    )
    assert ids(eb("list", "--cwd", str(root), "--check-id", "judge_*")) == [
        "judge_facts",
        "judge_tone",
    ]
    # A glob and an exact id together: the union, each check once.
    both = eb("list", "--cwd", str(root), "--check-id", "judge_t?ne", "--check-id", "lint")
    assert ids(both) == ["judge_tone", "lint"]
    overlap = eb("list", "--cwd", str(root), "--check-id", "judge*", "--check-id", "judgement")
    assert ids(overlap) == ["judge_facts", "judge_tone", "judgement"]


def test_check_id_glob_matches_the_stripped_id(project: Project, eb: Eb) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("abc").replace("id: abc", "id: ' abc '")})
    assert ids(eb("list", "--cwd", str(root), "--check-id", "ab*")) == ["abc"]


def test_check_id_glob_matching_nothing_is_a_clear_error(project: Project, eb: Eb) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("lint")})
    result = eb("list", "--cwd", str(root), "--check-id", "judge_*")
    assert result.exit_code == 2
    assert "No check id matches --check-id pattern 'judge_*'" in result.stderr
    assert "eb list" in result.stderr  # the hint says where to see the ids
    # An exact id keeps its own text.
    exact = eb("list", "--cwd", str(root), "--check-id", "judge_x")
    assert exact.exit_code == 2 and "No check found with id 'judge_x'" in exact.stderr


def test_files_outside_a_glob_selection_are_not_validated(project: Project, eb: Eb) -> None:
    root = project(
        {
            "eval_checks/j.yaml": check_yaml("judge_a"),
            # Schema-invalid, but its id does not match: never validated, never reported.
            "eval_checks/bad_schema.yaml": "schema_version: 2\nid: other\ntype: deterministic\n",
            # Unparsable and holding the pattern's prefix: it might have matched, so a warning.
            "eval_checks/bad_yaml.yaml": "id: judge_b\nschema_version: [\n",
            # Unparsable without the prefix: it cannot be a judge_* check, so silence.
            "eval_checks/other_yaml.yaml": "id: zzz\nschema_version: [\n",
        }
    )
    result = eb("validate", "--cwd", str(root), "--check-id", "judge_*")
    assert result.exit_code == 0, result.stderr
    assert "Validated 1 checks successfully." in result.stdout
    assert "bad_yaml.yaml" in result.stderr and "warning:" in result.stderr
    assert "other_yaml.yaml" not in result.stderr and "bad_schema" not in result.stderr


def test_a_file_a_glob_selects_is_validated_strictly(project: Project, eb: Eb) -> None:
    root = project(
        {
            "eval_checks/a.yaml": check_yaml("judge_a"),
            "eval_checks/b.yaml": "schema_version: 1\nid: judge_b\ntype: deterministic\n",
            "eval_checks/c.yaml": "schema_version: 2\nid: judge_c\ntype: deterministic\n",
        }
    )
    result = eb("list", "--cwd", str(root), "--check-id", "judge_*")
    assert result.exit_code == 2
    # Every invalid file the glob selects is reported, not only the first.
    for name in ("b.yaml", "c.yaml"):
        assert f"Invalid check definition in {root / 'eval_checks' / name}" in result.stderr


def test_a_glob_over_a_duplicate_id_names_both_files(project: Project, eb: Eb) -> None:
    root = project(
        {"eval_checks/1.yaml": check_yaml("dup_x"), "eval_checks/2.yaml": check_yaml("dup_x")}
    )
    result = eb("list", "--cwd", str(root), "--check-id", "dup_*")
    assert result.exit_code == 2
    assert "Duplicate check id 'dup_x' found in: " in result.stderr


CASES_PROJECT = {
    "eval_checks/smoke.yaml": check_yaml("smoke_login"),
    "eval_checks/lint.yaml": check_yaml("lint"),
    "eval_checks/qa.yaml": """\
        schema_version: 1
        id: qa
        type: deterministic
        description: "case {{ case.id }}"
        cases: [{id: smoke-1}, {id: smoke-2}, {id: deep-1}]
        script: pass
        """,
    "eval_checks/sx.yaml": """\
        schema_version: 1
        id: sx
        type: deterministic
        description: "case {{ case.id }}"
        cases_from: data/sx.jsonl
        script: pass
        """,
    "data/sx.jsonl": '{"id": "a"}\n{"id": "smoke-3"}\n',
}


@pytest.mark.parametrize(
    "glob", ["*smoke*", "*-1]", "s*", "s?[[]a]", "q?[d*", "*[a]", "*]", "?x*", "*login"]
)
def test_a_glob_chooses_every_check_and_case_whose_id_it_matches(
    project: Project, eb: Eb, glob: str
) -> None:
    # A glob was matched against family ids only: `--check-id '*smoke*'` left out qa[smoke-1]
    # and qa[smoke-2], which `eb stage execute --check-id '*smoke*'` ran.
    root = project(CASES_PROJECT)
    every = ids(eb("list", "--cases", "--cwd", str(root)))
    chosen = IdSelectors([glob])  # what `eb stage execute` and `eb history` choose by
    result = eb("list", "--cases", "--cwd", str(root), "--check-id", glob)
    assert result.exit_code == 0, result.stderr
    assert sorted(ids(result)) == sorted(one for one in every if chosen.selects(one))


def test_a_run_by_a_glob_runs_the_cases_it_matches(project: Project, eb: Eb) -> None:
    root = project(CASES_PROJECT)
    result = eb("run", "--cwd", str(root), "--cache", "off", "--check-id", "*smoke*")
    assert result.exit_code == 0, result.stderr
    ran = re.findall(r"^- (\S+): passed", result.stdout, flags=re.MULTILINE)
    assert sorted(ran) == ["qa[smoke-1]", "qa[smoke-2]", "smoke_login", "sx[smoke-3]"]


def test_a_glob_no_case_matches_either_is_still_an_error(project: Project, eb: Eb) -> None:
    root = project(CASES_PROJECT)
    result = eb("list", "--cases", "--cwd", str(root), "--check-id", "*nothing*")
    assert result.exit_code == 2
    assert "No check id matches --check-id pattern '*nothing*'" in result.stderr
    assert "eb list --cases" in result.stderr


def test_a_family_a_glob_may_match_cases_of_is_a_warning_when_it_cannot_load(
    project: Project, eb: Eb
) -> None:
    # Which cases a broken family has cannot be known: as for a file that cannot be parsed
    # but may hold the id, it is told, and the checks that do match still run.
    root = project(
        {
            **CASES_PROJECT,
            "eval_checks/broken.yaml": "schema_version: 1\nid: bq\ntype: deterministic\n"
            "cases: [{id: smoke-9}]\n",  # no description, no script
            "data/sx.jsonl": '{"id": "a"}\nnot json\n',  # sx cannot expand
        }
    )
    listed = eb("list", "--cases", "--cwd", str(root), "--check-id", "*smoke*")
    assert sorted(ids(listed)) == ["qa[smoke-1]", "qa[smoke-2]", "smoke_login"]
    result = eb("validate", "--cwd", str(root), "--check-id", "*smoke*")
    assert result.exit_code == 0, result.stderr
    assert "Validated 3 checks successfully." in result.stdout
    for family, name in (("bq", "broken.yaml"), ("sx", "sx.yaml")):
        path = root / "eval_checks" / name
        assert (
            f"warning: Family '{family}' ({path}) cannot be loaded, so no --check-id glob looked "
            "among its cases" in result.stderr
        )
    # Matching nothing else, the glob is an error that tells them.
    alone = eb("list", "--cases", "--cwd", str(root), "--check-id", "b*[smoke-9]")
    assert alone.exit_code == 2
    assert "No check id matches --check-id pattern 'b*[smoke-9]'" in alone.stderr
    assert f"Family 'bq' ({root / 'eval_checks' / 'broken.yaml'}) cannot be loaded" in alone.stderr


def matcher_calls(run: Callable[[], EbResult]) -> tuple[EbResult, int]:
    """`run()`, and how many times it matched an id against globs: a call of fnmatch's
    `fnmatchcase` (one glob) or of a glob set's one pass (every glob at once)."""
    matchers = {fnmatchcase.__code__, PatternSet.matching.__code__}
    calls = 0

    def count(frame: FrameType, event: str, _: object) -> None:
        nonlocal calls
        if event == "call" and frame.f_code in matchers:
            calls += 1

    sys.setprofile(count)
    try:
        result = run()
    finally:
        sys.setprofile(None)
    return result, calls


@pytest.mark.parametrize(
    ("value", "told"),
    [
        ("fam_*[x{}]", "No check id matches --check-id pattern 'fam_*[x"),  # id globs
        ("fam_0[y{}*]", "No case of family 'fam_0' ("),  # a family's case globs
    ],
)
def test_many_globs_over_many_cases_match_each_case_once_not_once_per_glob(
    project: Project, eb: Eb, value: str, told: str
) -> None:
    # 2,000 globs matching nothing over 20,000 cases took 212 s: each glob was tried on every
    # case, once to choose the cases and again to tell which globs chose none.
    cases = "".join(f"{{id: c{number:03d}}}, " for number in range(100))
    family = "schema_version: 1\nid: {}\ntype: deterministic\ndescription: d\nscript: pass\n"
    root = project(
        {
            f"eval_checks/fam_{n}.yaml": family.format(f"fam_{n}") + f"cases: [{cases}]\n"
            for n in (0, 1)
        }
    )
    globs = [value.format(a + b) for a, b in itertools.product("abcdefgh", repeat=2)]
    args = [arg for glob in [*globs, "fam_*"] for arg in ("--check-id", glob)]
    result, calls = matcher_calls(lambda: eb("list", "--cases", "--cwd", str(root), *args))
    assert result.exit_code == 2
    assert result.stderr.count(told) == len(globs), result.stderr
    # On the order of globs + cases (200), not globs x cases (12,800).
    assert calls <= 2 * (len(globs) + 200), calls


def test_validate_says_a_selection_warning_with_its_hint_as_run_and_list_do(
    project: Project, eb: Eb
) -> None:
    # `eb validate` printed the warning's message and dropped its hint (the fix).
    root = project(
        {
            "eval_checks/ok.yaml": check_yaml("ok"),
            "eval_checks/broken.yaml": "id: ok\n  bad: [yaml\n",  # may hold the id: told
        }
    )
    said = {
        command: eb(command, "--cwd", str(root), "--check-id", "ok").stderr
        for command in ("validate", "list", "run")
    }
    (warning,) = [line for line in said["validate"].splitlines() if line.startswith("warning:")]
    assert "Failed to parse YAML" in warning
    hint = "  hint: a line is indented more than the key above it"
    told = said["validate"].split(warning + "\n", 1)[1]
    assert told.startswith(hint), said["validate"]
    for command in ("list", "run"):
        assert f"{warning}\n{hint}" in said[command], (command, said[command])


def test_a_check_file_eb_cannot_read_elsewhere_does_not_block_check_id(
    project: Project, eb: Eb
) -> None:
    # A dangling link elsewhere stopped `--check-id ok` (exit 2) where a broken file did not.
    root = project({"eval_checks/ok.yaml": check_yaml("ok")})
    (root / "eval_checks" / "moved.yaml").symlink_to("old_check.yaml")
    told = "Cannot read check file"
    for command in ("validate", "list", "run"):
        result = eb(command, "--cwd", str(root), "--check-id", "ok")
        assert result.exit_code == 0, (command, result.stderr)
        assert f"warning: {told} {root / 'eval_checks' / 'moved.yaml'}" in result.stderr
    assert ids(eb("list", "--cwd", str(root), "--check-id", "ok")) == ["ok"]
    # The whole project, or an id no readable file declares, still stops at it.
    whole = eb("validate", "--cwd", str(root))
    assert whole.exit_code == 2 and told in whole.stderr
    missing = eb("run", "--cwd", str(root), "--check-id", "moved")
    assert missing.exit_code == 2 and "No check found with id 'moved'" in missing.stderr
    assert told in missing.stderr


# --- -k and --tag ----------------------------------------------------------------------------


def test_keyword_selects_by_id_substring_with_and_or_not(project: Project, eb: Eb) -> None:
    root = project(
        {
            f"eval_checks/{name}.yaml": check_yaml(name)
            for name in ("login_ok", "login_slow", "Logout", "signup")
        }
    )
    listed = {
        expression: ids(eb("list", "--cwd", str(root), "-k", expression))
        for expression in ("login", "LOG and not slow", "sign or out", "not (log or sign)", "")
    }
    assert listed == {
        "login": ["login_ok", "login_slow"],
        "LOG and not slow": ["Logout", "login_ok"],
        "sign or out": ["Logout", "signup"],
        "not (log or sign)": [],
        "": ["Logout", "login_ok", "login_slow", "signup"],
    }
    assert ids(eb("list", "--cwd", str(root), "--keyword", "up")) == ["signup"]


def test_keyword_does_not_relax_loading(project: Project, eb: Eb) -> None:
    # As pytest still reports collection errors under -k, a broken file is still an error.
    root = project({"eval_checks/a.yaml": check_yaml("a"), "eval_checks/b.yaml": "id: [\n"})
    result = eb("list", "--cwd", str(root), "-k", "a")
    assert result.exit_code == 2 and "b.yaml" in result.stderr


def test_tag_expressions_and_the_repeatable_or_form(project: Project, eb: Eb) -> None:
    root = project(
        {
            "eval_checks/a.yaml": check_yaml("a", tags=["judge"]),
            "eval_checks/b.yaml": check_yaml("b", tags=["judge", "slow"]),
            "eval_checks/c.yaml": check_yaml("c", tags=["smoke"]),
            "eval_checks/d.yaml": check_yaml("d", tags=["'needs review'"]),
            "eval_checks/e.yaml": check_yaml("e"),
        }
    )

    def tagged(*values: str) -> list[str]:
        args = [part for value in values for part in ("--tag", value)]
        return ids(eb("list", "--cwd", str(root), *args))

    assert tagged("judge") == ["a", "b"]  # a plain word: has this exact tag
    assert tagged("judge and not slow") == ["a"]
    assert tagged("judge and not slow", "smoke") == ["a", "c"]  # several --tag: any of them
    assert tagged("not judge") == ["c", "d", "e"]
    assert tagged('"needs review"') == ["d"]
    assert tagged("(smoke or slow) and not judge") == ["c"]


def test_keyword_tag_and_check_id_all_apply(project: Project, eb: Eb) -> None:
    root = project(
        {
            "eval_checks/a.yaml": check_yaml("judge_login", tags=["fast"]),
            "eval_checks/b.yaml": check_yaml("judge_logout", tags=["slow"]),
            "eval_checks/c.yaml": check_yaml("lint_login", tags=["fast"]),
        }
    )
    result = eb("list", "--cwd", str(root), "--check-id", "judge_*", "-k", "login", "--tag", "fast")
    assert ids(result) == ["judge_login"]


def test_a_bad_expression_is_a_usage_error_before_anything_runs(project: Project, eb: Eb) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a")}, config='[core]\noutput_dir = "out"\n')
    for command in ("list", "validate", "run"):
        result = eb(command, "--cwd", str(root), "--tag", "judge and")
        assert result.exit_code == 2, (command, result.stderr)
        assert "Invalid --tag expression 'judge and'" in result.stderr
        assert "  judge and\n" in result.stderr and "           ^" in result.stderr
    bad_k = eb("run", "--cwd", str(root), "-k", "(a")
    assert bad_k.exit_code == 2 and "Invalid -k expression '(a'" in bad_k.stderr
    assert not (root / "out").exists()  # no run folder was created


def test_the_validate_stage_itself_refuses_a_bad_recorded_expression(tmp_path: Path) -> None:
    # A hand-edited config.json reaches validate without passing the config stage's check.
    root = tmp_path
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "a.yaml").write_text(check_yaml("a"))
    config = resolve_config(
        cwd=root,
        cli_values={},
        environ={},
        no_project_config=True,
        selection=Selection(),
        run_id="r",
    )
    broken = config.model_copy(update={"selection": Selection(keyword="not")})
    with pytest.raises(SelectionError, match="Invalid -k expression 'not'"):
        validate(config=broken, discovered=discover(config=broken, inputs={}), inputs={})


# --- skip ------------------------------------------------------------------------------------


def test_skipped_checks_leave_the_plan_and_join_its_skipped_list(project: Project) -> None:
    root = project(
        {
            "eval_checks/a.yaml": check_yaml("a"),
            "eval_checks/b.yaml": skipped_yaml("b", reason="  waits for issue 42  "),
            "eval_checks/c.yaml": skipped_yaml("c", check_type="judge"),
        }
    )
    plan = plan_of(root, Selection())
    assert [check.id for check in plan.checks] == ["a"]  # type: ignore[attr-defined]
    skipped = [item.model_dump() for item in plan.skipped]  # type: ignore[attr-defined]
    assert skipped == [
        {
            "check_id": "b",
            "check_type": "deterministic",
            "description": "Check b.",
            "source_path": str(root / "eval_checks" / "b.yaml"),
            "tags": [],
            "reason": "waits for issue 42",
        },
        {
            "check_id": "c",
            "check_type": "harness_judge",
            "description": "Judge c.",
            "source_path": str(root / "eval_checks" / "c.yaml"),
            "tags": [],
            "reason": "flaky on CI",
        },
    ]


def test_selection_applies_before_skip(project: Project) -> None:
    root = project(
        {"eval_checks/b.yaml": skipped_yaml("b"), "eval_checks/c.yaml": skipped_yaml("c")}
    )
    plan = plan_of(root, Selection(keyword="b"))
    assert [item.check_id for item in plan.skipped] == ["b"]  # type: ignore[attr-defined]


def test_list_and_validate_show_skipped_checks(project: Project, eb: Eb) -> None:
    root = project(
        {
            "eval_checks/a.yaml": check_yaml("a"),
            "eval_checks/b.yaml": skipped_yaml("b", reason="broken\tby the\nupgrade"),
        }
    )
    listed = eb("list", "--cwd", str(root))
    assert listed.stdout.splitlines() == [
        "a\tdeterministic\tCheck a.\teval_checks/a.yaml",
        "b\tdeterministic\tCheck b.\teval_checks/b.yaml\tskipped: broken by the upgrade",
    ]
    assert listed.stderr.startswith("1 check and 1 skipped listed (project root: ")
    validated = eb("validate", "--cwd", str(root))
    assert validated.exit_code == 0
    assert validated.stdout.strip() == "Validated 2 checks successfully (1 skipped)."


def test_a_skipped_judge_needs_no_agent(project: Project, eb: Eb) -> None:
    root = project(
        {
            "eval_checks/a.yaml": check_yaml("a"),
            "eval_checks/j.yaml": skipped_yaml("j", check_type="judge"),
        }
    )
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 0, result.stderr


def _skipped_script_yaml(check_id: str, *, cases: str = "") -> str:
    return (
        f"schema_version: 1\nid: {check_id}\ntype: deterministic\ndescription: d.\n"
        f'skip: "renderer crashes on CI"\nscript_path: scripts/{check_id}.py\n{cases}'
    )


@pytest.mark.parametrize("family", [False, True], ids=["check", "family"])
def test_a_skipped_check_s_missing_script_is_refused(
    project: Project, eb: Eb, family: bool
) -> None:
    # Still validated while skipped: a script_path that was moved or deleted is caught now,
    # not when the skip is lifted. A family's cases name its script once.
    cases = "cases:\n  - {id: one}\n  - {id: two}\n" if family else ""
    root = project(
        {
            "eval_checks/a.yaml": check_yaml("a"),
            "eval_checks/pdf.yaml": _skipped_script_yaml("pdf", cases=cases),
        }
    )
    missing = root / "eval_checks" / "scripts" / "pdf.py"
    for command in ("validate", "run"):
        result = eb(command, "--cwd", str(root))
        assert result.exit_code == 2, result.stdout
        assert result.stderr.count(f"Deterministic script not found: {missing}") == 1
        assert "(script_path: scripts/pdf.py in" in result.stderr
    # eb list lists what is there, as it does for a check that runs.
    assert eb("list", "--cwd", str(root)).exit_code == 0
    missing.parent.mkdir()
    missing.write_text("raise SystemExit(0)\n")
    validated = eb("validate", "--cwd", str(root))
    assert validated.exit_code == 0, validated.stderr
    skipped = 2 if family else 1
    assert (
        validated.stdout.strip()
        == f"Validated {skipped + 1} checks successfully ({skipped} skipped)."
    )


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        ('""', "skip must be non-empty"),
        ('"  "', "skip must be non-empty"),
        ("true", "must be text, not the boolean true"),
    ],
)
def test_skip_needs_a_reason(project: Project, eb: Eb, value: str, phrase: str) -> None:
    root = project({"eval_checks/a.yaml": check_yaml("a") + f"skip: {value}\n"})
    result = eb("validate", "--cwd", str(root))
    assert result.exit_code == 2 and phrase in result.stderr and "skip" in result.stderr
