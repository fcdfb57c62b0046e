"""`--subset N|P%`: the same part of each dataset family, through `eb list`, `eb run`, the
verdict cache, shards with `eb merge`, `eb diff` and `eb stage execute`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EbResult

CONFIG = """\
[discovery]
exclude_dirs = [".eval-banana", ".git"]
"""

# Each case logs its id when it runs (so a test counts what ran, not what was reported) and
# fails when its row says so.
FAMILY = """\
schema_version: 1
id: {family}
type: deterministic
description: "case {{{{ case.id }}}}"
cases_from: data/{family}.jsonl
script: |
  import json, sys
  ctx = json.load(open(sys.argv[1]))
  open({log!r}, "a").write(ctx["check_id"] + "\\n")
  sys.exit(0 if ctx["case"]["ok"] else 1)
"""

PLAIN = "schema_version: 1\nid: plain\ntype: deterministic\ndescription: p\nscript: pass\n"


def _rows(*, count: int, failing: frozenset[int] = frozenset(), skipped: int | None = None) -> str:
    rows = []
    for n in range(count):
        row: dict[str, Any] = {"id": f"c{n:02d}", "ok": n not in failing}
        if n == skipped:
            row["skip"] = "not ready"
        rows.append(json.dumps(row) + "\n")
    return "".join(rows)


@pytest.fixture
def families(project: Callable[..., Path], tmp_path: Path) -> Path:
    """`big` (40 cases, c05 and c31 fail, c07 skipped), `small` (3 cases) and a plain check."""
    log = str(tmp_path / "ran.log")
    return project(
        {
            "eval_checks/big.yaml": FAMILY.format(family="big", log=log),
            "eval_checks/small.yaml": FAMILY.format(family="small", log=log),
            "eval_checks/plain.yaml": PLAIN,
            "data/big.jsonl": _rows(count=40, failing=frozenset({5, 31}), skipped=7),
            "data/small.jsonl": _rows(count=3),
        },
        config=CONFIG + '[core]\npass_threshold = 0.5\n[cache]\nmode = "on"\n',
    )


def _listed(eb: Callable[..., EbResult], root: Path, *args: str) -> list[str]:
    listed = eb("list", "--cwd", str(root), "--cases", *args)
    assert listed.exit_code == 0, listed.stderr
    return [line.split("\t")[0] for line in listed.stdout.splitlines()]


def _of(family: str, ids: list[str]) -> list[str]:
    return [check_id for check_id in ids if check_id.startswith(f"{family}[")]


def _ran(tmp_path: Path) -> list[str]:
    log = tmp_path / "ran.log"
    ran = sorted(log.read_text().split()) if log.exists() else []
    log.unlink(missing_ok=True)
    return ran


def _run(eb: Callable[..., EbResult], root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = eb("run", "--cwd", str(root), "--json", *args)
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, json.loads(result.stdout)


def test_a_subset_is_the_same_spread_part_of_each_family_and_grows_by_adding(
    families: Path, eb: Callable[..., EbResult]
) -> None:
    every = _listed(eb, families)
    ten = _listed(eb, families, "--subset", "10")
    # Ten of each family's running cases (the skipped c07 takes no place), every case of a
    # family smaller than that, and every check that is no case.
    assert len(_of("big", ten)) == 10 and "big[c07]" not in ten
    assert _of("small", ten) == ["small[c00]", "small[c01]", "small[c02]"]
    assert "plain" in ten
    # In dataset order, spread over the rows rather than the first ten of them.
    assert _of("big", ten) == [check_id for check_id in _of("big", every) if check_id in ten]
    assert _of("big", ten) != _of("big", every)[:10]
    assert max(int(check_id[5:7]) for check_id in _of("big", ten)) >= 20
    # The same cases every time, and a larger subset keeps them and adds to them.
    assert _listed(eb, families, "--subset", "10") == ten
    fifteen = _listed(eb, families, "--subset", "15")
    assert len(_of("big", fifteen)) == 15 and set(ten) <= set(fifteen)
    # A share is of each family's running cases, rounded up: 25% of 39 is 10, of 3 is 1.
    quarter = _listed(eb, families, "--subset", "25%")
    assert len(_of("big", quarter)) == 10 and len(_of("small", quarter)) == 1
    assert _of("big", quarter) == _of("big", ten)
    # Another seed, another subset of the same size.
    seeded = _listed(eb, families, "--subset", "10", "--subset-seed", "1")
    assert len(_of("big", seeded)) == 10 and _of("big", seeded) != _of("big", ten)
    # The subset is taken of what the other filters selected.
    narrowed = _listed(eb, families, "-k", "big and not c0", "--subset", "5")
    assert len(narrowed) == 5 and not [c for c in narrowed if c.startswith("big[c0")]
    # `eb list` without --cases counts the cases the subset kept, of the family's running ones
    # (a selection's count must not read as the family's size).
    families_listed = eb("list", "--cwd", str(families), "--subset", "10").stdout
    assert "big\tdeterministic\tdataset family: 10 of its 39 cases selected (" in families_listed
    assert "small\tdeterministic\tdataset family: 3 cases (" in families_listed
    narrowed_listed = eb("list", "--cwd", str(families), "-k", "big and c0").stdout
    assert "dataset family: 9 of its 39 cases selected, 1 skipped (" in narrowed_listed
    assert "dataset family: 40 cases, 1 skipped (" in eb("list", "--cwd", str(families)).stdout


def test_a_run_of_a_subset_runs_only_its_cases_and_a_larger_one_reuses_their_verdicts(
    families: Path, eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    wanted = _of("big", _listed(eb, families, "--subset", "4", "-k", "big"))
    code, report = _run(eb, families, "--subset", "4", "-k", "big")
    assert _ran(tmp_path) == wanted
    assert sorted(check["check_id"] for check in report["checks"]) == wanted
    (family,) = report["families"]
    assert (family["id"], family["cases"], family["of_cases"]) == ("big", 4, 39)
    # Growing the subset pays only for the cases it adds: the first four come from the cache.
    more = _of("big", _listed(eb, families, "--subset", "9", "-k", "big"))
    _, report = _run(eb, families, "--subset", "9", "-k", "big")
    assert _ran(tmp_path) == sorted(set(more) - set(wanted))
    cached = [
        check["check_id"]
        for check in report["checks"]
        if check["details"].get("cache", {}).get("hit") is True
    ]
    assert sorted(cached) == wanted


def test_shards_of_a_subset_merge_into_that_subset_and_diff_says_it_was_narrowed(
    families: Path, eb: Callable[..., EbResult]
) -> None:
    wanted = _listed(eb, families, "--subset", "8")
    shards = []
    for index in (1, 2):
        _, report = _run(eb, families, "--subset", "8", "--shard", f"{index}/2")
        shards.append(report["output_dir"])
    merged = eb("merge", "--cwd", str(families), "--json", *shards)
    assert merged.exit_code in (0, 1), merged.stderr
    merged_report = json.loads(merged.stdout)
    assert sorted(check["check_id"] for check in merged_report["checks"]) == sorted(wanted)
    # A shard of another subset is a shard of another plan.
    _, other = _run(eb, families, "--subset", "9", "--shard", "2/2")
    refused = eb("merge", "--cwd", str(families), shards[0], other["output_dir"])
    assert refused.exit_code == 2 and "is a shard of another plan" in refused.stderr
    # Against a run of every case, the cases a subset left out are not selected, not removed.
    _, full = _run(eb, families)
    diff = eb(
        "diff", "--cwd", str(families), "--json", full["output_dir"], merged_report["output_dir"]
    )
    found = json.loads(diff.stdout)
    assert found["removed_checks"] == []
    assert len(found["not_selected"]) == 39 + 3 + 1 - len(wanted)
    text = eb("diff", "--cwd", str(families), full["output_dir"], merged_report["output_dir"])
    assert "selected with --subset 8" in text.stdout


def test_eb_stage_execute_runs_a_subset_of_the_plan(
    families: Path, eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    _run(eb, families, "--cache", "off")
    _ran(tmp_path)
    run_dir = sorted((families / ".eval-banana" / "results").iterdir())[-1]
    wanted = _listed(eb, families, "--subset", "3", "-k", "big")
    _stage_execute(eb, families, run_dir, "--subset", "3", "-k", "big")
    assert _ran(tmp_path) == sorted(wanted)


def test_eb_stage_execute_in_a_shards_folder_takes_the_subset_before_the_shard(
    families: Path, eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    """A shard's plan holds half of each family; the subset is still taken of the whole
    family, as `eb run --subset 8 --shard 1/2` takes it, and the shard's part of it runs."""
    run_dir = tmp_path / "shard1"
    _run(eb, families, "--cache", "off", "--shard", "1/2", "--output-dir", str(run_dir))
    run_dir = _run_folder(run_dir)
    _ran(tmp_path)
    wanted = _listed(eb, families, "--subset", "8", "--shard", "1/2")
    _stage_execute(eb, families, run_dir, "--subset", "8", "--shard", "1/2")
    assert _ran(tmp_path) == sorted(wanted)
    assert len(_of("big", wanted)) < 8  # the shard holds part of the family's eight


