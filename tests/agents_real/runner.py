"""Run `eb run` as a real subprocess, as root or as an unprivileged user, against real agents.

For the unprivileged runs the child drops to `nobody` before it starts (setgid/setuid in a
preexec hook). Such a user cannot enter /root, where this machine keeps its Python builds, so
those runs use an interpreter every user can reach (the system's Python of the same version)
and a world-readable copy of eval_banana and its runtime dependencies.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from eval_banana.core.version import DISTRIBUTION
from tests.agents_real.install import bin_dir
from tests.agents_real.setups import Setup
from tests.builders import newest_run_dir

REPO = Path(__file__).resolve().parents[2]
UNPRIVILEGED = "nobody"


def reachable_by_everyone(path: Path) -> bool:
    """Every folder above `path` can be entered by others, and `path` itself read."""
    path = path.resolve()
    if not all(folder.stat().st_mode & stat.S_IXOTH for folder in path.parents):
        return False
    return bool(path.stat().st_mode & stat.S_IROTH)


def _requirement_names(dist: metadata.Distribution) -> Iterator[str]:
    for requirement in dist.requires or []:
        name, _, marker = requirement.partition(";")
        if "extra ==" in marker:
            continue  # optional extras (dev tools) are not needed to run eb
        base = name.strip().split("[")[0]
        for stop in "<>=!~ (":
            base = base.split(stop)[0]
        yield base.strip()


def _runtime_distributions() -> list[metadata.Distribution]:
    """eval_banana's runtime dependencies, transitively (not eval_banana itself)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = list(_requirement_names(metadata.distribution(DISTRIBUTION)))
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[key] = dist
        todo.extend(_requirement_names(dist))
    return list(seen.values())


def build_portable_runtime(*, target: Path) -> Path:
    """Copy eval_banana and its runtime dependencies into `target`; return it (a PYTHONPATH)."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(
        REPO / "eval_banana",
        target / "eval_banana",
        ignore=shutil.ignore_patterns("__pycache__"),
        dirs_exist_ok=True,
    )
    for dist in _runtime_distributions():
        for file in dist.files or []:
            parts = Path(str(file)).parts
            if not parts or parts[0] == ".." or "__pycache__" in parts:
                continue
            source = Path(str(dist.locate_file(file)))
            if source.is_file():
                destination = target / Path(*parts)
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, destination)
    for folder, dirs, files in os.walk(target):
        for name in dirs:
            (Path(folder) / name).chmod(0o755)
        for name in files:
            (Path(folder) / name).chmod(0o644)
    # Started as a script, this file puts its own folder first on sys.path: no PYTHONPATH,
    # which eval_banana would pass on to the agents (and break OpenHands' own Python).
    (target / "eb_portable.py").write_text(
        'import runpy\nrunpy.run_module("eval_banana", run_name="__main__", alter_sys=True)\n'
    )
    target.chmod(0o755)
    (target / "eb_portable.py").chmod(0o644)
    return target


def python_for_everyone() -> Path | None:
    """An interpreter of this Python's version that every user can run, if there is one."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [
        Path(sys.executable).resolve(),
        Path(sys.base_prefix) / "bin" / f"python{version}",
    ]
    candidates += [Path(f"/usr/bin/python{version}"), Path(f"/usr/local/bin/python{version}")]
    for candidate in candidates:
        try:
            real = candidate.resolve(strict=True)
        except OSError:
            continue
        prefix_lib = real.parent.parent / "lib" / f"python{version}"
        runnable = reachable_by_everyone(real) and real.stat().st_mode & stat.S_IXOTH
        if runnable and prefix_lib.exists() and reachable_by_everyone(prefix_lib):
            return real
    return None


@dataclass(frozen=True)
class User:
    """Who runs `eb`: root (this process) or an unprivileged account."""

    name: str
    uid: int
    gid: int

    @property
    def is_root(self) -> bool:
        return self.uid == 0


def current_user() -> User:
    entry = pwd.getpwuid(os.geteuid())
    return User(name=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid)


def unprivileged_user() -> User:
    entry = pwd.getpwnam(UNPRIVILEGED)
    return User(name=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid)


def world_folder(*, prefix: str) -> Path:
    """A fresh folder under the temp dir that every user can enter (not pytest's 0700 tmp)."""
    base = Path(tempfile.gettempdir())
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    folder.chmod(0o755)
    return folder


