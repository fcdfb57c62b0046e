"""`eb plan` and `eb run --select` end to end: the plan lists exactly what the run then executes,
a worker runs exactly its part of a plan, and `eb merge` takes the parts as it takes shards.

Every check records that it ran (a file named after its id under `ran/`), so the tests prove
which processes started, not only what the report says.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EbResult
from tests.gitrepo import init_repo
from tests.processes import eb_process
from tests.test_run_selection import ran, recording

Eb = Callable[..., EbResult]

CONFIG = """\
[core]
output_dir = "results"
max_parallel_checks = 1
"""
SKIPPED = """\
schema_version: 1
id: waits_for_fix
type: deterministic
description: Skipped on purpose.
skip: waits for the upstream fix
script: raise SystemExit(1)
"""
VOLATILE_REPORT = {"run_id", "output_dir", "started_at", "completed_at", "duration_ms"}
VOLATILE_CHECK = {"started_at", "completed_at", "duration_ms"}


def _files() -> dict[str, str | bytes]:
    # What the checks leave behind is no project file (a cached verdict stays keyed).
    files: dict[str, str | bytes] = {".eval-banana/config.toml": CONFIG, ".gitignore": "ran/\n"}
    for index in range(9):
        folder = ("eval_checks/a", "eval_checks/b", "sub/eval_checks")[index % 3]
        tags = ["slow"] if index % 4 == 0 else ["fast"]
        files[f"{folder}/alpha_{index}.yaml"] = recording(f"alpha_{index}", tags=tags)
    # Fails without a traceback (which would name a temporary file of its run).
    files["sub/eval_checks/alpha_5.yaml"] = (
        str(files["sub/eval_checks/alpha_5.yaml"]).rstrip("\n")
        + "\n  raise SystemExit('this check fails on purpose')\n"
    )
    files["eval_checks/b/beta_login.yaml"] = recording("beta_login", tags=["slow"])
    files["eval_checks/b/beta_logout.yaml"] = recording("beta_logout")
    files["eval_checks/skip.yaml"] = SKIPPED
    return files


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "proj", _files())


def _with_cache(root: Path) -> None:
    (root / ".eval-banana" / "config.toml").write_text(CONFIG + '\n[cache]\nmode = "on"\n')


def _plan(eb: Eb, root: Path, *flags: str) -> dict[str, Any]:
    done = eb("plan", "--cwd", str(root), "--format", "json", *flags)
    assert done.exit_code == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def _run(eb: Eb, root: Path, out: Path, *flags: str) -> EbResult:
    return eb("run", "--cwd", str(root), "--output-dir", str(out), "--flat-output", *flags)


def _report(run_dir: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((run_dir / "report.json").read_text())
    return report


def _config(run_dir: Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((run_dir / "stages" / "config.json").read_text())
    return config


def _clear_ran(root: Path) -> None:
    for path in (root / "ran").glob("*"):
        path.unlink()


# --- eb plan lists what eb run executes -----------------------------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        (),
        ("--check-id", "alpha_*"),
        ("--check-id", "beta_login"),
        ("-k", "beta or alpha_1"),
        ("--tag", "slow"),
        ("--shard", "2/3"),
        ("--tag", "fast", "--shard", "1/2"),
    ],
)
def test_plan_lists_exactly_what_run_executes_in_its_order(
    repo: Path, eb: Eb, tmp_path: Path, flags: tuple[str, ...]
) -> None:
    plan = _plan(eb, repo, *flags)
    planned = [entry["id"] for entry in plan["checks"]]
    assert planned and not (repo / "ran").exists()  # the plan ran nothing
    assert not (repo / "results").exists()  # and wrote no run folder
    done = _run(eb, repo, tmp_path / "out", *flags)
    assert done.exit_code in (0, 1), done.stderr
    report = _report(tmp_path / "out")
    assert [check["check_id"] for check in report["checks"]] == planned
    assert ran(repo) == sorted(planned)
    assert [item["id"] for item in plan["skipped"]] == [
        item["check_id"] for item in report["skipped"]
    ]


@pytest.mark.parametrize(
    "flags", [(), ("--check-id", "qa[*]"), ("-k", "qa and c"), ("--shard", "1/2")]
)
def test_plan_lists_a_datasets_cases_as_run_executes_them(
    repo: Path, eb: Eb, tmp_path: Path, flags: tuple[str, ...]
) -> None:
    """A dataset family is planned case by case, each under its family, in the run's order;
    a skipped case is listed apart, as the run lists it."""
    family = recording("qa") + "\ncases:\n  - {id: a}\n  - {id: b, skip: later}\n  - {id: c}\n"
    (repo / "eval_checks" / "qa.yaml").write_text(family)
    plan = _plan(eb, repo, *flags)
    cases = [entry for entry in plan["checks"] if entry["id"].startswith("qa[")]
    assert all(entry["family"] == "qa" for entry in cases)
    if flags != ("--shard", "1/2"):
        expected = ["qa[c]"] if flags[:1] == ("-k",) else ["qa[a]", "qa[c]"]
        assert [entry["id"] for entry in cases] == expected
    done = _run(eb, repo, tmp_path / "out", *flags)
    assert done.exit_code in (0, 1), done.stderr
    report = _report(tmp_path / "out")
    assert [check["check_id"] for check in report["checks"]] == [e["id"] for e in plan["checks"]]
    assert [item["id"] for item in plan["skipped"]] == [
        item["check_id"] for item in report["skipped"]
    ]


def test_plan_entries_name_family_type_digest_and_the_plan_digest(repo: Path, eb: Eb) -> None:
    plan = _plan(eb, repo)
    entry = next(item for item in plan["checks"] if item["id"] == "beta_login")
    assert entry["family"] is None  # not a dataset case
    assert entry["type"] == "deterministic"
    assert entry["source"] == "eval_checks/b/beta_login.yaml"
    assert entry["definition_digest"].startswith("sha256:")
    assert entry["cache"] == "off"  # the project's cache is off
    assert entry["expected_seconds"] is None and entry["expected_cost_usd"] is None
    assert [item["id"] for item in plan["skipped"]] == ["waits_for_fix"]
    # The digest: the same checks give the same digest; an edited one another.
    again = _plan(eb, repo)
    assert again["plan_digest"] == plan["plan_digest"]
    # `--json`, as eb run spells it, is `--format json`.
    spelled = json.loads(eb("plan", "--cwd", str(repo), "--json").stdout)
    assert spelled["plan_digest"] == plan["plan_digest"]
    path = repo / "eval_checks/b/beta_login.yaml"
    path.write_text(path.read_text() + "# edited\n")
    assert _plan(eb, repo)["plan_digest"] != plan["plan_digest"]


def test_plan_is_published_as_a_schema_and_matches_it(repo: Path, eb: Eb) -> None:
    import jsonschema

    done = eb("schema", "plan")
    assert done.exit_code == 0
    schema = json.loads(done.stdout)
    plan = _plan(eb, repo, "--shards", "3")
    jsonschema.validate(plan, schema)
    assert schema["$id"].endswith("plan.schema.json")


def test_plan_refuses_what_run_refuses(repo: Path, eb: Eb) -> None:
    (repo / "eval_checks/broken.yaml").write_text("schema_version: 1\nid: broken\ntype: nope\n")
    done = eb("plan", "--cwd", str(repo), "--format", "json")
    assert done.exit_code == 2
    # Asked for JSON, a scheduler reads the refusal as the JSON error document on stdout.
    error = json.loads(done.stdout)
    assert error["exit_code"] == 2
    assert error["error"]["kind"] == "definition_error"
    assert error["error"]["file"].endswith("broken.yaml")
    plain = eb("plan", "--cwd", str(repo))
    assert plain.exit_code == 2 and "broken.yaml" in plain.stderr and plain.stdout == ""


def test_plan_table_names_each_check_and_the_digest(repo: Path, eb: Eb) -> None:
    # Case ids whose brackets read like style tags ([red], [bold], [link]) are shown whole.
    family = recording("qa") + "\ncases:\n  - {id: red}\n  - {id: bold}\n  - {id: link}\n"
    (repo / "eval_checks" / "qa.yaml").write_text(family)
    done = eb("plan", "--cwd", str(repo), "--shards", "2")
    assert done.exit_code == 0, done.stderr
    plan = _plan(eb, repo, "--shards", "2")
    assert {"qa[red]", "qa[bold]", "qa[link]"} <= {entry["id"] for entry in plan["checks"]}
    lines = done.stdout.splitlines()
    for entry in plan["checks"]:
        # Piped, the table is as wide as it needs: no type or family cut short to 80 columns.
        (line,) = [line for line in lines if f" {entry['id']} " in line]
        assert f" {entry['type']} " in line and f" {entry['family'] or '-'} " in line, line
    assert f"plan digest: {plan['plan_digest']}" in done.stdout
    assert "shard 2/2:" in done.stdout


def test_plan_table_folds_a_large_family_into_one_row_unless_asked_for_its_cases(
    repo: Path, eb: Eb
) -> None:
    # 10,000 rows took Rich seven seconds to draw; the run's console folds a family of more
    # than 20 cases too. The JSON plan always lists every case.
    rows = "".join(f"  - {{id: c{index:02d}}}\n" for index in range(25))
    (repo / "eval_checks" / "qa.yaml").write_text(recording("qa") + "\ncases:\n" + rows)
    plan = _plan(eb, repo, "--shards", "2")
    assert sum(entry["family"] == "qa" for entry in plan["checks"]) == 25
    done = eb("plan", "--cwd", str(repo), "--shards", "2")
    assert done.exit_code == 0, done.stderr
    (row,) = [line for line in done.stdout.splitlines() if " qa[*] " in line]
    assert "25 cases" in row and "25 off" in row, row  # the cache is off here
    shards = sorted({entry["shard"] for entry in plan["checks"] if entry["family"] == "qa"})
    assert ", ".join(map(str, shards)) in row
    assert not any(f" qa[c{index:02d}] " in done.stdout for index in range(25))
    assert "`eb plan --cases` gives each case its own" in done.stdout
    # Plain checks keep their rows beside it.
    assert " beta_login " in done.stdout
    every = eb("plan", "--cwd", str(repo), "--cases")
    assert all(f" qa[c{index:02d}] " in every.stdout for index in range(25))
    assert " qa[*] " not in every.stdout and "--cases` gives" not in every.stdout


def test_plan_shards_are_the_hash_split_of_run_shard(repo: Path, eb: Eb) -> None:
    plan = _plan(eb, repo, "--shards", "3", "--balance", "history")
    assert plan["balance"] == "hash"  # no history known: the hash split
    for index in (1, 2, 3):
        part = [entry["id"] for entry in plan["checks"] if entry["shard"] == index]
        alone = _plan(eb, repo, "--shard", f"{index}/3")
        assert [entry["id"] for entry in alone["checks"]] == part
        assert plan["shard_totals"][index - 1]["checks"] == len(part)
    assert sum(total["checks"] for total in plan["shard_totals"]) == len(plan["checks"])


def test_with_history_the_plan_expects_durations_and_shows_the_runs_history_split(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    """Once a run is recorded, each planned check carries its recorded duration, and the plan's
    `--shards N --balance history` is the very split `eb run --shard K/N --balance history`
    then runs (one rule for both commands)."""
    assert _run(eb, repo, tmp_path / "first").exit_code == 1
    _clear_ran(repo)
    plan = _plan(eb, repo, "--shards", "2", "--balance", "history")
    assert plan["balance"] == "history"
    recorded = {c["check_id"]: c["duration_ms"] for c in _report(tmp_path / "first")["checks"]}
    for entry in plan["checks"]:
        assert entry["expected_seconds"] == pytest.approx(recorded[entry["id"]] / 1000)
    assert plan["expected_seconds"] == pytest.approx(sum(recorded.values()) / 1000)
    for index in (1, 2):
        part = [entry["id"] for entry in plan["checks"] if entry["shard"] == index]
        out = tmp_path / f"shard{index}"
        done = _run(eb, repo, out, "--shard", f"{index}/2", "--balance", "history")
        assert done.exit_code in (0, 1), done.stderr
        assert [c["check_id"] for c in _report(out)["checks"]] == part
        assert _config(out)["selection"]["shard"]["balance"] == "history"


def test_cache_status_says_hit_for_a_cached_check_and_miss_for_an_edited_one(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    _with_cache(repo)
    first = _plan(eb, repo)
    assert {entry["cache"] for entry in first["checks"]} == {"miss"}
    assert _run(eb, repo, tmp_path / "one").exit_code == 1
    cached = _plan(eb, repo)
    # Passed and failed verdicts are stored: every check would hit now.
    assert {entry["cache"] for entry in cached["checks"]} == {"hit"}
    path = repo / "eval_checks/b/beta_login.yaml"
    path.write_text(path.read_text() + "# edited\n")
    edited = _plan(eb, repo)
    statuses = {entry["id"]: entry["cache"] for entry in edited["checks"]}
    assert statuses.pop("beta_login") == "miss"
    # A check without `inputs:` is keyed on the whole project: the edit touches every key.
    # The plan says what the run does; the run then agrees check by check.
    _clear_ran(repo)
    assert _run(eb, repo, tmp_path / "two").exit_code == 1
    report = _report(tmp_path / "two")
    reused = {
        check["check_id"]: "hit" if check["details"].get("cache", {}).get("hit") else "miss"
        for check in report["checks"]
    }
    assert reused == {entry["id"]: entry["cache"] for entry in edited["checks"]}
    assert ran(repo) == sorted(k for k, v in reused.items() if v == "miss")


def test_cache_refresh_plans_every_check_as_a_miss(repo: Path, eb: Eb, tmp_path: Path) -> None:
    _with_cache(repo)
    assert _run(eb, repo, tmp_path / "one").exit_code == 1
    plan = _plan(eb, repo, "--cache", "refresh")
    assert {entry["cache"] for entry in plan["checks"]} == {"miss"}


# --- eb run --select ------------------------------------------------------------------------


def test_select_runs_exactly_the_listed_ids_from_a_list_or_lines(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    listed = tmp_path / "ids.json"
    listed.write_text(json.dumps(["beta_login", "alpha_3"]))
    done = _run(eb, repo, tmp_path / "list", "--select", str(listed))
    assert done.exit_code == 0, done.stderr
    assert ran(repo) == ["alpha_3", "beta_login"]
    # Reported in plan order (by path), whatever the list's order.
    assert [c["check_id"] for c in _report(tmp_path / "list")["checks"]] == [
        "alpha_3",
        "beta_login",
    ]
    select = _config(tmp_path / "list")["selection"]["select"]
    assert select["form"] == "list" and select["plan_digest"] is None
    assert select["file_sha256"].startswith("sha256:")
    _clear_ran(repo)
    lines = tmp_path / "ids.txt"
    lines.write_text("# the two logins\nbeta_login\n\nbeta_logout\n")
    assert _run(eb, repo, tmp_path / "lines", "--select", str(lines)).exit_code == 0
    assert ran(repo) == ["beta_login", "beta_logout"]


def test_select_reads_standard_input(repo: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(repo), "--select", "-"],
        input="alpha_1\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert ran(repo) == ["alpha_1"]


def test_select_records_the_file_and_plan_digest(repo: Path, eb: Eb, tmp_path: Path) -> None:
    plan = _plan(eb, repo, "--shards", "2")
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    assert _run(eb, repo, tmp_path / "p1", "--select", str(path), "--shard", "1/2").exit_code in (
        0,
        1,
    )
    select = _config(tmp_path / "p1")["selection"]["select"]
    assert select["form"] == "plan"
    assert select["plan_digest"] == plan["plan_digest"]
    import hashlib

    assert select["file_sha256"] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    part = [entry["id"] for entry in plan["checks"] if entry["shard"] == 1]
    assert select["ids"] == part
    assert ran(repo) == sorted(part)
    validate = json.loads((tmp_path / "p1" / "stages" / "plan.json").read_text())
    assert validate["selection_digest"] == plan["plan_digest"]


def test_plan_records_the_selection_digest_of_the_run_of_its_flags(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    """`selection_digest` is what a run of the same flags records, before --shard cuts the
    selection (the same in every shard); `plan_digest` covers the checks the plan lists, which
    is what `eb run --select` holds the project to."""
    whole = _plan(eb, repo)
    assert whole["selection_digest"] == whole["plan_digest"]
    for index in (1, 2):
        plan = _plan(eb, repo, "--shard", f"{index}/2")
        out = tmp_path / f"shard{index}"
        assert _run(eb, repo, out, "--shard", f"{index}/2").exit_code in (0, 1)
        recorded = json.loads((out / "stages" / "plan.json").read_text())["selection_digest"]
        assert plan["selection_digest"] == recorded == whole["plan_digest"]
        assert plan["plan_digest"] != plan["selection_digest"]
        path = tmp_path / f"plan{index}.json"
        path.write_text(json.dumps(plan))
        selected = tmp_path / f"selected{index}"
        assert _run(eb, repo, selected, "--select", str(path)).exit_code in (0, 1)
        recorded = json.loads((selected / "stages" / "plan.json").read_text())["selection_digest"]
        assert recorded == plan["plan_digest"]


def test_select_refuses_ids_outside_the_selection_naming_them(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    listed = tmp_path / "ids.json"
    listed.write_text(json.dumps(["alpha_1", "no_such_check", "waits_for_fix"]))
    done = _run(eb, repo, tmp_path / "out", "--select", str(listed))
    assert done.exit_code == 2
    assert "'no_such_check'" in done.stderr and "'waits_for_fix'" in done.stderr  # a skip too
    assert "alpha_1'" not in done.stderr
    assert not (tmp_path / "out").exists() and ran(repo) == []
    # Outside another selection flag of the same run: refused as well.
    listed.write_text(json.dumps(["alpha_1"]))
    done = _run(eb, repo, tmp_path / "out", "--select", str(listed), "-k", "beta")
    assert done.exit_code == 2 and "'alpha_1'" in done.stderr


def test_select_refuses_a_stale_plan_unless_allowed(repo: Path, eb: Eb, tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(_plan(eb, repo)))
    edited = repo / "eval_checks/a/alpha_0.yaml"
    edited.write_text(edited.read_text() + "# edited\n")
    done = _run(eb, repo, tmp_path / "out", "--select", str(path))
    assert done.exit_code == 2
    assert "no longer matches" in done.stderr and "'alpha_0'" in done.stderr
    assert ran(repo) == []
    done = _run(eb, repo, tmp_path / "out", "--select", str(path), "--allow-stale-plan")
    assert done.exit_code == 1, done.stderr  # alpha_5 fails on purpose
    assert len(ran(repo)) == 11


def test_select_refuses_a_plan_whose_check_list_was_edited_saying_so(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    """A scheduler dropped a check from the plan: the refusal said "a check file moved" and
    pointed at --allow-stale-plan, which ran every part, and merged them, without it."""
    document = _plan(eb, repo)
    document["checks"] = [entry for entry in document["checks"] if entry["id"] != "alpha_5"]
    path = tmp_path / "trimmed.json"
    path.write_text(json.dumps(document))
    for flags in ((), ("--allow-stale-plan",)):
        done = _run(eb, repo, tmp_path / "out", "--select", str(path), *flags)
        assert done.exit_code == 2, done.stdout + done.stderr
        assert (
            f"--select {path}: the plan's check list does not match its own plan_digest "
            f"({document['plan_digest']}; its 10 checks give sha256:"
        ) in done.stderr
        assert "it was edited after `eb plan` wrote it" in done.stderr
        assert "moved" not in done.stderr and "--allow-stale-plan" not in done.stderr
        assert ran(repo) == []


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('["alpha_1", "alpha_1"]', "more than once"),
        ("[1, 2]", "not a check id"),
        ('{"kind": "something else"}', "not an `eb plan` document"),
        ("{not json", "not valid JSON"),
        ("\n# nothing\n", "names no check"),
    ],
)
def test_select_refuses_a_bad_file(
    repo: Path, eb: Eb, tmp_path: Path, content: str, words: str
) -> None:
    path = tmp_path / "select.json"
    path.write_text(content)
    done = _run(eb, repo, tmp_path / "out", "--select", str(path))
    assert done.exit_code == 2
    assert words in done.stderr and str(path) in done.stderr


@pytest.mark.parametrize("form", ["lines", "list", "plan"])
def test_select_ignores_a_leading_utf8_byte_order_mark(
    repo: Path, eb: Eb, tmp_path: Path, form: str
) -> None:
    """Notepad and Windows PowerShell's `Out-File -Encoding utf8` start UTF-8 with a byte order
    mark: the file is read as without it, in the form it holds."""
    ids = ["alpha_1", "beta_login"]
    text = {
        "lines": "\n".join(ids) + "\n",
        "list": json.dumps(ids),
        "plan": json.dumps(_plan(eb, repo, "--check-id", "alpha_1", "--check-id", "beta_login")),
    }[form]
    path = tmp_path / "select.txt"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    done = _run(eb, repo, tmp_path / "out", "--select", str(path))
    assert done.exit_code == 0, done.stderr
    assert ran(repo) == ids
    assert _config(tmp_path / "out")["selection"]["select"]["form"] == form


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ("alpha_1\n".encode("utf-16"), "is UTF-16 text, not UTF-8"),
        ('["alpha_1", "beta_login"]'.encode("utf-16-le"), "UTF-16 text without a byte order"),
        ("alpha_1\n".encode("utf-32"), "is UTF-32 text, not UTF-8"),
        ("alpha_1\ncaf\u00e9\n".encode("latin-1"), "is not valid UTF-8 (invalid"),
    ],
    ids=["utf-16", "utf-16-without-mark", "utf-32", "latin-1"],
)
def test_select_refuses_a_file_that_is_not_utf8(
    repo: Path, eb: Eb, tmp_path: Path, data: bytes, words: str
) -> None:
    """A file in another encoding (Windows PowerShell 5's `>` writes UTF-16) is refused with
    the fix, never read with replacement characters into ids that look almost right."""
    path = tmp_path / "select.txt"
    path.write_bytes(data)
    done = _run(eb, repo, tmp_path / "out", "--select", str(path))
    assert done.exit_code == 2
    assert f"--select {path}: " in done.stderr and words in done.stderr
    assert "Save the file as UTF-8" in done.stderr
    assert "\ufffd" not in done.stderr
    assert not (tmp_path / "out").exists() and not (repo / "ran").exists()


def test_select_of_a_plan_whose_every_check_is_skipped_says_so(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    """`eb plan` of nothing but skipped checks passes; the run of that plan has nothing to
    start and is refused, saying so, never asking for the plan document it was given."""
    plan = _plan(eb, repo, "--check-id", "waits_for_fix")
    assert plan["checks"] == [] and [entry["id"] for entry in plan["skipped"]] == ["waits_for_fix"]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    done = _run(eb, repo, tmp_path / "out", "--select", str(path))
    assert done.exit_code == 2
    assert "every check of its plan is skipped ('waits_for_fix')" in done.stderr
    assert "Give an `eb plan --format json` document" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_select_refuses_a_part_of_another_number_of_shards(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(_plan(eb, repo, "--shards", "3")))
    done = _run(eb, repo, tmp_path / "out", "--select", str(path), "--shard", "1/2")
    assert done.exit_code == 2 and "--shards 3" in done.stderr
    assert eb("run", "--cwd", str(repo), "--allow-stale-plan").exit_code == 2


@pytest.mark.parametrize("shard", [7, None])
def test_select_refuses_a_plan_that_puts_a_check_in_no_part(
    repo: Path, eb: Eb, tmp_path: Path, shard: int | None
) -> None:
    """A check of a --shards 3 plan dealt to part 7, or to none, would run in no part: every
    part refuses the plan, naming the check and its shard, and runs nothing."""
    plan = _plan(eb, repo, "--shards", "3")
    stray = plan["checks"][0]
    stray["shard"] = shard
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    for flags in (("--shard", "1/3"), ("--shard", "3/3"), ()):
        done = _run(eb, repo, tmp_path / "out", "--select", str(path), *flags)
        assert done.exit_code == 2
        shown = "null" if shard is None else str(shard)
        assert f"1 check is in no part 1..3: '{stray['id']}' (shard {shown})" in done.stderr
        assert str(path) in done.stderr
        assert not (tmp_path / "out").exists() and not (repo / "ran").exists()


# --- eb merge of --select parts -------------------------------------------------------------


def _parts(eb: Eb, root: Path, plan_path: Path, base: Path, total: int) -> list[Path]:
    folders = []
    for index in range(1, total + 1):
        folder = base / f"part-{index}"
        done = _run(eb, root, folder, "--select", str(plan_path), "--shard", f"{index}/{total}")
        assert done.exit_code in (0, 1), done.stderr
        folders.append(folder)
    return folders


def _merge(eb: Eb, root: Path, out: Path, folders: list[Path]) -> EbResult:
    return eb(
        "merge", *map(str, folders), "--cwd", str(root), "--output-dir", str(out), "--flat-output"
    )


def test_a_merge_of_three_select_parts_equals_the_one_machine_report(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    assert _run(eb, repo, tmp_path / "one").exit_code == 1
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(_plan(eb, repo, "--shards", "3")))
    folders = _parts(eb, repo, plan_path, tmp_path / "parts", 3)
    merged = _merge(eb, repo, tmp_path / "merged", folders)
    assert merged.exit_code == 1, merged.stderr  # the verdict: alpha_5 fails
    one, many = _report(tmp_path / "one"), _report(tmp_path / "merged")
    assert [source["shard"] for source in many["merged_from"]] == [1, 2, 3]
    for key in one:
        if key in VOLATILE_REPORT or key in ("checks", "merged_from"):
            continue
        assert many[key] == one[key], key
    assert [c["check_id"] for c in many["checks"]] == [c["check_id"] for c in one["checks"]]
    for mine, theirs in zip(many["checks"], one["checks"], strict=True):
        assert {k: v for k, v in mine.items() if k not in VOLATILE_CHECK} == {
            k: v for k, v in theirs.items() if k not in VOLATILE_CHECK
        }
    # The merged run executed the whole plan.
    select = _config(tmp_path / "merged")["selection"]["select"]
    assert select["ids"] == select["plan_ids"]


def test_select_lists_exactly_the_skipped_checks_its_plan_selected(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    def skipped(run_dir: Path) -> list[str]:
        return [item["check_id"] for item in _report(run_dir)["skipped"]]

    narrowed = tmp_path / "narrowed.json"
    narrowed.write_text(json.dumps(_plan(eb, repo, "--check-id", "beta_*", "--shards", "2")))
    folders = _parts(eb, repo, narrowed, tmp_path / "parts", 2)
    assert [skipped(folder) for folder in folders] == [[], []]
    assert _merge(eb, repo, tmp_path / "merged", folders).exit_code == 0
    assert _run(eb, repo, tmp_path / "one", "--check-id", "beta_*").exit_code == 0
    assert skipped(tmp_path / "merged") == skipped(tmp_path / "one") == []
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(_plan(eb, repo)))
    _run(eb, repo, tmp_path / "whole", "--select", str(whole), "--shard", "1/2")
    assert skipped(tmp_path / "whole") == ["waits_for_fix"]  # the plan selected it
    listed = tmp_path / "ids.json"
    listed.write_text(json.dumps(["beta_login"]))
    assert _run(eb, repo, tmp_path / "list", "--select", str(listed)).exit_code == 0
    assert skipped(tmp_path / "list") == []


def test_merge_refuses_a_missing_or_repeated_part_and_mixed_plans(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(_plan(eb, repo, "--shards", "3")))
    folders = _parts(eb, repo, plan_path, tmp_path / "parts", 3)
    missing = _merge(eb, repo, tmp_path / "m1", folders[:2])
    assert missing.exit_code == 2 and "missing shard 3 of 3" in missing.stderr
    twice = _merge(eb, repo, tmp_path / "m2", [folders[0], folders[0], folders[2]])
    assert twice.exit_code == 2 and "given twice" in twice.stderr
    # Part 3 of a plan made after a check changed: another plan.
    edited = repo / "eval_checks/a/alpha_0.yaml"
    edited.write_text(edited.read_text() + "# edited\n")
    other = tmp_path / "other.json"
    other.write_text(json.dumps(_plan(eb, repo, "--shards", "3")))
    (third,) = _parts(eb, repo, other, tmp_path / "other-parts", 3)[2:]
    mixed = _merge(eb, repo, tmp_path / "m3", [folders[0], folders[1], third])
    assert mixed.exit_code == 2 and "another plan" in mixed.stderr


def test_merge_refuses_a_select_part_next_to_a_list_part_of_the_same_checks(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    """A plan's parts and the parts of a plain list share no plan digest: one plan only."""
    plan = _plan(eb, repo, "--shards", "2")
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan))
    (first,) = _parts(eb, repo, plan_path, tmp_path / "plan-parts", 2)[:1]
    listed = tmp_path / "ids.json"
    listed.write_text(json.dumps([entry["id"] for entry in plan["checks"]]))
    (second,) = _parts(eb, repo, listed, tmp_path / "list-parts", 2)[1:]
    mixed = _merge(eb, repo, tmp_path / "m", [first, second])
    assert mixed.exit_code == 2 and "of plan" in mixed.stderr


