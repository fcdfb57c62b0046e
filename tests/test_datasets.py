"""Dataset families end to end: `cases:` / `cases_from:` through eb run, list, validate, merge, diff.

Every case is a check of its own (`<family>[<case id>]`), run by a real subprocess; the family's
`min_pass_rate` is its own gate on the run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from tests.builders import lfs_pointer
from tests.conftest import REPO, EbResult, check_yaml
from tests.gitrepo import commit_all, git, init_repo
from tests.processes import eb_process

CONFIG = """\
[discovery]
exclude_dirs = [".eval-banana", ".git"]
"""

# A deterministic family: a case passes when its `ok` field says yes.
SCRIPT_FAMILY = """\
schema_version: 1
id: fam
type: deterministic
description: "case {{{{ case.name }}}}"
{source}
script: |
  import json, sys
  ctx = json.load(open(sys.argv[1]))
  assert ctx["case_id"] == ctx["check_id"].split("[")[1][:-1]
  sys.exit(0 if ctx["case"]["ok"] == "yes" else 1)
"""

ROWS = [
    {"id": "refund-1", "name": "refund one", "ok": "yes"},
    {"id": "refund-2", "name": "refund two", "ok": "no"},
    {"id": "ship-1", "name": "shipping", "ok": "yes"},
]


def _dataset(fmt: str) -> tuple[str, str]:
    """(file name, text) of ROWS in one dataset format."""
    if fmt == "jsonl":
        return "rows.jsonl", "".join(json.dumps(row) + "\n" for row in ROWS)
    if fmt == "json":
        return "rows.json", json.dumps(ROWS)
    if fmt == "yaml":
        lines = [f"- id: {r['id']}\n  name: {r['name']}\n  ok: '{r['ok']}'\n" for r in ROWS]
        return "rows.yaml", "".join(lines)
    assert fmt == "csv"
    return "rows.csv", "id,name,ok\n" + "".join(f"{r['id']},{r['name']},{r['ok']}\n" for r in ROWS)


def _run(eb: Callable[..., EbResult], root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = eb("run", "--cwd", str(root), "--json", *args)
    return result.exit_code, json.loads(result.stdout)


def _the_validate_error(eb: Callable[..., EbResult], root: Path) -> dict[str, Any]:
    """The one problem `eb validate --json` finds in the project (it exits 2 for it)."""
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2, validated.stdout
    (error,) = json.loads(validated.stdout)["errors"]
    return dict(error)


def _statuses(report: dict[str, Any]) -> dict[str, str]:
    return {check["check_id"]: check["status"] for check in report["checks"]}


# JSON nested 5,000 deep: past any bound, and past what Python's parser can take.
DEEP = "[" * 5000 + "]" * 5000
# Rows each holding ten of the row before: some 1.4 million values once expanded, in six lines
# (small enough that eb without the bound still finishes, and the test fails rather than hangs).
ALIAS_BOMB_ROWS = "- &r0 {name: a, ok: 'yes', v: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}\n" + "".join(
    f"- &r{n} {{name: a{n}, ok: 'yes', v: [{', '.join([f'*r{n - 1}'] * 10)}]}}\n"
    for n in range(1, 6)
)


EXPECTED = {"fam[refund-1]": "passed", "fam[refund-2]": "failed", "fam[ship-1]": "passed"}


@pytest.mark.parametrize("fmt", ["jsonl", "json", "yaml", "csv"])
def test_each_dataset_format_runs_one_check_per_case(
    fmt: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    name, text = _dataset(fmt)
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=f"cases_from: data/{name}"),
            f"data/{name}": text,
        },
        config=CONFIG,
    )
    code, report = _run(eb, root)
    assert code == 1
    assert _statuses(report) == EXPECTED
    assert {check["family"] for check in report["checks"]} == {"fam"}
    assert report["checks"][0]["description"] == "case refund one"
    assert report["families"] == [
        {
            "id": "fam",
            "cases": 3,
            "passed": 2,
            "failed": 1,
            "errored": 0,
            "pass_rate": pytest.approx(2 / 3),
            "min_pass_rate": None,
            "gate_held": True,
            "gate_at_merge": None,
            "of_cases": None,
            "not_run": 0,
        }
    ]
    validated = eb("validate", "--cwd", str(root))
    assert validated.exit_code == 0 and "Validated 3 checks" in validated.stdout
    listed = eb("list", "--cwd", str(root))
    assert listed.stdout.splitlines() == [
        "fam\tdeterministic\tdataset family: 3 cases (eb list --cases shows each)"
        "\teval_checks/fam.yaml"
    ]
    # One row on stdout; the count says it stands for three checks.
    assert listed.stderr.startswith("3 checks listed, 3 of them the cases of 1 dataset family ")
    cases = eb("list", "--cwd", str(root), "--cases")
    assert [line.split("\t")[0] for line in cases.stdout.splitlines()] == list(EXPECTED)


def test_a_glob_does_not_look_in_ebs_own_folders_or_excluded_ones(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    rows = "".join(json.dumps(row) + "\n" for row in ROWS)
    stray = json.dumps({"id": "stray", "name": "x", "ok": "no"}) + "\n"
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source='cases_from: "**/*.jsonl"'),
            "data/rows.jsonl": rows,
            "node_modules/pkg/rows.jsonl": stray,  # in [discovery] exclude_dirs by default
        },
        config="",
    )
    first, _ = _run(eb, root)
    # A run's own files, and files in its history and cache folders, match the glob too.
    # A run folder there is told by its name (core/ownmark.py holds_only_runs).
    run = ".eval-banana/results/20261204_000000_abcd1234/checks"
    for folder in (run, ".eval-banana/history", ".eval-banana/cache"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "t.jsonl").write_text(stray)
    code, report = _run(eb, root)
    assert code == 1 and _statuses(report) == EXPECTED
    listed = eb("list", "--cwd", str(root), "--cases").stdout
    assert "stray" not in listed and "fam[ship-1]" in listed
    # A file named outright is read wherever it is.
    (root / "eval_checks/fam.yaml").write_text(
        SCRIPT_FAMILY.format(source="cases_from: node_modules/pkg/rows.jsonl")
    )
    assert "fam[stray]" in eb("list", "--cwd", str(root), "--cases").stdout
    # A glob that starts in an excluded folder is told why it matches nothing there: "add
    # rows" pointed at a file that has them.
    (root / "eval_checks/fam.yaml").write_text(
        SCRIPT_FAMILY.format(source='cases_from: "node_modules/**/*.jsonl"')
    )
    error = _the_validate_error(eb, root)
    assert error["message"].endswith(
        "looks in node_modules/, where no glob looks (node_modules is named in [discovery] "
        "exclude_dirs), so it matches none of the files there, such as node_modules/pkg/rows.jsonl"
    ), error
    assert error["hint"].startswith(
        "name the file itself (cases_from: node_modules/pkg/rows.jsonl)"
    )
    # With nothing there to match, the family is just empty.
    (root / "eval_checks/fam.yaml").write_text(
        SCRIPT_FAMILY.format(source='cases_from: "node_modules/**/*.csv"')
    )
    assert "has no cases" in _the_validate_error(eb, root)["message"]


# A family over every .jsonl file of the project whose cases each leave evidence in a .jsonl
# file of their own: the glob matches that as well as the dataset, wherever the run went.
EVIDENCE_FAMILY = """\
schema_version: 1
id: fam
type: deterministic
description: "case {{ case.name }}"
cases_from: "**/*.jsonl"
inputs: [src/**]
script: |
  import json, os, sys
  ctx = json.load(open(sys.argv[1]))
  row = {"id": "seen-" + ctx["case_id"], "name": "evidence", "ok": "yes"}
  with open(os.path.join(ctx["output_dir"], "seen.jsonl"), "w") as out:
      out.write(json.dumps(row) + "\\n")
  sys.exit(0 if ctx["case"]["ok"] == "yes" else 1)
"""


def test_a_glob_never_takes_the_files_of_a_run_folder_written_anywhere_in_the_project(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    """Run folders sent into the project (`--output-dir`, shards', `eb merge --flat-output`'s)
    hold evidence that `**/*.jsonl` matches as well as the dataset: no later run, listing or
    --changed-since takes it for rows, though no setting names those folders any more."""
    root = init_repo(
        tmp_path / "repo",
        {
            "eval_checks/fam.yaml": EVIDENCE_FAMILY,
            "data/rows.jsonl": "".join(json.dumps(row) + "\n" for row in ROWS),
            "src/app.py": "print(1)\n",
        },
    )
    written = []
    for args in (
        ("--output-dir", "ci-out"),
        *(("--shard", f"{k}/2", "--output-dir", f"shards/{k}") for k in (1, 2)),
    ):
        done = eb_process(root, "run", "--json", *args)
        assert done.returncode in (0, 1), done.stderr
        report = json.loads(done.stdout)
        assert set(_statuses(report)) <= set(EXPECTED), report["checks"]
        written.append(report["output_dir"])
    merged = eb_process(root, "merge", "--output-dir", "merged", "--flat-output", *written[1:])
    assert merged.returncode == 1, merged.stderr
    for folder in ("ci-out", "shards/1", "shards/2", "merged"):
        assert list((root / folder).glob("**/seen.jsonl")), (
            f"no evidence the glob matches in {folder}"
        )
    done = eb_process(root, "run", "--json")
    assert done.returncode == 1, done.stderr
    assert _statuses(json.loads(done.stdout)) == EXPECTED
    assert _selected(eb, root) == list(EXPECTED)
    # Untracked, the run folders' files are new since HEAD: none of them is a row of the family.
    assert _selected(eb, root, "--changed-since", "HEAD") == []


def test_a_glob_never_takes_the_files_eb_writes_beside_its_folders(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A run that fails writes `.eval-banana/lastfailed.json` for --last-failed, and `eb
    calibrate` its record beside the config: `**/*.json` matches both as well as the dataset,
    and the next run took the failures as a dataset (refused: not a list of cases)."""
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: '**/*.json'"),
            "data/rows.json": json.dumps(ROWS),
        }
    )
    for _ in range(2):
        code, report = _run(eb, root)
        assert code == 1
        assert _statuses(report) == EXPECTED
    assert (root / ".eval-banana" / "lastfailed.json").is_file()
    (root / ".eval-banana" / "calibration.json").write_text("{}")
    assert _selected(eb, root) == list(EXPECTED)


def test_a_glob_never_takes_the_entries_of_a_cache_or_history_folder_a_setting_left(
    project: Callable[..., Path],
) -> None:
    """`[cache] dir` and `[history] dir` moved elsewhere leave their old folders in the
    project, named by no setting: `**/*.json` matched their entries and records as well as
    the dataset (refused: not a list of cases). eb marks each folder it keeps them in."""
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: '**/*.json'"),
            "data/rows.json": json.dumps(ROWS),
        },
        config='[cache]\nmode = "on"\ndir = "ebcache"\n\n[history]\ndir = "ebhistory"\n',
    )
    config = root / ".eval-banana" / "config.toml"
    for moved in (False, True):
        if moved:
            config.write_text(config.read_text().replace('"eb', '"moved/eb'))
        done = eb_process(root, "run", "--json")
        assert done.returncode == 1, done.stderr
        assert _statuses(json.loads(done.stdout)) == EXPECTED
    assert list((root / "ebcache" / "entries").glob("*/*.json"))
    assert list((root / "ebhistory").glob("*.json"))
    listed = eb_process(root, "list", "--cases")
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == list(EXPECTED)


def test_a_glob_reads_the_files_behind_a_link_to_a_folder_once_each(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    """`cases_from: data/**/*.jsonl` left out the rows of `data/shared -> a shared prompts
    checkout`: the family had fewer cases and its gate held (a false pass), and
    `data/*/*.jsonl` was an empty family; `ls data/**` shows them. A link is followed for a `*`
    segment as for `**`; a loop and a folder reached twice add nothing (no row read twice);
    a link above the project root is an error naming it, not a walk."""
    family = SCRIPT_FAMILY.format(source='cases_from: "data/**/*.jsonl"\nmin_pass_rate: 1.0')
    root = project(
        {
            "eval_checks/fam.yaml": family,
            "data/rows/local.jsonl": _jsonl_rows({"local-1": "yes"}),
        },
        config=CONFIG,
    )
    shared = tmp_path / "shared-prompts"  # outside the project, as another checkout is
    shared.mkdir()
    (shared / "team.jsonl").write_text(_jsonl_rows({"shared-1": "yes", "shared-2": "no"}))
    (root / "data/shared").symlink_to("../../shared-prompts")
    (root / "data/alias").symlink_to("rows")  # data/rows again: named by its own path
    (root / "data/loop").symlink_to(".")  # back to data/
    (shared / "back").symlink_to(".")  # a loop behind the link
    expected = {"fam[local-1]": "passed", "fam[shared-1]": "passed", "fam[shared-2]": "failed"}

    done = eb_process(root, "run", "--json", timeout=60)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert _statuses(report) == expected
    (family_row,) = report["families"]
    assert (family_row["passed"], family_row["cases"], family_row["gate_held"]) == (2, 3, False)
    shown = eb_process(root, "run", timeout=60).stdout
    assert "FAILED fam[shared-2] - exit code 1 (data/shared/team.jsonl:2)" in shown, shown
    (root / "eval_checks/fam.yaml").write_text(family.replace("data/**/*", "data/*/*"))
    listed = eb_process(root, "list", "--cases", timeout=60)
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == list(expected)

    # A file appearing behind the link makes the plan stale, and eb update runs it alone.
    (root / "eval_checks/fam.yaml").write_text(family)
    assert eb_process(root, "run", timeout=60).returncode == 1
    (shared / "more.jsonl").write_text(_jsonl_rows({"more-1": "no"}))
    status = eb_process(root, "status", timeout=60).stdout
    assert "stale  (fam[more-1]: row added to data/shared/more.jsonl)" in status, status
    updated = eb_process(root, "update", timeout=60)
    assert updated.returncode == 1, updated.stderr
    assert "1 of 4 checks to run again; 3 keep their results" in updated.stdout, updated.stdout
    assert "- fam[more-1]: failed - exit code 1" in updated.stdout, updated.stdout

    (root / "data/up").symlink_to("..")
    refused = eb_process(root, "validate", "--json", timeout=60)
    assert refused.returncode == 2, refused.stdout
    (error,) = json.loads(refused.stdout)["errors"]
    assert (error["field_path"], error["message"]) == (
        "cases_from",
        f"cases_from 'data/**/*.jsonl' in {root / 'eval_checks/fam.yaml'} looks through "
        f"data/up, a symbolic link to {root}, the project root or a folder above it: through "
        "it the glob would read the whole project again, and every folder beside it, as rows",
    )


@pytest.mark.parametrize("boms", [1, 2])
@pytest.mark.parametrize("fmt", ["jsonl", "json", "yaml", "csv"])
def test_a_byte_order_mark_and_windows_line_ends_change_nothing(
    fmt: str, boms: int, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # Spreadsheet programs save "CSV UTF-8" with a byte order mark and CRLF line ends: the
    # first column must still be `id`, and a JSON file's first line must still parse. A file
    # saved twice by such a tool has two marks (the second named the column `\ufeffid`).
    name, text = _dataset(fmt)
    root = project(
        {"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=f"cases_from: data/{name}")},
        config=CONFIG,
    )
    (root / "data").mkdir()
    (root / "data" / name).write_bytes(b"\xef\xbb\xbf" * boms + text.replace("\n", "\r\n").encode())
    code, report = _run(eb, root)
    assert code == 1
    assert _statuses(report) == EXPECTED


def test_a_spreadsheets_other_encodings_are_named_with_the_fix(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A "Unicode text" export is UTF-16 (said as such, not as a bad byte at 0, with or without
    its byte order mark), as UTF-32 is; a Latin-1 file names its byte; each says how to save
    it."""
    root = project(
        {"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: 'data/*.csv'")},
        config=CONFIG,
    )
    (root / "data").mkdir()
    (root / "data/a.csv").write_bytes("name,ok\nrefund,yes\n".encode("utf-16"))
    (root / "data/b.csv").write_bytes("name,ok\ncaf\xe9,yes\n".encode("latin-1"))
    # Without a byte order mark, UTF-16 of ASCII letters is valid UTF-8 (a NUL after each
    # letter): it was told as ragged rows, with a hint to quote cells holding commas.
    (root / "data/c.csv").write_bytes("name,ok\r\nrefund,yes\r\n".encode("utf-16-le"))
    (root / "data/d.csv").write_bytes("name,ok\nrefund,yes\n".encode("utf-32"))  # was UTF-16
    (root / "data/e.csv").write_bytes("name,ok\nrefund,yes\n".encode("utf-32-be"))
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    said = {(e["message"], e["line"], e["hint"]) for e in json.loads(validated.stdout)["errors"]}
    fix = "save the file as UTF-8 (in a spreadsheet: CSV UTF-8)"
    assert said == {
        (
            "Dataset data/a.csv is UTF-16 text, not UTF-8 (it starts with a UTF-16 byte order "
            "mark)",
            1,
            fix,
        ),
        ("Dataset data/b.csv is not UTF-8 text (line 2, byte 11: 0xE9)", 2, fix),
        (
            "Dataset data/c.csv is UTF-16 text without a byte order mark, not UTF-8 (every "
            "other byte is NUL, as UTF-16 writes text)",
            1,
            fix,
        ),
        (
            "Dataset data/d.csv is UTF-32 text, not UTF-8 (it starts with a UTF-32 byte order "
            "mark)",
            1,
            fix,
        ),
        (
            "Dataset data/e.csv is UTF-32 text, not UTF-8 (two of every four bytes are NUL, as "
            "UTF-32 writes text)",
            1,
            fix,
        ),
    }


@pytest.mark.parametrize("fmt", ["jsonl", "json", "yaml", "csv"])
def test_a_dataset_checked_out_without_its_lfs_content_says_so_with_the_fix(
    fmt: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """Read as a dataset, a pointer is three bad lines (as CSV: a header and two cases missing
    every field the family uses); it is one error that names it and the fix."""
    name, text = _dataset(fmt)
    root = project(
        {"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=f"cases_from: data/{name}")},
        config=CONFIG,
    )
    (root / "data").mkdir()
    (root / "data" / name).write_bytes(lfs_pointer(text.encode()))
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    errors = json.loads(validated.stdout)["errors"]
    assert [(e["message"], e["file"], e["line"], e["hint"]) for e in errors] == [
        (
            f"Dataset data/{name} is a Git LFS pointer to a file of {len(text.encode()):,} bytes, "
            "not the dataset itself",
            f"data/{name}",
            1,
            "fetch the files Git LFS tracks: `git lfs pull` (in GitHub Actions, "
            "actions/checkout with `lfs: true`)",
        )
    ]
    # The content fetched, the same family runs.
    (root / "data" / name).write_text(text)
    code, report = _run(eb, root)
    assert code == 1 and _statuses(report) == EXPECTED


def test_a_csv_cell_longer_than_the_csv_modules_limit_reaches_the_case_whole(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # A whole article in a cell: Python's csv module refuses cells over 128 KiB by default,
    # which was a traceback; the case must get every character.
    article = "word " * 60_000
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.csv").replace(
        'ctx["case"]["ok"] == "yes"', f'len(ctx["case"]["name"]) == {len(article)}'
    )
    root = project(
        {"eval_checks/fam.yaml": family, "data/rows.csv": f'id,name,ok\nlong,"{article}",yes\n'},
        config=CONFIG,
    )
    code, report = _run(eb, root)
    assert code == 0 and _statuses(report) == {"fam[long]": "passed"}, report


def test_a_csv_row_with_a_line_break_in_a_cell_is_told_at_its_first_line(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.csv"),
            "data/rows.csv": 'name,ok\n"two\nlines",yes\n\nthree,yes,extra\n',
        },
        config=CONFIG,
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2, validated.stdout
    # The quoted cell spans lines 2 and 3; line 4 is empty, a row of no cells; line 5 is ragged.
    assert [(e["line"], e["message"]) for e in json.loads(validated.stdout)["errors"]] == [
        (4, "Dataset data/rows.csv row at line 4 is an empty line; the header has 2 columns"),
        (5, "Dataset data/rows.csv row at line 5 has 3 cells; the header has 2"),
    ]
    (root / "data/rows.csv").write_text('name,ok\n"two\nlines",yes\nthree,no\n')
    # eb list keeps one TSV line per case: the cell's line break is a space there.
    listed = eb("list", "--cwd", str(root), "--cases")
    assert [line.split("\t")[2] for line in listed.stdout.splitlines()] == [
        "case two lines",
        "case three",
    ]


# A one-column family whose case fails on an empty answer, gated at 1.0.
ANSWER_FAMILY = """\
schema_version: 1
id: answers
type: deterministic
description: "answer {{ case.answer }}"
cases_from: data/answers.csv
min_pass_rate: 1.0
script: |
  import json, sys
  case = json.load(open(sys.argv[1]))["case"]
  sys.exit(0 if case["answer"].strip() else 1)
"""


def test_an_empty_line_of_a_one_column_csv_is_a_case_whose_cell_is_empty(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A spreadsheet saves a one-column sheet's empty cell as an empty line: eb dropped it, so
    the case that should fail was no case, the ids after it shifted, and a gate of 1.0 held
    2/2. The empty lines after the last row (an editor's) add no case."""
    root = project(
        {
            "eval_checks/answers.yaml": ANSWER_FAMILY,
            "data/answers.csv": "answer\r\nParis\r\n\r\nSeine\r\n\r\n\r\n",
        },
        config=CONFIG,
    )
    listed = eb("list", "--cwd", str(root), "--cases")
    assert [line.split("\t")[:3] for line in listed.stdout.splitlines()] == [
        ["answers[1]", "deterministic", "answer Paris"],
        ["answers[2]", "deterministic", "answer "],
        ["answers[3]", "deterministic", "answer Seine"],
    ], listed.stdout
    code, report = _run(eb, root)
    assert code == 1, report
    assert _statuses(report) == {
        "answers[1]": "passed",
        "answers[2]": "failed",
        "answers[3]": "passed",
    }, report
    (family,) = report["families"]
    assert (family["cases"], family["passed"], family["gate_held"]) == (3, 2, False), family


def test_an_empty_line_between_rows_of_a_csv_of_several_columns_is_a_row_of_no_cells(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A spreadsheet writes an empty row of several columns as commas, never an empty line: eb
    dropped the line without a word. It is a ragged row told at its line; empty lines after the
    last row are none."""
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.csv"),
            "data/rows.csv": "name,ok\na,yes\n\nb,yes\n",
        },
        config=CONFIG,
    )
    error = _the_validate_error(eb, root)
    assert (error["file"], error["line"], error["field_path"]) == (
        "data/rows.csv",
        3,
        "cases_from",
    ), error
    assert error["message"] == (
        "Dataset data/rows.csv row at line 3 is an empty line; the header has 2 columns"
    )
    assert error["hint"].startswith("delete the empty line"), error
    (root / "data/rows.csv").write_text("name,ok\na,yes\n,\nb,yes\n\n\n")
    code, report = _run(eb, root)
    assert code == 1 and _statuses(report) == {
        "fam[1]": "passed",
        "fam[2]": "failed",
        "fam[3]": "passed",
    }, report


def test_a_csv_skip_and_tags_column_is_empty_for_the_cases_it_does_not_mark(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A spreadsheet's `skip` column is empty for the cases that run, and its `tags` column
    holds words in one cell: an empty cell is no skip (it was "skip must be a non-empty
    reason" for every such row) and no tags."""
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.csv"),
            "data/rows.csv": "id,name,ok,skip,tags\n"
            "a,first,yes,,\n"
            'b,second,no,flaky upstream,"slow, net"\n'
            "c,third,yes, ,smoke slow\n",
        },
        config=CONFIG,
    )
    code, report = _run(eb, root)
    assert code == 0, report
    assert _statuses(report) == {"fam[a]": "passed", "fam[c]": "passed"}
    assert [(c["check_id"], c["reason"], c["tags"]) for c in report["skipped"]] == [
        ("fam[b]", "flaky upstream", ["slow", "net"])
    ]
    code, report = _run(eb, root, "--tag", "slow and not net")
    assert (code, _statuses(report)) == (0, {"fam[c]": "passed"})
    # A JSON row's empty skip is still a mistake: it writes null, or leaves the field out.
    (root / "eval_checks/fam.yaml").write_text(
        SCRIPT_FAMILY.format(source='cases: [{name: a, ok: "yes", skip: ""}]')
    )
    error = _the_validate_error(eb, root)
    assert error["message"].endswith("case '1': skip must be a non-empty reason"), error


def test_tags_null_in_a_json_or_yaml_row_means_no_tags_of_its_own(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """The docs say to write `null` (or leave the field out) for a row without tags of its
    own: it was "tags must be a list of strings" in every JSON and YAML form."""
    source = "cases: [{id: i1, name: a, ok: 'yes', tags: null, skip: null}]\ncases_from: data/r.*"
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=source) + "tags: [ds]\n",
            "data/r.jsonl": '{"id": "j1", "name": "b", "ok": "yes", "tags": null, "skip": null}\n',
            "data/r.json": '[{"id": "n1", "name": "c", "ok": "yes", "tags": null}]\n',
            "data/r.yaml": "- {id: y1, name: d, ok: 'yes', tags: null}\n",
        },
        config=CONFIG,
    )
    code, report = _run(eb, root)
    assert code == 0, report
    assert {check["check_id"]: check["tags"] for check in report["checks"]} == {
        "fam[i1]": ["ds"],
        "fam[j1]": ["ds"],
        "fam[n1]": ["ds"],
        "fam[y1]": ["ds"],
    }


def test_a_tags_text_of_several_words_is_refused_outside_a_csv_cell(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """`tags: "smoke, slow"` gave two tags from a CSV cell but the one tag 'smoke, slow' from
    a JSON or YAML row, which `--tag slow` silently left out: it is refused at its row, with
    the list to write; one word is still one tag."""
    source = "cases: [{id: i1, name: a, ok: 'yes', tags: 'smoke, slow'}]\ncases_from: data/r.*"
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=source),
            "data/r.csv": 'id,name,ok,tags\nc1,b,yes,"smoke, slow"\n',
            "data/r.jsonl": '{"id": "j1", "name": "c", "ok": "yes", "tags": "smoke slow"}\n'
            '{"id": "j2", "name": "d", "ok": "yes", "tags": "slow"}\n',
            "data/r.yaml": "- {id: y1, name: e, ok: 'yes', tags: ''}\n",
        },
        config=CONFIG,
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2, validated.stdout
    told = [
        (error["message"].split(": ", 1)[1], error["field_path"], error["hint"])
        for error in json.loads(validated.stdout)["errors"]
    ]
    several = 'write the tags as a list (["smoke", "slow"]); a tag that holds a space'
    assert [(said.split(":")[0], field) for said, field, _ in told] == [
        ("case 'i1'", "cases.0.tags"),
        ("case 'j1'", "case.tags"),
        ("case 'y1'", "case.tags"),
    ], told
    assert told[0][0].startswith("case 'i1': tags 'smoke, slow' is one text holding a comma")
    assert told[0][2].startswith(several) and told[1][2].startswith(several), told
    assert told[2][0] == "case 'y1': tags '' names no tag", told
    # Rows that say their tags as a list (or one word) are selected by each tag.
    (root / "eval_checks/fam.yaml").write_text(
        SCRIPT_FAMILY.format(source=source.replace("'smoke, slow'", "[smoke, slow]"))
    )
    (root / "data/r.jsonl").write_text('{"id": "j2", "name": "d", "ok": "yes", "tags": "slow"}\n')
    (root / "data/r.yaml").unlink()
    code, report = _run(eb, root, "--tag", "slow")
    assert (code, sorted(_statuses(report))) == (0, ["fam[c1]", "fam[i1]", "fam[j2]"]), report