def _stage_execute(
    eb: Callable[..., EbResult], families: Path, run_dir: Path, *selection: str
) -> None:
    """`eb stage execute` of `run_dir` with the `selection` flags, the cache off."""
    stage = eb(
        "stage", "execute", "--cwd", str(families), "--run-dir", str(run_dir), *selection,
        "--cache", "off",
    )  # fmt: skip
    assert stage.exit_code == 0, stage.stderr


def _run_folder(output_dir: Path) -> Path:
    (run_dir,) = output_dir.iterdir()
    return run_dir


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        (["--subset", "0"], "--subset '0' is neither a number of cases", "--subset N"),
        (["--subset", "ten"], "--subset 'ten' is neither a number of cases", "--subset N"),
        (["--subset", "0%"], "--subset '0%': the share must lie above 0%", "--subset P%"),
        (["--subset", "150%"], "--subset '150%': the share must lie above 0%", "--subset P%"),
        (["--subset", "nan%"], "--subset 'nan%': the share must lie above 0%", "--subset P%"),
        (["--subset", "²"], "--subset '²' is neither a number of cases", "--subset N"),
        (["--subset", "9" * 5000], "--subset '999", "--subset N"),
        (["--subset-seed", "2"], "--subset-seed draws a subset, and no --subset", "--subset N"),
        (["--subset", "5", "--subset-seed", "-1"], "--subset-seed '-1' is not a whole", "S >= 0"),
        (["--subset", "5", "--subset-seed", "²"], "--subset-seed '²' is not a whole", "S >= 0"),
    ],
)
def test_a_subset_that_cannot_be_taken_is_a_usage_error_with_the_form_to_write(
    families: Path, eb: Callable[..., EbResult], args: list[str], message: str, hint: str
) -> None:
    for command in ("list", "run"):
        result = eb(command, "--cwd", str(families), *args)
        assert result.exit_code == 2
        first, told = result.stderr.splitlines()[:2]
        assert first.startswith(message) and told.startswith("hint:") and hint in told
        assert len(first) < 200  # a pasted value of 5,000 digits is cut, not echoed