def test_parts_dealt_by_history_run_and_merge_as_the_plan_dealt_them(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    """A plan dealt by history (not by hash): each worker runs the plan's own part, and the
    merge accepts parts that are not hash slices."""
    assert _run(eb, repo, tmp_path / "one").exit_code == 1
    _clear_ran(repo)
    plan = _plan(eb, repo, "--shards", "2")
    ids = [entry["id"] for entry in plan["checks"]]
    # What a history split might do: the two slow ones alone in part 1, the rest in part 2.
    slow = {"alpha_0", "beta_login"}
    for entry in plan["checks"]:
        entry["shard"] = 1 if entry["id"] in slow else 2
    plan["balance"] = "history"
    hashed = [entry["id"] for entry in _plan(eb, repo, "--shard", "1/2")["checks"]]
    assert sorted(hashed) != sorted(slow)  # really another split than the hash one
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan))
    folders = _parts(eb, repo, plan_path, tmp_path / "parts", 2)
    assert [c["check_id"] for c in _report(folders[0])["checks"]] == [i for i in ids if i in slow]
    merged = _merge(eb, repo, tmp_path / "merged", folders)
    assert merged.exit_code == 1, merged.stderr
    many, one = _report(tmp_path / "merged"), _report(tmp_path / "one")
    assert [c["check_id"] for c in many["checks"]] == [c["check_id"] for c in one["checks"]]
    assert (many["passed_checks"], many["failed_checks"]) == (
        one["passed_checks"],
        one["failed_checks"],
    )
    assert ran(repo) == sorted(ids)


