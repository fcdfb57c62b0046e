"""`--check-id` loading over many values: every file's id read once and each value looked up
must choose, refuse and warn exactly as scanning the files for each value does."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from eval_banana.checks import idloading
from eval_banana.checks.idloading import select_ids
from eval_banana.checks.loading import reader_over
from tests.conftest import EbResult, check_yaml

FAMILY = """\
schema_version: 1
id: fam
type: deterministic
description: "case {{ case.n }}"
cases: [{id: x, n: '1'}, {id: y, n: '2'}]
script: pass
"""

FILES = {
    "a.yaml": check_yaml("abc").replace("id: abc", "id: ' abc '"),
    "broken.yaml": "id: abd\nschema_version: [\n",  # unparsable; holds the text 'abd'
    "dup1.yaml": check_yaml("dup"),
    "dup2.yaml": check_yaml("dup"),
    "fam.yaml": FAMILY,
    "bad.yaml": "schema_version: 1\nid: bad\ntype: deterministic\n",  # no description
    "famb.yaml": FAMILY.replace("id: fam", "id: fam_b"),
    "dfam1.yaml": FAMILY.replace("id: fam", "id: dfam"),  # a family two files declare
    "dfam2.yaml": FAMILY.replace("id: fam", "id: dfam"),
    **{f"c{n}.yaml": check_yaml(f"c{n}") for n in range(10)},
}

SELECTIONS = [
    ["abc"],
    ["abd"],  # only the unparsable file might have it: a warning and no such id
    ["dup"],
    ["bad"],
    ["zzz"],
    ["c*"],
    ["ab*"],
    ["fam[x]"],
    ["fam[*]", "fam[y]", "fam"],
    ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "abc", "fam[x]"],
    ["c1", "nope", "dup", "c[0-3]", "fam[z]", "bad", "abd", "abc"],
    ["*y]"],  # only a case of `fam` can match it: the family is loaded for its cases
    ["f*", "*x]", "c1"],
    ["fa[m]", "c[12]"],
    [
        "f*[y]"
    ],  # a family glob and a case glob: the family is loaded for its cases  # a case selector of no family, its family misspelt: no class over `fam`
    # Many globs at once: each one's files and families found as scanning for it finds them.
    ["*"],
    ["fam*", "f?m", "*am", "c[!1]*", " c* ", "zz*"],
    ["d*", "dfam[*]", "[fc]*", "fam_*[x]", "fam[*", "*[x]", "a*"],
]


Outcome = tuple[
    list[str], list[tuple[str, str | None]], list[tuple[str, str | None]], list[str], list[str]
]


def _outcome(root: Path, values: list[str]) -> Outcome:
    paths = sorted(str(path) for path in root.iterdir())
    found = select_ids(paths=paths, check_ids=values, read=reader_over(None))
    return (
        [item.path for item in found.checks],
        [(problem.message, problem.hint) for problem in found.problems],
        [(warning.message, warning.file) for warning in found.warnings],
        sorted(found.case_bound),
        [glob.glob for glob in found.unmatched],
    )


@pytest.mark.parametrize("values", SELECTIONS, ids=lambda values: " ".join(values))
def test_an_index_of_ids_selects_as_scanning_every_file_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, values: list[str]
) -> None:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(idloading, "_INDEX_FROM", 10**9)
    scanned = _outcome(tmp_path, values)
    monkeypatch.setattr(idloading, "_INDEX_FROM", 0)
    indexed = _outcome(tmp_path, values)
    assert indexed == scanned
    assert any(scanned)  # each selection chooses, refuses or warns about something


def test_many_globs_are_not_each_tried_on_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2,000 `--check-id` globs over 2,000 check files tried each glob on each file: 4 million
    # matches, two seconds. Every file's id is now matched against all of them at once.
    files = 250
    for n in range(files):
        (tmp_path / f"c{n:03d}.yaml").write_text(check_yaml(f"check_{n:03d}"))
    tried = 0
    one_by_one = idloading.id_matches_pattern

    def counted(*, check_id: str, pattern: str) -> bool:
        nonlocal tried
        tried += 1
        return one_by_one(check_id=check_id, pattern=pattern)

    monkeypatch.setattr(idloading, "id_matches_pattern", counted)
    values = [f"check_*{n:03d}" for n in range(files)]  # each holds the same literal start
    assert len(values) >= idloading._INDEX_FROM  # every file's id is read once
    chosen, problems, warnings, _, unmatched = _outcome(tmp_path, values)
    assert len(chosen) == files and problems == warnings == unmatched == []
    assert tried <= files


def test_many_values_choose_their_files_and_tell_the_unparsable_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    values = [f"c{n}" for n in range(10)] + ["abc", "fam[y]"]
    monkeypatch.setattr(idloading, "_INDEX_FROM", len(values))  # as hundreds of values are read
    chosen, problems, warnings, _, _ = _outcome(tmp_path, values)
    assert [Path(path).name for path in chosen] == sorted(
        [f"c{n}.yaml" for n in range(10)] + ["a.yaml", "fam.yaml"]
    )
    assert problems == [] and warnings == []
    # A value only an unparsable file holds: that file is most likely why no check has it.
    _, problems, warnings, _, _ = _outcome(tmp_path, [*values, "abd"])
    (missing, hint), (broken, _) = problems
    assert missing == "No check found with id 'abd'"
    assert (
        hint
        == f"{tmp_path / 'broken.yaml'} cannot be parsed, and it may declare the id 'abd': fix the problem told below"
    )
    assert broken.startswith(f"Failed to parse YAML in {tmp_path / 'broken.yaml'}")
    assert warnings == []


def _project(tmp_path: Path) -> Path:
    """An empty project: its config file and an eval_checks/ folder."""
    root = tmp_path / "proj"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("")
    (root / "eval_checks").mkdir()
    return root


def test_a_broken_check_file_is_told_where_its_id_was_asked_for(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    # An edit that breaks a check's YAML made `eb run --check-id <its id>` say only that no
    # check has that id; the file and its problem went untold.
    root = _project(tmp_path)
    (root / "eval_checks" / "lint.yaml").write_text(check_yaml("lint_docs") + "  bad: [\n")
    (root / "eval_checks" / "other.yaml").write_text(check_yaml("other"))
    for value, what in (("lint_docs", "the id 'lint_docs'"), ("lint*", "an id matching 'lint*'")):
        result = eb("run", "--cwd", str(root), "--check-id", value)
        assert result.exit_code == 2
        lint = root / "eval_checks" / "lint.yaml"
        assert f"hint: {lint} cannot be parsed, and it may declare {what}" in result.stderr
        assert f"Failed to parse YAML in {lint}: line 6" in result.stderr


def test_ids_that_name_no_check_are_each_told_and_only_the_first_few_guessed(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    # Ids of another commit by the hundred: every file's id was read again, and every id
    # looked through, for each one (300 over 2,000 files took 30 s). Each is still told.
    root = _project(tmp_path)
    family = FAMILY.replace("cases: [{id: x, n: '1'}, {id: y, n: '2'}]", "cases_from: rows.jsonl")
    (root / "eval_checks" / "fam.yaml").write_text(family)
    (root / "rows.jsonl").write_text("".join(f'{{"id": "row{n}", "n": "{n}"}}\n' for n in range(9)))
    for n in range(9):
        (root / "eval_checks" / f"c{n}.yaml").write_text(check_yaml(f"check{n}"))
    for typed, meant in (
        ([f"chek{n}" for n in range(8)], [f"check{n}" for n in range(5)]),
        ([f"fam[rwo{n}]" for n in range(8)], [f"fam[row{n}]" for n in range(5)]),
    ):
        result = eb("validate", "--cwd", str(root), *(f"--check-id={value}" for value in typed))
        assert result.exit_code == 2
        told = [line for line in result.stderr.splitlines() if line.startswith("No ")]
        assert len(told) == len(typed)
        assert re.findall(r"did you mean '([^']+)'", result.stderr) == meant


def test_an_id_in_another_letter_case_gets_a_did_you_mean(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    # `fam[x]` asked as `fam[X]` got no guess (difflib counts each letter of another case as a
    # change), while a misspelt case id did.
    root = _project(tmp_path)
    (root / "eval_checks" / "fam.yaml").write_text(
        FAMILY.replace("{id: x, n: '1'}", "{id: refund-01, n: '1'}")
    )
    (root / "eval_checks" / "greeting.yaml").write_text(check_yaml("greeting_ok"))
    for typed, meant in (("fam[REFUND-01]", "fam[refund-01]"), ("GREETING_OK", "greeting_ok")):
        result = eb("list", "--cases", "--cwd", str(root), "--check-id", typed)
        assert result.exit_code == 2, result.stdout
        assert f"hint: did you mean '{meant}'?" in result.stderr, result.stderr


def test_a_case_selector_whose_family_id_is_in_another_letter_case_gets_a_did_you_mean(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # `QA[refund-01]` reads as a glob (its brackets a character class) and matched nothing
    # with no guess, while `QA` alone and `qa[REFUND-01]` each got one. Its family id is now
    # compared as a plain id is, and its case part with that family's cases.
    root = project(
        {
            "eval_checks/qa.yaml": FAMILY.replace("id: fam", "id: qa").replace(
                "{id: x, n: '1'}", "{id: refund-01, n: '1'}"
            ),
            "eval_checks/plain.yaml": check_yaml("plain_one"),
        }
    )
    for typed, meant in (
        ("QA[refund-01]", "did you mean 'qa[refund-01]'?"),
        ("QA[REFUND-01]", "did you mean 'qa[refund-01]'?"),
        ("QA[refund-1]", "did you mean 'qa[refund-01]'?"),
        ("QA[ref*]", "did you mean 'qa[ref*]'?"),
        ("QA[zzz]", "did you mean the family 'qa'?"),
    ):
        for command in ("run", "list", "validate"):
            result = eb(command, "--cwd", str(root), "--check-id", typed)
            assert result.exit_code == 2, (command, typed, result.stdout)
            assert f"hint: {meant} `eb list --cases` shows every case id" in result.stderr, (
                command,
                result.stderr,
            )
    # A plain check's id is no family: no case of it is guessed.
    result = eb("validate", "--cwd", str(root), "--check-id", "PLAIN_ONE[x]")
    assert result.exit_code == 2 and "did you mean" not in result.stderr
    assert eb("run", "--cwd", str(root), "--check-id", "qa[refund-01]").exit_code == 0


def test_a_case_selector_whose_family_id_misses_a_letter_never_runs_the_whole_family(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # `qa_judg[refund-1]` read as a glob, its brackets a character class holding the `e` of
    # `qa_judge`, so it ran every case of `qa_judge`; `qa_judg[ship-1]` matched nothing with no
    # guess. A `<family>[<case>]` value whose family part is plain is a case selector: it is
    # refused with the case it most likely meant.
    root = project(
        {
            "eval_checks/qa_judge.yaml": FAMILY.replace("id: fam", "id: qa_judge")
            .replace("{id: x, n: '1'}", "{id: refund-1, n: '1'}")
            .replace("{id: y, n: '2'}", "{id: ship-1, n: '2'}"),
            "eval_checks/judge_a.yaml": check_yaml("judge_a"),
            "eval_checks/judge_b.yaml": check_yaml("judge_b"),
        }
    )
    for typed in ("qa_judg[refund-1]", "qa_judg[ship-1]"):
        for command in ("run", "list", "validate"):
            result = eb(command, "--cwd", str(root), "--check-id", typed)
            assert result.exit_code == 2, (command, typed, result.stdout)
            meant = typed.replace("qa_judg[", "qa_judge[")
            assert f"hint: did you mean '{meant}'? `eb list --cases`" in result.stderr, (
                command,
                result.stderr,
            )
    # Globs keep their meaning: over a family's cases, over families' ids, and a character
    # class over plain checks' ids.
    for chosen, listed in (
        ("qa_judge[*]", ["qa_judge[refund-1]", "qa_judge[ship-1]"]),
        ("qa_judge[ship-?]", ["qa_judge[ship-1]"]),
        ("qa_judg?", ["qa_judge[refund-1]", "qa_judge[ship-1]"]),
        ("judge_[ab]", ["judge_a", "judge_b"]),
    ):
        result = eb("list", "--cases", "--cwd", str(root), "--check-id", chosen)
        assert result.exit_code == 0, (chosen, result.stderr)
        assert [line.split("\t", 1)[0] for line in result.stdout.splitlines()] == listed
