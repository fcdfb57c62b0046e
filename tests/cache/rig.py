"""A small project for verdict cache tests: judges answered by a counting agent, scripts.

The agent is a real executable (a Python script outside the project) that appends its argv
to a log before answering, so a test can tell exactly which judges were started.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from eval_banana.cache.store import CacheStore
from eval_banana.core.mac import signed_text

AGENT = """\
import json, os, sys
with open({log!r}, "a", encoding="utf-8") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
prompt = sys.argv[-1]
if "WRITE_GENERATED" in prompt:
    # A judge that leaves a file in the project it judges (its working folder), new text each time.
    os.makedirs("generated", exist_ok=True)
    with open(os.path.join("generated", "notes.txt"), "a", encoding="utf-8") as notes:
        notes.write("was here\\n")
# An "upgraded" agent that answers without a verdict, keyed as before (no part of a key says so).
upgraded_and_broken = os.path.exists({log!r} + ".broken")
if "NO_VERDICT" in prompt or upgraded_and_broken:
    print("I could not decide.")
else:
    print("thinking out loud on stderr", file=sys.stderr)
    score = 0 if "SCORE_ZERO" in prompt else 1
    print(json.dumps({{"score": score, "reason": "judged by the counting agent"}}))
"""


def judge(
    check_id: str, *, instructions: str = "Judge it.", inputs: list[str] | None = None
) -> str:
    lines = [
        "schema_version: 1",
        f"id: {check_id}",
        "type: harness_judge",
        f"description: Judge {check_id}.",
        f"instructions: {json.dumps(instructions)}",
    ]
    if inputs is not None:
        lines.append(f"inputs: {json.dumps(inputs)}")
    return "\n".join(lines) + "\n"


def script_check(
    check_id: str,
    *,
    script: str | None = None,
    script_path: str | None = None,
    inputs: list[str] | None = None,
    expect: str = "pass",
) -> str:
    lines = [
        "schema_version: 1",
        f"id: {check_id}",
        "type: deterministic",
        f"description: Script {check_id}.",
        f"expect: {expect}",
    ]
    if script is not None:
        lines.append("script: |\n" + textwrap.indent(script, "  "))
    if script_path is not None:
        lines.append(f"script_path: {script_path}")
    if inputs is not None:
        lines.append(f"inputs: {json.dumps(inputs)}")
    return "\n".join(lines) + "\n"


def config_text(*, agent: Path, extra: str = "", replay: bool = True) -> str:
    command = json.dumps([sys.executable, str(agent)])
    replay_line = "" if replay else "replay = false"
    return textwrap.dedent(
        f"""\
        [core]
        max_parallel_checks = 2

        [discovery]
        exclude_dirs = [".eval-banana", ".git"]

        [cache]
        mode = "on"
        {replay_line}

        [harness]
        agent = "counter"
        timeout_seconds = 60

        # The model travels in a variable, not on the command line: only the key's own
        # model component can tell two models apart.
        [agents.counter]
        command = {command}
        model_flag = ""
        model_env_vars = ["COUNTER_MODEL"]
        reasoning_effort_flag = ["--effort", "{{effort}}"]

        [agents.counter2]
        command = {command}
        model_flag = ""
        model_env_vars = ["COUNTER_MODEL"]
        reasoning_effort_flag = ["--effort", "{{effort}}"]
        """
    ) + textwrap.dedent(extra)


DELETE = object()


def write_signed(*, cache_dir: Path, path: Path, document: dict[str, Any]) -> None:
    """Write a cache document with a valid MAC, as eb does (or a writer that read the
    secret): what a test edits then reaches the checks behind the MAC."""
    key = CacheStore(folder=cache_dir, max_bytes=1 << 30).secret(create=True)
    assert isinstance(key, bytes), key
    body = {name: value for name, value in document.items() if name != "mac"}
    text = json.dumps(body, indent=1, ensure_ascii=False).encode("utf-8") + b"\n"
    path.write_bytes(signed_text(key=key, text=text))


def mutated(path: list[str | int], value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A change of a JSON document: the value at `path` set (or removed, with DELETE)."""

    def change(document: dict[str, Any]) -> dict[str, Any]:
        changed = copy.deepcopy(document)
        target: Any = changed
        for part in path[:-1]:
            target = target[part]
        if value is DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
        return changed

    return change