def test_an_engine_plans_a_subset_and_runs_its_parts_with_select(
    families: Path, eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    wanted = _listed(eb, families, "--subset", "6", "-k", "big")
    planned = eb("plan", "--cwd", str(families), "--subset", "6", "-k", "big", "--json")
    assert planned.exit_code == 0, planned.stderr
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(planned.stdout)
    assert [check["id"] for check in json.loads(planned.stdout)["checks"]] == wanted
    _, report = _run(eb, families, "--select", str(plan_file))
    assert sorted(check["check_id"] for check in report["checks"]) == sorted(wanted)
    # A plan of every case, run with a subset: the ids the subset left out are named, and the
    # hint says the subset is one of the options the plan must be made with.
    whole = tmp_path / "whole.json"
    whole.write_text(eb("plan", "--cwd", str(families), "-k", "big", "--json").stdout)
    refused = eb("run", "--cwd", str(families), "--select", str(whole), "--subset", "6")
    assert refused.exit_code == 2
    assert "33 ids not in the current selection" in refused.stderr
    assert "--subset" in refused.stderr.splitlines()[1]


def test_a_subset_of_a_family_whose_every_selected_case_is_skipped_says_why_it_is_empty(
    families: Path, eb: Callable[..., EbResult]
) -> None:
    # big[c07] is skipped: selected alone, a subset (which takes only cases that run) is empty.
    alone = eb("run", "--cwd", str(families), "--check-id", "big[c07]", "--subset", "3")
    assert alone.exit_code == 2
    assert alone.stderr.splitlines()[:2] == [
        "No checks found",
        "hint: Every selected case is skipped, and --subset takes only cases that run: leave "
        "out --subset to list them as skipped, or select other checks.",
    ]
    # Without --subset the skipped case is listed as skipped, as before.
    assert eb("list", "--cwd", str(families), "--check-id", "big[c07]").exit_code == 0


def test_the_part_of_a_large_family_is_counted_with_thousands_separators(
    project: Callable[..., Path], eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    log = str(tmp_path / "ran.log")
    root = project(
        {
            "eval_checks/huge.yaml": FAMILY.format(family="huge", log=log),
            "data/huge.jsonl": _rows(count=1200),
        },
        config=CONFIG,
    )
    listed = eb("list", "--cwd", str(root), "--subset", "2").stdout
    assert "huge\tdeterministic\tdataset family: 2 of its 1,200 cases selected (" in listed
    ran = eb("run", "--cwd", str(root), "--subset", "2")
    assert ran.exit_code == 0, ran.stderr
    assert "Family huge: 2/2 cases passed (100.0%; 2 of its 1,200 cases selected)" in ran.stdout
