"""The shared cache end to end: two project clones (two CI runners) sharing one remote.

Each runner is a separate folder with its own local cache; both start the same counting agent
(a real executable logging every start), so a test tells exactly which judges ran where.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from eval_banana.cache.remotenotes import REJECTIONS_NAMED
from eval_banana.core.words import size_text
from eval_banana.remote.backend import ENTRY_MAX_BYTES
from tests.cache.rig import Project, judge, make_project, noisy_project, script_check
from tests.remote_servers import BUCKET, Hostile, MotoS3, gate, hostile, moto_s3, webdav

# The shared-cache suite (`pytest -m remote`, which .ci/run runs): real S3, WebDAV and HTTP
# servers on 127.0.0.1, left out of the README's command to keep it under ten minutes.
pytestmark = pytest.mark.remote

KEY = "a-signing-key-from-the-ci-secret-store"
# A prompt longer than what travels inline: its file is a blob of its own (cas/<sha256>).
LONG = "Judge it. " + "Read every line of the docs with care. " * 600


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in (
        "EVAL_BANANA_CACHE_MODE",
        "EVAL_BANANA_CACHE_DIR",
        "EVAL_BANANA_CACHE_REMOTE",
        "EVAL_BANANA_CACHE_REMOTE_MODE",
        "EVAL_BANANA_CACHE_SIGNING_KEY",
        "EVAL_BANANA_CACHE_TOKEN",
        "EVAL_BANANA_CACHE_REQUIRE_SIGNATURE",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def s3() -> Iterator[MotoS3]:
    with moto_s3() as server:
        yield server


@pytest.fixture
def hostile_server() -> Iterator[Hostile]:
    with hostile() as server:
        yield server


def runners(
    *, tmp_path: Path, eb: Callable[..., Any], checks: dict[str, str] | None = None
) -> tuple[Project, Project]:
    """Two clones of one project, as two CI runners check it out, with empty local caches."""
    first = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks=checks
        or {
            "j": judge("j"),
            "k": judge("k", instructions="Judge it twice."),
            "big": judge("big", instructions=LONG),
        },
        files={"docs/guide.md": "How to install.\n"},
        replay=False,
    )
    return first, fresh_runner(of=first, root=tmp_path / "runner2")


def fresh_runner(*, of: Project, root: Path) -> Project:
    """Another checkout of `of`'s project with an empty local cache, as a new CI runner has."""
    shutil.copytree(of.root, root)
    shutil.rmtree(root / ".eval-banana" / "cache", ignore_errors=True)
    return Project(root=root, log=of.log, eb=of.eb)


def run(
    project: Project, remote: str, *args: str, expect_exit: int = 0
) -> tuple[dict[str, Any], int]:
    """The run's report `cache` section, and how many agents it started."""
    before = project.agent_starts()
    report = project.run("--cache-remote", remote, *args, expect_exit=expect_exit)
    counts: dict[str, Any] = report["cache"]
    counts["warnings"] = [w["message"] for w in report["warnings"]]
    counts["hints"] = {w["message"]: w.get("hint") for w in report["warnings"]}
    return counts, project.agent_starts() - before


def _markdown(project: Project) -> str:
    """report.md of the project's latest run."""
    latest = max(project.root.rglob("report.md"), key=lambda path: path.stat().st_mtime_ns)
    return latest.read_text()


def _remote_files(folder: Path, kind: str) -> list[Path]:
    return sorted((folder / kind).glob("*/*"))


def _unsigned_entries(folder: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Check id -> (file, document) of each unsigned entry of a shared folder, read once."""
    found = {}
    for path in _remote_files(folder, "ac"):
        document = json.loads(path.read_bytes())
        found[document["entry"]["check_id"]] = (path, document)
    return found


@pytest.mark.parametrize("scheme", ["folder", "s3", "webdav"])
def test_a_second_runner_starts_no_agent_for_an_unchanged_commit(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
    request: pytest.FixtureRequest,
) -> None:
    first, second = runners(tmp_path=tmp_path, eb=eb)
    with _remote(scheme=scheme, tmp_path=tmp_path, monkeypatch=monkeypatch, request=request) as url:
        counts, started = run(first, url)
        assert started == 3
        assert counts["misses"] == 3 and counts["remote_writes"] == 3
        assert counts["bytes_uploaded"] > len(LONG)

        counts, started = run(second, url)
        assert started == 0
        assert (counts["remote_hits"], counts["local_hits"], counts["misses"]) == (3, 0, 0)
        assert counts["remote_errors"] == 0 and counts["remote_writes"] == 0
        # One request per cached judge, and one more for the prompt too long to travel inline.
        assert counts["remote_requests"] == 4
        assert counts["bytes_downloaded"] > len(LONG)
        assert second.root.joinpath(".eval-banana", "cache", "entries").is_dir()

        # report.md says it, and the console's summary does.
        assert "Cache: 0 local hits, 3 remote hits, 0 misses; shared cache" in _markdown(second)
        # What moved, told for people (the bytes are in report.json).
        moved = counts["bytes_downloaded"] + counts["bytes_uploaded"]
        assert f"0 entries refused, {size_text(moved)} moved" in _markdown(second)
        assert f"{moved} bytes" not in _markdown(second)
        human = second.eb("run", "--cwd", str(second.root), "--cache-remote", url)
        assert "Cache: 3 local hits, 0 remote hits, 0 misses; shared cache" in human.stdout
        # What came from the remote was kept locally: the next run asks it nothing.
        counts, started = run(second, url)
        assert started == 0
        assert (counts["remote_hits"], counts["local_hits"], counts["remote_requests"]) == (0, 3, 0)


def _upgrade_and_break_the_agent(project: Project) -> None:
    # It now answers without a verdict; nothing any key holds says that it changed.
    project.log.with_name(project.log.name + ".broken").write_text("")


@pytest.mark.parametrize("scheme", ["folder", "s3", "webdav"])
def test_a_refresh_that_errors_removes_the_shared_verdict_from_before_it(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
    request: pytest.FixtureRequest,
) -> None:
    """The refresh dropped the old pass from its local folder only: the next runner, starting
    with an empty local cache, fetched it from the shared cache and reused it green."""
    first, second = runners(tmp_path=tmp_path, eb=eb, checks={"j": judge("j")})
    with _remote(scheme=scheme, tmp_path=tmp_path, monkeypatch=monkeypatch, request=request) as url:
        counts, _ = run(first, url)
        assert counts["remote_writes"] == 1
        _upgrade_and_break_the_agent(first)
        refreshed, started = run(first, url, "--cache", "refresh", expect_exit=1)
        assert started == 1 and refreshed["remote_writes"] == 0
        counts, started = run(second, url, expect_exit=1)
        assert started == 1
        assert (counts["remote_hits"], counts["misses"]) == (0, 1)
        assert [c["status"] for c in json.loads(second.last.stdout)["checks"]] == ["error"]
    # The entry read (its signature is checked first) and removed, each request counted (S3
    # asked whether it was there, a HEAD, before it deleted: a request more).
    assert (refreshed["remote_requests"], refreshed["remote_errors"]) == (2, 0)


def test_a_shared_folder_inside_the_project_as_actions_cache_carries_it(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    """docs/shared-cache.md's actions/cache set-up: the remote is a relative folder inside
    the project, saved by one runner and restored into the next. It is the project root's
    (not the folder eb was started from), and it is no project file: the verdicts it stores
    change no check's key, so the same runner reuses them and the next runner too."""
    first, second = runners(tmp_path=tmp_path, eb=eb)
    counts, started = run(first, ".eb-shared")
    assert started == 3 and counts["remote_writes"] == 3
    assert (first.root / ".eb-shared" / "ac").is_dir()
    assert not (Path.cwd() / ".eb-shared").exists()
    counts, started = run(first, ".eb-shared")
    assert started == 0 and counts["local_hits"] == 3
    shutil.copytree(first.root / ".eb-shared", second.root / ".eb-shared")  # the restore
    counts, started = run(second, ".eb-shared")
    assert started == 0
    assert (counts["remote_hits"], counts["misses"]) == (3, 0)


class _remote:
    """The remote of a scheme, as a context manager giving its URL (and the S3 variables)."""

    def __init__(
        self,
        *,
        scheme: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest,
    ) -> None:
        self.scheme = scheme
        self.tmp_path = tmp_path
        self.monkeypatch = monkeypatch
        self._stack: list[Any] = []

    def __enter__(self) -> str:
        if self.scheme == "folder":
            return str(self.tmp_path / "shared")
        if self.scheme == "s3":
            context = moto_s3()
            server = context.__enter__()
            self._stack.append(context)
            for name, value in server.environ.items():
                self.monkeypatch.setenv(name, value)
            return f"s3://{BUCKET}/team/eb"
        context = webdav(folder=self.tmp_path / "dav")
        url = context.__enter__()
        self._stack.append(context)
        return f"{url}/eb-cache"

    def __exit__(self, *exc: object) -> None:
        for context in reversed(self._stack):
            context.__exit__(None, None, None)


def test_a_tampered_signed_entry_is_a_miss_and_the_check_runs_again(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    first, second = runners(tmp_path=tmp_path, eb=eb)
    shared = tmp_path / "shared"
    run(first, str(shared))
    entries = _remote_files(shared, "ac")
    assert len(entries) == 3 and all(p.read_bytes().startswith(b'{"signature": ') for p in entries)
    tampered = next(p for p in entries if b'"check_id": "j"' in p.read_bytes())
    tampered.write_bytes(
        tampered.read_bytes().replace(b"judged by the counting agent", b"trust me")
    )

    counts, started = run(second, str(shared), "--annotations", "github")
    assert started == 1
    assert counts["remote_hits"] == 2 and counts["misses"] == 1
    assert counts["remote_rejected"] == {"signature": 1, "entry": 0, "blob": 0}
    assert any("for check 'j'" in w and "signature" in w for w in counts["warnings"])
    # Loud in CI too: the refusal is a warning annotation on the run's page (stderr: --json).
    warned = [line for line in second.last.stderr.splitlines() if line.startswith("::warning")]
    assert any("for check 'j'" in line and "signature" in line for line in warned), warned


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[:200],  # cut short
        # Half a surrogate pair escaped in its reason: no UTF-8 report can hold it, and the
        # run that took the entry failed when its report was written.
        lambda text: text.replace(b'"reason": "', b'"reason": "\\ud800'),
    ],
    ids=["cut short", "half a surrogate pair"],
)
def test_a_damaged_unsigned_entry_is_a_miss_counted_as_a_bad_entry(
    tmp_path: Path, eb: Callable[..., Any], damage: Callable[[bytes], bytes]
) -> None:
    first, second = runners(tmp_path=tmp_path, eb=eb)
    shared = tmp_path / "shared"
    run(first, str(shared))
    entry = next(p for p in _remote_files(shared, "ac") if b'"check_id": "k"' in p.read_bytes())
    damaged = damage(entry.read_bytes())
    assert damaged != entry.read_bytes()
    entry.write_bytes(damaged)

    counts, started = run(second, str(shared))
    assert started == 1
    assert counts["remote_hits"] == 2
    assert counts["remote_rejected"] == {"signature": 0, "entry": 1, "blob": 0}
    assert "Traceback" not in second.last.stderr


