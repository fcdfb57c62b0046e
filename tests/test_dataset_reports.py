"""Dataset families as the reports and the merge show them: report.md's family table, the
GitHub step summary, and a merge of shards that lists a family's cases in dataset order.

Real `eb run` / `eb merge` through the CLI, real subprocesses for the cases.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval_banana.reporting.console import FAMILY_CASES_LISTED
from eval_banana.reporting.github import append_step_summary
from tests.conftest import EbResult

REPO = Path(__file__).resolve().parents[1]

CONFIG = """\
[discovery]
exclude_dirs = [".eval-banana", ".git"]

[core]
pass_threshold = 0.5
"""

# A case passes when its `ok` field says yes.
FAMILY = """\
schema_version: 1
id: {id}
type: deterministic
description: "case {{{{ case.id }}}}"
cases_from: data/{id}.jsonl
{extra}
script: |
  import json, sys
  ctx = json.load(open(sys.argv[1]))
  sys.exit(0 if ctx["case"]["ok"] == "yes" else 1)
"""

PLAIN = """\
schema_version: 1
id: {id}
type: deterministic
description: A plain check.
script: print("ok")
"""

# Ids out of alphabetical order, so neither a sort by id nor one shard after the other gives
# the dataset's order.
CASE_IDS = ["zeta", "alpha", "mike", "bravo", "yankee", "charlie", "x-ray", "delta", "kilo", "echo"]


def _rows(*, failing: set[str]) -> str:
    return "".join(
        json.dumps({"id": case, "ok": "no" if case in failing else "yes"}) + "\n"
        for case in CASE_IDS
    )


def _skipped_rows() -> str:
    """Two cases that skip themselves, out of alphabetical order."""
    return "".join(
        json.dumps({"id": case, "ok": "yes", "skip": "waits for a fix"}) + "\n"
        for case in ("wait-z", "wait-a")
    )


def _project(project: Callable[..., Path]) -> Path:
    return project(
        {
            "eval_checks/a_plain.yaml": PLAIN.format(id="a_plain"),
            "eval_checks/b_family.yaml": FAMILY.format(id="qa", extra="min_pass_rate: 0.9"),
            "data/qa.jsonl": _rows(failing={"mike", "kilo"}),
            "eval_checks/c_family.yaml": FAMILY.format(id="tone", extra=""),
            "data/tone.jsonl": _rows(failing=set()) + _skipped_rows(),
            "eval_checks/d_plain.yaml": PLAIN.format(id="d_plain"),
        },
        config=CONFIG,
    )


def _run(eb: Callable[..., EbResult], root: Path, *args: str) -> dict[str, Any]:
    result = eb("run", "--cwd", str(root), "--json", *args)
    assert result.exit_code in (0, 1), result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _order(report: dict[str, Any]) -> list[str]:
    return [check["check_id"] for check in report["checks"]]


def test_merge_lists_a_familys_cases_in_the_one_machine_order(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = _project(project)
    whole = _run(eb, root)
    expected = [
        "a_plain",
        *(f"qa[{case}]" for case in CASE_IDS),
        *(f"tone[{case}]" for case in CASE_IDS),
        "d_plain",
    ]
    assert _order(whole) == expected
    shards = [_run(eb, root, "--shard", f"{index}/3") for index in (1, 2, 3)]
    # Each shard holds part of each family: the merge has to interleave them.
    for family in ("qa", "tone"):
        held = [{c for c in _order(shard) if c.startswith(f"{family}[")} for shard in shards]
        assert sum(1 for part in held if part) >= 2
    merged = eb("merge", "--cwd", str(root), "--json", *(s["output_dir"] for s in shards))
    assert merged.exit_code == 1, merged.stderr  # qa's gate (0.9) does not hold at 8/10
    merged_report = json.loads(merged.stdout)
    assert _order(merged_report) == _order(whole)
    skipped = [item["check_id"] for item in whole["skipped"]]
    assert skipped == ["tone[wait-z]", "tone[wait-a]"]
    assert [item["check_id"] for item in merged_report["skipped"]] == skipped
    markdown = (Path(merged_report["output_dir"]) / "report.md").read_text(encoding="utf-8")
    assert markdown.index("qa[zeta]") < markdown.index("qa[alpha]") < markdown.index("qa[echo]")


def test_report_md_and_step_summary_show_each_family_with_its_gate(
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
    monkeypatch: Any,
    tmp_path: Path,
) -> None:
    root = _project(project)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    report = _run(eb, root)
    assert report["run_passed"] is False  # 28/30 checks pass; qa's own gate fails the run
    markdown = (Path(report["output_dir"]) / "report.md").read_text(encoding="utf-8")
    table = [
        "| Family | Cases | Passed | Failed | Errored | Pass rate | Gate |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        "| `qa` | 10 | 8 | 2 | 0 | 80.0% | **min_pass_rate 0.9 NOT held**: the run fails |",
        "| `tone` | 10 | 10 | 0 | 0 | 100.0% | none |",
    ]
    lines = markdown.splitlines()
    start = lines.index(table[0])
    assert lines[start : start + len(table)] == table
    # Before the checks' table: a summary cut to GitHub's size limit still shows the families.
    assert start < lines.index("| Check ID | Type | Status | Score | Duration (ms) |")
    written = summary.read_text(encoding="utf-8")
    assert written.startswith("earlier step\n")
    for row in table:
        assert row in written.splitlines()
    # A summary cut to a size limit (GitHub's is 1 MiB) still has every family.
    cut = tmp_path / "cut.md"
    limit = len(markdown.encode()) // 2
    assert markdown.index(table[-1]) + len(table[-1]) < limit
    append_step_summary(
        report_md=markdown, environ={"GITHUB_STEP_SUMMARY": str(cut)}, limit_bytes=limit
    )
    short = cut.read_text(encoding="utf-8").splitlines()
    assert "summary cut to fit" in short[-1] and all(row in short for row in table)


def test_the_demo_project_shows_a_family_and_passes(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "examples" / "demo", demo, ignore=shutil.ignore_patterns(".eval-banana"))
    (demo / ".eval-banana").mkdir()
    shutil.copy(REPO / "examples/demo/.eval-banana/config.toml", demo / ".eval-banana")
    result = eb("run", "--cwd", str(demo))
    assert result.exit_code == 0, result.stderr
    assert "Family greeting_cases: 3/3 cases passed (100.0%), min_pass_rate 1.0 held" in (
        result.stdout.splitlines()
    )
    for case in ("ada", "grace", "linus"):
        assert f"- greeting_cases[{case}]: passed" in result.stdout.splitlines()


def _big_small_plain(
    project: Callable[..., Path],
    *,
    failing: frozenset[int] = frozenset(),
    big_extra: str = "",
    small_extra: str = "",
    files: dict[str, str] | None = None,
) -> Path:
    """A family of FAMILY_CASES_LISTED + 5 cases (`failing`: the positions that fail), one of
    len(CASE_IDS) cases, and a plain check."""
    big = "".join(
        json.dumps({"id": f"b{n:02d}", "ok": "no" if n in failing else "yes"}) + "\n"
        for n in range(FAMILY_CASES_LISTED + 5)
    )
    return project(
        {
            "eval_checks/big.yaml": FAMILY.format(id="big", extra=big_extra),
            "data/big.jsonl": big,
            "eval_checks/small.yaml": FAMILY.format(id="small", extra=small_extra),
            "data/small.jsonl": _rows(failing=set()),
            "eval_checks/plain.yaml": PLAIN.format(id="plain"),
            **(files or {}),
        },
        config=CONFIG,
    )


def test_the_console_folds_a_large_familys_passing_cases_into_one_line(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A family of more cases than the console lists one by one shows its failures each on
    their line and its passing cases as one; a small family and plain checks are listed as
    eval-banana lists every check."""
    root = _big_small_plain(project, failing=frozenset({3, 17}))
    done = eb("run", "--cwd", str(root))
    listed = [line for line in done.stdout.splitlines() if line.startswith("- ")]
    assert [line for line in listed if line.startswith("- big")] == [
        "- big: 23 cases passed (each is listed in report.md and report.json)",
        "- big[b03]: failed - exit code 1",
        "- big[b17]: failed - exit code 1",
    ]
    assert sum(line.startswith("- small[") for line in listed) == len(CASE_IDS)
    assert "- plain: passed" in listed
    report = json.loads(next(root.rglob("report.json")).read_text())
    assert sum(check["check_id"].startswith("big[") for check in report["checks"]) == 25