def give_to(*, path: Path, user: User) -> None:
    """Make `path` (recursively) the user's own, so their `eb` can write its run folder."""
    for folder, dirs, files in os.walk(path):
        os.chown(folder, user.uid, user.gid)
        for name in dirs + files:
            os.lchown(Path(folder) / name, user.uid, user.gid)


@dataclass
class Project:
    """A project on disk with its config, its judge checks and the agent's home folder."""

    root: Path
    home: Path
    tmp: Path

    def report(self) -> dict[str, Any]:
        report: dict[str, Any] = json.loads((self.run_dir() / "report.json").read_text())
        return report

    def run_dir(self) -> Path:
        return newest_run_dir(self.root / "runs")

    def checks(self) -> dict[str, dict[str, Any]]:
        return {check["check_id"]: check for check in self.report()["checks"]}


def judge_file(*, check_id: str, marker: str) -> str:
    """A judge check whose instructions carry a marker the model server answers to."""
    return textwrap.dedent(
        f"""\
        schema_version: 1
        id: {check_id}
        type: harness_judge
        description: The conformance case {check_id}.
        instructions: |
          Decide whether the case holds. Case marker: {marker}.
        """
    )


def make_project(
    *,
    base: Path,
    agent: str,
    harness_env: dict[str, str],
    home_files: dict[str, str],
    model: str | None,
    cases: dict[str, str],
    timeout_seconds: int,
    extra_config: str = "",
) -> Project:
    """Write the project as a user would: config with [harness] and [harness.env], checks, HOME."""
    root, home, tmp = base / "project", base / "home", base / "tmp"
    for folder in (root / ".eval-banana", root / "eval_checks", home, tmp):
        folder.mkdir(parents=True, exist_ok=True)
    lines = ["[core]", 'output_dir = "runs"', "max_parallel_checks = 8", "", "[harness]"]
    lines.append(f'agent = "{agent}"')
    if model:
        lines.append(f'model = "{model}"')
    lines.append(f"timeout_seconds = {timeout_seconds}")
    lines += ["", "[harness.env]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in harness_env.items()]
    config = "\n".join(lines) + "\n" + extra_config
    (root / ".eval-banana" / "config.toml").write_text(config)
    for check_id, marker in cases.items():
        (root / "eval_checks" / f"{check_id}.yaml").write_text(
            judge_file(check_id=check_id, marker=marker)
        )
    for relative, text in home_files.items():
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    # A real Git repository, as most projects are (codex and others look for one).
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return Project(root=root, home=home, tmp=tmp)


def project_for(
    *,
    base: Path,
    setup: Setup,
    server_url: str,
    cases: dict[str, str],
    model: str | None,
    timeout_seconds: int,
    extra_config: str = "",
) -> Project:
    """make_project for one agent's setup, its settings pointed at the model server."""
    return make_project(
        base=base,
        agent=setup.agent,
        harness_env={key: value.replace("{url}", server_url) for key, value in setup.env.items()},
        home_files={
            path: text.replace("{url}", server_url) for path, text in setup.home_files.items()
        },
        model=model,
        cases=cases,
        timeout_seconds=timeout_seconds,
        extra_config=extra_config,
    )


@dataclass(frozen=True)
class Runtime:
    """How to start eval_banana as a given user."""

    python: Path
    portable: Path | None  # the world-readable copy (for an unprivileged user), or None


def eb_run(
    *,
    project: Project,
    user: User,
    runtime: Runtime,
    args: tuple[str, ...] = (),
    timeout_s: float = 900.0,
) -> subprocess.CompletedProcess[str]:
    """`eb run --cwd <project>` as `user`, with the agents on PATH and HOME in the project area."""
    env = {
        "PATH": f"{bin_dir()}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        "HOME": str(project.home),
        # A login session's shell; `nobody`'s own is nologin, on which OpenHands' tmux dies.
        "SHELL": "/bin/bash",
        "TMPDIR": str(project.tmp),
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        "PYTHONNOUSERSITE": "1",
    }
    launcher = ["-m", "eval_banana"]
    if runtime.portable is not None:
        launcher = [str(runtime.portable / "eb_portable.py")]
    preexec = None
    if not user.is_root:
        give_to(path=project.root.parent, user=user)

        def preexec() -> None:
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)

    return subprocess.run(
        [str(runtime.python), *launcher, "run", "--cwd", str(project.root), *args],
        env=env,
        cwd=str(project.root),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        preexec_fn=preexec,
        check=False,
    )