def _forge(document: dict[str, Any], how: str, *, other: dict[str, Any]) -> Any:
    """An unsigned remote entry of check 'k' made into something else: what a runner must read
    as a miss, never as a verdict (or a traceback)."""
    entry = document["entry"]
    if how == "not an object":
        return [document]
    if how == "an unknown field":
        return {**document, "verdict": "passed"}
    if how == "another kind":
        return {**document, "kind": "eval-banana/verdict-cache-entry"}
    if how == "another key version":
        return {**document, "key_version": 2}
    if how == "another check's entry under this key":
        return {**other, "key": document["key"]}
    if how == "the entry names another check":
        return {**document, "entry": {**entry, "check_id": "j"}}
    if how == "the entry carries a local mac":
        return {**document, "entry": {**entry, "mac": "hmac-sha256:" + "0" * 64}}
    if how == "the entry is not valid":
        return {**document, "entry": {**entry, "result": {**entry["result"], "score": "1"}}}
    if how == "a file named out of its folder":
        digest = sorted(document["inline"])[0]
        size = len(base64.b64decode(document["inline"][digest]))
        escape = {"name": "evidence/../../../../escaped.txt", "sha256": digest, "size": size}
        return {**document, "entry": {**entry, "files": [*entry["files"], escape]}}
    if how == "inline files not an object":
        return {**document, "inline": ["a"]}
    if how == "an inline file not named by its digest":
        return {**document, "inline": {"prompt.txt": "YQ=="}}
    assert how == "an inline file not base64"
    (digest,) = list(document["inline"])[:1]
    return {**document, "inline": {digest: "not base64!"}}


@pytest.mark.parametrize(
    ("how", "told"),
    [
        ("not an object", "is not a shared cache entry"),
        ("an unknown field", "is not a shared cache entry"),
        ("another kind", "is not a shared cache entry of this version"),
        ("another key version", "belongs to another key (a foreign entry)"),
        ("another check's entry under this key", "belongs to another key (a foreign entry)"),
        ("the entry names another check", "belongs to another key (a foreign entry)"),
        ("the entry carries a local mac", "holds no entry"),
        ("the entry is not valid", "holds an entry that is not valid ("),
        ("a file named out of its folder", "not valid (a files item has a bad name)"),
        ("inline files not an object", "has inline files that are not an object"),
        ("an inline file not named by its digest", "has an inline file that is not named by"),
        ("an inline file not base64", "has an inline file that is not base64"),
    ],
)
def test_a_forged_unsigned_entry_is_a_miss_that_says_what_is_wrong(
    tmp_path: Path, eb: Callable[..., Any], how: str, told: str
) -> None:
    # Without a signing key anyone who can write the remote can write entries; each shape a
    # forger (or a foreign tool) leaves is refused as a miss, and the check runs again.
    first, second = runners(tmp_path=tmp_path, eb=eb)
    shared = tmp_path / "shared"
    run(first, str(shared))
    entries = _unsigned_entries(shared)
    target, document = entries["k"]
    target.write_text(json.dumps(_forge(document, how, other=entries["j"][1])))

    counts, started = run(second, str(shared))
    assert started == 1  # 'k' ran again; the other two came from the remote
    assert counts["remote_hits"] == 2
    assert counts["remote_rejected"] == {"signature": 0, "entry": 1, "blob": 0}
    assert any("for check 'k'" in w and told in w for w in counts["warnings"]), counts["warnings"]
    assert "Traceback" not in second.last.stderr
    assert not list(tmp_path.rglob("escaped.txt"))
    # What 'k' has now is its own fresh verdict, not the forged one.
    (result,) = second.root.glob(".eval-banana/results/*/checks/k-*.json")
    assert json.loads(result.read_text())["details"]["cache"]["hit"] is False


