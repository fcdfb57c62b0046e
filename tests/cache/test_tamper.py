"""Stored verdicts are evidence, not truth: the MAC, the agreement of an entry's fields, and the
run's own record of what it wrote each keep a failure from coming back as a pass.

The poisoner is a deterministic check that rewrites other checks' cached verdicts while the run
goes on. The layers are tested apart: edits by something that cannot read the cache's secret
(the MAC); edits by a check that reads it and signs its forgeries, which the watch on eb's own
files catches first (the writer is an error, nothing of the run is stored); and, beneath the
watch, the run's own record of what it wrote (tested on a session, where no watch runs).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.cache.session import CacheSession
from eval_banana.cache.store import CacheStore
from eval_banana.core.mac import SECRET_NAME, signed_text
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, PlanDoc
from tests.cache.rig import Project, cache_of, judge, make_project, script_check, write_signed

# Signs like eb (docs/fail-closed.md#the-caches-mac), with the secret read from the cache: a
# check that can read the secret can forge. Written out here, not imported from eb.
FORGE = """\
import hashlib, hmac, json, sys
from pathlib import Path
ctx = json.loads(Path(sys.argv[1]).read_text())
cache = Path(ctx["project_root"]) / ".eval-banana" / "cache"
secret = (cache / "secret.key").read_bytes()[:64]
def sign(document):
    body = {k: v for k, v in document.items() if k != "mac"}
    text = json.dumps(body, indent=1).encode() + b"\\n"
    rest = text[1:].lstrip(b"\\n ")
    mac = hmac.new(secret, b"eval-banana/cache-mac/1\\0" + b"{" + rest, hashlib.sha256)
    return b'{"mac": "hmac-sha256:' + mac.hexdigest().encode() + b'", ' + rest
entries = {}
for path in (cache / "entries").glob("*/*.json"):
    document = json.loads(path.read_text())
    entries[document["check_id"]] = (path, document)
"""

# Rewrites every failed verdict of another check into a pass, signed, its text dropped.
FLIP = (
    FORGE
    + """\
for check_id, (path, document) in entries.items():
    if check_id != "z_poisoner" and document["result"]["status"] == "failed":
        document["result"].update(status="passed", score=1, observed_status="passed")
        document["result_file"] = None
        path.write_bytes(sign(document))
print("flipped")
"""
)

# Copies the passing check's sound entry over the failing one's, bytes as they are.
COPY = (
    FORGE
    + """\
passing_path, _ = entries["b_passes"]
failing_path, _ = entries["a_fails"]
failing_path.write_bytes(passing_path.read_bytes())
print("copied")
"""
)


def _project(tmp_path: Path, eb: Callable[..., Any], *, poisoner: str | None) -> Project:
    checks = {
        "a_fails": script_check("a_fails", script="raise SystemExit(1)\n"),
        "b_passes": script_check("b_passes", script="print('fine')\n"),
    }
    if poisoner is not None:
        checks["z_poisoner"] = script_check("z_poisoner", script=poisoner)
    # One check at a time, in plan order: the poisoner runs after the verdicts it rewrites.
    return make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks=checks,
        files={},
        extra_config="",
        replay=False,
    )


def _one_at_a_time(project: Project) -> None:
    config = project.root / ".eval-banana" / "config.toml"
    config.write_text(
        config.read_text().replace("max_parallel_checks = 2", "max_parallel_checks = 1")
    )


def _status(report: dict[str, Any], check_id: str) -> str:
    status: str = next(c for c in report["checks"] if c["check_id"] == check_id)["status"]
    return status


def _run_the_inside_job(project: Project, writer: str) -> dict[str, Any]:
    """Run once so the verdicts are stored, then again with the writer edited (so it alone runs
    while every other verdict is reused): the run in which it rewrites the cache."""
    project.run(expect_exit=1)
    check_file = project.root / "eval_checks" / f"{writer}.yaml"
    check_file.write_text(check_file.read_text().replace(f"{writer}.", f"{writer}, again.", 1))
    return project.run(expect_exit=1)


def _caught_writing(report: dict[str, Any], check_id: str) -> None:
    """The check that wrote eb's files is an error naming them (the in-run watch)."""
    check = next(c for c in report["checks"] if c["check_id"] == check_id)
    assert check["status"] == "error", check
    assert "eb's own files changed" in json.dumps(check) and ".eval-banana/cache" in json.dumps(
        check
    )


