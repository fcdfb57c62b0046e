"""The eval_banana action's run: `eb run` with the inputs, its outcome as step outputs.

The step itself always succeeds (the verdict cache is saved, the comment posted and the run
folder uploaded whatever the verdict); gate.sh, the action's last step, exits with the code.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tomllib
from pathlib import Path

from ghenv import env, set_output, workdir
from runfolder import holds_anything, set_run_outputs

READ_ONLY = "read-only"


def command() -> list[str]:
    """`eb run` with the `args` input, then what the action itself decides."""
    argv = ["eb", "run", *shlex.split(env("EB_ARGS"))]
    argv += ["--output-dir", env("EB_OUTPUT_DIR"), "--flat-output"]
    if env("EB_SHARD"):
        argv += ["--shard", env("EB_SHARD")]
    if env("EB_BASELINE_DIR"):
        argv += ["--baseline", env("EB_BASELINE_DIR")]
    if env("EB_CACHE_MODE") == READ_ONLY:
        # A pull request from a fork reuses verdicts but never writes them, whatever `args`
        # say: a flag beats every other source, and the last one given is the one eb keeps.
        argv += ["--cache", READ_ONLY]
    return argv


def project_sets_cache_mode(*, start: Path, args: list[str]) -> bool:
    """Whether the project's config file (the nearest `.eval-banana/config.toml` at or above
    `start`, as eb finds it) sets `[cache] mode`. A file eb cannot read counts as not setting
    it: eb itself then stops the run and says what is wrong with the file."""
    if "--no-project-config" in args:
        return False
    for folder in (start, *start.parents):
        path = folder / ".eval-banana" / "config.toml"
        if path.is_file():
            try:
                loaded = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                return False
            section = loaded.get("cache")
            return isinstance(section, dict) and "mode" in section
    return False


def environment() -> dict[str, str]:
    """The job's environment, with the cache mode the `cache` input asks for.

    A fork's `read-only` is also passed as the last flag (see `command`). On the job's own
    runs `on` is a default, not an order: a mode the job's environment
    (EVAL_BANANA_CACHE_MODE) or the project's config file sets stands, and a `--cache` in
    `args` beats both, as eb's precedence has it (docs/ci.md).
    """
    environ = dict(os.environ)
    mode = env("EB_CACHE_MODE")
    if mode == READ_ONLY:
        environ["EVAL_BANANA_CACHE_MODE"] = READ_ONLY
    elif mode and not env("EVAL_BANANA_CACHE_MODE"):
        args = shlex.split(env("EB_ARGS"))
        if not project_sets_cache_mode(start=workdir(), args=args):
            environ["EVAL_BANANA_CACHE_MODE"] = mode
    return environ


def main() -> None:
    argv = command()
    print("+ " + shlex.join(argv), flush=True)
    environ = environment()
    run_dir = Path(env("EB_OUTPUT_DIR"))
    held_before = holds_anything(run_dir)
    code = subprocess.run(argv, cwd=workdir(), env=environ, check=False).returncode
    set_output("exit-code", str(code))
    set_run_outputs(run_dir=run_dir, held_before=held_before)


if __name__ == "__main__":
    main()