def test_a_folder_where_a_fetched_file_goes_locally_is_a_warning_and_a_miss(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # The second runner's own folder is damaged, not the remote: the fetched entry cannot be
    # kept, so its check runs; the run is not aborted ("Is a directory", exit 3, as it was).
    first, second = runners(tmp_path=tmp_path, eb=eb)
    shared = tmp_path / "shared"
    run(first, str(shared))
    inline = {
        check_id: set(document["inline"])
        for check_id, (_, document) in _unsigned_entries(shared).items()
    }
    # A file of k's alone (its result text names k): the other two keep theirs.
    digest = sorted(inline["k"] - inline["j"] - inline["big"])[0].split(":", 1)[1]
    in_the_way = second.root / ".eval-banana" / "cache" / "blobs" / digest[:2] / digest
    in_the_way.mkdir(parents=True)

    counts, started = run(second, str(shared))
    assert started == 1 and counts["remote_hits"] == 2, "\n".join(counts["warnings"])
    told = [w for w in counts["warnings"] if "cannot be kept" in w]
    assert len(told) == 1 and "for check 'k'" in told[0], counts["warnings"]
    assert f"{in_the_way} is a folder where the cache keeps its own file; remove it" in told[0]
    assert in_the_way.is_dir()


def test_an_entry_signed_with_another_key_is_a_miss(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = runners(tmp_path=tmp_path, eb=eb)
    shared = str(tmp_path / "shared")
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", "some-other-key-entirely")
    run(first, shared)
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    counts, started = run(second, shared)
    assert started == 3
    assert counts["remote_hits"] == 0
    assert counts["remote_rejected"]["signature"] == 3


@pytest.mark.parametrize(
    ("other_key", "mode"),
    [("another-key", "on"), ("another-key", "refresh"), (None, "refresh")],
)
def test_a_runner_that_cannot_verify_the_signed_entries_never_writes_over_them(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    other_key: str | None,
    mode: str,
) -> None:
    team, other = runners(tmp_path=tmp_path, eb=eb)
    shared = tmp_path / "shared"
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    assert run(team, str(shared))[0]["remote_writes"] == 3
    signed = {path: path.read_bytes() for path in _remote_files(shared, "ac")}
    if other_key is None:
        monkeypatch.delenv("EVAL_BANANA_CACHE_SIGNING_KEY")
    else:
        monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", other_key)
    counts, started = run(other, str(shared), "--cache", mode)
    assert started == 3 and counts["remote_writes"] == 0
    (said,) = [w for w in counts["warnings"] if "never writes over one" in w]
    assert said.startswith("3 verdicts of this run were stored in the local cache only")
    assert {path: path.read_bytes() for path in _remote_files(shared, "ac")} == signed
    # Its verdicts are still its own locally; and the team's runners still reuse theirs.
    assert run(other, str(shared))[1] == 0
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    counts, started = run(fresh_runner(of=team, root=tmp_path / "runner3"), str(shared))
    assert started == 0 and counts["remote_hits"] == 3


@pytest.mark.parametrize(
    ("refresh_key", "removed"), [(KEY, True), ("another-key", False), (None, False)]
)
def test_a_refresh_that_errors_removes_only_shared_verdicts_it_can_verify(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    refresh_key: str | None,
    removed: bool,
) -> None:
    # The rule of writes holds for removals: the team's signed verdicts stay for the runners
    # that hold its key, said once; a runner with that key removes them.
    team, other = runners(tmp_path=tmp_path, eb=eb, checks={"j": judge("j"), "k": judge("k")})
    shared = tmp_path / "shared"
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    assert run(team, str(shared))[0]["remote_writes"] == 2
    signed = {path: path.read_bytes() for path in _remote_files(shared, "ac")}
    if refresh_key is None:
        monkeypatch.delenv("EVAL_BANANA_CACHE_SIGNING_KEY")
    else:
        monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", refresh_key)
    _upgrade_and_break_the_agent(other)
    counts, started = run(other, str(shared), "--cache", "refresh", expect_exit=1)
    assert started == 2 and counts["remote_errors"] == 0
    left = [w for w in counts["warnings"] if "from before this refresh" in w]
    if removed:
        assert not _remote_files(shared, "ac") and not left
        return
    assert {path: path.read_bytes() for path in _remote_files(shared, "ac")} == signed
    assert left == [
        f"2 verdicts from before this refresh were left in the shared cache {shared}: it holds "
        "each signed with a key this run cannot verify (another EVAL_BANANA_CACHE_SIGNING_KEY, "
        "or none set here), and a run never removes one (docs/shared-cache.md)"
    ]
    assert "may still reuse" in counts["hints"][left[0]]


def test_a_refresh_without_the_key_under_required_signatures_removes_nothing(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    team, other = runners(tmp_path=tmp_path, eb=eb, checks={"j": judge("j")})
    shared = tmp_path / "shared"
    monkeypatch.setenv("EVAL_BANANA_CACHE_REQUIRE_SIGNATURE", "true")
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    run(team, str(shared))
    signed = {path: path.read_bytes() for path in _remote_files(shared, "ac")}
    monkeypatch.delenv("EVAL_BANANA_CACHE_SIGNING_KEY")
    _upgrade_and_break_the_agent(other)
    counts, _ = run(other, str(shared), "--cache", "refresh", expect_exit=1)
    assert counts["remote_requests"] == 0
    assert {path: path.read_bytes() for path in _remote_files(shared, "ac")} == signed
    said = [w for w in counts["warnings"] if "require_signature" in w]
    assert len(said) == 1 and "reused or written" in said[0]


def test_the_verdicts_kept_local_beside_entries_signed_with_another_key_are_counted(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A CI log tells how many verdicts were not shared and why, not only a warning saying so.
    team, other = runners(tmp_path=tmp_path, eb=eb)
    shared = str(tmp_path / "shared")
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    counts, _ = run(team, shared)
    assert (counts["remote_writes"], counts["remote_kept_local"]) == (3, 0)
    assert "kept local" not in _markdown(team)
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", "another-key")
    counts, started = run(other, shared)
    assert started == 3
    assert (counts["remote_writes"], counts["remote_kept_local"]) == (0, 3)
    said = "0 writes (3 verdicts kept local: signed with a key this run cannot verify), 0 errors"
    assert said in _markdown(other)
    shutil.rmtree(other.root / ".eval-banana" / "cache")
    human = other.eb("run", "--cwd", str(other.root), "--cache-remote", shared)
    assert said in human.stdout


def test_a_signing_runner_writes_over_unsigned_and_damaged_signed_entries(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = runners(tmp_path=tmp_path, eb=eb)
    shared = tmp_path / "shared"
    run(first, str(shared))  # unsigned
    entries = _remote_files(shared, "ac")
    # One entry signed by someone, over a text no runner could reuse (cut short).
    cut = entries[0].read_bytes()[:-40]
    entries[0].write_bytes(b'{"signature": "hmac-sha256:' + b"0" * 64 + b'", ' + cut[1:])
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    counts, started = run(second, str(shared))
    assert started == 3 and counts["remote_writes"] == 3
    assert all(path.read_bytes().startswith(b'{"signature": ') for path in entries)


def test_many_refused_entries_are_a_few_warnings_and_a_count(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Requiring signatures of a cache written without them refuses every entry: the first few
    # are named, the rest are one line, and the report's counter holds them all.
    checks = {f"j{n}": judge(f"j{n}", instructions=f"Judge {n}.") for n in range(7)}
    first, second = runners(tmp_path=tmp_path, eb=eb, checks=checks)
    shared = str(tmp_path / "shared")
    run(first, shared)
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    counts, started = run(second, shared)
    assert started == 7 and counts["remote_rejected"]["signature"] == 7
    refused = [w for w in counts["warnings"] if "has no signature" in w]
    assert len(refused) == REJECTIONS_NAMED == 3
    assert refused == sorted(refused)
    (rest,) = [w for w in counts["warnings"] if w.startswith("... and")]
    assert rest.startswith("... and 4 more entries of the shared cache ")
    assert "refused for a missing or bad signature; they count as misses" in rest
    assert "counts them all" in second.last.stderr


def test_a_missing_blob_is_a_miss_counted_as_a_bad_blob(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    first, second = runners(tmp_path=tmp_path, eb=eb)
    shared = tmp_path / "shared"
    run(first, str(shared))
    blobs = _remote_files(shared, "cas")
    assert len(blobs) == 1  # the long prompt; the small files travel inside their entries
    blobs[0].unlink()

    counts, started = run(second, str(shared))
    assert started == 1
    assert counts["remote_hits"] == 2
    assert counts["remote_rejected"] == {"signature": 0, "entry": 0, "blob": 1}
    assert any("for check 'big'" in w and "does not hold" in w for w in counts["warnings"])


class RemoteObjects:
    """The objects of one kind (ac, cas) a shared cache of the `_remote` schemes holds, read
    and written behind eb's back (as a disk, a bucket or someone with write access would)."""

    def __init__(self, *, url: str, tmp_path: Path, kind: str) -> None:
        self.url = url
        self.kind = kind
        self.folder = tmp_path / ("shared" if not url.startswith("http") else "dav/eb-cache")

    def _client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=os.environ["EVAL_BANANA_CACHE_REMOTE_ENDPOINT"])

    def names(self) -> list[str]:
        if self.url.startswith("s3://"):
            bucket, prefix = self.url[len("s3://") :].split("/", 1)
            found = self._client().list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/{self.kind}/")
            return sorted(item["Key"] for item in found.get("Contents", []))
        return sorted(str(p) for p in (self.folder / self.kind).rglob("*") if p.is_file())

    def read(self, name: str) -> bytes:
        if self.url.startswith("s3://"):
            body = self._client().get_object(Bucket=BUCKET, Key=name)["Body"]
            return bytes(body.read())
        return Path(name).read_bytes()

    def write(self, name: str, data: bytes) -> None:
        if self.url.startswith("s3://"):
            self._client().put_object(Bucket=BUCKET, Key=name, Body=data)
        else:
            Path(name).write_bytes(data)

    def delete(self, name: str) -> None:
        if self.url.startswith("s3://"):
            self._client().delete_object(Bucket=BUCKET, Key=name)
        else:
            Path(name).unlink()

    def flip_a_byte_of_each(self) -> int:
        """One byte of each object changed, its size kept: what HEAD cannot tell."""
        names = self.names()
        for name in names:
            data = bytearray(self.read(name))
            data[10] ^= 1
            self.write(name, bytes(data))
        return len(names)


@pytest.mark.parametrize("scheme", ["folder", "s3", "webdav"])
def test_a_runner_that_found_a_blob_damaged_sends_it_again_whatever_its_size(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
    request: pytest.FixtureRequest,
) -> None:
    """A stored file damaged on the server without its size changing was never replaced:
    every runner refused the entry, ran the check, stored its verdict, and skipped sending
    the file because HEAD gave the size it expected. The next runner refused it again."""
    first, second = runners(tmp_path=tmp_path, eb=eb)
    third = fresh_runner(of=first, root=tmp_path / "runner3")
    with _remote(scheme=scheme, tmp_path=tmp_path, monkeypatch=monkeypatch, request=request) as url:
        run(first, url)
        assert RemoteObjects(url=url, tmp_path=tmp_path, kind="cas").flip_a_byte_of_each() == 1
        counts, started = run(second, url)
        assert started == 1 and counts["remote_rejected"]["blob"] == 1
        assert counts["remote_writes"] == 1
        counts, started = run(third, url)
        assert started == 0, counts["warnings"]
        assert (counts["remote_hits"], counts["remote_rejected"]["blob"]) == (3, 0)


def _evidence_writer(*, files: int, size: int, name_length: int = 8) -> str:
    """A deterministic check that leaves `files` evidence files of `size` bytes each, of
    distinct content, with names of `name_length` characters."""
    return script_check(
        "many",
        inputs=[],
        script=(
            "import hashlib, json, sys\n"
            "from pathlib import Path\n"
            "out = Path(json.loads(Path(sys.argv[1]).read_text())['output_dir'])\n"
            f"for i in range({files}):\n"
            f"    name = str(i).rjust({name_length}, 'e')\n"
            "    seed = hashlib.sha256(str(i).encode()).hexdigest()\n"
            f"    (out / name).write_text((seed * ({size} // 64 + 1))[:{size}])\n"
        ),
    )


@pytest.mark.parametrize("scheme", ["folder", "s3"])
def test_a_check_with_many_small_evidence_files_is_shared(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
    request: pytest.FixtureRequest,
) -> None:
    """Each file up to 16 KiB travelled inline, with no limit on them all: 220 evidence files
    of 16,000 bytes made an entry of 4.7 MB, more than the 4 MiB eb reads of one, and every
    other runner refused it, ran the check and stored it again. Inline files now stop at a
    budget; the rest travel as stored files."""
    checks = {"many": _evidence_writer(files=220, size=16_000)}
    first, second = runners(tmp_path=tmp_path, eb=eb, checks=checks)
    with _remote(scheme=scheme, tmp_path=tmp_path, monkeypatch=monkeypatch, request=request) as url:
        counts, _ = run(first, url)
        assert counts["remote_writes"] == 1
        entries = RemoteObjects(url=url, tmp_path=tmp_path, kind="ac")
        (entry,) = entries.names()
        assert len(entries.read(entry)) < ENTRY_MAX_BYTES // 2
        assert len(RemoteObjects(url=url, tmp_path=tmp_path, kind="cas").names()) > 100
        counts, _ = run(second, url)
        assert (counts["remote_hits"], counts["misses"]) == (1, 0), counts["warnings"]
        assert counts["remote_rejected"]["entry"] == 0


def test_a_verdict_whose_entry_no_runner_would_read_stays_local(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    """An entry that names more files than fit in what a runner reads of one (here 12,000
    evidence files with long names, empty) is not sent: eb writes no entry it would refuse.
    The run says so; the next runner runs the check without refusing anything."""
    checks = {"many": _evidence_writer(files=12_000, size=0, name_length=240)}
    first, second = runners(tmp_path=tmp_path, eb=eb, checks=checks)
    shared = str(tmp_path / "shared")
    counts, _ = run(first, shared)
    assert counts["remote_writes"] == 0 and counts["remote_errors"] == 0
    (warning,) = [w for w in counts["warnings"] if "stored in the local cache only" in w]
    assert "would be larger than the 4,194,304 bytes a runner reads of one" in warning
    assert not _remote_files(tmp_path / "shared", "ac")
    counts, _ = run(second, shared)
    assert counts["misses"] == 1 and counts["remote_rejected"]["entry"] == 0


def test_a_blob_of_another_digest_is_a_miss_never_a_pass(
    tmp_path: Path, eb: Callable[..., Any], hostile_server: Hostile
) -> None:
    first, second = runners(tmp_path=tmp_path, eb=eb)
    run(first, hostile_server.url)
    hostile_server.mode = "wrong_blob"
    counts, started = run(second, hostile_server.url)
    assert started == 1
    assert counts["remote_rejected"]["blob"] == 1
    assert any("another digest" in w for w in counts["warnings"])


def test_an_entry_past_any_real_size_is_a_miss_and_is_not_read_to_its_end(
    tmp_path: Path, eb: Callable[..., Any], hostile_server: Hostile
) -> None:
    first, second = runners(tmp_path=tmp_path, eb=eb)
    run(first, hostile_server.url)
    hostile_server.mode = "huge_entry"  # each entry answers with a 256 MiB body
    counts, started = run(second, hostile_server.url)
    assert started == 3
    assert counts["remote_rejected"]["entry"] == 3 and counts["remote_hits"] == 0
    assert any("is larger than 4,194,304 bytes" in w for w in counts["warnings"])
    # eb stopped reading each at its cap: the server got rid of a few MiB per entry (what the
    # sockets buffer), not the 768 MiB it offered.
    assert hostile_server.sent < 3 * 32 << 20, hostile_server.sent


def test_a_killed_server_makes_the_checks_run_and_the_report_names_the_error(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, s3: MotoS3
) -> None:
    for name, value in s3.environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE_TIMEOUT_SECONDS", "2")
    first, second = runners(tmp_path=tmp_path, eb=eb)
    url = f"s3://{BUCKET}/eb"
    run(first, url)
    s3.kill()

    counts, started = run(second, url)
    assert started == 3  # every check ran as on a miss; the run did not fail
    assert counts["remote_errors"] >= 1 and counts["remote_hits"] == 0
    assert counts["remote_stopped"] is True
    assert counts["first_remote_error"]
    assert any("failed" in w and "ran as on a miss" in w for w in counts["warnings"])
    (hint,) = [hint for w, hint in counts["hints"].items() if "failed" in w]
    assert "ran as on a miss" in hint and "local cache only" not in hint


def test_a_remote_that_refuses_every_write_says_the_verdicts_stay_local(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # A "folder" that is a file, under --cache refresh (nothing is looked up): every write fails.
    (first, _) = runners(tmp_path=tmp_path, eb=eb)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    counts, started = run(first, str(blocked), "--cache", "refresh")
    assert started == 3 and counts["remote_writes"] == 0 and counts["remote_errors"] >= 1
    (warning,) = [w for w in counts["warnings"] if "failed" in w]
    assert "those verdicts are stored in the local cache only" in warning
    assert "ran as on a miss" not in warning
    # Its hint says what the failure cost too (it said the check ran as on a miss).
    assert "stored in the local cache only" in counts["hints"][warning]
    assert "ran as on a miss" not in counts["hints"][warning]
    assert first.root.joinpath(".eval-banana", "cache", "entries").is_dir()


def test_a_second_runner_of_a_dataset_family_judges_only_the_row_it_changed(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # Case keys do not depend on where the checkout is: another runner's clone at another path
    # reuses every case, and a row it edits is the one judge it starts.
    family = (
        "schema_version: 1\nid: qa\ntype: harness_judge\n"
        'description: "Answer to {{ case.q }}"\ninstructions: Judge the answer.\n'
        "cases_from: data/qa.jsonl\n"
    )
    rows = [{"id": f"r{n}", "q": f"question {n}"} for n in range(5)]
    first = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={"qa": family},
        files={"data/qa.jsonl": "".join(json.dumps(row) + "\n" for row in rows)},
        replay=False,
    )
    second = fresh_runner(of=first, root=tmp_path / "runner2")
    remote = str(tmp_path / "shared")
    counts, started = run(first, remote)
    assert started == 5 and counts["remote_writes"] == 5
    counts, started = run(second, remote)
    assert started == 0 and counts["remote_hits"] == 5
    rows[2]["q"] = "an edited question"
    second.write({"data/qa.jsonl": "".join(json.dumps(row) + "\n" for row in rows)})
    counts, started = run(second, remote)
    assert started == 1 and counts["local_hits"] == 4 and counts["misses"] == 1


def test_read_only_never_writes(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = runners(tmp_path=tmp_path, eb=eb)
    shared = tmp_path / "shared"
    monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE_MODE", "read-only")
    counts, started = run(first, str(shared))
    assert started == 3 and counts["remote_writes"] == 0 and counts["bytes_uploaded"] == 0
    assert not shared.exists() or not any(shared.rglob("*.*")) and not _remote_files(shared, "ac")
    # Read-only still reads what a trusted runner stored.
    monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE_MODE", "read-write")
    run(second, str(shared))
    monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE_MODE", "read-only")
    third = fresh_runner(of=first, root=tmp_path / "runner3")
    counts, started = run(third, str(shared))
    assert started == 0 and counts["remote_hits"] == 3 and counts["remote_writes"] == 0


def test_a_fork_without_the_key_cannot_make_a_signing_runner_accept_its_entries(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    fork, trusted = runners(tmp_path=tmp_path, eb=eb)
    shared = str(tmp_path / "shared")
    # The fork writes (misconfigured read-write) what it likes, unsigned: it has no key.
    counts, _ = run(fork, shared)
    assert counts["remote_writes"] == 3
    monkeypatch.setenv("EVAL_BANANA_CACHE_REQUIRE_SIGNATURE", "true")
    counts, started = run(trusted, shared)  # requires signatures, has no key either
    assert started == 3 and counts["remote_hits"] == 0
    assert any("require_signature" in w for w in counts["warnings"])
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    shutil.rmtree(trusted.root / ".eval-banana" / "cache")
    counts, started = run(trusted, shared)  # has the key: the fork's entries have no signature
    assert started == 3 and counts["remote_hits"] == 0
    assert counts["remote_rejected"]["signature"] == 3


def test_a_runner_without_the_key_leaves_the_signed_entries_in_place(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # With signatures required, a keyless run's unsigned entries could never be reused; had it
    # written them over the signed ones, every runner with the key would run those checks again.
    keyless, trusted = runners(tmp_path=tmp_path, eb=eb)
    shared = tmp_path / "shared"
    monkeypatch.setenv("EVAL_BANANA_CACHE_REQUIRE_SIGNATURE", "true")
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    counts, _ = run(trusted, str(shared))
    assert counts["remote_writes"] == 3
    signed = {path: path.read_bytes() for path in _remote_files(shared, "ac")}
    monkeypatch.delenv("EVAL_BANANA_CACHE_SIGNING_KEY")
    counts, started = run(keyless, str(shared))
    assert started == 3 and counts["remote_hits"] == 0 and counts["remote_writes"] == 0
    assert any("reused or written" in w for w in counts["warnings"])
    assert {path: path.read_bytes() for path in _remote_files(shared, "ac")} == signed
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    third = fresh_runner(of=keyless, root=tmp_path / "runner3")
    counts, started = run(third, str(shared))
    assert started == 0 and counts["remote_hits"] == 3


def test_a_refresh_without_the_key_says_once_that_it_writes_nothing(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--cache refresh` looks nothing up, so it never reached the lookups' warning: it wrote
    # nothing to the shared cache and said nothing about it.
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    shared = tmp_path / "shared"
    monkeypatch.setenv("EVAL_BANANA_CACHE_REQUIRE_SIGNATURE", "true")
    counts, started = run(first, str(shared), "--cache", "refresh")
    assert started == 3 and counts["remote_writes"] == 0 and counts["remote_requests"] == 0
    said = [w for w in counts["warnings"] if "require_signature" in w]
    assert len(said) == 1 and "reused or written" in said[0]
    assert not _remote_files(shared, "ac")


def test_a_password_in_the_remote_url_is_used_and_written_nowhere(
    tmp_path: Path,
    eb: Callable[..., Any],
    hostile_server: Hostile,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Basic auth in the URL (an nginx cache behind a password) and a query that may carry a
    # signature are secrets: they reach the server, and no file or message of eb's.
    password = "pw-" + "5" * 20
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    host = hostile_server.url.split("://", 1)[1]
    url = f"http://builder:{password}@{host}?sig={password}"
    counts, started = run(first, url)
    assert started == 3 and counts["remote_writes"] == 3
    basic = "Basic " + base64.b64encode(f"builder:{password}".encode()).decode()
    assert {auth for _, _, auth in hostile_server.requests} == {basic}
    assert password not in counts["remote"] and password not in json.dumps(counts)
    written = [path for path in first.root.rglob("*") if path.is_file()]
    assert not [path for path in written if password.encode() in path.read_bytes()]
    config = next(first.root.rglob("stages/config.json")).read_text()
    assert "builder:***@" in config and "?***" in config

    # `eb update` reruns a stage from that config.json: the password is not there, so the
    # remote is asked only with the URL the environment gives now, never with `***`.
    first.write({"eval_checks/j.yaml": judge("j", instructions="Judge it anew.")})
    hostile_server.requests.clear()
    updated = first.eb("update", "--cwd", str(first.root))
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert hostile_server.requests == []
    assert "is not asked: stages/config.json records its URL with the password masked" in (
        updated.stderr
    )
    assert "EVAL_BANANA_CACHE_REMOTE" in updated.stderr and password not in updated.stderr
    first.write({"eval_checks/j.yaml": judge("j", instructions="Judge it once more.")})
    monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE", url)
    again = first.eb("update", "--cwd", str(first.root))
    assert again.exit_code == 0, again.stdout + again.stderr
    assert {auth for _, _, auth in hostile_server.requests} == {basic}
    assert "masked" not in again.stderr

    # Or the URL given again on the command line, as the run was made: the same one only.
    monkeypatch.delenv("EVAL_BANANA_CACHE_REMOTE")
    first.write({"eval_checks/j.yaml": judge("j", instructions="Judge it a third time.")})
    hostile_server.requests.clear()
    given = first.eb("update", "--cwd", str(first.root), "--cache-remote", url)
    assert given.exit_code == 0, given.stdout + given.stderr
    assert {auth for _, _, auth in hostile_server.requests} == {basic}
    assert "masked" not in given.stderr
    other = url.replace("builder:", "someone:")
    refused = first.eb("update", "--cwd", str(first.root), "--cache-remote", other)
    assert refused.exit_code == 2 and password not in refused.stderr
    assert "is not the URL this run was made with: its shared cache is http://builder:***@" in (
        refused.stderr
    )


def test_a_refusing_http_cache_says_which_credential_to_fix(
    tmp_path: Path, eb: Callable[..., Any], hostile_server: Hostile
) -> None:
    """HTTP 401 and 403 are told with what they mean here: no credentials, wrong ones, or an
    identity that may only read (so the runner should be read-only)."""
    first, second = runners(tmp_path=tmp_path, eb=eb)
    with webdav(folder=tmp_path / "dav", users={"ci": "right-pass"}) as url:
        host = url.split("://", 1)[1]
        counts, started = run(first, f"http://ci:wrong-pass@{host}/eb")
        assert started == 3 and counts["remote_hits"] == 0
        assert (
            "HTTP 401 (unauthorized: the server refused the user and password"
            in (counts["first_remote_error"])
        )
        assert "wrong-pass" not in json.dumps(counts)
        counts, _ = run(second, f"{url}/eb")
        assert (
            "HTTP 401 (unauthorized: eb sent no credentials; give them in the URL"
            in (counts["first_remote_error"])
        )
    hostile_server.mode = "read_only"
    third = fresh_runner(of=first, root=tmp_path / "runner3")
    counts, _ = run(third, hostile_server.url)
    assert counts["remote_writes"] == 0
    assert (
        "HTTP 403 (forbidden: the store refuses writes with these credentials; a runner that "
        'should only read sets [cache] remote_mode = "read-only"' in counts["first_remote_error"]
    )


def test_an_s3_store_that_refuses_writes_says_to_run_read_only(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, s3: MotoS3
) -> None:
    """Keys that may read the bucket and not write it (an IAM policy denying s3:PutObject):
    S3's 403 AccessDenied is told with what it means and the setting that fits such a runner."""
    first, second = runners(tmp_path=tmp_path, eb=eb)
    for name, value in s3.environ.items():
        monkeypatch.setenv(name, value)
    url = f"s3://{BUCKET}/eb"
    counts, _ = run(first, url)
    assert counts["remote_writes"] == 3
    for name, value in s3.reader_environ().items():
        monkeypatch.setenv(name, value)
    counts, started = run(second, url, "--cache", "refresh")
    assert started == 3 and counts["remote_writes"] == 0
    assert (
        "AccessDenied (HTTP 403) (forbidden: the store refuses writes with these credentials"
        in (counts["first_remote_error"])
    )
    assert 'remote_mode = "read-only"' in counts["first_remote_error"]
    # The same keys still read: a runner told to read only reuses the verdicts, writes nothing.
    third = fresh_runner(of=first, root=tmp_path / "runner3")
    counts, started = run(third, url, "--cache-remote-mode", "read-only")
    assert started == 0 and counts["remote_hits"] == 3 and counts["remote_errors"] == 0


def test_secrets_of_the_shared_cache_reach_no_file_and_no_judge(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, hostile_server: Hostile
) -> None:
    token = "tok-" + "7" * 24
    monkeypatch.setenv("EVAL_BANANA_CACHE_TOKEN", token)
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    env_dump = "import os, json; print(json.dumps(dict(os.environ)))\n"
    from tests.cache.rig import script_check

    first, _ = runners(
        tmp_path=tmp_path,
        eb=eb,
        checks={"env": script_check("env", script=env_dump), "j": judge("j")},
    )
    run(first, hostile_server.url)
    assert {auth for _, _, auth in hostile_server.requests} == {f"Bearer {token}"}
    for path in first.root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert token.encode() not in data, path
            assert KEY.encode() not in data, path
    for body in hostile_server.objects.values():
        assert token.encode() not in body and KEY.encode() not in body
    # The check never received them (not even masked).
    stdout = next(first.root.rglob("runs/*/checks/env*.stdout.txt"), None) or next(
        p for p in first.root.rglob("env*.stdout.txt")
    )
    seen = json.loads(stdout.read_text())
    assert "EVAL_BANANA_CACHE_TOKEN" not in seen and "EVAL_BANANA_CACHE_SIGNING_KEY" not in seen


def test_a_password_in_the_remote_url_reaches_no_check_and_no_file(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, hostile_server: Hostile
) -> None:
    """The URL in EVAL_BANANA_CACHE_REMOTE may hold a password, which lets whoever holds it
    write the shared cache: no check receives the variable, and a password a check finds some
    other way (the config file, a decoded copy) is masked in every file eb writes."""
    password = "pw-" + "3" * 12 + "!x"
    host = hostile_server.url.split("://", 1)[1]
    monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE", f"http://builder:{quote(password)}@{host}")
    from tests.cache.rig import script_check

    leaks = (
        "import os, json; print(json.dumps(dict(os.environ))); print(open('found.txt').read())\n"
    )
    first, _ = runners(
        tmp_path=tmp_path, eb=eb, checks={"env": script_check("env", script=leaks), "j": judge("j")}
    )
    # Found some other way: the project holds it (as a config file with the URL would).
    first.write({"found.txt": f"{quote(password)} {password}"})
    report = first.run()
    assert report["cache"]["remote_writes"] == 2 and report["cache"]["remote_errors"] == 0
    basic = "Basic " + base64.b64encode(f"builder:{password}".encode()).decode()
    assert {auth for _, _, auth in hostile_server.requests} == {basic}
    (stdout,) = first.root.rglob("env-*.stdout.txt")
    seen, printed = stdout.read_text().splitlines()
    assert "EVAL_BANANA_CACHE_REMOTE" not in json.loads(seen)
    assert printed == "*** ***"
    secrets = (password.encode(), quote(password).encode())
    for path in first.root.rglob("*"):
        if path.is_file() and path.name != "found.txt":
            assert not any(secret in path.read_bytes() for secret in secrets), path
    for body in hostile_server.objects.values():
        assert not any(secret in body for secret in secrets)


def test_a_remote_that_times_out_adds_about_one_timeout_not_one_per_check(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, hostile_server: Hostile
) -> None:
    checks = {f"j{n}": judge(f"j{n}", instructions=f"Judge {n}.") for n in range(24)}
    plain, slow = runners(tmp_path=tmp_path, eb=eb, checks=checks)
    monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE_TIMEOUT_SECONDS", "1")
    hostile_server.mode = "slow"
    baselines, times = [], []
    for _ in range(2):  # the best of two of each: the machine is shared
        for project in (plain, slow):
            shutil.rmtree(project.cache_dir, ignore_errors=True)
        started = time.monotonic()
        plain.run()  # the same run with the local cache alone: its keys and stores cost the same
        baselines.append(time.monotonic() - started)
        started = time.monotonic()
        counts, ran = run(slow, hostile_server.url)
        times.append(time.monotonic() - started)
        assert ran == 24 and counts["remote_stopped"] is True
        # One wave of lookups (remote_concurrency, 8); nothing after the breaker tripped.
        assert counts["remote_requests"] <= 8
    assert min(times) <= min(baselines) + 1 + 1, (times, baselines)


def test_a_run_answered_by_the_shared_cache_is_not_kept_for_replay(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    first = make_project(
        tmp_path=tmp_path, eb=eb, checks={"j": judge("j")}, files={"docs/a.md": "a\n"}
    )
    second = fresh_runner(of=first, root=tmp_path / "runner2")
    shared = str(tmp_path / "shared")
    run(first, shared)
    counts, _ = run(second, shared)
    assert counts["remote_hits"] == 1
    # Its report counts requests a replay would not make: not kept.
    assert not list((second.cache_dir / "runs").glob("*/*.json"))
    counts, _ = run(second, shared)
    assert (counts["local_hits"], counts["remote_requests"]) == (1, 0)
    assert list((second.cache_dir / "runs").glob("*/*.json"))  # this one is
    counts, started = run(second, shared)  # a replay: the same counts, still true
    assert started == 0 and (counts["local_hits"], counts["remote_requests"]) == (1, 0)


def test_a_remote_of_an_unknown_scheme_is_a_setup_error(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    done = eb("run", "--cwd", str(first.root), "--cache-remote", "gopher://cache.example/eb")
    assert done.exit_code == 2, done.stdout + done.stderr
    assert "[cache] remote 'gopher://cache.example/eb'" in done.stderr
    assert first.agent_starts() == 0


@pytest.mark.parametrize(
    ("url", "told"),
    [
        ("gopher://cache.example/eb", "has a scheme eb does not know (gopher://)"),
        ("file://fileserver/share/eb", "names another host, which a file:// URL cannot reach"),
    ],
)
def test_a_remote_eb_cannot_use_is_a_setup_error_even_when_the_run_would_replay(
    tmp_path: Path, eb: Callable[..., Any], url: str, told: str
) -> None:
    # A replayed run never opens the remote: the same typo exited 0 on a runner whose cache
    # held a replay and 2 on a fresh one (and file://host was a warning on every runner).
    project = make_project(
        tmp_path=tmp_path, eb=eb, checks={"j": judge("j")}, files={"README.md": "x\n"}
    )
    project.run()
    project.run()  # every verdict reused: kept as a replay
    starts = project.agent_starts()
    done = eb("run", "--cwd", str(project.root), "--cache-remote", url)
    assert done.exit_code == 2, done.stdout + done.stderr
    assert f"[cache] remote '{url}' {told}" in done.stderr
    assert project.agent_starts() == starts
    # Written in the config file, `eb validate` says so at the setting's line.
    config = project.root / ".eval-banana" / "config.toml"
    config.write_text(config.read_text().replace("[cache]\n", f'[cache]\nremote = "{url}"\n'))
    validated = eb("validate", "--cwd", str(project.root), "--json")
    assert validated.exit_code == 2
    error = json.loads(validated.stdout)["error"]
    assert (error["kind"], error["file"], error["field_path"]) == (
        "config_error",
        str(config),
        "cache.remote",
    )
    assert told in error["message"]


def test_an_s3_remote_without_boto3_is_a_setup_error_that_names_the_extra(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "boto3", None)  # as where the s3 extra is not installed
    project = make_project(tmp_path=tmp_path, eb=eb, checks={"j": judge("j")}, files={})
    done = eb("run", "--cwd", str(project.root), "--cache-remote", "s3://ci/eb")
    assert done.exit_code == 2
    assert "[cache] remote 's3://ci/eb' needs boto3, which is not installed" in done.stderr
    assert "pip install 'eval-banana-staged[s3]'" in done.stderr
    assert project.agent_starts() == 0


@pytest.mark.parametrize("where", ["remote", "endpoint"])
def test_a_query_secret_of_the_remote_or_its_endpoint_reaches_no_file(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    hostile_server: Hostile,
    where: str,
) -> None:
    """A token in the query of `[cache] remote` (`...?token=...`) or of `[cache]
    remote_endpoint` (a presigned `X-Amz-Signature=...`) is a secret as a password is: no file
    of the run folder, the history or either cache holds it. The endpoint's was written as
    given into stages/config.json (and so into report.json's settings and the history).
    boto3 sends no request to an endpoint with a query, so that one is a setup error now,
    which shows the endpoint masked, before any run folder or request."""
    secret = "sig-" + "9" * 24
    env_dump = "import os, json; print(json.dumps(dict(os.environ)))\n"
    checks = {"j": judge("j"), "env": script_check("env", script=env_dump)}
    first, _ = runners(tmp_path=tmp_path, eb=eb, checks=checks)
    if where == "remote":
        counts, started = run(first, f"{hostile_server.url}?token={secret}")
        assert started == 1
        config = next(first.root.rglob("stages/config.json")).read_text()
        assert "?***" in config
    else:  # an S3 remote whose endpoint (a real server's) has a query
        monkeypatch.setenv(
            "EVAL_BANANA_CACHE_REMOTE_ENDPOINT",
            f"{hostile_server.url}/?X-Amz-Signature={secret}",
        )
        first.last = first.eb(
            "run", "--cwd", str(first.root), "--cache-remote", f"s3://{BUCKET}/eb"
        )
        assert first.last.exit_code == 2, first.last.stdout + first.last.stderr
        assert "EVAL_BANANA_CACHE_REMOTE_ENDPOINT must have no query string" in first.last.stderr
        assert f"{hostile_server.url}/?***" in first.last.stderr
        assert first.agent_starts() == 0 and not list(first.root.rglob("stages"))
        assert hostile_server.requests == []
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert not [path for path in written if secret.encode() in path.read_bytes()]
    assert secret not in first.last.stdout + first.last.stderr
    for body in hostile_server.objects.values():
        assert secret.encode() not in body


def test_a_cache_behind_a_proxy_that_reads_a_query_token_is_shared(
    tmp_path: Path, eb: Callable[..., Any], hostile_server: Hostile
) -> None:
    """`--cache-remote http://host/cache?token=...`, a proxy that authenticates by the query:
    eb kept only the URL's path, so every request was refused 401 and nothing was shared. The
    query now goes with every request, and no file or output of eb's holds it."""
    token = "qtok-" + "8" * 24
    hostile_server.required_query = f"token={token}"
    first, second = runners(tmp_path=tmp_path, eb=eb)
    url = f"{hostile_server.url}?token={token}"
    counts, started = run(first, url)
    assert started == 3 and counts["remote_writes"] == 3 and counts["remote_errors"] == 0
    counts, started = run(second, url)
    assert started == 0 and counts["remote_hits"] == 3 and counts["remote_errors"] == 0
    assert {path.partition("?")[2] for _, path, _ in hostile_server.requests} == {f"token={token}"}
    for runner in (first, second):
        assert token not in runner.last.stdout + runner.last.stderr
        written = [path for path in runner.root.rglob("*") if path.is_file()]
        assert not [path for path in written if token.encode() in path.read_bytes()]
        assert "?***" in next(runner.root.rglob("stages/config.json")).read_text()


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"])
def test_a_query_of_boto3_s_endpoint_variable_is_a_setup_error_that_masks_it(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    s3: MotoS3,
    variable: str,
) -> None:
    """The S3 endpoint given in boto3's own variable, with a query (a presigned
    `X-Amz-Signature=...`): boto3 refused every request of the run ("URLs with queries are not
    supported") until eb stopped asking. It is a setup error now, naming the variable, with
    the query masked: no request, no run folder, and no file or output holds the secret."""
    secret = "sig-" + "6" * 24
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    for name, value in s3.environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("EVAL_BANANA_CACHE_REMOTE_ENDPOINT")
    monkeypatch.setenv(variable, f"{s3.endpoint}/?X-Amz-Signature={secret}")
    first.last = first.eb("run", "--cwd", str(first.root), "--cache-remote", f"s3://{BUCKET}/eb")
    assert first.last.exit_code == 2, first.last.stdout + first.last.stderr
    assert first.last.stderr.startswith(
        f"{variable} must have no query string (?...): boto3 sends no request to such an "
        f"endpoint, got '{s3.endpoint}/?***'"
    ), first.last.stderr
    assert first.agent_starts() == 0 and not list(first.root.rglob("stages"))
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert not [path for path in written if secret.encode() in path.read_bytes()]
    assert secret not in first.last.stdout + first.last.stderr


def test_an_update_takes_a_masked_s3_endpoint_from_its_variable_or_skips_the_shared_cache(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, s3: MotoS3
) -> None:
    """stages/config.json records `[cache] remote_endpoint` with its password masked; `eb
    update` uses the endpoint EVAL_BANANA_CACHE_REMOTE_ENDPOINT holds when it is the same one,
    and without it asks nothing of the shared cache and says so (never the masked endpoint).
    The store sits behind a gate that logs every request it gets."""
    password = "pw-" + "1" * 24
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    for name, value in s3.environ.items():
        monkeypatch.setenv(name, value)
    with gate(upstream=s3.endpoint) as store:
        endpoint = store.endpoint.replace("http://", f"http://ci:{password}@")
        monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE_ENDPOINT", endpoint)
        counts, started = run(first, f"s3://{BUCKET}/eb")
        assert started == 3 and counts["remote_writes"] == 3
        config = next(first.root.rglob("stages/config.json")).read_text()
        assert "ci:***@" in config and password not in config

        # Without the variable: a warning that names it, and no request at all.
        monkeypatch.delenv("EVAL_BANANA_CACHE_REMOTE_ENDPOINT")
        first.write({"eval_checks/j.yaml": judge("j", instructions="Judge it anew.")})
        store.seen.clear()
        before = first.agent_starts()
        updated = first.eb("update", "--cwd", str(first.root))
        assert updated.exit_code == 0, updated.stdout + updated.stderr
        assert store.seen == [] and first.agent_starts() == before + 1
        assert "records its [cache] remote_endpoint with its password or query masked" in (
            updated.stderr
        )
        assert "EVAL_BANANA_CACHE_REMOTE_ENDPOINT" in updated.stderr
        assert password not in updated.stdout + updated.stderr

        # With it: j's first verdict, gone from the local folder, is fetched from the store.
        monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE_ENDPOINT", endpoint)
        first.write({"eval_checks/j.yaml": judge("j")})
        shutil.rmtree(first.root / ".eval-banana" / "cache")
        before = first.agent_starts()
        again = first.eb("update", "--cwd", str(first.root))
        assert again.exit_code == 0, again.stdout + again.stderr
        assert "GET" in store.seen and first.agent_starts() == before
        assert "masked" not in again.stderr and password not in again.stdout + again.stderr
    written = [path for path in first.root.rglob("*") if path.is_file()]
    assert not [path for path in written if password.encode() in path.read_bytes()]


def _stored_bytes(project: Project) -> int:
    cache = project.root / ".eval-banana" / "cache"
    return sum(
        path.stat().st_size
        for part in ("entries", "blobs")
        for path in (cache / part).rglob("*")
        if path.is_file()
    )


def test_entries_fetched_from_the_shared_cache_keep_the_local_folder_within_its_limit(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    """A runner whose `max_mb` is smaller than what the shared cache holds fetches every
    verdict and reuses them all, yet keeps only what fits in its own folder."""
    first = noisy_project(tmp_path=tmp_path, eb=eb, checks=8, output_bytes=150_000, max_mb=1)
    shared = str(tmp_path / "shared")
    counts, _ = run(first, shared)
    assert counts["misses"] == 8 and counts["remote_writes"] == 8
    second = fresh_runner(of=first, root=tmp_path / "runner2")
    for _ in range(2):
        counts, _ = run(second, shared)
        assert counts["misses"] == 0 and counts["remote_hits"] > 0
        assert 0 < _stored_bytes(second) <= 1024 * 1024