def _entry(project: Project, check_id: str) -> Path:
    (found,) = [p for p in project.entries() if json.loads(p.read_bytes())["check_id"] == check_id]
    return found


def test_a_check_that_forges_signed_passes_during_the_run_is_undone(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # The poisoner can read the secret, so its forgeries carry valid MACs: only the run's own
    # record of what it wrote tells them apart.
    project = _project(tmp_path, eb, poisoner=FLIP)
    _one_at_a_time(project)
    first = _run_the_inside_job(project, "z_poisoner")
    assert _status(first, "a_fails") == "failed"
    _caught_writing(first, "z_poisoner")
    assert [p for p in project.entries() if "a_fails" in p.read_text()] == []
    second = project.run(expect_exit=1)
    assert _status(second, "a_fails") == "failed"
    assert not cache_of(next(c for c in second["checks"] if c["check_id"] == "a_fails"))["hit"]


def test_a_check_that_copies_a_passing_entry_over_a_failing_one_is_undone(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = _project(tmp_path, eb, poisoner=COPY)
    _one_at_a_time(project)
    _caught_writing(_run_the_inside_job(project, "z_poisoner"), "z_poisoner")
    second = project.run(expect_exit=1)
    assert _status(second, "a_fails") == "failed"


# Rewrites, in place, the current run's restored checks/a_fails.json: that file is a hard link
# to the cache's copy and to the earlier run folder's, so no new file appears anywhere watched.
THROUGH_A_LINK = """\
import json, os, sys
from pathlib import Path
checks = Path(json.loads(Path(sys.argv[1]).read_text())["output_dir"]).parent
for path in checks.glob("a_fails*.json"):
    if os.stat(path).st_nlink > 1:
        data = path.read_bytes()
        with open(path, "r+b") as handle:
            handle.write(data.replace(b'"status": "failed"', b'"status": "passed"'))
        print("wrote through", path.name)
"""


def test_a_check_that_writes_through_a_restored_link_is_caught(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    checks = {
        # Keyed on no file: reused while the writer's own check file is edited.
        "a_fails": script_check("a_fails", script="raise SystemExit(1)\n", inputs=[]),
        "z_poisoner": script_check("z_poisoner", script=THROUGH_A_LINK),
    }
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files={}, replay=False)
    report = _run_the_inside_job(project, "z_poisoner")
    assert cache_of(next(c for c in report["checks"] if c["check_id"] == "a_fails"))["hit"]
    writer = next(c for c in report["checks"] if c["check_id"] == "z_poisoner")
    assert "wrote through a_fails" in writer["stdout"]
    assert writer["status"] == "error", writer
    (changed,) = writer["details"]["isolation"]["state_changed"]
    assert changed.endswith(".json") and "/checks/a_fails" in changed
    # The cache's copy of the text was damaged with it; the signed entry was not, so the next
    # run still reuses a failure, and writes its own text in place of the damaged copy.
    later = project.run(expect_exit=1)
    assert _status(later, "a_fails") == "failed"
    run_dir = Path(later["output_dir"])
    (text,) = (run_dir / "checks").glob("a_fails*.json")
    assert json.loads(text.read_text())["status"] == "failed"


# Links the current run's restored checks/a_fails.json from outside the project and unlinks it
# again, as another eb run restoring the same cached copy does while this run's checks execute:
# the inode's status-change time moves, its content does not.
LINKED_BESIDE = """\
import json, os, sys, tempfile
from pathlib import Path
checks = Path(json.loads(Path(sys.argv[1]).read_text())["output_dir"]).parent
for path in checks.glob("a_fails*.json"):
    if os.stat(path).st_nlink > 1:
        beside = Path(tempfile.mkdtemp()) / "restored-by-another-run.json"
        os.link(path, beside)
        os.unlink(beside)
        print("linked beside", path.name)
"""


def test_another_link_to_a_restored_file_is_no_write(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    """Another run restoring the same cached copy links its inode meanwhile: that changes no
    file's content, so the checks that ran keep their verdicts and the run stores them."""
    checks = {
        "a_fails": script_check("a_fails", script="raise SystemExit(1)\n", inputs=[]),
        "z_linker": script_check("z_linker", script=LINKED_BESIDE),
    }
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files={}, replay=False)
    report = _run_the_inside_job(project, "z_linker")
    linker = next(c for c in report["checks"] if c["check_id"] == "z_linker")
    assert "linked beside a_fails" in linker["stdout"]
    assert linker["status"] == "passed", linker
    assert _status(report, "a_fails") == "failed"
    assert not any(
        check["details"].get("isolation", {}).get("state_changed") for check in report["checks"]
    )


def test_the_copied_entry_left_behind_is_still_no_pass(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # The same copy made between runs (no run to notice it): the entry names another key.
    project = _project(tmp_path, eb, poisoner=None)
    project.run(expect_exit=1)
    _entry(project, "a_fails").write_bytes(_entry(project, "b_passes").read_bytes())
    report = project.run(expect_exit=1)
    assert _status(report, "a_fails") == "failed"
    assert "foreign entry" in project.last.stderr


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "without-the-secret"])
def test_a_failure_edited_into_a_pass_between_runs_is_a_miss_with_a_warning(
    tmp_path: Path, eb: Callable[..., Any], signed: bool
) -> None:
    # A tool or a person without the secret: the MAC no longer holds (or there is none).
    project = _project(tmp_path, eb, poisoner=None)
    project.run(expect_exit=1)
    path = _entry(project, "a_fails")
    document = json.loads(path.read_bytes())
    document["result"].update(status="passed", score=1, observed_status="passed")
    document["result_file"] = None  # a consistent forgery: only the MAC tells
    if signed:  # the MAC kept as it was, the rest edited
        document["mac"] = json.loads(path.read_bytes())["mac"]
        text = json.dumps(document, indent=1).encode()
    else:
        text = json.dumps({k: v for k, v in document.items() if k != "mac"}).encode()
    path.write_bytes(text)
    report = project.run(expect_exit=1)
    assert _status(report, "a_fails") == "failed"
    assert "MAC" in project.last.stderr and str(path) in project.last.stderr


CONTRADICTIONS = {
    "passed with score 0": {"status": "passed", "score": 0},
    "failed with score 1": {"status": "failed", "score": 1},
    "passed but observed failed": {"status": "passed", "score": 1},
    "consistent pass, text says failed": {
        "status": "passed",
        "score": 1,
        "observed_status": "passed",
    },
}


@pytest.mark.parametrize("change", list(CONTRADICTIONS))
def test_a_signed_entry_that_contradicts_itself_is_a_miss(
    tmp_path: Path, eb: Callable[..., Any], change: str
) -> None:
    project = _project(tmp_path, eb, poisoner=None)
    project.run(expect_exit=1)
    path = _entry(project, "a_fails")
    document = json.loads(path.read_bytes())
    document["result"].update(CONTRADICTIONS[change])
    project.rewrite(path, document)
    report = project.run(expect_exit=1)
    assert _status(report, "a_fails") == "failed"
    check = next(c for c in report["checks"] if c["check_id"] == "a_fails")
    assert not cache_of(check)["hit"]
    assert str(path) in project.last.stderr


def test_a_control_entry_must_say_what_its_expectation_makes_of_it(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # A control (expect: fail) whose check passed is a failure; an entry calling it a pass
    # (or flipping its expectation) is refused.
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={"ctl": script_check("ctl", script="print('no defect')\n", expect="fail")},
        files={},
        replay=False,
    )
    project.run(expect_exit=1)
    path = _entry(project, "ctl")
    document = json.loads(path.read_bytes())
    assert document["result"]["observed_status"] == "passed"
    for forged in (
        {"result": {**document["result"], "status": "passed", "score": 1}},
        {"expect": "pass", "result": {**document["result"], "status": "passed", "score": 1}},
    ):
        project.rewrite(path, {**document, **forged})
        report = project.run(expect_exit=1)
        assert _status(report, "ctl") == "failed"
        path = _entry(project, "ctl")
        document = json.loads(path.read_bytes())


def test_an_older_cache_without_a_secret_says_so_once_and_is_stored_again(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = _project(tmp_path, eb, poisoner=None)
    project.run(expect_exit=1)
    secret = project.cache_dir / SECRET_NAME
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    old = secret.read_bytes()
    secret.unlink()
    for path in project.entries():  # as an eb without MACs wrote them
        document = json.loads(path.read_bytes())
        path.write_text(json.dumps({k: v for k, v in document.items() if k != "mac"}))
    report = project.run(expect_exit=1)
    assert all(not cache_of(c)["hit"] for c in report["checks"])
    assert project.last.stderr.count("is missing") == 1, project.last.stderr
    assert secret.read_bytes() != old and stat.S_IMODE(secret.stat().st_mode) == 0o600
    report = project.run(expect_exit=1)
    assert all(cache_of(c)["hit"] for c in report["checks"])
    assert "warning" not in project.last.stderr


def test_read_only_still_checks_the_mac(tmp_path: Path, eb: Callable[..., Any]) -> None:
    project = _project(tmp_path, eb, poisoner=None)
    project.run(expect_exit=1)
    path = _entry(project, "a_fails")
    path.write_bytes(path.read_bytes().replace(b'"failed"', b'"passed"'))
    report = project.run("--cache", "read-only", expect_exit=1)
    assert _status(report, "a_fails") == "failed"
    assert "MAC" in project.last.stderr


def test_a_secret_others_may_read_is_not_used(tmp_path: Path, eb: Callable[..., Any]) -> None:
    project = _project(tmp_path, eb, poisoner=None)
    project.run(expect_exit=1)
    (project.cache_dir / SECRET_NAME).chmod(0o644)
    report = project.run(expect_exit=1)
    assert all(not cache_of(c)["hit"] for c in report["checks"])
    assert "owner-only" in project.last.stderr


def test_the_cache_folders_are_owner_only_under_any_umask(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # Under `umask 000` the folders came out 0777: any local user could remove the secret and
    # put their own in its place. The folders eb makes for the cache are 0700 whatever the
    # umask; the rest of the project keeps the umask's modes.
    project = _project(tmp_path, eb, poisoner=None)
    old = os.umask(0)
    try:
        project.run(expect_exit=1)
        project.run(expect_exit=1)
    finally:
        os.umask(old)
    folders = [project.cache_dir, *(p for p in project.cache_dir.rglob("*") if p.is_dir())]
    names = {p.relative_to(project.cache_dir).parts[0] for p in folders[1:]}
    assert {"entries", "blobs"} <= names, names
    assert {str(p): stat.S_IMODE(p.stat().st_mode) for p in folders} == {
        str(p): 0o700 for p in folders
    }
    results = project.root / ".eval-banana" / "results"
    assert stat.S_IMODE(results.stat().st_mode) == 0o777


def _plant_key_of_another_user(project: Project, *, user: int) -> bytes:
    """What another user who may write the cache folder can do: remove eb's secret, put
    their own (owner-only, theirs) in its place, and sign the failing check's entry as a pass
    with it."""
    secret = project.cache_dir / SECRET_NAME
    secret.unlink()
    key = b"ab" * 32
    secret.write_bytes(key + b"\n")
    secret.chmod(0o600)
    os.chown(secret, user, user)
    path = _entry(project, "a_fails")
    document = json.loads(path.read_bytes())
    document["result"].update(status="passed", score=1, observed_status="passed")
    document["result_file"] = None
    body = {name: value for name, value in document.items() if name != "mac"}
    text = json.dumps(body, indent=1).encode() + b"\n"
    path.write_bytes(signed_text(key=key, text=text))
    return key


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file away"
)
def test_a_secret_another_user_put_in_place_is_not_trusted(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # The secret's mode was all eb asked about: a key another user planted (0600, theirs) was
    # taken, and their signed pass of a failing check came back as `passed (cached)`.
    project = _project(tmp_path, eb, poisoner=None)
    project.run(expect_exit=1)
    _plant_key_of_another_user(project, user=65534)
    secret = project.cache_dir / SECRET_NAME
    for _ in range(2):
        report = project.run(expect_exit=1)
        assert _status(report, "a_fails") == "failed"
        assert all(not cache_of(c)["hit"] for c in report["checks"])
        told = f"{secret} belongs to another user (uid 65534; eb runs as uid 0)"
        assert told in project.last.stderr, project.last.stderr
    # Never replaced: the user decides what to remove.
    assert secret.stat().st_uid == 65534


def _secret_damaged(secret: Path, how: str) -> None:
    secret.unlink()
    if how == "a folder":
        secret.mkdir()
    elif how == "a link to a file":
        (secret.parent / "elsewhere.key").write_text("a" * 64)
        (secret.parent / "elsewhere.key").chmod(0o600)
        secret.symlink_to(secret.parent / "elsewhere.key")
    else:
        secret.write_text("not sixty-four hex digits")
        secret.chmod(0o600)


@pytest.mark.parametrize(
    ("how", "told"),
    [
        ("a folder", "is not a regular file"),
        ("a link to a file", "cannot be read"),
        ("not hex", "is not 64 hex digits (damaged; remove the cache folder to start over)"),
    ],
)
def test_a_damaged_secret_turns_reuse_off_with_a_warning_and_is_never_replaced(
    tmp_path: Path, eb: Callable[..., Any], how: str, told: str
) -> None:
    # The key of every MAC, damaged: no entry can be trusted or signed. eb says so and runs
    # every check; it does not make a new secret over what is there (a link could point it
    # at a key someone else knows).
    project = _project(tmp_path, eb, poisoner=None)
    project.run(expect_exit=1)
    secret = project.cache_dir / SECRET_NAME
    _secret_damaged(secret, how)
    for _ in range(2):
        report = project.run(expect_exit=1)
        assert all(not cache_of(c)["hit"] for c in report["checks"])
        assert _status(report, "a_fails") == "failed"
        assert f"{secret} {told}" in project.last.stderr, project.last.stderr
        assert "Traceback" not in project.last.stderr
    # What was there is still there: the user decides what to remove.
    kinds = {"a folder": secret.is_dir(), "a link to a file": secret.is_symlink()}
    assert kinds.get(how, secret.is_file())


SPY = """\
import json, os, sys
from pathlib import Path
ctx = json.loads(Path(sys.argv[1]).read_text())
print(json.dumps(dict(os.environ)))
print(json.dumps(ctx))
"""


def test_the_secret_is_in_no_environment_or_file_eb_writes(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = _project(tmp_path, eb, poisoner=None)
    project.run(expect_exit=1)  # the secret exists from here on
    project.write({"eval_checks/spy.yaml": script_check("spy", script=SPY)})
    report = project.run(expect_exit=1)
    secret = (project.cache_dir / SECRET_NAME).read_bytes()[:64]
    run_dir = Path(report["output_dir"])
    for path in [*run_dir.rglob("*"), *(project.cache_dir / "entries").rglob("*")]:
        if path.is_file():
            assert secret not in path.read_bytes(), path
    for path in (project.cache_dir / "blobs").rglob("*"):
        assert not path.is_file() or secret not in path.read_bytes(), path


def _session_of(project: Project, run_dir: Path) -> tuple[CacheSession, PlanDoc]:
    stages = run_dir / "stages"
    config = ConfigDoc.model_validate(json.loads((stages / "config.json").read_bytes()))
    plan = PlanDoc.model_validate(json.loads((stages / "plan.json").read_bytes()))
    session = CacheSession(
        config=config, plan=plan, harness=None, run_dir=run_dir, environ=os.environ
    )
    return session, plan


def test_discard_written_drops_what_the_run_stored_and_stores_nothing_more(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # What the in-run watch calls when something the run started wrote eb's state.
    project = _project(tmp_path, eb, poisoner=None)
    report = project.run(expect_exit=1)
    run_dir = Path(report["output_dir"])
    for path in project.entries():
        path.unlink()
    session, plan = _session_of(project, run_dir)
    executed = json.loads((run_dir / "stages" / "execute.json").read_bytes())["results"]
    results = {r["check_id"]: CheckResult.model_validate(r) for r in executed}
    session.remember_state()
    first, second = plan.checks
    stored = session.record(check=first, result=results[first.id])
    assert stored.details["cache"]["stored"] is True
    (written,) = project.entries()
    # Something else wrote an entry meanwhile: dropped too.
    other = project.cache_dir / "entries" / "ff" / ("f" * 64 + ".json")
    other.parent.mkdir(parents=True)
    write_signed(cache_dir=project.cache_dir, path=other, document={"anything": 1})
    dropped = session.discard_written()
    assert sorted(dropped) == sorted([other, written])
    assert project.entries() == []
    later = session.record(check=second, result=results[second.id])
    assert later.details["cache"]["stored"] is False and project.entries() == []
    session.finish()
    assert project.entries() == []


def test_the_runs_own_record_drops_a_signed_forgery_made_while_it_ran(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # Beneath the watch: a session that noted the cache as its checks started drops, at its
    # finish, an entry someone else rewrote (validly signed) meanwhile, and says so.
    project = _project(tmp_path, eb, poisoner=None)
    report = project.run(expect_exit=1)
    session, _ = _session_of(project, Path(report["output_dir"]))
    session.remember_state()
    path = _entry(project, "a_fails")
    document = json.loads(path.read_bytes())
    document["result"].update(status="passed", score=1, observed_status="passed")
    project.rewrite(path, document)
    session.finish()
    assert not path.exists()
    assert any(
        "changed during this run and is not what this run wrote there" in w.message
        for w in session.warnings
    )


def test_an_entry_another_run_stores_with_the_same_verdict_is_kept(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # Two runs sharing a cache: the other run's entry says what this one found, so it stays.
    project = _project(tmp_path, eb, poisoner=None)
    report = project.run(expect_exit=1)
    run_dir = Path(report["output_dir"])
    session, plan = _session_of(project, run_dir)
    executed = json.loads((run_dir / "stages" / "execute.json").read_bytes())["results"]
    results = {r["check_id"]: CheckResult.model_validate(r) for r in executed}
    session.remember_state()
    check = plan.checks[0]
    session.record(check=check, result=results[check.id])
    path = _entry(project, check.id)
    document = json.loads(path.read_bytes())
    project.rewrite(path, {**document, "from_run_id": "another-run"})
    session.finish()
    assert path.exists() and session.warnings == []
    store = CacheStore(folder=project.cache_dir, max_bytes=1 << 30)
    assert store.read_at(path=str(path)).problem is None


def test_a_judge_that_forges_signed_passes_during_the_run_is_undone(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # The same inside job from an agent: it signs a pass for the failing check, then answers.
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={
            "a_fails": script_check("a_fails", script="raise SystemExit(1)\n"),
            "z_judge": judge("z_judge"),
        },
        files={},
        replay=False,
    )
    _one_at_a_time(project)
    cache = project.cache_dir
    agent = FLIP.replace(
        'ctx = json.loads(Path(sys.argv[1]).read_text())\ncache = Path(ctx["project_root"]) '
        '/ ".eval-banana" / "cache"',
        f"cache = Path({str(cache)!r})",
    ).replace('check_id != "z_poisoner"', 'check_id != "z_judge"')
    agent = agent.replace('print("flipped")', 'print(json.dumps({"score": 1, "reason": "ok"}))')
    assert f"cache = Path({str(cache)!r})" in agent
    (tmp_path / "counting_agent.py").write_text(agent)
    _caught_writing(_run_the_inside_job(project, "z_judge"), "z_judge")
    second = project.run(expect_exit=1)
    assert _status(second, "a_fails") == "failed"


SWAP_SECRET = """\
import json, sys
from pathlib import Path
ctx = json.loads(Path(sys.argv[1]).read_text())
secret = Path(ctx["project_root"]) / ".eval-banana" / "cache" / "secret.key"
secret.unlink()
secret.write_text("0" * 64 + "\\n")
secret.chmod(0o600)
print("swapped")
"""


def test_a_secret_replaced_during_the_run_is_dropped(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # A check that puts a secret it knows in place of the cache's could sign entries at leisure
    # afterwards: the secret goes, and with it every entry signed by either.
    project = _project(tmp_path, eb, poisoner=SWAP_SECRET)
    _one_at_a_time(project)
    _caught_writing(project.run(expect_exit=1), "z_poisoner")
    secret = project.cache_dir / SECRET_NAME
    assert not secret.exists() or secret.read_text() != "0" * 64 + "\n"
    report = project.run(expect_exit=1)  # the poisoner swaps it again, and it goes again
    assert all(not cache_of(c)["hit"] for c in report["checks"])
    assert not secret.exists() or secret.read_text() != "0" * 64 + "\n"


def test_a_signed_entry_whose_result_text_nests_without_bound_is_a_miss(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # A forger who can sign can also store any blob: its result text is read back bounded in
    # depth like every other document, so it is a miss, never a RecursionError.
    import hashlib

    project = _project(tmp_path, eb, poisoner=None)
    project.run(expect_exit=1)
    path = _entry(project, "a_fails")
    document = json.loads(path.read_bytes())
    data = b"[" * 5000 + b"]" * 5000
    digest = hashlib.sha256(data).hexdigest()
    blob = project.cache_dir / "blobs" / digest[:2] / digest
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    document["result_file"] = {"sha256": f"sha256:{digest}", "size": len(data)}
    project.rewrite(path, document)
    report = project.run(expect_exit=1)
    assert "Traceback" not in project.last.stderr
    check = next(c for c in report["checks"] if c["check_id"] == "a_fails")
    assert check["status"] == "failed" and not cache_of(check)["hit"]