def test_parts_of_a_history_plan_merge_whatever_history_each_worker_holds(
    repo: Path, eb: Eb, tmp_path: Path
) -> None:
    """Under `shard_balance = "history"` the plan dealt the parts: a worker without the history
    (a fresh pod) runs its part as well, records the plan's split and no history of its own,
    and the merge takes the parts. A list of ids split by `--shard` records the hash split."""
    config = repo / ".eval-banana" / "config.toml"
    config.write_text(CONFIG.replace("[core]\n", '[core]\nshard_balance = "history"\n'))
    assert _run(eb, repo, tmp_path / "one").exit_code == 1  # the history knows every check
    _clear_ran(repo)
    plan = _plan(eb, repo, "--shards", "3")
    assert plan["balance"] == "history"
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan))
    folders = []
    for index in (1, 2, 3):
        folder = tmp_path / "parts" / f"part-{index}"
        # Only the first worker holds the history the plan was dealt by.
        fresh = () if index == 1 else ("--history-dir", str(tmp_path / f"fresh-{index}"))
        flags = ("--select", str(plan_path), "--shard", f"{index}/3", *fresh)
        done = _run(eb, repo, folder, *flags)
        assert done.exit_code in (0, 1), done.stderr
        shard = _config(folder)["selection"]["shard"]
        assert (shard["balance"], shard["history_digest"]) == ("history", None)
        folders.append(folder)
    merged = _merge(eb, repo, tmp_path / "merged", folders)
    assert merged.exit_code == 1, merged.stderr  # alpha_5 fails, as on one machine
    assert ran(repo) == sorted(entry["id"] for entry in plan["checks"])
    listed = tmp_path / "ids.txt"
    listed.write_text("\n".join(entry["id"] for entry in plan["checks"]))
    done = _run(eb, repo, tmp_path / "list", "--select", str(listed), "--shard", "1/2")
    assert done.exit_code in (0, 1), done.stderr
    shard = _config(tmp_path / "list")["selection"]["shard"]
    assert (shard["balance"], shard["history_digest"]) == ("hash", None)


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (("--shards", "0"), "--shards 0"),
        (("--shards", "1000000000"), "N must lie between 1 and 10,000"),
        (("--shards", "2", "--shard", "1/2"), "cannot be combined"),
        (("-k", "and and"), "-k"),
    ],
)
def test_plan_refuses_bad_flags(repo: Path, eb: Eb, flags: tuple[str, ...], words: str) -> None:
    done = eb("plan", "--cwd", str(repo), *flags)
    assert done.exit_code == 2
    assert words in done.stderr