class Project:
    """A project on disk plus the log of agent starts; `run` returns the run's report."""

    def __init__(self, *, root: Path, log: Path, eb: Callable[..., Any]) -> None:
        self.root = root
        self.log = log
        self.eb = eb
        self.last: Any = None

    def write(self, files: dict[str, str]) -> None:
        for relative, text in files.items():
            path = self.root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def move(self, *, to: Path) -> None:
        """The same tree in another folder (as another CI checkout path would hold it)."""
        self.root.rename(to)
        self.root = to

    def agent_starts(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    def run(self, *args: str, expect_exit: int = 0) -> dict[str, Any]:
        self.last = self.eb("run", "--cwd", str(self.root), "--json", *args)
        assert self.last.exit_code == expect_exit, self.last.stdout + self.last.stderr
        report: dict[str, Any] = json.loads(self.last.stdout)
        return report

    def misses(self, *args: str, expect_exit: int = 0) -> set[str]:
        """Run; return the ids of the checks that ran (were not answered from the cache)."""
        report = self.run(*args, expect_exit=expect_exit)
        return {c["check_id"] for c in report["checks"] if not cache_of(c).get("hit")}

    @property
    def cache_dir(self) -> Path:
        return self.root / ".eval-banana" / "cache"

    def entries(self) -> list[Path]:
        return sorted((self.cache_dir / "entries").glob("*/*.json"))

    def rewrite(self, path: Path, document: dict[str, Any]) -> None:
        """Replace a stored entry or kept run, with a valid MAC."""
        write_signed(cache_dir=self.cache_dir, path=path, document=document)


def cache_of(check: dict[str, Any]) -> dict[str, Any]:
    found = check.get("details", {}).get("cache")
    return found if isinstance(found, dict) else {}


def make_project(
    *,
    tmp_path: Path,
    eb: Callable[..., Any],
    checks: dict[str, str],
    files: dict[str, str],
    extra_config: str = "",
    replay: bool = True,
) -> Project:
    """`replay`: whether fully cached runs are kept and replayed whole (tests of the verdict
    lookups themselves turn it off, or the third run on would be a replay)."""
    log = tmp_path / "agent-starts.log"
    agent = tmp_path / "counting_agent.py"
    agent.write_text(AGENT.format(log=str(log)))
    root = tmp_path / "proj"
    project = Project(root=root, log=log, eb=eb)
    project.write(
        {".eval-banana/config.toml": config_text(agent=agent, extra=extra_config, replay=replay)}
    )
    project.write({f"eval_checks/{name}.yaml": text for name, text in checks.items()})
    project.write(files)
    return project


def noisy_project(
    *, tmp_path: Path, eb: Callable[..., Any], checks: int, output_bytes: int, max_mb: int
) -> Project:
    """`checks` deterministic checks that each print `output_bytes` random bytes (as hex), in
    a project whose cache may hold `max_mb` MiB: a run of it outgrows the cache."""
    noisy = f"import os, sys\nsys.stdout.buffer.write(os.urandom({output_bytes}).hex().encode())\n"
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={f"n{i}": script_check(f"n{i}", script=noisy, inputs=[]) for i in range(checks)},
        files={},
        extra_config="",
    )
    config = project.root / ".eval-banana" / "config.toml"
    config.write_text(config.read_text().replace('mode = "on"', f'mode = "on"\nmax_mb = {max_mb}'))
    return project


def links_to_the_limit(path: Path, *, folder: Path) -> None:
    """Give `path` as many hard links as its file system allows (ext4: 65,000), as the kept
    run folders of a family whose cases print the same output do (65 runs of 1,000 cases)."""
    limit = os.pathconf(path, "PC_LINK_MAX")
    if limit > 70_000:
        pytest.skip(f"this file system allows {limit:,} links to a file, more than a test makes")
    folder.mkdir()
    for number in range(limit - os.stat(path).st_nlink):
        os.link(path, folder / str(number))


def waiting_for_lock(*, lock: Path, process: subprocess.Popen[str]) -> None:
    """Until `process` waits for the lock on `lock` (Linux's /proc/locks lists a waiter with
    `->`), as a run waits for the turn of a run storing into the cache."""
    inode = f":{lock.stat().st_ino} "
    for _ in range(3000):
        waiting = [
            line
            for line in Path("/proc/locks").read_text().splitlines()
            if "->" in line and inode in line
        ]
        if waiting or process.poll() is not None:
            return
        time.sleep(0.02)


def isolate(*, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Plain folders (not inside any repository) unless a test makes one; no cache setting leaks
    # in from the shell running the tests.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(folder))
    for name in ("EVAL_BANANA_CACHE_MODE", "EVAL_BANANA_CACHE_DIR", "EVAL_BANANA_CACHE_MAX_MB"):
        monkeypatch.delenv(name, raising=False)


@contextlib.contextmanager
def isolated_for_module(folder: Path) -> Iterator[None]:
    """What `_isolated` gives a test, for a module-scoped fixture built before any test's."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate(folder=folder, monkeypatch=monkeypatch)
        yield


CHECK_SCRIPT = """\
import json, sys
from pathlib import Path
ctx = json.loads(Path(sys.argv[1]).read_text())
root = Path(ctx["project_root"])
print("src says", (root / "src" / "value.txt").read_text().strip())
(Path(ctx["output_dir"]) / "evidence.txt").write_text("seen\\n")
"""


def standard_project(*, tmp_path: Path, eb: Callable[..., Any]) -> Project:
    """A judge reading docs/, a script check reading src/, and a check without inputs."""
    return make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={
            "j": judge("j", inputs=["docs/**"]),
            "d": script_check("d", script_path="../scripts/check.py", inputs=["src/**"]),
            "w": script_check("w", script="print('whole project')\n"),
        },
        files={
            "docs/guide.md": "# Guide\n",
            "src/value.txt": "42\n",
            "scripts/check.py": CHECK_SCRIPT,
            "README.md": "# Project\n",
        },
    )