# A family whose every case is sampled twice; the case whose row names a `flip` file gets one
# failing sample (the sample that creates the file) and one passing: flaky under `aggregate: any`.
SAMPLED = """\
schema_version: 1
id: sampled
type: deterministic
description: "case {{ case.id }}"
cases_from: data/sampled.jsonl
repeats: 2
aggregate: any
script: |
  import json, os, sys
  flip = json.load(open(sys.argv[1]))["case"]["flip"]
  if flip:
      try:
          os.close(os.open(flip, os.O_CREAT | os.O_EXCL))
      except FileExistsError:
          sys.exit(0)
      sys.exit("the first sample fails")
"""

# A control family: every case's defect is caught (its script fails, as a control's should).
CONTROL = """\
schema_version: 1
id: control
type: deterministic
description: "control {{ case.id }}"
expect: fail
cases_from: data/control.jsonl
script: |
  raise SystemExit("seeded defect caught")
"""


def test_the_console_folds_sampled_and_control_cases_that_passed_as_expected(
    project: Callable[..., Path], eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    """A large family's case whose samples all passed, or a control that caught its defect,
    passed as expected: it folds into the family's line as a plain pass does, in the summary
    as in the log. A flaky case keeps its line in both."""
    size = FAMILY_CASES_LISTED + 5
    flip = str(tmp_path / "flip")
    root = project(
        {
            "eval_checks/sampled.yaml": SAMPLED,
            "data/sampled.jsonl": "".join(
                json.dumps({"id": f"s{n:02d}", "flip": flip if n == 3 else ""}) + "\n"
                for n in range(size)
            ),
            "eval_checks/control.yaml": CONTROL,
            "data/control.jsonl": "".join(
                json.dumps({"id": f"c{n:02d}"}) + "\n" for n in range(size)
            ),
        },
        config=CONFIG,
    )
    done = eb("run", "--cwd", str(root), "--cache", "off")
    assert done.exit_code == 0, done.stdout + done.stderr
    listed = [line for line in done.stdout.splitlines() if line.startswith("- ")]
    assert listed == [
        "- control: 25 cases passed (each is listed in report.md and report.json)",
        "- sampled: 24 cases passed (each is listed in report.md and report.json)",
        "- sampled[s03]: passed (flaky, 1/2 samples passed) - 1 of 2 samples passed (any)",
    ]
    # The log counts what the summary folds: only the flaky case has a line of its own.
    logged = [line.split("] ", 1)[1] for line in done.stderr.splitlines() if line.startswith("[")]
    own = [line for line in logged if " cases passed" not in line]
    assert len(own) == 1 and own[0].startswith("sampled[s03]: passed (flaky, "), done.stderr
    assert done.stderr.splitlines()[-1].startswith("[50/50] ")


def test_the_console_folds_a_large_familys_skipped_cases_into_one_line(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A family skipped by its own `skip:` prints one line for its cases, not one each; a
    small family and a plain check skipped keep a line each, as eval-banana prints them."""
    root = _big_small_plain(
        project,
        big_extra="skip: not ready yet",
        small_extra="skip: later",
        files={"eval_checks/later.yaml": PLAIN.format(id="parked") + "skip: broken\n"},
    )
    done = eb("run", "--cwd", str(root))
    skipped = [line for line in done.stdout.splitlines() if " skipped - " in line]
    assert skipped, done.stdout + done.stderr
    assert sorted(skipped) == sorted(
        [
            "- big: 25 cases skipped - not ready yet",
            "- parked: skipped - broken",
            *(f"- small[{case}]: skipped - later" for case in CASE_IDS),
        ]
    )
    assert done.stdout.splitlines()[-1].startswith("0 failed, 1 passed, 0 errored, 36 skipped")
    report = json.loads(next(root.rglob("report.json")).read_text())
    assert len(report["skipped"]) == 36  # the report keeps each one


# 2,001 cases that each grade their own key of one artifact: one wrong expectation makes a pass
# rate of 99.95 %, which one decimal would round to 100.0 %.
PRICES = """\
schema_version: 1
id: prices
type: assertions
description: "the price of {{ case.sku }}"
cases_from: data/prices.jsonl
min_pass_rate: 0.9999
artifact: out/prices.json
assert:
  - path: "prices.{{ case.sku }}"
    op: equals
    value: "{{ case.price }}"
"""
PRICE_CASES = 2_001


def _prices(*, wrong: int | None) -> str:
    return "".join(
        json.dumps({"id": f"p{n:04d}", "sku": f"s{n}", "price": -1 if n == wrong else n}) + "\n"
        for n in range(PRICE_CASES)
    )


def test_a_rate_short_of_all_or_of_the_gate_never_reads_as_it(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """One failure in 2,001 cases is 99.95 %: every place that shows the family's rate (the
    console, report.md, report.html, `eb history`, `eb diff`) and report.html's percentage say
    so, never 100.0 % beside a gate that did not hold."""
    root = project(
        {
            "eval_checks/prices.yaml": PRICES,
            "data/prices.jsonl": _prices(wrong=7),
            "out/prices.json": json.dumps({"prices": {f"s{n}": n for n in range(PRICE_CASES)}}),
        },
        config="[core]\npass_threshold = 0.5\n",
    )
    failing = eb("run", "--cwd", str(root), "--cache", "off")
    assert failing.exit_code == 1, failing.stderr
    line = "Family prices: 2,000/2,001 cases passed (99.95%), min_pass_rate 0.9999 NOT held"
    assert line in failing.stdout
    assert "100.0%" not in failing.stdout.split("Family prices:", 1)[1].splitlines()[0]
    base = Path(next(root.rglob("report.json")).parent)
    markdown = (base / "report.md").read_text(encoding="utf-8")
    assert "| `prices` | 2001 | 2000 | 1 | 0 | 99.95% | **min_pass_rate 0.9999 NOT held**" in (
        markdown
    )
    page = (base / "report.html").read_text(encoding="utf-8")
    assert '<td class="num">99.95%</td><td class="num">2001</td>' in page  # the family's row
    assert "<dt>Percentage</dt><dd>99.95%</dd>" in page  # report.json's percentage says 100.0
    assert json.loads((base / "report.json").read_text())["percentage"] == 100.0
    history = eb("history", "--cwd", str(root))
    assert history.exit_code == 0, history.stderr
    family_row = next(line for line in history.stdout.splitlines() if line.startswith("prices "))
    assert family_row.split()[-2:] == ["99.95%", "99.95%"], family_row  # latest and lowest
    (root / "data/prices.jsonl").write_text(_prices(wrong=None), encoding="utf-8")
    fixed = eb("run", "--cwd", str(root), "--cache", "off", "--json")
    assert fixed.exit_code == 0, fixed.stderr
    head = json.loads(fixed.stdout)["output_dir"]
    diff = eb("diff", str(base), head)
    assert "prices: 2000/2001 (99.95%) -> 2001/2001 (100.0%)" in diff.stdout, diff.stdout


def _as_an_older_eb_made_it(run_dir: Path) -> None:
    """Take each case's `case_index` out of a shard's plan.json, as an eb from before it wrote
    it, and record the new digests down the chain (each stage file is vouched for by the next)."""
    stages = run_dir / "stages"
    chain = ["plan.json", "guard.json", "execute.json", "score.json", "report.json"]
    before = {name: hashlib.sha256((stages / name).read_bytes()).hexdigest() for name in chain}
    plan = stages / "plan.json"
    text = plan.read_text(encoding="utf-8")
    stripped = re.sub(r'\n *"case_index": \d+,', "", text)
    assert stripped != text
    plan.write_text(stripped, encoding="utf-8")
    for position, name in enumerate(chain):
        after = hashlib.sha256((stages / name).read_bytes()).hexdigest()
        for later in chain[position + 1 :]:
            path = stages / later
            path.write_text(
                path.read_text(encoding="utf-8").replace(before[name], after), encoding="utf-8"
            )


def test_a_merge_with_a_shard_from_an_older_eb_lists_its_familys_cases_by_id_and_says_so(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = _project(project)
    shards = [_run(eb, root, "--shard", f"{index}/3") for index in (1, 2, 3)]
    older = next(s for s in shards if any(c.startswith("qa[") for c in _order(s)))
    _as_an_older_eb_made_it(Path(older["output_dir"]))
    merged = eb("merge", "--cwd", str(root), "--json", *(s["output_dir"] for s in shards))
    assert merged.exit_code == 1, merged.stderr
    order = _order(json.loads(merged.stdout))
    # Without each case's place in the dataset, an order by id is one no shard contradicts
    # (the plain checks keep their place by file): not shard by shard, mixed.
    assert order == [
        "a_plain",
        *(f"qa[{case}]" for case in sorted(CASE_IDS)),
        *(f"tone[{case}]" for case in sorted(CASE_IDS)),
        "d_plain",
    ]
    for family in ("b_family", "c_family"):
        assert (
            f"the cases of eval_checks/{family}.yaml are listed by case id, not in their "
            "dataset's order" in " ".join(merged.stderr.split())
        )