def test_a_select_plan_reports_only_the_families_it_selected(eb: Eb, tmp_path: Path) -> None:
    """A gated family the plan's -k left out is no family of the --select run, of its parts
    or of their merge, as it is none of the one-machine run of -k; one whose every selected
    case is skipped stays (not measured), as it does there."""
    rows = "\ncases:\n  - {id: a}\n  - {id: b}\n  - {id: c}\n"
    skipped_rows = "\ncases:\n  - {id: a, skip: later}\n  - {id: b, skip: later}\n"
    files: dict[str, str | bytes] = {".eval-banana/config.toml": CONFIG, ".gitignore": "ran/\n"}
    for family, cases in (("alpha", rows), ("beta", rows), ("gamma", skipped_rows)):
        files[f"eval_checks/{family}.yaml"] = recording(family) + "min_pass_rate: 0.5" + cases
    root = init_repo(tmp_path / "proj", files)
    selection = ("-k", "alpha or gamma")
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(_plan(eb, root, *selection, "--shards", "2")))
    assert _run(eb, root, tmp_path / "one", *selection).exit_code == 0
    assert _run(eb, root, tmp_path / "whole", "--select", str(plan_path)).exit_code == 0
    folders = _parts(eb, root, plan_path, tmp_path / "parts", 2)
    assert _merge(eb, root, tmp_path / "merged", folders).exit_code == 0

    def families(run_dir: Path) -> list[tuple[str, int]]:
        return [(family["id"], family["cases"]) for family in _report(run_dir)["families"]]

    assert families(tmp_path / "one") == [("alpha", 3), ("gamma", 0)]
    assert families(tmp_path / "whole") == families(tmp_path / "one")
    assert families(tmp_path / "merged") == families(tmp_path / "one")
    assert _report(tmp_path / "merged")["families"] == _report(tmp_path / "one")["families"]
    diff = eb("diff", str(tmp_path / "one"), str(tmp_path / "merged"))
    assert diff.exit_code == 0, diff.stdout + diff.stderr
    assert "Families" not in diff.stdout