def test_a_csv_skip_cell_a_checkbox_column_wrote_is_refused_not_taken_as_a_reason(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A spreadsheet's checkbox column exports TRUE/FALSE, a flag column 0/1: read as reasons,
    `FALSE` skipped the very cases it meant to run, and a gate of 1.0 passed without them."""
    cells = ["FALSE", "no", "0", "True", "1.0", "-"]
    rows = "".join(f"c{n},case {n},no,{cell}\n" for n, cell in enumerate(cells))
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.csv\nmin_pass_rate: 1.0")
    root = project(
        {"eval_checks/fam.yaml": family, "data/rows.csv": "id,name,ok,skip\n" + rows},
        config=CONFIG,
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    errors = json.loads(validated.stdout)["errors"]
    assert [(e["line"], e["field_path"], e["message"]) for e in errors] == [
        (
            n + 2,
            "case.skip",
            f"data/rows.csv line {n + 2}: case 'c{n}': skip '{cell}' is a yes/no, a number or a "
            "mark, not the reason the case is skipped",
        )
        for n, cell in enumerate(cells)
    ]
    assert {e["hint"] for e in errors} == {
        "leave the skip cell empty for the case to run; write the reason to skip it (such as "
        "'flaky upstream')"
    }
    ran = eb("run", "--cwd", str(root))
    assert ran.exit_code == 2, ran.stdout
    # Typing the column as a checkbox is refused at the schema, once, with the same fix.
    (root / "eval_checks/fam.yaml").write_text(
        family + "case_schema: {properties: {skip: {type: boolean}}}\n"
    )
    error = _the_validate_error(eb, root)
    assert (error["field_path"], error["message"].split(": ", 1)[1]) == (
        "case_schema.properties.skip.type",
        "skip holds the reason a case is skipped, text, not boolean",
    ), error
    # A reason is still a reason, and an empty cell runs its case.
    (root / "eval_checks/fam.yaml").write_text(family)
    (root / "data/rows.csv").write_text("id,name,ok,skip\na,first,yes,\nb,second,no,no API key\n")
    code, report = _run(eb, root)
    assert code == 0 and [c["reason"] for c in report["skipped"]] == ["no API key"], report


# What SQL Server, pandas, MySQL and spreadsheets write for a missing value, as a `skip` cell.
MISSING_SKIPS = ["NULL", "None", "nan", "NaN", " N/A ", "n/a", "null", "NA", "#N/A", "(null)"]


def test_a_skip_cell_holding_a_missing_value_is_refused_not_taken_as_a_reason(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A CSV exported from SQL Server or a DataFrame writes a missing `skip` as NULL, None, nan
    or N/A: read as reasons they skipped every case, and a family gated at 0.9 whose every
    answer was wrong passed "not measured", exit 0."""
    rows = "".join(f"c{n},case {n},no,{cell}\n" for n, cell in enumerate(MISSING_SKIPS))
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.csv\nmin_pass_rate: 0.9")
    root = project(
        {
            "eval_checks/fam.yaml": family,
            "data/rows.csv": "id,name,ok,skip\n" + rows,
            # A JSONL row's skip text, and MySQL's and PostgreSQL's \N, are held the same.
            "data/more.jsonl": '{"id": "j1", "name": "j", "ok": "no", "skip": "\\\\N"}\n',
        },
        config=CONFIG,
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2, validated.stdout
    errors = json.loads(validated.stdout)["errors"]
    assert [(e["line"], e["field_path"], e["message"]) for e in errors] == [
        (
            n + 2,
            "case.skip",
            f"data/rows.csv line {n + 2}: case 'c{n}': skip '{cell.strip()}' is how a database, "
            "pandas or a spreadsheet writes a missing value, not the reason the case is skipped",
        )
        for n, cell in enumerate(MISSING_SKIPS)
    ]
    assert {e["hint"] for e in errors} == {
        "leave the skip cell empty for the case to run; write the reason to skip it (such as "
        "'flaky upstream')"
    }
    ran = eb("run", "--cwd", str(root))
    assert ran.exit_code == 2, ran.stdout
    (root / "eval_checks/fam.yaml").write_text(family.replace("rows.csv", "more.jsonl"))
    error = _the_validate_error(eb, root)
    assert (error["line"], error["field_path"], error["hint"]) == (
        1,
        "case.skip",
        "leave skip out (or write null) for the case to run; write the reason to skip it (such "
        "as 'flaky upstream')",
    ), error
    assert error["message"].startswith("data/more.jsonl line 1: case 'j1': skip '\\\\N' is how")
    # A reason that merely starts with such a word is a reason; an empty cell runs its case.
    (root / "eval_checks/fam.yaml").write_text(family)
    (root / "data/rows.csv").write_text(
        "id,name,ok,skip\na,first,yes,\nb,second,no,null pointer upstream\n"
    )
    code, report = _run(eb, root)
    assert code == 0 and [c["reason"] for c in report["skipped"]] == ["null pointer upstream"]


@pytest.mark.parametrize(
    ("source", "files", "hint"),
    [
        ("cases: []", {}, "add cases to its cases: list, or delete cases: to make it one check"),
        (
            "cases_from: data/rows.jsonl",
            {"data/rows.jsonl": ""},
            "add rows to the dataset or fix cases_from",
        ),
    ],
)
def test_an_empty_family_is_told_the_fix_for_where_its_cases_come_from(
    source: str,
    files: dict[str, str],
    hint: str,
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
) -> None:
    # An inline `cases: []` was told to "fix cases_from", which it does not have.
    root = project({"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=source), **files})
    error = _the_validate_error(eb, root)
    assert "has no cases" in error["message"]
    assert error["hint"].startswith(hint), error


def test_a_case_schema_problem_is_told_at_the_rows_own_field(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A row that breaks the family's case_schema at one of its fields is told at that field:
    in the check file's own `cases:`, the line and column of the value (where an editor should
    jump); a row missing a required field, at the row."""
    inline = (
        "cases:\n"
        "  - {id: a, name: one, ok: 'yes'}\n"
        "  - {id: b, name: two, ok: 'maybe'}\n"
        "  - {id: c, name: three}\n"
        "case_schema:\n"
        "  type: object\n"
        "  required: [name, ok]\n"
        "  properties: {ok: {enum: ['yes', 'no']}}\n"
    )
    root = project({"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=inline)}, config=CONFIG)
    validated = eb("validate", "--cwd", str(root), "--json")
    told = [
        (e["field_path"], e["line"], e["column"]) for e in json.loads(validated.stdout)["errors"]
    ]
    # Line 7 is case b (after the family's four header lines, `cases:` and case a); its `ok`
    # key is at column 24.
    assert told == [("cases.1.ok", 7, 24), ("cases.2", 8, 5)], told


def test_a_case_schema_format_is_checked_or_refused_never_passed_over(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """JSON Schema makes `format` a note unless asked: a family that writes `format: date`
    means a check. eb checks date, date-time, email, ipv4, ipv6 and uuid, and refuses any
    other format at the schema; a `format` key inside a `const` value is data, not a keyword."""
    schema = (
        "case_schema:\n"
        "  properties:\n"
        "    day: {format: date}\n"
        "    at: {format: date-time}\n"
        "    mail: {format: email}\n"
        "    host: {format: ipv4}\n"
        "    tag: {const: {format: uri}}\n"
    )
    good = {
        **{"name": "n", "ok": "yes", "day": "2026-12-06"},
        **{"at": "2026-12-06T10:00:00.5+01:00", "mail": "a@b.c"},
    }
    rows = [
        {"id": "good", **good, "host": "127.0.0.1", "tag": {"format": "uri"}},
        {"id": "day", **good, "day": "2026-02-30"},
        {"id": "at", **good, "at": "2026-12-06T10:00:00"},  # no time zone
        {"id": "mail", **good, "mail": "nobody"},
        {"id": "host", **good, "host": "300.1.1.1"},
    ]
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl") + schema
    lines = "".join(json.dumps(row) + "\n" for row in rows)
    root = project({"eval_checks/fam.yaml": family, "data/rows.jsonl": lines}, config=CONFIG)
    validated = eb("validate", "--cwd", str(root), "--json")
    told = {e["line"]: e["message"] for e in json.loads(validated.stdout)["errors"]}
    assert sorted(told) == [2, 3, 4, 5], told
    wrong = {2: ("day", "date"), 3: ("at", "date-time"), 4: ("mail", "email"), 5: ("host", "ipv4")}
    for line, (field, kind) in wrong.items():
        assert f"at {field}: " in told[line] and f"is not a '{kind}'" in told[line], told[line]
    (root / "eval_checks/fam.yaml").write_text(family.replace("format: ipv4", "format: uri"))
    refused = eb("validate", "--cwd", str(root), "--json")
    (error,) = json.loads(refused.stdout)["errors"]
    assert error["field_path"] == "case_schema.properties.host.format", error
    assert "format 'uri' is not checked by eb" in error["message"], error
    assert "write a pattern" in error["hint"], error


def test_a_backtracking_case_schema_pattern_cannot_hang_eb_validate(
    project: Callable[..., Path],
) -> None:
    # `^(a+)+$` against forty a's and a '!': hours for Python's `re`, at once for RE2. In a
    # subprocess with a timeout, so that a match that backtracks fails instead of hanging.
    rows = '{"name": "a", "ok": "yes"}\n' + json.dumps({"name": "a" * 40 + "!", "ok": "no"})
    source = "cases_from: data/rows.jsonl\ncase_schema: {properties: {name: {pattern: '^(a+)+$'}}}"
    root = project(
        {"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=source), "data/rows.jsonl": rows},
        config=CONFIG,
    )
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "validate", "--cwd", str(root), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    (error,) = json.loads(done.stdout)["errors"]
    assert (error["file"], error["line"]) == ("data/rows.jsonl", 2), error
    assert error["message"].endswith("does not match '^(a+)+$'"), error


def test_a_bad_row_of_a_yaml_or_json_list_is_told_at_its_line(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A list file's rows carry no line when loaded; one with a problem is found at its line
    (an editor jumps there), and a list written on one line is told by its item alone."""
    schema = "case_schema: {type: object, required: [name, ok]}\n"
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.yaml") + schema
    rows = "# people\n- {id: a, name: one, ok: 'yes'}\n- id: b\n  ok: 'no'\n- {id: c, name: x}\n"
    root = project({"eval_checks/fam.yaml": family, "data/rows.yaml": rows}, config=CONFIG)
    validated = eb("validate", "--cwd", str(root), "--json")
    told = [(e["line"], e["message"]) for e in json.loads(validated.stdout)["errors"]]
    assert told == [
        (
            3,
            "data/rows.yaml item 2 (line 3): case 'b' does not match case_schema: 'name' is "
            "a required property",
        ),
        (
            5,
            "data/rows.yaml item 3 (line 5): case 'c' does not match case_schema: 'ok' is a "
            "required property",
        ),
    ]
    (root / "eval_checks/fam.yaml").write_text(family.replace("rows.yaml", "rows.json"))
    (root / "data/rows.json").write_text(
        '[\n  {"id": "a", "name": "one", "ok": "yes"},\n  {"id": "b"}\n]'
    )
    (error,) = json.loads(eb("validate", "--cwd", str(root), "--json").stdout)["errors"]
    assert error["line"] == 3 and error["message"].startswith("data/rows.json item 2 (line 3):")
    (root / "data/rows.json").write_text('[{"id": "a", "name": "one", "ok": "yes"}, {"id": "b"}]')
    (error,) = json.loads(eb("validate", "--cwd", str(root), "--json").stdout)["errors"]
    assert error["line"] == 1 and error["message"].startswith("data/rows.json item 2: case 'b'")


def test_a_value_json_cannot_say_is_told_at_its_row_and_field(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """Python's json reads NaN and Infinity and YAML reads dates, sets and binary data; none
    is JSON, so none may reach plan.json or a script's context file. Each is told at its row
    and field, whatever the format; a quoted value is text and passes."""
    family = SCRIPT_FAMILY.format(source='cases_from: "data/*"')
    rows_jsonl = '{"id": "a", "ok": "yes", "name": "n", "score": NaN}\n{"id": "b", "ok": "yes", "name": "n", "at": [1, -Infinity]}\n'
    rows_yaml = (
        "- {id: c, ok: 'yes', name: n, when: 2024-01-01}\n"
        "- id: d\n  ok: 'yes'\n  name: n\n  meta: {ratio: .inf}\n"
        "- {id: e, ok: 'yes', name: n, seen: !!set {x}}\n"
        "- {id: f, ok: 'yes', name: n, blob: !!binary aGk=}\n"
        "- {id: g, ok: 'yes', name: n, when: '2024-01-01', ratio: '.nan'}\n"
    )
    root = project(
        {"eval_checks/fam.yaml": family, "data/a.jsonl": rows_jsonl, "data/b.yaml": rows_yaml},
        config=CONFIG,
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    told = [
        (e["file"], e["line"], e["field_path"], e["message"])
        for e in json.loads(validated.stdout)["errors"]
    ]
    expected = [
        ("data/a.jsonl", "line 1", 1, "score", "NaN"),
        ("data/a.jsonl", "line 2", 2, "at.1", "-Infinity"),
        ("data/b.yaml", "item 1 (line 1)", 1, "when", "a date"),
        ("data/b.yaml", "item 2 (line 2)", 2, "meta.ratio", "Infinity"),
        ("data/b.yaml", "item 3 (line 6)", 6, "seen", "a set"),
        ("data/b.yaml", "item 4 (line 7)", 7, "blob", "binary data"),
    ]
    assert told == [
        (file, line, field, f"{file} {where}: field {field} holds {what}, which JSON cannot say")
        for file, where, line, field, what in expected
    ]
    ran = eb("run", "--cwd", str(root))
    assert ran.exit_code == 2 and "field score holds NaN" in ran.stderr
    # The failed validate stage's file is still written, and is strict JSON.
    (plan,) = root.rglob("plan.json")
    strict = json.loads(plan.read_text(), parse_constant=lambda name: pytest.fail(name))
    assert strict["errors"] and not strict["checks"]


def test_a_yaml_key_that_is_not_text_is_told_at_its_row_and_field(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """YAML reads `{1: bad}` with a number for a key, which JSON has not: it was written as the
    text '1' without a word, unless the mapping also had a text key. Each is told at its row and
    field with the fix, at any depth (a check file's own cases are refused by its model)."""
    rows = (
        "- {id: a, ok: 'yes', name: n, scores: {1: bad, 5: great}}\n"
        "- {id: b, ok: 'yes', name: n, m: {x: {true: y}}}\n"
        "- {id: c, ok: 'yes', name: n, m: {null: y}}\n"
        "- {id: d, ok: 'yes', name: n, m: [{2.5: z}]}\n"
        "- {id: e, ok: 'yes', name: n, scores: {1: bad, x: great}}\n"
        "- {id: f, ok: 'yes', name: n, 1: first}\n"
        "- {id: g, ok: 'yes', name: n, scores: {'1': bad}}\n"
    )
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.yaml")
    root = project({"eval_checks/fam.yaml": family, "data/rows.yaml": rows}, config=CONFIG)
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    told = [
        (e["file"], e["line"], e["field_path"], e["message"].split(": ", 1)[1], e["hint"])
        for e in json.loads(validated.stdout)["errors"]
    ]
    expected = [
        ("data/rows.yaml", 1, "scores", "1"),
        ("data/rows.yaml", 2, "m.x", "true"),
        ("data/rows.yaml", 3, "m", "null"),
        ("data/rows.yaml", 4, "m.0", "2.5"),
        ("data/rows.yaml", 5, "scores", "1"),
        ("data/rows.yaml", 6, "cases", "1"),
    ]
    assert sorted(told) == sorted(
        (
            file,
            line,
            field,
            f"{'the case' if field == 'cases' else 'field ' + field} "
            f"holds the key {key} (not text), which JSON cannot say",
            f"quote the key ('{key}') to make it text",
        )
        for file, line, field, key in expected
    ), told


def test_inline_cases_with_position_ids_and_case_tags_and_skip(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    cases = """\
cases:
  - {name: a, ok: "yes", tags: [slow]}
  - {name: b, ok: "yes", skip: not written yet}
  - {name: c, ok: "yes"}
tags: [ds]"""
    root = project({"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=cases)}, config=CONFIG)
    code, report = _run(eb, root)
    assert code == 0
    assert _statuses(report) == {"fam[1]": "passed", "fam[3]": "passed"}
    assert report["checks"][0]["tags"] == ["ds", "slow"]
    assert report["checks"][1]["tags"] == ["ds"]
    assert [item["check_id"] for item in report["skipped"]] == ["fam[2]"]
    code, report = _run(eb, root, "--tag", "slow")
    assert _statuses(report) == {"fam[1]": "passed"}
    # The count line adds the skipped case to the checks, and says of how many the cases are.
    listed = eb("list", "--cwd", str(root), "--cases")
    assert listed.stderr.startswith(
        "2 checks and 1 skipped listed, 3 of these 3 are the cases of 1 dataset family "
    ), listed.stderr


def test_list_inputs_shows_a_familys_inputs_under_its_row(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    source = "cases: [{name: a, ok: 'yes'}, {name: b, ok: 'yes'}]\ninputs: [src/**]"
    root = project(
        {"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=source), "src/app.py": "1\n"},
        config=CONFIG,
    )
    listed = eb("list", "--cwd", str(root), "--inputs")
    assert listed.stdout.splitlines()[1:] == ["  inputs: src/** (1 file)", "    src/app.py"]
    assert listed.stdout.startswith("fam\tdeterministic\tdataset family: 2 cases")


def _selected(eb: Callable[..., EbResult], root: Path, *args: str) -> list[str]:
    listed = eb("list", "--cwd", str(root), "--cases", *args)
    assert listed.exit_code == 0, listed.stderr
    return [line.split("\t")[0] for line in listed.stdout.splitlines()]


def test_selection_matches_case_ids(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    name, text = _dataset("jsonl")
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=f"cases_from: data/{name}"),
            f"data/{name}": text,
            "eval_checks/other.yaml": "schema_version: 1\nid: other\ntype: deterministic\n"
            "description: other\nscript: pass\n",
        },
        config=CONFIG,
    )
    assert _selected(eb, root, "--check-id", "fam[*]") == list(EXPECTED)
    assert _selected(eb, root, "--check-id", "fam[refund-*]") == ["fam[refund-1]", "fam[refund-2]"]
    assert _selected(eb, root, "--check-id", "fam[ship-1]") == ["fam[ship-1]"]
    assert _selected(eb, root, "--check-id", "fam") == list(EXPECTED)
    assert _selected(eb, root, "-k", "fam and refund") == ["fam[refund-1]", "fam[refund-2]"]
    assert _selected(eb, root, "-k", "not refund") == ["fam[ship-1]", "other"]
    code, report = _run(eb, root, "--check-id", "fam[refund-1]")
    assert code == 0 and _statuses(report) == {"fam[refund-1]": "passed"}
    # A case selector that chooses nothing names the family and the case it most likely meant
    # (not "No checks found" with a hint to add check files); so does an unknown check id.
    typo = eb("run", "--cwd", str(root), "--check-id", "fam[refnd-1]")
    assert typo.exit_code == 2
    first, hint = typo.stderr.splitlines()[:2]
    assert (
        first.startswith("No case of family 'fam' (")
        and "matches --check-id 'fam[refnd-1]'" in first
    )
    assert hint == "hint: did you mean 'fam[refund-1]'? `eb list --cases` shows every case id"
    glob = eb("list", "--cwd", str(root), "--check-id", "fam[nothing*]")
    assert glob.exit_code == 2 and "No case of family 'fam'" in glob.stderr
    unknown = eb("run", "--cwd", str(root), "--check-id", "fma")
    assert unknown.exit_code == 2
    assert unknown.stderr.splitlines()[:2] == [
        "No check found with id 'fma'",
        "hint: did you mean 'fam'? `eb list` shows every check id (`eb list --cases` every case "
        "of a dataset family)",
    ]


def test_junit_groups_a_familys_cases_under_its_id(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    name, text = _dataset("csv")
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=f"cases_from: data/{name}"),
            f"data/{name}": text,
        },
        config=CONFIG,
    )
    _run(eb, root, "--junit-xml", "junit.xml")
    tree = ElementTree.parse(root / "junit.xml")
    cases = {case.get("name"): case.get("classname") for case in tree.iter("testcase")}
    assert cases == dict.fromkeys(EXPECTED, "fam")


def test_shards_split_a_family_by_case_and_merge_and_diff_see_cases(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    rows = "".join(
        json.dumps({"id": f"c{n}", "name": f"n{n}", "ok": "no" if n == 5 else "yes"}) + "\n"
        for n in range(8)
    )
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl")
            + "min_pass_rate: 0.85\n",
            "data/rows.jsonl": rows,
        },
        config=CONFIG + "[core]\npass_threshold = 0.5\n",
    )
    shards = []
    for index in (1, 2):
        # A shard holds part of the family: the gate waits for the merge (the shard holding
        # c5 may well be below 85% on its own).
        code, report = _run(eb, root, "--shard", f"{index}/2")
        assert code == 0
        assert [family["min_pass_rate"] for family in report["families"]] == [None]
        # ...and says so, rather than reading as a family without a gate.
        assert [family["gate_at_merge"] for family in report["families"]] == [0.85]
        markdown = Path(report["output_dir"], "report.md").read_text(encoding="utf-8")
        assert "min_pass_rate 0.85 judged by eb merge" in markdown
        page = Path(report["output_dir"], "report.html").read_text(encoding="utf-8")
        assert "judged by eb merge (min_pass_rate 0.85)" in page
        shards.append(report)
    split = [set(_statuses(report)) for report in shards]
    assert split[0] and split[1] and not split[0] & split[1]
    assert split[0] | split[1] == {f"fam[c{n}]" for n in range(8)}
    merged = eb("merge", "--cwd", str(root), "--json", *(r["output_dir"] for r in shards))
    assert merged.exit_code == 0, merged.stderr
    merged_report = json.loads(merged.stdout)
    assert merged_report["families"][0]["cases"] == 8
    assert merged_report["families"][0]["min_pass_rate"] == 0.85
    assert merged_report["families"][0]["gate_held"] is True
    # Another row fails now (6/8): the family gate (0.85) fails the run, and diff names it.
    (root / "data/rows.jsonl").write_text(
        rows.replace(
            '"id": "c3", "name": "n3", "ok": "yes"', '"id": "c3", "name": "n3", "ok": "no"'
        )
    )
    code, head = _run(eb, root)
    assert code == 1
    assert head["families"][0]["gate_held"] is False
    diff = eb(
        "diff",
        "--cwd",
        str(root),
        "--format",
        "json",
        merged_report["output_dir"],
        head["output_dir"],
    )
    assert diff.exit_code == 1
    found = json.loads(diff.stdout)
    assert "fam[c3]" in json.dumps(found["regressions"])
    assert "fam[c2]" not in json.dumps(found["regressions"])


def test_family_gate_fails_a_run_the_threshold_alone_passes(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    rows = "".join(
        json.dumps({"name": f"n{n}", "ok": "no" if n == 0 else "yes"}) + "\n" for n in range(10)
    )
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl")
    root = project(
        {"eval_checks/fam.yaml": family + "min_pass_rate: 0.95\n", "data/rows.jsonl": rows},
        config=CONFIG + "[core]\npass_threshold = 0.8\n",
    )
    code, report = _run(eb, root)
    assert report["meets_threshold"] is True
    assert code == 1 and report["run_passed"] is False
    assert report["families"][0]["pass_rate"] == pytest.approx(0.9)
    assert report["families"][0]["gate_held"] is False
    run_dir = Path(report["output_dir"])
    assert "min_pass_rate 0.95 NOT held" in (run_dir / "report.md").read_text()
    assert report["families"][0]["of_cases"] is None  # every case ran
    # `eb stage score` says why too: "(met)" and "Passed: no" alone told nothing of the gate.
    scored = eb("stage", "score", "--cwd", str(root), "--run-dir", str(run_dir))
    assert scored.exit_code == 1
    assert "Pass threshold: 0.8 (met)" in scored.stdout
    said = "Family fam: 9/10 cases passed (90.0%), min_pass_rate 0.95 NOT held: the run fails"
    assert said in scored.stdout.splitlines(), scored.stdout
    # The same family at a gate it reaches passes.
    (root / "eval_checks/fam.yaml").write_text(family + "min_pass_rate: 0.9\n")
    code, report = _run(eb, root)
    assert code == 0 and report["families"][0]["gate_held"] is True


def test_a_family_gate_over_only_skipped_cases_is_not_measured(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # Every case skipped: 0 of 0 passed was told as "0.0%, min_pass_rate 0.9 held".
    rows = "".join(
        json.dumps({"name": f"n{n}", "ok": "yes", "skip": "upstream is down"}) + "\n"
        for n in range(2)
    )
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl") + "min_pass_rate: 0.9\n"
    root = project(
        {
            "eval_checks/fam.yaml": family,
            "eval_checks/ok.yaml": check_yaml("ok"),
            "data/rows.jsonl": rows,
        },
        config=CONFIG,
    )
    done = eb("run", "--cwd", str(root))
    assert done.exit_code == 0, done.stdout  # skipping is the user's call: the run stands
    said = (
        "Family fam: no case ran (every one selected was skipped), min_pass_rate 0.9 not measured"
    )
    assert said in done.stdout
    run_dir = next(root.glob(".eval-banana/results/*"))
    # No rate was measured either: a 0.0% would read as every case failing.
    said = "| `fam` | 0 | 0 | 0 | 0 | - | min_pass_rate 0.9 not measured: no case ran |"
    assert said in (run_dir / "report.md").read_text()
    page = (run_dir / "report.html").read_text()
    assert "not measured: no case ran (min_pass_rate 0.9)" in page and "held (min" not in page
    assert re.search(r">fam</button></td><td class=\"num\">-</td>", page)
    # Against a run where the cases ran, the diff says the gate went unmeasured.
    (root / "data/rows.jsonl").write_text(rows.replace(', "skip": "upstream is down"', ""))
    assert eb("run", "--cwd", str(root)).exit_code == 0
    head = max(root.glob(".eval-banana/results/*"), key=lambda run: run.stat().st_mtime)
    diffed = eb("diff", str(head), str(run_dir))
    assert "min_pass_rate 0.9 held -> not measured" in diffed.stdout, diffed.stdout
    assert "(100.0%) -> 0/0 (-)" in diffed.stdout, diffed.stdout


def test_a_family_the_selection_ran_part_of_says_how_much(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """`--last-failed`, `--check-id` or `-k` run part of a family: its pass rate and gate are
    those of the cases that ran, and every report says how many of the family's cases those
    were, so a gate 'NOT held' over the one failing case is not read as the family's."""
    rows = "".join(
        json.dumps({"name": f"n{n}", "ok": "no" if n == 0 else "yes"}) + "\n" for n in range(10)
    )
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl") + "min_pass_rate: 0.8\n"
    root = project({"eval_checks/fam.yaml": family, "data/rows.jsonl": rows}, config=CONFIG)
    code, report = _run(eb, root)
    assert code == 1 and report["families"][0]["of_cases"] is None
    done = eb("run", "--cwd", str(root), "--last-failed")
    assert done.exit_code == 1
    line = "Family fam: 0/1 cases passed (0.0%; 1 of its 10 cases selected), min_pass_rate 0.8"
    assert line in done.stdout
    picked = [flag for n in (2, 3, 4) for flag in ("--check-id", f"fam[{n:02d}]")]
    code, report = _run(eb, root, *picked)
    (family_score,) = report["families"]
    assert (family_score["cases"], family_score["of_cases"]) == (3, 10)
    assert family_score["gate_held"] is True
    run_dir = Path(report["output_dir"])
    assert "| `fam` | 3 of 10 (selected) | 3 |" in (run_dir / "report.md").read_text()
    assert '<td class="num">3 of 10 (selected)</td>' in (run_dir / "report.html").read_text()
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    assert plan["family_sizes"] == {"fam": 10}


def test_a_family_a_stopped_run_ran_part_of_counts_only_the_cases_that_ran(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """`-x` stops after the first failed case: the nine never started were counted as errored
    in the family, its pass rate and its gate, while the run's summary said 0 errored."""
    rows = "".join(
        json.dumps({"name": f"n{n}", "ok": "no" if n == 0 else "yes"}) + "\n" for n in range(10)
    )
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl") + "min_pass_rate: 0.8\n"
    root = project({"eval_checks/fam.yaml": family, "data/rows.jsonl": rows}, config=CONFIG)
    done = eb("run", "--cwd", str(root), "-x", "--max-parallel-checks", "1")
    assert done.exit_code == 1, done.stderr
    line = "Family fam: 0/1 cases passed (0.0%; 1 of its 10 cases ran), min_pass_rate 0.8 NOT held"
    assert line in done.stdout
    run_dir = next(root.glob(".eval-banana/results/*"))
    report = json.loads((run_dir / "report.json").read_text())
    (family_score,) = report["families"]
    counted = {key: family_score[key] for key in ("cases", "failed", "errored", "not_run")}
    assert counted == {"cases": 1, "failed": 1, "errored": 0, "not_run": 9}
    assert family_score["of_cases"] == 10 and family_score["gate_held"] is False
    assert (
        "| `fam` | 1 of 10 (9 not run) | 0 | 1 | 0 | 0.0% |" in (run_dir / "report.md").read_text()
    )
    # report.html says it too: `1 of 10` alone read as a selection of one case.
    assert '<td class="num">1 of 10 (9 not run)</td>' in (run_dir / "report.html").read_text()
    # The score stage counts the cases never started as the run's summary does.
    scored = eb("stage", "score", "--run-dir", str(run_dir))
    assert "Checks: 0 passed, 1 failed, 0 errored, 9 not run" in scored.stdout, scored.stdout
    # A run that stopped before any case of the family: no case ran, and nothing was measured.
    (root / "eval_checks/a.yaml").write_text(
        check_yaml("a_first", script="import sys; sys.exit(1)")
    )
    done = eb("run", "--cwd", str(root), "-x", "--max-parallel-checks", "1")
    said = (
        "Family fam: no case ran (the run stopped before any of its 10 cases), "
        "min_pass_rate 0.8 not measured"
    )
    assert said in done.stdout, done.stdout


ASSERTIONS_FAMILY = """\
schema_version: 1
id: answers
type: assertions
description: "answer for {{ case.question }}"
cases_from: data/qa.csv
artifact: "out/{{ case.question }}.json"
assert:
  - path: answer
    op: equals
    value: "{{ case.answer }}"
"""


def test_assertions_family_over_a_csv(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {
            "eval_checks/answers.yaml": ASSERTIONS_FAMILY,
            "data/qa.csv": 'question,answer\ncapital,Paris\nriver,"Seine, the"\nsea,Med\n',
            "out/capital.json": '{"answer": "Paris"}',
            "out/river.json": '{"answer": "Seine, the"}',
            "out/sea.json": '{"answer": "Atlantic"}',
        },
        config=CONFIG,
    )
    code, report = _run(eb, root)
    assert code == 1
    assert _statuses(report) == {
        "answers[1]": "passed",
        "answers[2]": "passed",
        "answers[3]": "failed",
    }


PRICES_FAMILY = """\
schema_version: 1
id: prices
type: assertions
description: "price of {{ case.sku }}"
cases_from: data/prices.json
artifact: out/prices.json
assert:
  - path: "prices.{{ case.sku }}"
    op: equals
    value: "{{ case.price }}"
"""


_THREE_ASSERTIONS = """\
schema_version: 1
id: {check_id}
type: assertions
description: d
artifact: out.json
{cases}assert:
  - {{path: one, op: exists}}
  - {{path: "{second}", op: exists}}
  - {{path: one, op: equals, value: 1}}
"""


def test_a_single_check_and_a_family_number_an_assertion_alike(
    project: Callable[..., Path],
) -> None:
    # The same bad second assertion: a single check's error and a family row's name it
    # `assert.1`, counted from 0 as eb's field paths count (a family said `assert[2]`).
    root = project(
        {
            "eval_checks/single.yaml": _THREE_ASSERTIONS.format(
                check_id="single", cases="", second="fig["
            ),
            "eval_checks/fam.yaml": _THREE_ASSERTIONS.format(
                check_id="fam", cases="cases_from: data/a.csv\n", second="{{ case.q }}"
            ),
            "data/a.csv": "id,q\nn1,\n",
            "out.json": '{"one": 1}',
        },
        config=CONFIG,
    )
    validated = eb_process(root, "validate", "--json")
    assert validated.returncode == 2
    errors = json.loads(validated.stdout)["errors"]
    single = next(error for error in errors if error["file"].endswith("single.yaml"))
    family = next(error for error in errors if error["file"] == "data/a.csv")
    assert single["field_path"] == "assertions.assert.1.exists.path"
    assert family["message"] == (
        "data/a.csv line 2: case 'n1': assert.1.path: invalid path '': the path is empty"
    )
    assert "change assert.1.path in the check file" in family["hint"]
    assert family["field_path"] == "cases"  # the row, where it is told
    told = eb_process(root, "validate").stderr
    assert "assertions.assert.1.exists.path (line 8, column 12)" in told
    assert "case 'n1': assert.1.path: " in told and "assert[" not in told


def test_an_assertions_path_names_the_cases_key(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """`path` takes placeholders too: each case reads its own key of one shared artifact, and
    a row whose value makes no valid path is a definition error at that row."""
    rows = [{"sku": "apple", "price": 1.2}, {"sku": "pear", "price": 0.8}]
    root = project(
        {
            "eval_checks/prices.yaml": PRICES_FAMILY,
            "data/prices.json": json.dumps(rows),
            "out/prices.json": '{"prices": {"apple": 1.2, "pear": 0.9}}',
        },
        config=CONFIG,
    )
    code, report = _run(eb, root)
    assert code == 1
    assert _statuses(report) == {"prices[1]": "passed", "prices[2]": "failed"}
    failed = next(c for c in report["checks"] if c["check_id"] == "prices[2]")
    assert "prices.pear equals 0.8" in failed["reason"], failed["reason"]

    rows.append({"sku": "", "price": 2})
    (root / "data/prices.json").write_text(json.dumps(rows))
    error = _the_validate_error(eb, root)
    assert error["message"] == (
        "data/prices.json item 3: case '3': assert.0.path: invalid path 'prices.': "
        "empty segment after the last '.' at character 7"
    )
    assert error["file"] == "data/prices.json"
    assert "fix the row, or change assert.0.path in the check file" in error["hint"]


def test_a_rows_value_in_a_path_is_one_key_or_one_index_never_path_syntax(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A sku `v1.2`, `c[1]` or `d[*]` filled into `prices.{{ case.sku }}` addressed the key `2`
    under `v1`, an element of `c`, any element of `d`: each case passed against a price that
    was not its own. Each such row is now a definition error at the row, naming the field."""
    root = project(
        {
            "eval_checks/prices.yaml": PRICES_FAMILY.replace("data/prices.json", "data/rows.csv"),
            "data/rows.csv": "id,sku,price\nok,apple,1\ndotted,v1.2,10\n"
            "indexed,c[1],7\nstar,d[*],9\n",
            "out/prices.json": json.dumps(
                {
                    "prices": {"apple": "1", "v1.2": "99", "v1": {"2": "10"}, "c[1]": "5"}
                    | {"c": ["0", "7"], "d[*]": "0", "d": ["1", "9"]}
                }
            ),
        },
        config=CONFIG,
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2, validated.stdout
    errors = json.loads(validated.stdout)["errors"]
    assert [error["message"].split("/eval_checks/")[-1] for error in errors] == [
        f"prices.yaml: case '{case}' (data/rows.csv line {line}): assert.0.path: "
        f"field 'sku' is '{sku}', which a path cannot name as one key: '.' separates keys and "
        "'[' ']' enclose an index, so it would address another place in the artifact"
        for case, line, sku in (("dotted", 3, "v1.2"), ("indexed", 4, "c[1]"), ("star", 5, "d[*]"))
    ]
    assert {error["file"] for error in errors} == {"data/rows.csv"}
    assert {error["field_path"] for error in errors} == {"case.sku"}
    assert all("cannot address a key holding '.'" in error["hint"] for error in errors)
    assert eb("run", "--cwd", str(root)).exit_code == 2  # no case passes against another price

    # An index a row fills is a whole number: `*` or `0].x` would be path syntax too.
    (root / "eval_checks/prices.yaml").write_text(
        PRICES_FAMILY.replace("data/prices.json", "data/rows.csv").replace(
            "prices.{{ case.sku }}", "c[{{ case.sku }}]"
        )
    )
    (root / "data/rows.csv").write_text("id,sku,price\nok,1,7\nstar,*,9\n")
    error = _the_validate_error(eb, root)
    assert error["message"].split("/eval_checks/")[-1] == (
        "prices.yaml: case 'star' (data/rows.csv line 3): assert.0.path: "
        "field 'sku' is '*', not a whole number, where the path takes an index"
    )
    assert "write [*] in assert.0.path itself" in error["hint"]


_AROUND_A_PLACEHOLDER = """\
schema_version: 1
id: {check_id}
type: assertions
description: d
{cases}artifact: out/a.json
assert:
  - {{path: greeting, op: equals, value: "{greeting}  "}}
  - path: line
    op: equals
    value: |
      {city}
  - {{path: n, op: lengthAtLeast, value: "{least}"}}
"""


def test_text_around_a_placeholder_in_a_value_is_kept_as_a_single_check_keeps_it(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """`value: "{{ case.name }}  "` and a block `value: |` holding `{{ case.city }}` were taken
    as exactly one placeholder: the spaces and the block's newline were dropped and the case
    passed, where the single check written with the same text fails. Only a value that is
    exactly one placeholder, byte for byte, takes the field's own value."""
    root = project(
        {
            "eval_checks/fam.yaml": _AROUND_A_PLACEHOLDER.format(
                check_id="fam",
                cases="cases:\n  - {id: ada, name: Hello Ada, city: Paris, least: 1}\n",
                greeting="{{ case.name }}",
                city="{{ case.city }}",
                least="{{ case.least }}",
            ),
            "eval_checks/single.yaml": _AROUND_A_PLACEHOLDER.format(
                check_id="single", cases="", greeting="Hello Ada", city="Paris", least="1"
            ).replace('value: "1"', "value: 1"),
            "out/a.json": '{"greeting": "Hello Ada", "line": "Paris", "n": [1]}',
        },
        config=CONFIG,
    )
    code, report = _run(eb, root)
    assert code == 1
    assert _statuses(report) == {"fam[ada]": "failed", "single": "failed"}
    reasons = {check["check_id"]: check["reason"] for check in report["checks"]}
    assert reasons["fam[ada]"] == reasons["single"], reasons
    assert 'greeting equals "Hello Ada  "' in reasons["fam[ada]"]
    assert 'line equals "Paris\\n"' in reasons["fam[ada]"]


_KEYED = """\
schema_version: 1
id: f
type: assertions
description: "row {{ case.id }}"
cases:
  - {id: r1, k: apple}
artifact: out/a.json
assert:
  - {path: stock, op: equals, value: {"{{ case.k }}": 1}}
"""


def test_a_placeholder_in_a_mapping_values_key_is_filled_and_a_stray_one_refused(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A mapping value's keys were neither filled nor checked: `{"{{ case.k }}": 1}` stayed
    literal (and passed against an artifact holding that text), `{"{{ k }}": 1}` validated."""
    root = project(
        {"eval_checks/f.yaml": _KEYED, "out/a.json": '{"stock": {"apple": 1}}'},
        config=CONFIG,
    )
    code, report = _run(eb, root)
    assert (code, _statuses(report)) == (0, {"f[r1]": "passed"})
    (root / "out/a.json").write_text('{"stock": {"{{ case.k }}": 1}}')
    code, report = _run(eb, root)
    assert (code, _statuses(report)) == (1, {"f[r1]": "failed"})

    (root / "eval_checks/f.yaml").write_text(_KEYED.replace("case.k", "k"))
    error = _the_validate_error(eb, root)
    assert error["message"].endswith(
        "f.yaml: assert.0.value: '{{ k }}' is no {{ case.<field> }} placeholder: write "
        "{{ case.k }} (no filters, loops or code; write {{{{ for a literal {{)"
    )


def test_a_placeholder_in_a_check_without_cases_is_a_definition_error(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """Nothing fills `{{ case.x }}` in a single check: its value was compared as literal text,
    and its path looked up the key `{{ case`."""
    single = _KEYED.replace("cases:\n  - {id: r1, k: apple}\n", "").replace(
        "row {{ case.id }}", "one check"
    )
    root = project(
        {"eval_checks/s.yaml": single, "out/a.json": '{"stock": {"{{ case.k }}": 1}}'},
        config=CONFIG,
    )
    error = _the_validate_error(eb, root)
    assert error["message"].endswith(
        "s.yaml: assert.0.value: '{{ case.k }}' is a dataset placeholder, but this check has "
        "no cases: nothing fills it, and it would be taken as the literal text (line 7, column 38)"
    )
    assert error["field_path"] == "assertions.assert.0.equals.value"
    assert "give the check cases: or cases_from:" in error["hint"]
    assert eb("run", "--cwd", str(root)).exit_code == 2

    (root / "eval_checks/s.yaml").write_text(
        single.replace(
            '{path: stock, op: equals, value: {"{{ case.k }}": 1}}',
            '{path: "{{ case.b }}", op: exists}',
        )
    )
    error = _the_validate_error(eb, root)
    assert "s.yaml: assert.0.path: '{{ case.b }}' is a dataset placeholder" in error["message"]
    assert error["field_path"] == "assertions.assert.0.exists.path"

    # A judge's prose is sent as written, as eval-banana 0.5.0 sent it: it may talk about
    # templates in this very syntax.
    (root / "eval_checks/s.yaml").write_text(
        "schema_version: 1\nid: s\ntype: harness_judge\n"
        "description: 'the template fills {{ case.name }}'\n"
        "instructions: 'Score 1 when the prompt template uses {{ case.name }} once.'\n"
    )
    validated = eb(
        "validate", "--cwd", str(root), "--harness-agent", "claude", "--allow-missing-agent"
    )
    assert validated.exit_code == 0, validated.stderr


_TEMPLATE_ROWS = """\
schema_version: 1
id: tpl
type: assertions
description: "template answer {{ case.id }}"
cases_from: data/prompts.jsonl
artifact: "{{ case.file }}"
assert:
  - {path: "{{ case.id }}", op: equals, value: "{{ case.expected }}"}
"""


def test_a_row_holding_placeholder_text_is_compared_as_written(
    project: Callable[..., Path],
) -> None:
    """A prompt-template dataset's row holds `{{ case.name }}` as text: filled into an
    assertion's value (or its artifact path), the case was validated again as a check without
    cases and refused ("'{{ case.name }}' is a dataset placeholder, but this check has no
    cases"), by eb validate, eb run, and by eb update and eb stage reading the plan back."""
    rows = [
        {"id": "greet", "expected": "Hello {{ case.name }}", "file": "out/{{ case.id }}.json"},
        {"id": "bye", "expected": "Bye {{ case.name }}", "file": "out/{{ case.id }}.json"},
    ]
    root = project(
        {
            "eval_checks/tpl.yaml": _TEMPLATE_ROWS,
            "data/prompts.jsonl": "".join(json.dumps(row) + "\n" for row in rows),
            # The artifact path is the row's text too, braces and all.
            "out/{{ case.id }}.json": json.dumps(
                {"greet": "Hello {{ case.name }}", "bye": "Bye Ada"}
            ),
        },
        config=CONFIG,
    )
    validated = eb_process(root, "validate")
    assert validated.returncode == 0, validated.stderr
    ran = eb_process(root, "run", "--json")
    assert ran.returncode == 1, ran.stderr
    # Compared as written: the template text equals itself, and is never filled with a name.
    assert _statuses(json.loads(ran.stdout)) == {"tpl[greet]": "passed", "tpl[bye]": "failed"}
    # The plan read back (a case's definition checked as validate could have written it).
    status = eb_process(root, "status")
    assert status.returncode == 0, status.stdout
    scored = eb_process(root, "stage", "score")
    assert (scored.returncode, scored.stderr) == (1, "")
    # A placeholder the check file itself writes in a check without cases is still refused.
    single = _TEMPLATE_ROWS.replace("cases_from: data/prompts.jsonl\n", "").replace(
        "id: tpl", "id: single"
    )
    (root / "eval_checks/single.yaml").write_text(single)
    refused = eb_process(root, "validate")
    assert refused.returncode == 2
    assert "artifact: '{{ case.file }}' is a dataset placeholder" in refused.stdout + refused.stderr


TYPED_PRICES = PRICES_FAMILY.replace("data/prices.json", "data/prices.csv") + (
    "case_schema:\n"
    "  type: object\n"
    "  properties:\n"
    "    price: {type: number}\n"
    "    stock: {type: [integer, 'null']}\n"
    "    sale: {type: boolean}\n"
)


def test_a_csv_familys_cells_take_the_types_its_case_schema_gives_their_fields(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A spreadsheet's prices are text in its CSV, and text never equals the artifact's
    number; typed in case_schema, they are read as numbers (integers, booleans, null)."""
    csv_text = "sku,price,stock,sale\napple,1.2,3,TRUE\npear,0.8,,false\nfig,2,7,no\n"
    root = project(
        {
            "eval_checks/prices.yaml": TYPED_PRICES,
            "data/prices.csv": csv_text,
            "out/prices.json": '{"prices": {"apple": 1.2, "pear": 0.9, "fig": 2}}',
        },
        config=CONFIG,
    )
    # `no` is no boolean: the schema tells that row, at its line and field.
    error = _the_validate_error(eb, root)
    assert error["message"] == (
        "data/prices.csv line 4: case '3' does not match case_schema at sale: 'no' is not of "
        "type 'boolean'"
    )
    (root / "data/prices.csv").write_text(csv_text.replace(",no\n", ",false\n"))
    code, report = _run(eb, root)
    assert code == 1
    assert _statuses(report) == {
        "prices[1]": "passed",
        "prices[2]": "failed",
        "prices[3]": "passed",
    }
    failed = next(c for c in report["checks"] if c["check_id"] == "prices[2]")
    assert failed["reason"].endswith("prices.pear equals 0.8: found the number 0.9")
    plan = json.loads(next(root.glob(".eval-banana/results/*/stages/plan.json")).read_text())
    cases = {check["id"]: check["case"] for check in plan["checks"]}
    assert cases["prices[1]"] == {"sku": "apple", "price": 1.2, "stock": 3, "sale": True}
    assert cases["prices[2]"] == {"sku": "pear", "price": 0.8, "stock": None, "sale": False}

    # A typed cell is a number in text too: the fix is not "write it as text", which the CSV
    # already does and the schema was added to undo.
    described = TYPED_PRICES.replace(
        '"price of {{ case.sku }}"', '"{{ case.sku }} at {{ case.price }}"'
    )
    (root / "eval_checks/prices.yaml").write_text(described)
    told = eb("validate", "--cwd", str(root), "--json")
    assert told.exit_code == 2
    hints = {error["hint"] for error in json.loads(told.stdout)["errors"]}
    assert hints == {
        "case_schema types price, so its cells are read as values, not text, and a placeholder "
        "inside text takes a text field: take {{ case.price }} out of description, or give the "
        "rows a text column of their own for it"
    }, hints

    # Without the schema the same cells are text, and the reason says how to type them.
    (root / "eval_checks/prices.yaml").write_text(TYPED_PRICES.split("case_schema:")[0])
    code, report = _run(eb, root)
    assert code == 1 and set(_statuses(report).values()) == {"failed"}
    apple = next(c for c in report["checks"] if c["check_id"] == "prices[1]")
    assert "give field price a number type in the family's case_schema" in apple["reason"]


def test_a_typed_csv_number_too_large_to_read_is_told_with_a_fix_a_csv_can_take(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """`1e400` read as a number is Infinity: "quote the value" cannot help in a CSV, where a
    quote is syntax and the quoted cell reads the same."""
    csv_text = 'sku,price,stock,sale\napple,1e400,3,TRUE\npear,"-1e400",,false\n'
    root = project(
        {"eval_checks/prices.yaml": TYPED_PRICES, "data/prices.csv": csv_text}, config=CONFIG
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    told = [
        (e["line"], e["field_path"], e["message"], e["hint"])
        for e in json.loads(validated.stdout)["errors"]
    ]
    assert told == [
        (
            line,
            "price",
            f"data/prices.csv line {line}: field price holds the number {cell}, beyond the "
            "largest number a program reads from JSON (about 1.8e308): read, it would be "
            f"{infinity}, which JSON cannot say",
            "write a smaller number, or type price as string in case_schema to keep the cell as "
            "text",
        )
        for line, cell, infinity in ((2, "1e400", "Infinity"), (3, "-1e400", "-Infinity"))
    ]


def test_a_number_too_close_to_zero_to_read_is_told_at_its_row_and_field_in_every_format(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """`1e-400` read as a number is 0.0, which nobody wrote: a JSONL or JSON row, a YAML row
    and a typed CSV cell are each a definition error at the row and field, with the fix; a
    zero written with an exponent (`0e-999`) and a small number a program reads stay as
    they are."""
    root = project(
        {
            "eval_checks/prices.yaml": PRICES_FAMILY.replace(".json", ".jsonl", 1),
            "eval_checks/p_json.yaml": PRICES_FAMILY.replace("id: prices", "id: p_json"),
            "eval_checks/p_yaml.yaml": PRICES_FAMILY.replace("id: prices", "id: p_yaml").replace(
                "prices.json", "prices.yaml", 1
            ),
            "eval_checks/p_csv.yaml": TYPED_PRICES.replace("id: prices", "id: p_csv"),
            "data/prices.jsonl": '{"sku": "a", "price": 1e-400}\n'
            '{"sku": "b", "price": 0e-999}\n{"sku": "c", "price": {"was": [-2.5E-330]}}\n'
            '{"sku": "d", "price": 5e-324}\n',
            "data/prices.json": '[{"sku": "a", "price": 1e-400}]',
            "data/prices.yaml": "- {sku: a, price: 1.0e-400}\n",
            "data/prices.csv": "sku,price,stock,sale\napple,1e-400,3,TRUE\n",
        },
        config=CONFIG,
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    told = {
        (e["file"], e["line"], e["field_path"]): e for e in json.loads(validated.stdout)["errors"]
    }
    assert sorted(told) == [
        ("data/prices.csv", 2, "price"),
        ("data/prices.json", 1, "price"),
        ("data/prices.jsonl", 1, "price"),
        ("data/prices.jsonl", 3, "price.was.0"),
        ("data/prices.yaml", 1, "price"),
    ]
    jsonl = told[("data/prices.jsonl", 1, "price")]
    assert jsonl["message"] == (
        "data/prices.jsonl line 1: field price holds the number 1e-400, below the smallest "
        "number a program reads from JSON (about 5e-324): read, it would be 0"
    )
    assert jsonl["hint"] == "write 0 if zero is meant, or quote the number to keep it as text"
    assert (
        "holds the number -2.5E-330, below"
        in told[("data/prices.jsonl", 3, "price.was.0")]["message"]
    )
    csv = told[("data/prices.csv", 2, "price")]
    assert "field price holds the number 1e-400, below the smallest number" in csv["message"]
    assert csv["hint"] == (
        "write 0 if zero is meant, or type price as string in case_schema to keep the cell as text"
    )


def test_an_assertions_familys_cases_run_one_after_another_whatever_the_parallelism(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """Assertions run in eb's own process: four threads on them only contend for Python's
    interpreter lock (10,000 cases took 1.8 times as long), so they run one at a time while
    the checks that wait on a child process keep every worker."""
    rows = [{"sku": f"s{index}", "price": index} for index in range(80)]
    prices = {row["sku"]: row["price"] for row in rows}
    root = project(
        {
            "eval_checks/prices.yaml": PRICES_FAMILY,
            "data/prices.json": json.dumps(rows),
            "out/prices.json": json.dumps({"prices": prices}),
        },
        config=CONFIG + "[core]\nmax_parallel_checks = 4\n",
    )
    code, report = _run(eb, root, "--cache", "off")
    assert code == 0
    spans = sorted((check["started_at"], check["completed_at"]) for check in report["checks"])
    assert len(spans) == 80
    overlapping = [
        (earlier, later)
        for earlier, later in zip(spans, spans[1:], strict=False)
        if later[0] < earlier[1]
    ]
    assert overlapping == []


def test_an_index_and_a_length_can_come_from_the_row(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A placeholder may stand for an index in a path (a whole number from the row) and for the
    number `lengthAtLeast` compares with: the family is checked with stand-ins, each case as
    filled in, so a row's text where a number goes is an error at that row."""
    family = (
        "schema_version: 1\nid: lens\ntype: assertions\n"
        "description: tag counts\nartifact: out.json\n"
        "cases:\n  - {i: 0, least: 1}\n  - {i: 1, least: 3}\n"
        "assert:\n"
        '  - {path: "items[{{ case.i }}].tags", op: lengthAtLeast, value: "{{ case.least }}"}\n'
    )
    artifact = '{"items": [{"tags": ["a"]}, {"tags": ["b", "c"]}]}'
    root = project({"eval_checks/lens.yaml": family, "out.json": artifact}, config=CONFIG)
    code, report = _run(eb, root)
    assert code == 1
    assert _statuses(report) == {"lens[1]": "passed", "lens[2]": "failed"}
    failed = next(c for c in report["checks"] if c["check_id"] == "lens[2]")
    assert "items[1].tags lengthAtLeast 3: length is 2" in failed["reason"], failed["reason"]

    (root / "eval_checks/lens.yaml").write_text(family.replace("least: 3", "least: '3'"))
    error = _the_validate_error(eb, root)
    assert error["message"].endswith(
        "cases item 2 (line 8): case '2': assert.0.value: value must be a whole number, not "
        "the text '3'"
    )
    assert (error["field_path"], error["line"]) == ("cases.1", 8)


def test_the_published_schema_takes_a_familys_index_and_length_placeholders() -> None:
    """An editor validating check files against schemas/check.schema.json must not mark the
    family above; what the schema cannot know (is this file a family?) `eb validate` judges."""
    import jsonschema
    import yaml

    schema = json.loads((REPO / "schemas" / "check.schema.json").read_text())
    family = yaml.safe_load(
        "schema_version: 1\nid: lens\ntype: assertions\ndescription: d\nartifact: out.json\n"
        "cases: [{i: 0, least: 1}]\n"
        "assert:\n"
        '  - {path: "items[{{ case.i }}].tags", op: lengthAtLeast, value: "{{ case.least }}"}\n'
        '  - {path: "prices.{{ case.sku }}", op: lengthAtMost, value: 3}\n'
    )
    jsonschema.validate(family, schema)
    for path, value in (("items[x].tags", 1), ("items[0]", "three"), ("items[0]", -1)):
        family["assert"][0] |= {"path": path, "value": value}
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(family, schema)


BAD_INPUTS = {
    "empty file": ({"data/rows.jsonl": ""}, "cases_from: data/rows.jsonl", "has no cases"),
    "glob matching nothing": ({}, "cases_from: 'data/*.jsonl'", "has no cases"),
    "missing file": ({}, "cases_from: data/none.jsonl", "does not exist"),
    "row not a mapping": (
        {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n[1, 2]\n'},
        "cases_from: data/rows.jsonl",
        "data/rows.jsonl line 2: a case must be a mapping of field names to values, not a list",
    ),
    "duplicate inline id": (
        {},
        "cases:\n  - {id: a, name: x, ok: 'yes'}\n  - {id: a, name: y, ok: 'yes'}",
        "cases item 2 (line 7): duplicate case id 'a' (first at",
    ),
    "duplicate id": (
        {"data/rows.json": json.dumps([{"id": "a", "name": "x", "ok": "yes"}] * 2)},
        "cases_from: data/rows.json",
        "duplicate case id 'a'",
    ),
    "a folder": (
        {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n'},
        "cases_from: data",
        "is a folder, not a file",
    ),
    "invalid case schema": (
        {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n'},
        "cases_from: data/rows.jsonl\ncase_schema: {properties: {ok: {type: strin}}}",
        "at properties.ok.type: 'strin' is not one of",
    ),
    "ragged csv": (
        {"data/rows.csv": "name,ok\na,yes\nb,yes,extra\n"},
        "cases_from: data/rows.csv",
        "data/rows.csv row at line 3 has 3 cells; the header has 2",
    ),
    "empty yaml": (
        {"data/rows.yaml": "# the rows come later\n"},
        "cases_from: data/rows.yaml",
        "has no cases (cases_from 'data/rows.yaml' gives none)",
    ),
    "a mapping, not a list": (
        {"data/rows.yaml": "name: a\nok: 'yes'\n"},
        "cases_from: data/rows.yaml",
        "must hold a YAML list of cases, not a mapping",
    ),
    "boolean id": (
        {"data/rows.yaml": "- {id: true, name: a, ok: 'yes'}\n"},
        "cases_from: data/rows.yaml",
        "case id true is a boolean; an id is text of ASCII letters, digits, '_', '-', '.' (or a "
        'whole number from 0): quote it ("true") if that is what you meant',
    ),
    # "is not letters" about 'café' was untrue: which character, and that letters are ASCII.
    "an id with a letter outside ASCII": (
        {"data/rows.jsonl": '{"id": "caf\u00e9", "name": "a", "ok": "yes"}\n'},
        "cases_from: data/rows.jsonl",
        "case id 'café' holds 'é'; an id is text of ASCII letters, digits, '_', '-', '.'",
    ),
    "an id with a space": (
        {"data/rows.jsonl": '{"id": "refund 1", "name": "a", "ok": "yes"}\n'},
        "cases_from: data/rows.jsonl",
        "case id 'refund 1' holds a space; an id is text of ASCII letters",
    ),
    "a glob matching a file that is no dataset": (
        {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n', "data/README.md": "# rows\n"},
        "cases_from: 'data/*'",
        "eval_checks/fam.yaml matches data/README.md, which is not a dataset",
    ),
    "a url": (
        {},
        "cases_from: https://example.com/rows.jsonl",
        "'https://example.com/rows.jsonl' is a URL; a dataset is read from the project",
    ),
    "semicolon csv": (
        {"data/rows.csv": "name;ok\na;yes\nb;no\n"},
        "cases_from: data/rows.csv",
        "data/rows.csv is separated by semicolons, not commas: its header row is one column "
        "named 'name;ok'",
    ),
    "not utf-8": (
        {},
        "cases_from: data/rows.jsonl",
        "is not UTF-8",
    ),
    "missing field": (
        {"data/rows.jsonl": '{"ok": "yes"}\n'},
        "cases_from: data/rows.jsonl",
        "the case has no field 'name'",
    ),
    "case schema": (
        {"data/rows.jsonl": '{"name": "a", "ok": "maybe"}\n'},
        "cases_from: data/rows.jsonl\ncase_schema: {properties: {ok: {enum: ['yes', 'no']}}}",
        "does not match case_schema at ok",
    ),
    # A name with a line break (a pull request can add one) started lines of its own in every
    # message about its rows: in a GitHub Actions log, a workflow command.
    "a dataset file whose name holds a line break": (
        {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n', "data/x\n::warning::y.jsonl": "{}\n"},
        "cases_from: 'data/*.jsonl'",
        "matches data/x\\x0a::warning::y.jsonl, whose name has a control character",
    ),
    # What a spreadsheet or an old editor leaves in a file, told as what it is (it was "a
    # header row with an empty column name" and "not JSON: Extra data").
    "excel's delimiter line": (
        {"data/rows.csv": "sep=,\nname,ok\na,yes\n"},
        "cases_from: data/rows.csv",
        "data/rows.csv starts with Excel's delimiter line 'sep=,', not a header row naming",
    ),
    # A blank first line: the header check read the first cell of a row of none (IndexError).
    "a csv that starts with a blank line": (
        {"data/rows.csv": "\n\nname,ok\na,yes\n"},
        "cases_from: data/rows.csv",
        "Dataset data/rows.csv starts with a blank line, not a header row naming the fields",
    ),
    "a csv of blank lines alone": (
        {"data/rows.csv": "\n\n"},
        "cases_from: data/rows.csv",
        "has no cases (cases_from 'data/rows.csv' gives none)",
    ),
    "a header that ends with a comma": (
        {"data/rows.csv": "name,ok,\na,yes,\n"},
        "cases_from: data/rows.csv",
        "data/rows.csv has a header row whose column 3 has no name (the header ends with a comma)",
    ),
    # YAML 1.1 reads these plain words and numbers as other values than YAML 1.2 (and every
    # editor) does: a zero-padded id became the octal number 8, Norway's code the boolean false.
    "a yaml id read as an octal number": (
        {"data/rows.yaml": "- {name: a, ok: 'yes'}\n- {id: 010, name: b, ok: 'yes'}\n"},
        "cases_from: data/rows.yaml",
        "Dataset data/rows.yaml line 2: '010' reads as the octal number 8 in YAML 1.1",
    ),
    "a yaml word read as a boolean": (
        {"data/rows.yaml": "- name: a\n  ok: 'yes'\n  country: NO\n"},
        "cases_from: data/rows.yaml",
        "Dataset data/rows.yaml line 3: 'NO' reads as the boolean false in YAML 1.1, which eb's "
        "YAML reader follows: write false, or quote it ('NO') to keep the text",
    ),
    "an inline case's id read as an octal number": (
        {},
        "cases:\n  - {id: a, name: x, ok: 'yes'}\n  - {id: 010, name: y, ok: 'yes'}",
        "fam.yaml cases (line 7): '010' reads as the octal number 8 in YAML 1.1",
    ),
    "a yaml time read as a base-60 number": (
        {"data/rows.yaml": "- {name: a, ok: 'yes', wait: 1:30}\n"},
        "cases_from: data/rows.yaml",
        "'1:30' reads as the base-60 number 90 in YAML 1.1",
    ),
    # A whole number longer than Python reads (int() refuses it): a traceback before.
    "a yaml number longer than python reads": (
        {"data/rows.yaml": "- name: a\n  ok: 'yes'\n  n: " + "9" * 5000 + "\n"},
        "cases_from: data/rows.yaml",
        "Dataset data/rows.yaml line 3: a whole number longer than 4,300 digits, which eb does "
        "not read",
    ),
    # The same in YAML 1.1's other forms, which read at any length: JSON could not write the
    # number, and the row was refused naming neither it nor its field.
    "a yaml hexadecimal number longer than python writes": (
        {"data/rows.yaml": "- name: a\n  ok: 'yes'\n  n: 0x" + "f" * 4000 + "\n"},
        "cases_from: data/rows.yaml",
        "Dataset data/rows.yaml line 3: a whole number longer than 4,300 digits, which eb does "
        "not read",
    ),
    "a json number longer than python reads": (
        {"data/rows.json": '[{"name": "a", "ok": "yes",\n  "n": ' + "9" * 5000 + "}]"},
        "cases_from: data/rows.json",
        "Dataset data/rows.json line 2: a whole number longer than 4,300 digits",
    ),
    "a jsonl number longer than python reads": (
        {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n{"name": "b", "n": ' + "9" * 5000 + "}\n"},
        "cases_from: data/rows.jsonl",
        "Dataset data/rows.jsonl line 2: a whole number longer than 4,300 digits",
    ),
    "a typed csv cell longer than python reads": (
        {"data/rows.csv": "name,ok,n\na,yes," + "9" * 5000 + "\n"},
        "cases_from: data/rows.csv\ncase_schema: {properties: {n: {type: integer}}}",
        # Quoted by its start and length, not in full.
        "does not match case_schema at n: '999999999999999999999999999999999999999999999999999999"
        "99999… (5,000 characters) is not of type 'integer'",
    ),
    "yaml rows written as documents": (
        {"data/rows.yaml": "---\nname: a\nok: 'yes'\n---\nname: b\nok: 'no'\n"},
        "cases_from: data/rows.yaml",
        "Dataset data/rows.yaml holds 2 YAML documents (separated by ---), not one list of cases",
    ),
    "jsonl lines ended by a carriage return alone": (
        {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\r{"name": "b", "ok": "yes"}\r'},
        "cases_from: data/rows.jsonl",
        "data/rows.jsonl line 1 holds several lines ended by a carriage return alone",
    ),
    # A $ref the schema cannot resolve on its own was a traceback from jsonschema; eb never
    # fetches one from the network or another file.
    "a case schema referring outside itself": (
        {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n'},
        "cases_from: data/rows.jsonl\n"
        "case_schema: {properties: {ok: {$ref: 'https://example.com/ok.json'}}}",
        "at properties.ok.$ref: 'https://example.com/ok.json' refers outside the schema",
    ),
    "a case schema referring to nothing": (
        {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n'},
        "cases_from: data/rows.jsonl\ncase_schema: {properties: {ok: {$ref: '#/$defs/no'}}}",
        "fam.yaml: '#/$defs/no' points to nothing in the schema",
    ),
    # Nesting a parser, an encoder or eb's own read-back would run out of stack on (a
    # RecursionError traceback, or a run folder eb then refuses to read), told at its line.
    "a jsonl line nested too deep": (
        {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n{"name": "b", "ok": ' + DEEP + "}\n"},
        "cases_from: data/rows.jsonl",
        "Dataset data/rows.jsonl line 2 is nested deeper than 200 levels",
    ),
    "a json list nested too deep": (
        {"data/rows.json": "[" + DEEP + "]"},
        "cases_from: data/rows.json",
        "Dataset data/rows.json is nested deeper than 200 levels",
    ),
    "a yaml list nested too deep": (
        {"data/rows.yaml": "- name: a\n  ok: " + "[" * 300 + "]" * 300 + "\n"},
        "cases_from: data/rows.yaml",
        "Dataset data/rows.yaml is nested deeper than 200 levels",
    ),
    # A few lines of YAML aliases that stand for millions of values (a bomb), or for a value
    # that holds itself: refused before anything walks them, as in a check file.
    "a yaml alias bomb": (
        {"data/rows.yaml": ALIAS_BOMB_ROWS},
        "cases_from: data/rows.yaml",
        "Dataset data/rows.yaml: its YAML aliases (*name) expand to more than",
    ),
    "a yaml row that holds itself": (
        {"data/rows.yaml": "- &row {name: a, ok: 'yes', again: [*row]}\n"},
        "cases_from: data/rows.yaml",
        "Dataset data/rows.yaml: its YAML aliases (*name) make a value contain itself",
    ),
    "a yaml row with a key twice": (
        {"data/rows.yaml": "- {name: a, ok: 'yes'}\n- name: b\n  ok: 'yes'\n  ok: 'no'\n"},
        "cases_from: data/rows.yaml",
        "Dataset data/rows.yaml item 2 (line 2) is a row with a duplicate key 'ok' at line 4",
    ),
    # The csv module reads a quote that is never closed as a cell running to the end of the
    # file: the rows after it were gone, and that row had the header's two cells.
    "a csv quote never closed": (
        {"data/rows.csv": 'name,ok\na,yes\nb,"yes\nc,no\nd,no\n'},
        "cases_from: data/rows.csv",
        "Dataset data/rows.csv row at line 3 opens a quoted cell that is never closed: the 3 "
        "lines from there to the end of the file would be read as that one cell",
    ),
    "a csv quote closed rows later": (
        {"data/rows.csv": 'name,ok\na,"yes\nb,no\nc,"no"\nd,yes\n'},
        "cases_from: data/rows.csv",
        "Dataset data/rows.csv row at line 2 has text after the closing quote of a quoted "
        "cell: line 4 is 'c,\"no\"'",
    ),
    "a csv quote never closed on the last line": (
        {"data/rows.csv": 'name,ok\na,yes\n"b,yes'},
        "cases_from: data/rows.csv",
        "Dataset data/rows.csv row at line 3 opens a quoted cell that is never closed",
    ),
    # json keeps a repeated key's last value silently: the case would be judged on one of two
    # values its author wrote, so JSON rows are held to YAML's rule (at any depth).
    "a jsonl row with a key twice": (
        {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n{"name": "b", "ok": "yes", "ok": "no"}\n'},
        "cases_from: data/rows.jsonl",
        "Dataset data/rows.jsonl line 2 has a row with a duplicate key 'ok'",
    ),
    "a json row with a nested key twice": (
        {
            "data/rows.json": '[{"name": "a", "ok": "yes"},\n {"name": "b", "ok": "yes",\n  "meta": {"k": 1,\n   "k": 2}}]'
        },
        "cases_from: data/rows.json",
        "Dataset data/rows.json item 2 (line 2) is a row with a duplicate key 'k'",
    ),
    # JSON Lines in a file named .json: "Extra data" said nothing of the fix (rename it).
    "json lines in a .json file": (
        {"data/rows.json": '{"name": "a", "ok": "yes"}\n\n{"name": "b", "ok": "yes"}\n'},
        "cases_from: data/rows.json",
        "Dataset data/rows.json holds one JSON object per line (JSON Lines), not one list",
    ),
    # PyYAML's own words placed this at `"<unicode string>", line 1, column 1`.
    "a yaml row indented out of line": (
        {"data/rows.yaml": "- name: a\n  ok: 'yes'\n- name: b\n ok: 'yes'\n"},
        "cases_from: data/rows.yaml",
        "Dataset data/rows.yaml is not valid YAML: line 4, column 2: did not find expected '-' "
        "indicator (while parsing a block collection at line 1, column 1)",
    ),
    # Invisible in a viewer: "Extra data: line 1 column 29" pointed at nothing to see.
    "a .json file with a nul after its list": (
        {"data/rows.json": '[{"name": "a", "ok": "yes"}]\x00\n'},
        "cases_from: data/rows.json",
        "Dataset data/rows.json is not JSON: it holds a NUL character (U+0000) at line 1 column "
        "29, which a viewer does not show",
    ),
    # One object and a stray bracket is no JSON Lines: the parser's own words stand.
    "a .json file that opens with one object": (
        {"data/rows.json": '{"name": "a", "ok": "yes"}\n]\n'},
        "cases_from: data/rows.json",
        "Dataset data/rows.json is not JSON: Extra data: line 2 column 1",
    ),
}


# What a path says when it names no file, and what a glob says when it matches none.
_MISSING = " does not exist"
_EMPTY = "has no cases"


@pytest.mark.parametrize(
    ("files", "written", "told", "hint"),
    [
        (
            {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n'},
            "data/rows.json",
            _MISSING,
            "did you mean data/rows.jsonl? (cases_from is relative to the project root)",
        ),
        (
            {"eval_checks/data/rows.jsonl": '{"name": "a", "ok": "yes"}\n'},
            "data/rows.jsonl",
            _MISSING,
            "cases_from is relative to the project root, not to the check file: write "
            "eval_checks/data/rows.jsonl",
        ),
        ({}, "data/rows.jsonl", _MISSING, "cases_from is relative to the project root; fix"),
        # A glob matching no file was always "add rows to the dataset or fix cases_from".
        (
            {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n'},
            "dta/*.jsonl",
            _EMPTY,
            "dta/ does not exist: did you mean data/*.jsonl? (cases_from is relative to the",
        ),
        (
            {"eval_checks/data/rows.jsonl": '{"name": "a", "ok": "yes"}\n'},
            "data/*.jsonl",
            _EMPTY,
            "cases_from is relative to the project root, not to the check file: write "
            "eval_checks/data/*.jsonl",
        ),
        # A project-root data/ of the same name hid the slip behind "add rows".
        (
            {
                "data/README.md": "# Other data\n",
                "eval_checks/data/rows.jsonl": '{"name": "a", "ok": "yes"}\n',
            },
            "data/*.jsonl",
            _EMPTY,
            "cases_from is relative to the project root, not to the check file: write "
            "eval_checks/data/*.jsonl (it matches eval_checks/data/rows.jsonl)",
        ),
        (
            {"data/rows.jsonl": '{"name": "a", "ok": "yes"}\n'},
            "data/*.jsnl",
            _EMPTY,
            ".jsnl is no dataset suffix: did you mean data/*.jsonl?",
        ),
        ({"data/rows.jsonl": ""}, "data/*.jsonl", _EMPTY, "add rows to the dataset or fix"),
        # A file whose name holds `[` named as it is: read as a glob, it matched nothing and
        # the family was "empty" without a word on the escape.
        (
            {"data/rows[1].jsonl": '{"name": "a", "ok": "yes"}\n'},
            "data/rows[1].jsonl",
            _EMPTY,
            "data/rows[1].jsonl is a file, but `*`, `?` and `[` are glob characters: write "
            "data/rows[[]1].jsonl to name it",
        ),
    ],
)
def test_a_dataset_source_that_names_no_file_says_which_one_was_meant(
    files: dict[str, str],
    written: str,
    told: str,
    hint: str,
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
) -> None:
    source = f'cases_from: "{written}"'
    root = project({"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=source), **files})
    error = _the_validate_error(eb, root)
    assert told in error["message"], error
    if told == _MISSING:
        assert error["message"].startswith(f"Dataset {written} named by cases_from in ")
    assert error["hint"].startswith(hint), error


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_datasets_are_definition_errors(
    case: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    files, source, expected = BAD_INPUTS[case]
    root = project(
        {"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=source), **files}, config=CONFIG
    )
    if case == "not utf-8":
        (root / "data").mkdir(exist_ok=True)
        (root / "data/rows.jsonl").write_bytes(b'{"name": "a", "ok": "yes"}\n{"name": "\xff"}\n')
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    document = json.loads(validated.stdout)
    assert any(expected in error["message"] for error in document["errors"]), document
    ran = eb("run", "--cwd", str(root))
    assert ran.exit_code == 2 and expected in ran.stderr
    assert not list((root / ".eval-banana").glob("results/*/report.json"))


def test_a_dataset_path_that_names_a_fifo_says_what_it_is(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # It exists, so "does not exist" sent the user looking for a typo.
    root = project(
        {"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl")},
        config=CONFIG,
    )
    (root / "data").mkdir()
    os.mkfifo(root / "data" / "rows.jsonl")
    error = _the_validate_error(eb, root)
    assert error["message"].endswith(
        "data/rows.jsonl named by cases_from in "
        + str(root / "eval_checks" / "fam.yaml")
        + " is not a regular file (a FIFO)"
    ), error


@pytest.mark.parametrize("kind", ["a FIFO", "a symbolic link to nothing"])
def test_a_glob_that_matches_what_is_not_a_regular_file_says_so(
    kind: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # It was left out without a word: the family ran with fewer cases than its files hold.
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: 'data/*.jsonl'"),
            "data/a.jsonl": '{"name": "a", "ok": "yes"}\n',
        },
        config=CONFIG,
    )
    odd = root / "data" / "b.jsonl"
    if kind == "a FIFO":
        os.mkfifo(odd)
    else:
        odd.symlink_to(root / "data" / "gone.jsonl")
    error = _the_validate_error(eb, root)
    assert error["message"].endswith(
        f"matches data/b.jsonl, which is not a regular file ({kind})"
    ), error
    assert error["field_path"] == "cases_from"
    ran = eb("run", "--cwd", str(root))
    assert ran.exit_code == 2 and "data/b.jsonl, which is not a regular file" in ran.stderr


def test_every_ambiguous_yaml_value_of_a_file_is_told_in_one_pass(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # A team exporting ids and country codes meets the first `NO` and the next only after
    # fixing it: each is told at its line, and a whole column of them as one error.
    few = (
        "- {id: 010, name: a, ok: 'yes'}\n- {name: b, ok: 'yes', country: NO}\n"
        # YAML 1.2 and JSON read a number here, YAML 1.1 (PyYAML) the text '1e3'; the quoted
        # one and 1.1's own spelling are no problem.
        "- {name: c, ok: 'yes', price: 1e3, code: '2e5', size: 1.0e+3}\n"
    )
    many = "".join(f"- {{name: n{i}, ok: 'yes', country: no}}\n" for i in range(12))
    inline = "cases:\n  - {id: 07, name: x, ok: 'yes'}\n  - {name: y, ok: 'yes', wait: 1:30}"
    # Text to YAML 1.1 (no boolean or number in the loaded rows), 493 to YAML 1.2.
    text_only = "cases:\n  - {name: z, ok: 'yes', mode: 0o755}"
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/few.yaml"),
            "eval_checks/many.yaml": SCRIPT_FAMILY.format(
                source="cases_from: data/many.yaml"
            ).replace("id: fam", "id: many"),
            "eval_checks/own.yaml": SCRIPT_FAMILY.format(source=inline).replace(
                "id: fam", "id: own"
            ),
            "eval_checks/text.yaml": SCRIPT_FAMILY.format(source=text_only).replace(
                "id: fam", "id: text"
            ),
            "data/few.yaml": few,
            "data/many.yaml": many,
        },
        config=CONFIG,
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    told = [
        (error["file"], error["line"], error["message"])
        for error in json.loads(validated.stdout)["errors"]
    ]
    few_told = [(line, message) for file, line, message in told if file.endswith("few.yaml")]
    assert few_told == [
        (
            1,
            "Dataset data/few.yaml line 1: '010' reads as the octal number 8 in YAML 1.1, "
            "which eb's YAML reader follows: write the number without its leading zeros, or quote "
            "it ('010') to keep the text",
        ),
        (
            2,
            "Dataset data/few.yaml line 2: 'NO' reads as the boolean false in YAML 1.1, which "
            "eb's YAML reader follows: write false, or quote it ('NO') to keep the text",
        ),
        (
            3,
            "Dataset data/few.yaml line 3: '1e3' reads as text in YAML 1.1, which eb's YAML "
            "reader follows, where YAML 1.2 reads a number: write 1000.0 for the number, "
            "or quote it ('1e3') to keep the text",
        ),
    ]
    many_told = [(line, message) for file, line, message in told if file.endswith("many.yaml")]
    assert len(many_told) == 1 and many_told[0][0] == 1, many_told
    assert (
        "and 11 more plain values YAML 1.1 reads otherwise, the last at line 12: 'no'"
        in (many_told[0][1])
    )
    own_told = [(line, message) for file, line, message in told if file.endswith("own.yaml")]
    assert [line for line, _ in own_told] == [6, 7], own_told
    assert "'07' reads as the octal number 7" in own_told[0][1]
    assert "'1:30' reads as the base-60 number 90" in own_told[1][1]
    assert [
        (line, message.split(": ", 1)[1]) for file, line, message in told if "text" in file
    ] == [
        (
            6,
            "'0o755' reads as text in YAML 1.1, which eb's YAML reader follows, where YAML 1.2 "
            "reads a number: write 493 for the number, or quote it ('0o755') to keep the text",
        )
    ]


@pytest.mark.parametrize(
    ("source", "told"),
    [
        ("'data/*'", "matches data/README.md, which is not a dataset"),
        ("data/missing.jsonl", "does not exist"),
    ],
)
def test_a_cases_from_problem_is_told_at_its_line_in_the_check_file(
    source: str, told: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """The glob or path in the check file is what to fix: the error names that file, and
    its line and column, for an editor to jump to."""
    family = "# Rows of the support tickets.\n" + SCRIPT_FAMILY.format(
        source=f"cases_from: {source}"
    )
    root = project(
        {
            "eval_checks/fam.yaml": family,
            "data/rows.jsonl": '{"name": "a", "ok": "yes"}\n',
            "data/README.md": "# rows\n",
        },
        config=CONFIG,
    )
    (error,) = json.loads(eb("validate", "--cwd", str(root), "--json").stdout)["errors"]
    assert told in error["message"] and error["file"].endswith("eval_checks/fam.yaml")
    assert (error["field_path"], error["line"], error["column"]) == ("cases_from", 6, 1)


def test_validate_reports_every_bad_row_in_one_pass(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    rows = '{"name": "a", "ok": "yes"}\n"text"\n{"id": "x", "name": "b"}\n{"id": "x"}\n7\n'
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl"),
            "data/rows.jsonl": rows,
        },
        config=CONFIG,
    )
    document = json.loads(eb("validate", "--cwd", str(root), "--json").stdout)
    lines = sorted(error["line"] for error in document["errors"])
    assert lines == [2, 4, 5]
    assert {error["file"] for error in document["errors"]} == {"data/rows.jsonl"}


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_a_row_that_repeats_a_key_does_not_hide_the_other_bad_rows_of_a_list_file(
    project: Callable[..., Path], eb: Callable[..., EbResult], fmt: str
) -> None:
    """A repeated key in one row of a .json or .yaml file was the whole file's one error,
    hiding every other bad row; it is a problem of its row, as a .jsonl line's is."""
    rows = [
        '{"id": "a b", "name": "a", "ok": "yes"}',
        '{"id": "c", "name": "c", "ok": "yes"}',
        '{"id": "c", "name": "d", "ok": "yes"}',
        '{"id": "e", "name": "e", "ok": "yes", "ok": "no"}',
        '{"id": "f", "name": "f", "ok": "yes", "meta": {"k": 1,\n  "k": 2}}',
    ]
    text = "[" + ",\n".join(rows) + "]\n" if fmt == "json" else "".join(f"- {r}\n" for r in rows)
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=f"cases_from: data/rows.{fmt}"),
            f"data/rows.{fmt}": text,
        },
        config=CONFIG,
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2, validated.stdout
    errors = json.loads(validated.stdout)["errors"]
    assert [(error["line"], error["message"].split(": ")[0]) for error in errors] == [
        (1, f"data/rows.{fmt} item 1 (line 1)"),  # bad id
        (3, f"data/rows.{fmt} item 3 (line 3)"),  # duplicate id c
        (4, f"Dataset data/rows.{fmt} item 4 (line 4) is a row with a duplicate key 'ok'"),
        (
            5 if fmt == "json" else 6,
            f"Dataset data/rows.{fmt} item 5 (line 5) is a row with a "
            "duplicate key 'k'" + (" at line 6" if fmt == "yaml" else ""),
        ),
    ], errors


def test_rows_of_a_json_file_holding_an_escaped_emoji_are_told_at_their_lines(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """Python's json.dump writes an emoji as `\\ud83d\\ude00`, which YAML does not read: the
    lines of a .json file's rows were found by reading it as YAML, so its row problems (a
    repeated key, a bad id) named no line."""
    rows = [{"id": f"r{n}", "name": "smile \U0001f600", "ok": "yes"} for n in range(4)]
    rows[1]["id"] = "a b"
    text = json.dumps(rows, indent=2).replace('"id": "r3"', '"id": "r3", "ok": "no"')
    assert "\\ud83d\\ude00" in text
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.json"),
            "data/rows.json": text,
        },
        config=CONFIG,
    )
    errors = json.loads(eb("validate", "--cwd", str(root), "--json").stdout)["errors"]
    assert [(error["line"], error["message"].split(": ")[0]) for error in errors] == [
        (7, "data/rows.json item 2 (line 7)"),
        (17, "Dataset data/rows.json item 4 (line 17) is a row with a duplicate key 'ok'"),
    ], errors


def test_a_position_id_meeting_a_given_id_is_told_as_the_rows_position(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A row without an id is named by its position: when that is another row's given id, the
    error said "duplicate case id '2' ... rename one" at a row with no id field to rename."""
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl"),
            "data/rows.jsonl": '{"id": "2", "name": "a", "ok": "yes"}\n{"name": "b", "ok": "yes"}\n',
        },
        config=CONFIG,
    )
    error = _the_validate_error(eb, root)
    assert error["message"] == (
        "data/rows.jsonl line 2: case id '2' is this row's position (it has no id), which is "
        "also the id of the row at data/rows.jsonl line 1"
    )
    assert (error["line"], error["field_path"]) == (2, "cases"), error
    assert error["hint"] == "give this row an id (or the other row another one)"
    # The other way round: the row with the id comes second.
    (root / "data/rows.jsonl").write_text(
        '{"name": "a", "ok": "yes"}\n{"id": "1", "name": "b", "ok": "yes"}\n'
    )
    error = _the_validate_error(eb, root)
    assert error["message"] == (
        "data/rows.jsonl line 2: duplicate case id '1': the row at data/rows.jsonl line 1 has no "
        "id and is named by its position, which is this id"
    )
    assert (error["line"], error["field_path"]) == (2, "id"), error
    assert error["hint"] == "give the row at data/rows.jsonl line 1 an id, or this row another one"


@pytest.mark.parametrize(
    ("text", "told"),
    [
        # Two .jsonl files saved with a byte order mark, joined: the second's is on line 3.
        (
            '\ufeff{"id": "a", "name": "a", "ok": "yes"}\n{"id": "b", "name": "b", "ok": "yes"}\n'
            '\ufeff{"id": "c", "name": "c", "ok": "yes"}\n',
            "line 3 is not JSON: it holds a byte order mark (U+FEFF) at column 1",
        ),
        (
            '{"id": "a", "name": "a", "ok": "yes"}\x00\n',
            "line 1 is not JSON: it holds a NUL character (U+0000) at column 38",
        ),
    ],
)
def test_an_invisible_character_that_stops_a_jsonl_line_is_named(
    project: Callable[..., Path], eb: Callable[..., EbResult], text: str, told: str
) -> None:
    """A line that reads as JSON in any viewer was "not JSON: Expecting value at column 1"."""
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl"),
            "data/rows.jsonl": text,
        },
        config=CONFIG,
    )
    error = _the_validate_error(eb, root)
    assert error["message"] == f"Dataset data/rows.jsonl {told}, which a viewer does not show"


def test_validate_reports_unreadable_lines_with_the_other_rows_problems(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # A line that is not JSON, or a ragged CSV row, does not hide what is wrong elsewhere.
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source='cases_from: "data/*"'),
            "data/a.jsonl": '{"id": "x", "name": "a", "ok": "yes"}\n[1]\nnot json\n'
            '{"id": "x", "name": "b", "ok": "yes"}\n',
            "data/b.csv": "id,name,ok\ny,c,yes,extra\nz,d,yes\nz,e,no\n",
        },
        config=CONFIG,
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    found = [(error["file"], error["line"]) for error in json.loads(validated.stdout)["errors"]]
    assert found == [
        ("data/a.jsonl", 2),  # not a mapping
        ("data/a.jsonl", 3),  # not JSON
        ("data/a.jsonl", 4),  # duplicate id x
        ("data/b.csv", 2),  # ragged
        ("data/b.csv", 4),  # duplicate id z
    ]


def test_a_bad_check_file_does_not_hide_its_datasets_bad_rows(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # The file's own problem and every bad row in one pass: fixing the file must not reveal a
    # second list. A valid family over the same dataset does not make its rows told twice.
    broken = SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl").replace(
        "id: fam\n", "id: fam\ntimeout_seconds: 5\n"
    )
    sibling = SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl").replace(
        "id: fam\n", "id: twin\n"
    )
    rows = '{"id": "a", "name": "a", "ok": "yes"}\n[1]\nnot json\n{"id": "a", "name": "b"}\n'
    root = project({"eval_checks/fam.yaml": broken, "data/rows.jsonl": rows}, config=CONFIG)
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    errors = json.loads(validated.stdout)["errors"]
    assert [(Path(e["file"]).name, e["line"]) for e in errors] == [
        ("fam.yaml", 3),  # timeout_seconds: no key of a check
        ("rows.jsonl", 2),  # not a mapping
        ("rows.jsonl", 3),  # not JSON
        ("rows.jsonl", 4),  # duplicate id a
    ]
    (root / "eval_checks" / "twin.yaml").write_text(sibling)
    twice = json.loads(eb("validate", "--cwd", str(root), "--json").stdout)["errors"]
    assert [(Path(e["file"]).name, e["line"]) for e in twice] == [
        ("fam.yaml", 3),
        ("rows.jsonl", 2),
        ("rows.jsonl", 3),
        ("rows.jsonl", 4),
    ]


def test_a_typo_in_the_familys_text_is_one_error_not_one_per_row(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    rows = "".join(
        json.dumps({"id": f"r{n}", "name": f"n{n}", "ok": "yes"}) + "\n" for n in range(50)
    )
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl").replace(
        "case.name", "case.nmae"
    )
    root = project({"eval_checks/fam.yaml": family, "data/rows.jsonl": rows}, config=CONFIG)
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    errors = json.loads(validated.stdout)["errors"]
    assert len(errors) == 1, errors
    message = errors[0]["message"]
    assert (
        "50 of 50 cases: description: the case has no field 'nmae' (did you mean 'name'?)"
        in message
    )
    assert "case 'r0' (data/rows.jsonl line 1)" in message
    assert "case 'r49' (data/rows.jsonl line 50)" in message
    assert errors[0]["file"].endswith("eval_checks/fam.yaml") and errors[0]["line"] is None
    assert errors[0]["field_path"] == "case.nmae"
    # The console says it once too.
    assert eb("validate", "--cwd", str(root)).stderr.count("has no field") == 1


def test_a_few_rows_missing_a_field_are_each_named_at_their_line(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    rows = '{"name": "a", "ok": "yes"}\n{"ok": "yes"}\n{"name": "c", "ok": "no"}\n{"ok": "no"}\n'
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl"),
            "data/rows.jsonl": rows,
        },
        config=CONFIG,
    )
    errors = json.loads(eb("validate", "--cwd", str(root), "--json").stdout)["errors"]
    assert [(error["file"], error["line"]) for error in errors] == [
        ("data/rows.jsonl", 2),
        ("data/rows.jsonl", 4),
    ]
    assert all("the case has no field 'name'" in error["message"] for error in errors)


def test_a_placeholder_for_the_id_of_rows_named_by_their_place_says_why_it_is_empty(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # A CSV without an id column: each case is named by its place, which its script reads as
    # case_id, but `{{ case.id }}` reads the row's own field, which it has not.
    family = POSITIONAL_FAMILY.format(log="/dev/null").replace(
        'description: "row {{ case.q }}"', 'description: "row {{ case.id }}"'
    )
    root = project({"eval_checks/pos.yaml": family, "data/rows.csv": "q\na\nb\n"}, config=CONFIG)
    errors = json.loads(eb("validate", "--cwd", str(root), "--json").stdout)["errors"]
    assert [error["line"] for error in errors] == [2, 3]
    assert {error["hint"] for error in errors} == {
        "a row without an id field is named by its place (1, 2, ...), and a placeholder fills "
        "only the row's own fields: give the rows an id column, or take {{ case.id }} out of "
        "description"
    }


@pytest.mark.parametrize(
    ("placeholder", "told"),
    [
        # Written as the column is named: no placeholder can name it.
        (
            "{{ case.first name }}",
            "'{{ case.first name }}' is no {{ case.<field> }} placeholder: a placeholder cannot "
            "name the field 'first name', which holds a space: rename it in the dataset, for "
            "example to first_name",
        ),
        # Written as a placeholder can: "did you mean 'first name'?" led back to the above.
        (
            "{{ case.first_name }}",
            "the case has no field 'first_name' (a placeholder cannot name the field 'first "
            "name', which holds a space: rename it in the dataset, for example to first_name)",
        ),
    ],
)
def test_a_column_whose_name_holds_a_space_is_told_to_be_renamed(
    placeholder: str, told: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.csv").replace(
        "{{ case.name }}", placeholder
    )
    root = project(
        {"eval_checks/fam.yaml": family, "data/rows.csv": "id,first name,ok\na,Ada,yes\n"},
        config=CONFIG,
    )
    (error,) = json.loads(eb("validate", "--cwd", str(root), "--json").stdout)["errors"]
    assert told in error["message"], error


def test_a_placeholder_reaching_into_a_rows_value_says_it_cannot(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # `{{ case.who.name }}` over rows whose `who` is a mapping: "no field 'who.name'" alone
    # reads like a typo; the fix is a field of its own.
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl").replace(
        "case.name", "case.who.name"
    )
    root = project(
        {
            "eval_checks/fam.yaml": family,
            "data/rows.jsonl": '{"id": "a", "who": {"name": "Ada"}, "ok": "yes"}\n',
        },
        config=CONFIG,
    )
    error = _the_validate_error(eb, root)
    assert error["message"].endswith(
        "description: the case has no field 'who.name' ('who' is a mapping: a placeholder "
        "names one field of the row and cannot reach inside its value; give the row a field "
        "of its own for it)"
    ), error


def test_more_cases_than_max_cases_is_refused(
    project: Callable[..., Path], eb: Callable[..., EbResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = "".join(json.dumps({"name": f"n{n}", "ok": "yes"}) + "\n" for n in range(5))
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl"),
            "data/rows.jsonl": rows,
        },
        config=CONFIG,
    )
    assert eb("validate", "--cwd", str(root)).exit_code == 0
    monkeypatch.setenv("EVAL_BANANA_MAX_CASES", "4")
    validated = eb("validate", "--cwd", str(root))
    assert validated.exit_code == 2
    # Named where it was set: the variable, which no key of the config file shows.
    assert "has 5 cases, more than EVAL_BANANA_MAX_CASES (4)" in validated.stderr
    assert "or raise EVAL_BANANA_MAX_CASES" in validated.stderr
    monkeypatch.delenv("EVAL_BANANA_MAX_CASES")
    config_file = root / ".eval-banana" / "config.toml"
    config_file.write_text(config_file.read_text() + "[core]\nmax_cases = 4\n")
    validated = eb("validate", "--cwd", str(root))
    assert validated.exit_code == 2
    assert "has 5 cases, more than [core] max_cases (4)" in validated.stderr
    assert f"or raise [core] max_cases in {config_file}" in validated.stderr


def test_a_dataset_past_max_cases_is_counted_not_read(
    project: Callable[..., Path], eb: Callable[..., EbResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the limit a .jsonl or .csv file's lines are counted, not turned into cases (ten
    million rows would take gigabytes before being refused): what is wrong in them is not told,
    and a glob's later files are not read, so the count is a floor."""
    good = "".join(json.dumps({"name": f"n{n}", "ok": "yes"}) + "\n" for n in range(3))
    rows = good + "not json\n\n" + '{"name": "n9", "ok": "yes"}\n'
    cells = "name,ok\n" + "".join(f"n{n},yes\n" for n in range(3)) + "ragged\n" + "n9,yes\n"
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl"),
            "eval_checks/tab.yaml": SCRIPT_FAMILY.format(
                source="cases_from: data/rows.csv"
            ).replace("id: fam", "id: tab"),
            "eval_checks/both.yaml": SCRIPT_FAMILY.format(source="cases_from: 'data/*'").replace(
                "id: fam", "id: both"
            ),
            "data/rows.jsonl": rows,
            "data/rows.csv": cells,
        },
        config=CONFIG,
    )
    monkeypatch.setenv("EVAL_BANANA_MAX_CASES", "2")
    validated = eb("validate", "--cwd", str(root), "--json")
    told = sorted(error["message"] for error in json.loads(validated.stdout)["errors"])
    assert [re.sub(r" in \S+ has ", " has ", message) for message in told] == [
        "Family 'both' has at least 5 cases, more than EVAL_BANANA_MAX_CASES (2)",
        "Family 'fam' has 5 cases, more than EVAL_BANANA_MAX_CASES (2)",
        "Family 'tab' has 5 cases, more than EVAL_BANANA_MAX_CASES (2)",
    ], told
    assert not any("not JSON" in message or "cells" in message for message in told)


def test_position_ids_are_zero_padded_to_sort(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    rows = "".join(json.dumps({"name": f"n{n}", "ok": "yes"}) + "\n" for n in range(12))
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl"),
            "data/rows.jsonl": rows,
        },
        config=CONFIG,
    )
    ids = _selected(eb, root)
    assert ids[0] == "fam[01]" and ids[-1] == "fam[12]" and ids == sorted(ids)


def test_editing_one_row_changes_one_definition_digest(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    rows = [{"id": f"r{n}", "name": f"n{n}", "ok": "yes"} for n in range(4)]
    inline = "cases:\n" + "".join(f"  - {json.dumps(row)}\n" for row in rows)
    root = project({"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=inline)}, config=CONFIG)
    _, before = _run(eb, root)
    rows[2]["name"] = "changed"
    inline = "cases:\n" + "".join(f"  - {json.dumps(row)}\n" for row in rows)
    (root / "eval_checks/fam.yaml").write_text(SCRIPT_FAMILY.format(source=inline))
    _, after = _run(eb, root)
    digests = [
        {c["check_id"]: c["check_definition_sha256"] for c in report["checks"]}
        for report in (before, after)
    ]
    assert [key for key in digests[0] if digests[0][key] != digests[1][key]] == ["fam[r2]"]


# A deterministic family over a CSV without an id column: its cases are named by their place,
# and each one writes its id to a log outside the project (the project is its input state).
POSITIONAL_FAMILY = """\
schema_version: 1
id: pos
type: deterministic
description: "row {{{{ case.q }}}}"
cases_from: data/rows.csv
script: |
  import json, sys
  ctx = json.load(open(sys.argv[1]))
  with open({log!r}, "a") as log:
      log.write(ctx["case_id"] + "\\n")
  print("checked case", ctx["case_id"])
"""


def test_rows_named_by_their_place_keep_verdicts_of_their_own(
    project: Callable[..., Path], eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    # Two equal rows without ids are two cases, and a row that moved is another case: its
    # script reads its id. Each used to take the other's cache entry for a foreign one, with a
    # warning to delete the cache, and ran again on every run.
    log = tmp_path / "starts.log"
    root = project(
        {
            "eval_checks/pos.yaml": POSITIONAL_FAMILY.format(log=str(log)),
            "data/rows.csv": "q\nsame\nsame\nother\n",
        },
        config=CONFIG,
    )

    def starts() -> list[str]:
        result = eb("run", "--cwd", str(root), "--cache", "on")
        assert result.exit_code == 0, result.stderr
        assert "foreign" not in result.stderr and "warning: Cache" not in result.stderr
        ran = sorted(log.read_text().split()) if log.exists() else []
        log.unlink(missing_ok=True)
        return ran

    assert starts() == ["1", "2", "3"]
    assert starts() == []
    assert starts() == []
    # A row inserted first: the rows after it are named anew and run under their new names;
    # the row still at its place with the same text keeps its verdict.
    (root / "data/rows.csv").write_text("q\nnew\nsame\nsame\nother\n")
    assert starts() == ["1", "3", "4"]
    run_dir = max((root / ".eval-banana" / "results").iterdir())
    said = {stem.name: stem.read_text() for stem in (run_dir / "checks").glob("*.stdout.txt")}
    assert said and all(
        text.strip() == f"checked case {name.split('_')[1].split('-')[0]}"
        for name, text in said.items()
    ), said
    assert starts() == []


def test_eb_schema_prints_a_familys_row_schema(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    source = "cases:\n  - {name: a, ok: 'yes'}\ncase_schema: {required: [name, ok]}"
    root = project({"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=source)}, config=CONFIG)
    printed = eb("schema", "--case-schema", str(root / "eval_checks/fam.yaml"))
    assert printed.exit_code == 0
    from eval_banana.models.checkbase import CASE_ITEM_SCHEMA

    assert json.loads(printed.stdout) == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "required": ["name", "ok"],
        "allOf": [CASE_ITEM_SCHEMA],  # eb's own rules for a row's id, tags and skip
    }
    (root / "eval_checks/fam.yaml").write_text(SCRIPT_FAMILY.format(source="cases: [{name: a}]"))
    refused = eb("schema", "--case-schema", str(root / "eval_checks/fam.yaml"))
    assert refused.exit_code == 2 and "declares no case_schema" in refused.stderr
    by_id = eb("schema", "--case-schema", "fam")  # the family's id, not its file
    assert by_id.exit_code == 2
    assert "Cannot read check file fam: No such file or directory" in by_id.stderr
    assert "pass the family's check file" in by_id.stderr
    # The family's id given as a schema's name points at the flag that prints its rows' schema.
    as_name = eb("schema", "fam")
    assert as_name.exit_code == 2 and "Unknown schema 'fam'" in as_name.stderr
    assert "eb schema --case-schema eval_checks/fam.yaml" in as_name.stderr


def test_a_case_schema_naming_another_draft_is_refused_by_validate_and_eb_schema(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A draft-04 `$schema` was checked by 2020-12's rules by eb validate (`exclusiveMaximum:
    5` refused n=5) while eb schema printed it with the draft-04 `$schema`, by whose rules an
    editor accepted the row: both refuse it now."""
    source = (
        "cases: [{name: a, ok: 'yes', n: 5}]\ncase_schema:\n"
        "  $schema: 'http://json-schema.org/draft-04/schema#'\n"
        "  properties: {n: {type: number, maximum: 10, exclusiveMaximum: 5}}"
    )
    root = project({"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=source)}, config=CONFIG)
    error = _the_validate_error(eb, root)
    said = "at $schema: 'http://json-schema.org/draft-04/schema#' is not draft 2020-12"
    assert said in error["message"], error
    assert error["field_path"] == "case_schema.$schema", error
    printed = eb("schema", "--case-schema", str(root / "eval_checks/fam.yaml"), "--as-list")
    assert printed.exit_code == 2 and said in printed.stderr, printed
    assert printed.stdout == ""


def test_eb_schema_as_list_checks_a_whole_dataset_file(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """An editor validates a .yaml or .json dataset file as a whole: a list of rows, with the
    row schema's own definitions where its references point."""
    import jsonschema
    import yaml

    source = (
        "cases_from: data/rows.yaml\n"
        "case_schema:\n"
        "  $defs: {flag: {enum: ['yes', 'no']}}\n"
        "  required: [name, ok]\n"
        "  properties: {ok: {$ref: '#/$defs/flag'}}"
    )
    rows = "- {name: a, ok: 'yes'}\n- {name: b, ok: 'no'}\n"
    root = project(
        {"eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=source), "data/rows.yaml": rows},
        config=CONFIG,
    )
    printed = eb("schema", "--case-schema", str(root / "eval_checks/fam.yaml"), "--as-list")
    assert printed.exit_code == 0, printed.stderr
    schema = json.loads(printed.stdout)
    assert schema["type"] == "array" and "$defs" in schema["items"]
    jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(rows))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate([{"name": "c", "ok": "maybe"}])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate({"name": "a", "ok": "yes"})
    alone = eb("schema", "--as-list")
    assert alone.exit_code == 2 and "--as-list needs --case-schema" in alone.stderr


@pytest.mark.parametrize(
    "case_schema",
    [
        # A reference to another place of the row, and the row's own definitions.
        "{required: [answer], properties: {answer: {type: string, minLength: 1}, "
        "alt: {$ref: '#/properties/answer'}, kind: {$ref: '#/$defs/kind'}}, "
        "$defs: {kind: {enum: [a, b]}}}",
        # A recursive row: its parts are rows too.
        "{required: [answer], properties: {answer: {type: string, minLength: 1}, "
        "alt: {type: string, minLength: 1}, kind: {enum: [a, b]}, "
        "parts: {type: array, items: {$ref: '#'}}}}",
        # A row with an $id: a resource of its own, its references resolved against it.
        "{$id: 'https://example.invalid/row', required: [answer], properties: {answer: "
        "{$ref: '#/$defs/text'}, alt: {$ref: '#/$defs/text'}, kind: {enum: [a, b]}}, "
        "$defs: {text: {type: string, minLength: 1}}}",
    ],
)
def test_eb_schema_as_list_validates_each_row_as_eb_validate_does(
    case_schema: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """The list schema wraps the row schema under `items`: a reference to the row's own places
    (`#/properties/answer`, `#`, `#/$defs/...` beside an `$id`) still names them there."""
    import jsonschema

    rows = [
        {"id": "good", "answer": "x", "alt": "y", "kind": "a", "parts": [{"answer": "p"}]},
        {"id": "empty-alt", "answer": "x", "alt": ""},
        {"id": "bad-kind", "answer": "x", "kind": "c"},
        {"id": "bad-part", "answer": "x", "parts": [{"answer": ""}]},
    ]
    if "parts" not in case_schema:
        rows[3]["answer"] = ""  # fails the row schema without a recursive part
    rows = [{**row, "name": "n", "ok": "yes"} for row in rows]
    family = SCRIPT_FAMILY.format(source=f"cases_from: data/rows.json\ncase_schema: {case_schema}")
    root = project(
        {"eval_checks/fam.yaml": family, "data/rows.json": json.dumps(rows)}, config=CONFIG
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    refused = {error["message"].split("'")[1] for error in json.loads(validated.stdout)["errors"]}
    assert refused == {"empty-alt", "bad-kind", "bad-part"}, validated.stdout
    printed = eb("schema", "--case-schema", str(root / "eval_checks/fam.yaml"), "--as-list")
    assert printed.exit_code == 0, printed.stderr
    validator = jsonschema.Draft202012Validator(json.loads(printed.stdout))
    failing = {rows[error.absolute_path[0]]["id"] for error in validator.iter_errors(rows)}
    assert failing == refused


# A row eb validate refuses for its own id, tags or skip, whatever the family's schema says.
_BROKEN_CASE_FIELDS = [
    {"id": "a b"},
    {"id": -1},
    {"id": True},
    {"id": "café"},
    {"tags": "smoke, slow"},
    {"tags": [1]},
    {"tags": ""},
    {"skip": True},
    {"skip": False},
    {"skip": ""},
    {"skip": "FALSE"},
    {"skip": "0"},
    {"skip": "N/A"},
    {"skip": " - "},
]


@pytest.mark.parametrize(
    "case_schema",
    [
        "{required: [name, ok], properties: {name: {type: string}}}",
        # The family's own unevaluatedProperties: eb's rules must let through no field it bars.
        "{required: [name, ok], properties: {name: {type: string}, ok: {}, id: {}}, "
        "unevaluatedProperties: false}",
    ],
    ids=["open", "unevaluated"],
)
def test_eb_schema_case_schema_refuses_a_row_eb_validate_refuses_for_its_case_fields(
    case_schema: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """The printed schema held the family's case_schema alone: a row whose id, tags or skip eb
    validate refuses (`id: "a b"`, `skip: true`) passed in the editor."""
    import jsonschema

    good: list[dict[str, object]] = [{"id": "ok-1", "name": "n", "ok": "yes"}, {"id": 7}]
    refused = list(_BROKEN_CASE_FIELDS)
    if "unevaluated" in case_schema:
        # Fields eb's rules allow, which this family's schema bars: still refused.
        refused += [{"tags": ["fine"]}, {"skip": "flaky upstream"}]
    else:
        good += [{"tags": "smoke", "skip": None}, {"tags": ["a b", "c"], "skip": "flaky upstream"}]
    good = [{"name": "n", "ok": "yes", **row} for row in good]
    family = SCRIPT_FAMILY.format(source=f"cases_from: data/rows.json\ncase_schema: {case_schema}")
    files = {"eval_checks/fam.yaml": family, "data/rows.json": json.dumps(good)}
    root = project(files, config=CONFIG)
    assert eb("validate", "--cwd", str(root)).exit_code == 0
    for as_list in ([], ["--as-list"]):
        printed = eb("schema", "--case-schema", str(root / "eval_checks/fam.yaml"), *as_list)
        assert printed.exit_code == 0, printed.stderr
        validator = jsonschema.Draft202012Validator(json.loads(printed.stdout))
        assert [list(validator.iter_errors(row if not as_list else [row])) for row in good] == [
            []
        ] * len(good)
        for broken in refused:
            row = {"name": "n", "ok": "yes", **broken}
            assert not validator.is_valid(row if not as_list else [row]), broken
    for broken in refused:
        (root / "data/rows.json").write_text(json.dumps([{"name": "n", "ok": "yes", **broken}]))
        assert eb("validate", "--cwd", str(root)).exit_code == 2, broken


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_changed_since_selects_the_cases_whose_row_changed(
    fmt: str, tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    """A case reads its dataset through its own row, as its cache key does: an edited or added
    row selects its case alone, even where `inputs:` match the dataset; the family's check file
    changed, or a dataset file added beside it (ids by position may move), selects them all."""
    name, text = _dataset(fmt)
    family = SCRIPT_FAMILY.format(source="cases_from: 'data/*'") + "inputs: [src/**, data/**]\n"
    root = init_repo(
        tmp_path / "repo",
        {
            ".eval-banana/config.toml": CONFIG,
            "eval_checks/fam.yaml": family,
            f"data/{name}": text,
            "src/app.py": "print(1)\n",
        },
    )
    assert _selected(eb, root, "--changed-since", "HEAD") == []
    (root / "data" / name).write_text(text.replace("shipping", "shipping soon"))
    assert _selected(eb, root, "--changed-since", "HEAD") == ["fam[ship-1]"]
    added = {"id": "refund-3", "name": "refund three", "ok": "yes"}
    grown = _dataset_with(fmt=fmt, text=text, row=added)
    (root / "data" / name).write_text(grown)
    assert _selected(eb, root, "--changed-since", "HEAD") == ["fam[refund-3]"]
    (root / "src/app.py").write_text("print(2)\n")  # an input of every case
    assert _selected(eb, root, "--changed-since", "HEAD") == [*EXPECTED, "fam[refund-3]"]
    commit_all(root)
    (root / "eval_checks/fam.yaml").write_text(family + "# edited\n")
    assert _selected(eb, root, "--changed-since", "HEAD") == [*EXPECTED, "fam[refund-3]"]
    commit_all(root)
    (root / "data" / f"more.{fmt}").write_text(
        _dataset_with(fmt=fmt, text="", row={"id": "x", "name": "x", "ok": "yes"})
    )
    assert len(_selected(eb, root, "--changed-since", "HEAD")) == len(EXPECTED) + 2
    # A dataset git ignores: git cannot say whether a row changed, so every case is selected.
    (root / "data" / f"more.{fmt}").unlink()
    (root / ".gitignore").write_text(f"data/{name}\n")
    git(root, "rm", "-q", "--cached", f"data/{name}")
    (root / "eval_checks/fam.yaml").write_text(family.replace(", data/**", ""))
    commit_all(root)
    assert _selected(eb, root, "--changed-since", "HEAD") == [*EXPECTED, "fam[refund-3]"]


def test_changed_since_selects_every_case_when_a_dataset_file_of_a_glob_was_removed(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    # Removing a file the glob matched moves the ids by position (fam[04] becomes fam[1] ...),
    # yet it was in no list of the family's files now: --changed-since selected no case.
    family = SCRIPT_FAMILY.format(source="cases_from: 'data/*.jsonl'") + "inputs: [src/**]\n"
    rows = {
        "data/a.jsonl": '{"name": "a", "ok": "yes"}\n{"name": "b", "ok": "yes"}\n',
        "data/b.jsonl": '{"name": "c", "ok": "yes"}\n',
    }
    root = init_repo(
        tmp_path / "repo",
        {
            ".eval-banana/config.toml": CONFIG,
            "eval_checks/fam.yaml": family,
            "src/app.py": "print(1)\n",
            "data/notes.txt": "not a dataset the glob names\n",
            "other/c.jsonl": '{"name": "z", "ok": "yes"}\n',
            **rows,
        },
    )
    assert _selected(eb, root, "--changed-since", "HEAD") == []
    # Files the glob never named, removed: no case is affected.
    git(root, "rm", "-q", "data/notes.txt", "other/c.jsonl")
    assert _selected(eb, root, "--changed-since", "HEAD") == []
    git(root, "rm", "-q", "data/b.jsonl")
    assert _selected(eb, root, "--changed-since", "HEAD") == ["fam[1]", "fam[2]"]
    run = eb("run", "--cwd", str(root), "--cache", "off", "--changed-since", "HEAD")
    assert run.exit_code == 0 and "Score: 2/2" in run.stdout, run.stdout + run.stderr
    # Deleted from the work tree only (not staged) counts the same.
    commit_all(root)
    (root / "data" / "a.jsonl").write_text('{"name": "a", "ok": "yes"}\n')
    (root / "data" / "c.jsonl").write_text('{"name": "d", "ok": "yes"}\n')
    commit_all(root)
    (root / "data" / "c.jsonl").unlink()
    assert _selected(eb, root, "--changed-since", "HEAD") == ["fam[1]"]


def _dataset_with(*, fmt: str, text: str, row: dict[str, str]) -> str:
    """`text` of a .jsonl or .csv dataset with `row` appended (a header first, if it had none)."""
    if fmt == "jsonl":
        return text + json.dumps(row) + "\n"
    return (text or "id,name,ok\n") + f"{row['id']},{row['name']},{row['ok']}\n"


def test_eb_status_sees_a_family_as_current_until_a_row_changes(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    name, text = _dataset("jsonl")
    root = project(
        {
            "eval_checks/fam.yaml": SCRIPT_FAMILY.format(source=f"cases_from: data/{name}"),
            f"data/{name}": text,
        },
        config=CONFIG,
    )
    _run(eb, root)
    assert "stale" not in eb("status", "--cwd", str(root)).stdout
    (root / "data" / name).write_text(text.replace("shipping", "shipping soon"))
    status = eb("status", "--cwd", str(root)).stdout
    # The family's file is as it was: the reason is the case's own row, by name.
    assert f"(fam[ship-1]: row changed in data/{name})" in status
    updated = eb("update", "--cwd", str(root))
    assert f"rerun fam[ship-1]: row changed in data/{name}" in updated.stdout
    assert "1 of 3 checks to run again" in updated.stdout
    (root / "eval_checks" / "fam.yaml").write_text(
        SCRIPT_FAMILY.format(source=f"cases_from: data/{name}") + "tags: [edited]\n"
    )
    status = eb("status", "--cwd", str(root)).stdout
    assert (
        "(fam[refund-1], fam[refund-2], fam[ship-1]: eval_checks/fam.yaml or its dataset changed)"
        in status
    )


def test_eb_status_blames_a_familys_edited_script_not_its_check_file(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A family whose `script_path` script alone was edited is stale for that script, as a
    plain check is; its check file is named once it changes too."""
    name, text = _dataset("jsonl")
    script = 'import json, sys\nsys.exit(json.load(open(sys.argv[1]))["case"]["ok"] != "yes")\n'
    family = (
        "schema_version: 1\nid: fam\ntype: deterministic\ndescription: a family\n"
        f"cases_from: data/{name}\nscript_path: ../scripts/fam.py\n"
    )
    root = project(
        {"eval_checks/fam.yaml": family, f"data/{name}": text, "scripts/fam.py": script},
        config=CONFIG,
    )
    _run(eb, root)
    (root / "scripts" / "fam.py").write_text(script + "# edited\n")
    status = eb("status", "--cwd", str(root)).stdout
    assert "(fam[refund-1], fam[refund-2], fam[ship-1]: scripts/fam.py changed)" in status, status
    updated = eb("update", "--cwd", str(root))
    assert "rerun fam[ship-1]: scripts/fam.py changed" in updated.stdout, updated.stdout
    (root / "scripts" / "fam.py").write_text(script + "# edited again\n")
    (root / "eval_checks" / "fam.yaml").write_text(family + "tags: [edited]\n")
    status = eb("status", "--cwd", str(root)).stdout
    assert "fam[ship-1]: eval_checks/fam.yaml or its dataset changed)" in status, status


def test_eb_status_tells_a_digest_made_anew_from_a_changed_row(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # A run folder of an eb that framed a case's digest otherwise (rows without ids leave out
    # their place there) holds other digests for rows that are as they were: status must not
    # say the rows changed. The plan's recorded digests stand in for that older eb's.
    root = project(
        {
            "eval_checks/pos.yaml": POSITIONAL_FAMILY.format(log="/dev/null"),
            "data/rows.csv": "q\nsame\nother\n",
        },
        config=CONFIG,
    )
    _run(eb, root)
    run_dir = max((root / ".eval-banana" / "results").iterdir())
    plan_path = run_dir / "stages" / "plan.json"
    plan = json.loads(plan_path.read_text())
    plan["checks"][0]["check_definition_sha256"] = "sha256:" + "0" * 64
    plan_path.write_text(json.dumps(plan, indent=2))
    (root / "data" / "rows.csv").write_text("q\nsame\nchanged\n")
    status = eb("status", "--run-dir", str(run_dir)).stdout
    assert "(pos[1]: digest made anew by this eb version (the row is as it was)" in status
    assert "pos[2]: row changed in data/rows.csv" in status


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_row_added_to_a_dataset_makes_the_plan_stale_and_eb_update_runs_it(
    fmt: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """Each planned case is compared with its row, so a row only added is found by the family's
    size, which the plan records before any selection: `eb status` names the new cases,
    `eb update` plans and runs them alone, and a plan narrowed to some cases is stale by the
    count (then current again once rebuilt under its selection)."""
    name, text = _dataset(fmt)
    family = SCRIPT_FAMILY.format(source=f"cases_from: data/{name}")
    root = project({"eval_checks/fam.yaml": family, f"data/{name}": text}, config=CONFIG)
    _run(eb, root)
    dataset = root / "data" / name
    grown = _dataset_with(fmt=fmt, text=text, row={"id": "new-1", "name": "n1", "ok": "yes"})
    dataset.write_text(
        _dataset_with(fmt=fmt, text=grown, row={"id": "new-2", "name": "n2", "ok": "no"})
    )
    status = eb("status", "--cwd", str(root))
    assert status.exit_code == 1
    assert f"stale  (fam[new-1], fam[new-2]: row added to data/{name})" in status.stdout
    updated = eb("update", "--cwd", str(root))
    assert "2 of 5 checks to run again; 3 keep their results" in updated.stdout
    assert "rerun fam[new-2]: no result recorded" in updated.stdout
    assert "Score: 3/5" in updated.stdout
    assert eb("status", "--cwd", str(root)).exit_code == 0
    # A run of one case: the family's other rows are outside its selection, not new.
    _run(eb, root, "--check-id", "fam[ship-1]")
    assert eb("status", "--cwd", str(root)).exit_code == 0
    dataset.write_text(
        _dataset_with(
            fmt=fmt, text=dataset.read_text(), row={"id": "new-3", "name": "n3", "ok": "yes"}
        )
    )
    status = eb("status", "--cwd", str(root))
    assert f"stale  (fam: 1 row added to data/{name})" in status.stdout
    updated = eb("update", "--cwd", str(root))
    assert "0 of 1 check to run again" in updated.stdout, updated.stdout
    assert eb("status", "--cwd", str(root)).exit_code == 0


def test_eb_update_keeps_the_selection_eb_stage_validate_planned(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """`eb stage validate --check-id X` records its selection in plan.json, not config.json:
    once a row is added, `eb update` plans again under it, and runs no other case."""
    name, text = _dataset("jsonl")
    family = SCRIPT_FAMILY.format(source=f"cases_from: data/{name}")
    root = project({"eval_checks/fam.yaml": family, f"data/{name}": text}, config=CONFIG)
    _run(eb, root)
    for stage in (("validate", "--check-id", "fam[ship-1]"), ("guard",), ("execute",)):
        assert eb("stage", *stage, "--cwd", str(root)).exit_code == 0
    dataset = root / "data" / name
    grown = _dataset_with(fmt="jsonl", text=text, row={"id": "new", "name": "n", "ok": "yes"})
    dataset.write_text(grown)
    assert "stale  (fam: 1 row added to" in eb("status", "--cwd", str(root)).stdout
    updated = eb("update", "--cwd", str(root))
    assert "0 of 1 check to run again; 1 keeps its result" in updated.stdout, updated.stdout
    assert "Score: 1/1" in updated.stdout
    run_dir = max((root / ".eval-banana" / "results").iterdir())
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    assert [check["id"] for check in plan["checks"]] == ["fam[ship-1]"]
    assert plan["selection"]["check_ids"] == ["fam[ship-1]"]
    assert eb("status", "--cwd", str(root)).exit_code == 0


def _jsonl_rows(verdicts: dict[str, str]) -> str:
    """A .jsonl dataset for SCRIPT_FAMILY: case id -> its row's `ok` field, in this order."""
    return "".join(
        json.dumps({"id": case_id, "name": case_id, "ok": ok}) + "\n"
        for case_id, ok in verdicts.items()
    )


@pytest.mark.parametrize(
    ("selection", "planned", "replaced", "added"),
    [
        (("--check-id", "fam[ship-*]"), ["fam[ship-1]", "fam[ship-2]"], "refund-1", "ship-3"),
        # The subset takes the ids that rank lowest: ship-0 ranks before ship-2 and refund-1.
        (("--subset", "2"), ["fam[ship-2]", "fam[refund-1]"], "ship-1", "ship-0"),
    ],
)
def test_a_row_replaced_outside_a_partial_plan_makes_it_stale(
    selection: tuple[str, ...],
    planned: list[str],
    replaced: str,
    added: str,
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
) -> None:
    """A plan of part of a family records the ids of all its cases, not only their count: a
    row the plan left out, replaced by a new row that the selection takes (as many rows as
    before), makes the plan stale, and `eb update` plans again under the same selection and
    runs the new case."""
    kept = [case_id for case_id in ("ship-1", "ship-2", "refund-1") if case_id != replaced]
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl")
    dataset = _jsonl_rows({case_id: "yes" for case_id in (*kept, replaced)})
    root = project({"eval_checks/fam.yaml": family, "data/rows.jsonl": dataset}, config=CONFIG)
    code, report = _run(eb, root, *selection)
    assert code == 0 and [check["check_id"] for check in report["checks"]] == planned, report
    replacing = {**{case_id: "yes" for case_id in kept}, added: "no"}
    (root / "data" / "rows.jsonl").write_text(_jsonl_rows(replacing))
    status = eb("status", "--cwd", str(root))
    assert status.exit_code == 1, status.stdout
    assert (
        "stale  (fam: rows replaced or renamed in data/rows.jsonl (the same count, other ids))"
        in status.stdout
    ), status.stdout
    updated = eb("update", "--cwd", str(root))
    assert f"rerun fam[{added}]: no result recorded" in updated.stdout, updated.stdout
    assert f"- fam[{added}]: failed" in updated.stdout and updated.exit_code == 1
    assert eb("status", "--cwd", str(root)).exit_code == 0


def test_eb_status_names_the_file_a_globs_new_or_changed_row_is_in(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    family = SCRIPT_FAMILY.format(source='cases_from: "data/*.jsonl"')
    row = {"id": "a-1", "name": "a", "ok": "yes"}
    root = project(
        {"eval_checks/fam.yaml": family, "data/a.jsonl": json.dumps(row) + "\n"}, config=CONFIG
    )
    _run(eb, root)
    more = root / "data" / "more.jsonl"
    more.write_text(json.dumps({"id": "m-1", "name": "m", "ok": "yes"}) + "\n")
    status = eb("status", "--cwd", str(root)).stdout
    assert "stale  (fam[m-1]: row added to data/more.jsonl)" in status, status
    _run(eb, root)
    more.write_text(json.dumps({"id": "m-1", "name": "m", "ok": "no"}) + "\n")
    status = eb("status", "--cwd", str(root)).stdout
    assert "stale  (fam[m-1]: row changed in data/more.jsonl)" in status, status


def test_eb_status_names_the_file_a_gone_row_was_in(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A glob's rows gone are told against the file each was in when planned, not every file
    the glob matches: one file deleted, one row taken out of another."""
    family = SCRIPT_FAMILY.format(source='cases_from: "data/*.jsonl"')
    root = project(
        {
            "eval_checks/fam.yaml": family,
            "data/a.jsonl": _jsonl_rows({"a-1": "yes", "a-2": "yes"}),
            "data/b.jsonl": _jsonl_rows({"b-1": "yes", "b-2": "yes"}),
            "data/c.jsonl": _jsonl_rows({"c-1": "yes"}),
        },
        config=CONFIG,
    )
    _run(eb, root)
    (root / "data" / "a.jsonl").unlink()
    (root / "data" / "b.jsonl").write_text(_jsonl_rows({"b-1": "yes"}))
    status = eb("status", "--cwd", str(root)).stdout
    assert (
        "stale  (fam[a-1], fam[a-2]: row gone from data/a.jsonl, "
        "fam[b-2]: row gone from data/b.jsonl)"
    ) in status, status


def test_a_skipped_row_is_not_taken_for_an_added_one(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A case skipped by its own row is never planned: when a row is added, only the new case
    is named, not the skipped one the plan never held."""
    name, text = _dataset("jsonl")
    skipped = text + json.dumps({"id": "later", "name": "l", "ok": "yes", "skip": "not yet"})
    family = SCRIPT_FAMILY.format(source=f"cases_from: data/{name}")
    root = project({"eval_checks/fam.yaml": family, f"data/{name}": skipped + "\n"}, config=CONFIG)
    _run(eb, root)
    assert eb("status", "--cwd", str(root)).exit_code == 0
    (root / "data" / name).write_text(
        skipped + "\n" + json.dumps({"id": "new", "name": "n", "ok": "yes"}) + "\n"
    )
    status = eb("status", "--cwd", str(root)).stdout
    assert f"stale  (fam[new]: row added to data/{name})" in status, status


def test_eb_update_after_one_row_edit_runs_that_case_alone_without_the_cache(
    project: Callable[..., Path], eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    """A family with `inputs:` that match its own dataset: the dataset is in each case's
    definition digest (its row), not in its inputs, so editing one row leaves the other cases
    current for `eb status` and `eb update` too, not only for the verdict cache: with the cache
    off, the update runs one case, not the family."""
    name, text = _dataset("jsonl")
    log = tmp_path / "starts.log"
    family = (
        "schema_version: 1\nid: fam\ntype: deterministic\n"
        'description: "case {{ case.name }}"\n'
        f"cases_from: data/{name}\ninputs: [data/**, notes.txt]\n"
        "script: |\n"
        "  import json, sys\n"
        "  ctx = json.load(open(sys.argv[1]))\n"
        f"  open({str(log)!r}, 'a').write(ctx['case_id'] + '\\n')\n"
    )
    root = project(
        {"eval_checks/fam.yaml": family, f"data/{name}": text, "notes.txt": "v1\n"},
        config=CONFIG + '[cache]\nmode = "off"\n',
    )
    _run(eb, root)
    assert sorted(log.read_text().split()) == ["refund-1", "refund-2", "ship-1"]
    log.unlink()
    (root / "data" / name).write_text(text.replace("shipping", "shipping soon"))
    status = eb("status", "--cwd", str(root)).stdout
    assert f"(fam[ship-1]: row changed in data/{name})" in status
    assert "inputs" not in status
    updated = eb("update", "--cwd", str(root))
    assert "1 of 3 checks to run again; 2 keep their results" in updated.stdout
    assert log.read_text().split() == ["ship-1"]
    # A file the inputs match that is no dataset of the family: every case reads it.
    (root / "notes.txt").write_text("v2\n")
    status = eb("status", "--cwd", str(root)).stdout
    assert "fam[refund-1]: inputs data/**, notes.txt changed" in status


def test_eb_status_sees_a_failed_plans_problem_fixed_or_changed(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A plan that failed validation holds no checks to compare, only its problems: `eb
    status` validates again, so a bad row fixed (or made bad another way) is stale, not shown
    as the old failure until `eb update`; the same problems keep it failed."""
    name, text = _dataset("jsonl")
    family = SCRIPT_FAMILY.format(source=f"cases_from: data/{name}")
    root = project({"eval_checks/fam.yaml": family, f"data/{name}": text}, config=CONFIG)
    dataset = root / "data" / name
    dataset.write_text(text + '{"id": "bad id", "name": "x", "ok": "yes"}\n')
    assert eb("run", "--cwd", str(root)).exit_code == 2
    status = eb("status", "--cwd", str(root)).stdout
    assert "failed  (data/rows.jsonl line 4: case id 'bad id' holds a space" in status
    dataset.write_text(text + '{"id": "worse id", "name": "x", "ok": "yes"}\n')
    status = eb("status", "--cwd", str(root)).stdout
    assert (
        "stale  (the problems it recorded changed; the first now: data/rows.jsonl line 4: "
        "case id 'worse id' holds a space" in status
    )
    dataset.write_text(text)
    status = eb("status", "--cwd", str(root)).stdout
    assert "stale  (the problems it recorded are gone: the checks validate now)" in status
    updated = eb("update", "--cwd", str(root))
    assert updated.exit_code == 1 and "Score: 2/3" in updated.stdout  # refund-2 fails by design
    assert eb("status", "--cwd", str(root)).exit_code == 0


def test_a_field_that_is_not_text_is_told_with_the_text_that_asks_for_it(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A number where text goes names the check file's field that holds the placeholder and
    how to fix the row; each of several problems keeps its own hint under its own message."""
    family = (
        "schema_version: 1\nid: nums\ntype: assertions\n"
        'description: "item {{ case.name }} has {{ case.n }}"\n'
        "artifact: out.json\n"
        "cases:\n  - {name: a, n: 1}\n  - {name: b, n: 2}\n"
        "assert:\n"
        '  - {path: n, op: equals, value: "{{ case.n }}"}\n'
        '  - {path: name, op: equals, value: "x{{ case.nn }}"}\n'
    )
    root = project({"eval_checks/nums.yaml": family, "out.json": '{"n": 1}'}, config=CONFIG)
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2
    errors = json.loads(validated.stdout)["errors"]
    # A row of the check file's own `cases:` is located there, at the field (line, column).
    assert [(e["field_path"], e["line"], e["column"]) for e in errors] == [
        ("cases.0.n", 7, 15),
        ("cases.1.n", 8, 15),
    ]
    said = [(error["message"].split(": ", 1)[1], error["hint"]) for error in errors]
    not_text = (
        "a placeholder inside text takes a text field: write n as text in the dataset "
        '("1", not 1), or take {{ case.n }} out of description'
    )
    # The whole-placeholder value keeps the number (no error); the description cannot.
    assert said == [
        (
            "case '1' (cases item 1, line 7): description: field 'n' is a number, not text, "
            "where text goes",
            not_text,
        ),
        (
            "case '2' (cases item 2, line 8): description: field 'n' is a number, not text, "
            "where text goes",
            not_text,
        ),
    ]
    only_typo = family.replace(' has {{ case.n }}"', '"')
    (root / "eval_checks" / "nums.yaml").write_text(only_typo)
    text = eb("validate", "--cwd", str(root)).stderr.splitlines()
    typo = "assert.1.value: the case has no field 'nn' (did you mean 'n'?)"
    hint = "use {{ case.<field> }} in assert.1.value with a field every row has"
    assert [line.split(": ", 1)[1] for line in text[0:2]] == [
        f"case '1' (cases item 1, line 7): {typo}",
        f"case '2' (cases item 2, line 8): {typo}",
    ]
    # One hint for both: they share it.
    assert text[2:] == [f"  hint (the 2 problems above): {hint}"], text


_LOGIC_TOLD = (
    "is template logic, which eb does not run: give each row the text it needs in a field and "
    "write {{ case.<field> }} (a field's text is never read as a template)"
)


_STRAY_TOLD = "(no filters, loops or code; write {{{{ for a literal {{)"
_STRAY_HINT = "use {{ case.<field> }}, or write {{{{ for a literal {{"
_LOGIC_HINT = "eb fills {{ case.<field> }} placeholders and runs no loops, conditions or filters"


@pytest.mark.parametrize(
    ("family", "told", "field_path", "line", "hint"),
    [
        (
            SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl").replace(
                "case {{ case.name }}", "case {{ case.name }}{% if case.ok %} (ok){% endif %}"
            ),
            f"description: '{{% if case.ok %}}' {_LOGIC_TOLD}",
            "description",
            4,
            _LOGIC_HINT,
        ),
        (
            "schema_version: 1\nid: fam\ntype: harness_judge\ndescription: d\n"
            "cases_from: data/rows.jsonl\ninstructions: |\n"
            "  Judge.\n  {%- for word in case['name'] %}{{ word }}{% endfor %}\n",
            f"instructions: \"{{%- for word in case['name'] %}}\" {_LOGIC_TOLD}",
            "instructions",
            6,
            _LOGIC_HINT,
        ),
        (
            "schema_version: 1\nid: fam\ntype: assertions\ndescription: d\n"
            "cases_from: data/rows.jsonl\nartifact: out.json\nassert:\n"
            "  - path: name\n    op: equals\n"
            "    value: ['{{ case.name }}', '{% if case.ok %}x{% endif %}']\n",
            f"assert.0.value: '{{% if case.ok %}}' {_LOGIC_TOLD}",
            "assert.0.value",
            10,
            _LOGIC_HINT,
        ),
        # A stray `{{` is the family's typo too: it was told once per row, at the dataset's
        # lines, with the hint to give every row the field.
        (
            SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl").replace(
                "case {{ case.name }}", "case {{ name }}"
            ),
            "description: '{{ name }}' is no {{ case.<field> }} placeholder: write "
            f"{{{{ case.name }}}} {_STRAY_TOLD}",
            "description",
            4,
            _STRAY_HINT,
        ),
        (
            "schema_version: 1\nid: fam\ntype: assertions\ndescription: d\n"
            "cases_from: data/rows.jsonl\nartifact: out.json\nassert:\n"
            "  - path: 'names.{{- case.id -}}'\n    op: equals\n    value: x\n",
            "assert.0.path: '{{- case.id -}}' is no {{ case.<field> }} placeholder: write "
            f"{{{{ case.id }}}} {_STRAY_TOLD}",
            "assert.0.path",
            8,
            _STRAY_HINT,
        ),
    ],
    ids=[
        "logic in description",
        "logic in judge instructions",
        "logic in assertion value",
        "stray in description",
        "stray in assertion path",
    ],
)
def test_what_no_row_can_fix_is_one_definition_error_at_its_family(
    family: str,
    told: str,
    field_path: str,
    line: int,
    hint: str,
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
) -> None:
    # `{% if case.urgent %}` reached the judge (or the assertion) as written, in every case.
    rows = "".join(json.dumps(row) + "\n" for row in ROWS)
    root = project({"eval_checks/fam.yaml": family, "data/rows.jsonl": rows}, config=CONFIG)
    # One error at the check file's own field, not one per row: no row can fix it.
    error = _the_validate_error(eb, root)
    check_file = str(root / "eval_checks" / "fam.yaml")
    assert error["message"] == f"{check_file}: {told}", error
    assert (error["file"], error["field_path"], error["line"]) == (check_file, field_path, line)
    assert error["hint"] == hint
    ran = eb("run", "--cwd", str(root))
    assert ran.exit_code == 2 and told in ran.stderr
    assert not list((root / ".eval-banana").glob("results/*/report.json"))


def test_a_tag_over_no_case_stays_text_in_a_family(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.jsonl").replace(
        "case {{ case.name }}", "case {{ case.name }}{% raw %}"
    )
    rows = "".join(json.dumps(row) + "\n" for row in ROWS)
    root = project({"eval_checks/fam.yaml": family, "data/rows.jsonl": rows}, config=CONFIG)
    listed = eb("list", "--cwd", str(root), "--cases")
    assert listed.exit_code == 0 and "case refund one{% raw %}" in listed.stdout


def test_a_rows_expect_is_data_and_a_control_family_sets_expect_for_all_its_rows(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """As datasets.md says: a row sets only tags and skip; its `expect` is data (datasets have
    such columns), and seeded-defect controls are a family of their own with `expect: fail`."""
    family = (
        "schema_version: 1\nid: {id}\ntype: assertions\ndescription: d\n{expect}"
        "cases:\n  - {{id: seeded, expect: fail}}\nartifact: out/a.json\n"
        "assert:\n  - {{path: steps, op: lengthAtLeast, value: 2}}\n"
    )
    root = project(
        {
            "eval_checks/f.yaml": family.format(id="f", expect=""),
            "eval_checks/controls.yaml": family.format(id="controls", expect="expect: fail\n"),
            "out/a.json": '{"steps": [1, 2]}',
        },
        config=CONFIG,
    )
    code, report = _run(eb, root)
    assert code == 1
    assert _statuses(report) == {"f[seeded]": "passed", "controls[seeded]": "failed"}


# A family whose case passes when its row holds the text NO and the number 755, as YAML 1.2
# reads `country: NO` and `mode: 0755` (YAML 1.1 reads false and the octal 493).
YAML12_FAMILY = """\
{head}schema_version: 1
id: {family}
type: deterministic
description: "case {{{{ case.name }}}}"
{source}
script: |
  import json, sys
  case = json.load(open(sys.argv[1]))["case"]
  sys.exit(0 if (case["country"], case["mode"], case["power"]) == ("NO", 755, "on") else 1)
"""


def test_a_dataset_or_check_file_that_declares_yaml_1_2_is_read_by_its_rules(
    project: Callable[..., Path],
) -> None:
    """A dataset file and a check file's own `cases:` that declare `%YAML 1.2` were read by
    YAML 1.1's rules: the dataset's `NO` and `0755` were refused as ambiguous, the check
    file's rows got false and the octal 493. Both are read by YAML 1.2's core schema now; a
    file that declares nothing still has them refused, and lines are told as written."""
    row = "{name: a, country: NO, mode: 0755, power: on}"
    root = project(
        {
            "eval_checks/from_file.yaml": YAML12_FAMILY.format(
                head="", family="from_file", source="cases_from: data/v12.yaml"
            ),
            "eval_checks/own.yaml": YAML12_FAMILY.format(
                head="# exported\n%YAML 1.2\n---\n", family="own", source=f"cases:\n  - {row}"
            ),
            "data/v12.yaml": f"%YAML 1.2\n---\n- {row}\n- {row.replace('a,', 'b,')}\n",
        },
        config=CONFIG,
    )
    ran = eb_process(root, "run", "--cache", "off")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "3 passed" in ran.stdout, ran.stdout
    # Declaring nothing, the same rows are refused as before, at their lines.
    (root / "data" / "v12.yaml").write_text(f"- {row}\n")
    (root / "eval_checks" / "own.yaml").write_text(
        YAML12_FAMILY.format(head="", family="own", source=f"cases:\n  - {row}")
    )
    validated = eb_process(root, "validate", "--json")
    assert validated.returncode == 2, validated.stdout + validated.stderr
    told = [
        (Path(error["file"]).name, error["line"], error["message"].split(": ")[1].split()[0])
        for error in json.loads(validated.stdout)["errors"]
    ]
    assert told == [
        *[("own.yaml", 6, word) for word in ("'NO'", "'0755'", "'on'")],
        *[("v12.yaml", 1, word) for word in ("'NO'", "'0755'", "'on'")],
    ], told


def test_a_value_yaml_1_2_does_not_read_as_its_tag_asks_is_told_at_its_line(
    project: Callable[..., Path],
) -> None:
    """Under `%YAML 1.2`, `!!int 1_000` read as 1000 by YAML 1.1's rules; 1.2's core schema
    writes no underscores in a number, so the tag asks for what the text is not: an error
    naming the file, the line and the value, in a dataset and in a check file alike."""
    root = project(
        {
            "eval_checks/fam.yaml": YAML12_FAMILY.format(
                head="", family="fam", source="cases_from: data/rows.yaml"
            ),
            "data/rows.yaml": "%YAML 1.2\n---\n- {name: a, country: NO, mode: 0755, power: on}\n"
            "- name: b\n  country: NO\n  mode: !!int 1_000\n",
        },
        config=CONFIG,
    )

    def told() -> list[tuple[str, int, str]]:
        validated = eb_process(root, "validate", "--json")
        assert validated.returncode == 2, validated.stdout + validated.stderr
        return [
            (Path(error["file"]).name, error["line"], error["message"])
            for error in json.loads(validated.stdout)["errors"]
        ]

    why = (
        "is no whole number to YAML 1.2, which the file declares (%YAML 1.2), though its tag "
        "!!int asks for one: YAML 1.2 writes one as decimal digits, 0o octal or 0x "
        "hexadecimal, without underscores"
    )
    assert told() == [("rows.yaml", 6, f"Dataset data/rows.yaml line 6: '1_000' {why}")]
    (root / "data" / "rows.yaml").write_text("%YAML 1.2\n---\n- {name: a, mode: !!int 0755}\n")
    own = root / "eval_checks" / "own.yaml"
    own.write_text(
        "%YAML 1.2\n---\n"
        + check_yaml("own").replace(
            "type: deterministic", "type: deterministic\nrepeats: !!int 1_0"
        )
    )
    assert told() == [("own.yaml", 6, f"Invalid check definition in {own}: line 6: '1_0' {why}")]


@pytest.mark.parametrize("directive", ["%YAML 1.2\n---\n", ""])
def test_a_plain_merge_word_reads_as_yaml_12_text_where_the_dataset_declares_it(
    directive: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """Under `%YAML 1.2` a plain `<<` where a value goes was refused as YAML 1.1's merge key,
    which 1.2 has not: it is the text `<<` there; without the directive it is refused as before."""
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.yaml").replace(
        'ctx["case"]["ok"] == "yes"', 'ctx["case"]["name"] == "<<"'
    )
    rows = directive + "- {id: a, name: <<, ok: 'yes'}\n"
    root = project({"eval_checks/fam.yaml": family, "data/rows.yaml": rows}, config=CONFIG)
    ran = eb("run", "--cwd", str(root))
    if directive:
        assert ran.exit_code == 0, ran.stderr
    else:
        assert ran.exit_code == 2 and "YAML 1.1's merge key" in ran.stderr, ran.stderr


@pytest.mark.parametrize("tag", ["!!omap", "!!pairs"])
@pytest.mark.parametrize("directive", ["%YAML 1.2\n---\n", ""])
def test_a_rows_omap_or_pairs_value_is_refused_as_no_json_value(
    tag: str, directive: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """`extra: !!omap [{a: 1}]` was kept as a list of pairs and handed to the case as lists;
    a set and binary data were refused already, and so are these now, at the row."""
    family = SCRIPT_FAMILY.format(source="cases_from: data/rows.yaml")
    rows = directive + f"- {{id: a, name: n, ok: 'yes', extra: {tag} [{{a: 1}}]}}\n"
    root = project({"eval_checks/fam.yaml": family, "data/rows.yaml": rows}, config=CONFIG)
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2, validated.stdout
    (error,) = json.loads(validated.stdout)["errors"]
    assert (
        "field extra.0 holds pairs (a !!omap or !!pairs tag), which JSON cannot say"
        in (error["message"])
    )
    assert error["hint"] == "write a mapping without the tag"