@pytest.mark.parametrize(
    ("stored_under", "planned_under"),
    [
        # Judged unwatched: a write into the project passed there, so a watching run judges again.
        ({"isolation": "off", "ignore": []}, {"isolation": "detect", "ignore": []}),
        # Judged while a pattern let writes through that the run no longer lets through.
        ({"isolation": "detect", "ignore": ["ran/**"]}, {"isolation": "detect", "ignore": []}),
    ],
    ids=["off-then-detect", "pattern-dropped"],
)
def test_cache_status_is_miss_for_a_verdict_judged_under_laxer_isolation(
    repo: Path, tmp_path: Path, stored_under: dict[str, Any], planned_under: dict[str, Any]
) -> None:
    def configure(isolation: dict[str, Any]) -> tuple[str, ...]:
        ignore = json.dumps(isolation["ignore"])
        (repo / ".eval-banana" / "config.toml").write_text(
            CONFIG + f'\n[cache]\nmode = "on"\n\n[harness]\nisolation_ignore = {ignore}\n'
        )
        return ("--execution-isolation", isolation["isolation"])

    def plan(*flags: str) -> dict[str, str]:
        done = eb_process(repo, "plan", "--format", "json", *flags)
        assert done.returncode == 0, done.stderr
        return {entry["id"]: entry["cache"] for entry in json.loads(done.stdout)["checks"]}

    stored = configure(stored_under)
    assert eb_process(repo, "run", "--output-dir", str(tmp_path / "one"), *stored).returncode == 1
    assert set(plan(*stored).values()) == {"hit"}
    watched = configure(planned_under)
    planned = plan(*watched)
    _clear_ran(repo)
    assert eb_process(repo, "run", "--output-dir", str(tmp_path / "two"), *watched).returncode == 1
    # The plan says what the run then did: every check was run again, none reused.
    assert set(planned.values()) == {"miss"}
    assert ran(repo) == sorted(planned)
