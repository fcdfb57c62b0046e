"""The eval_banana action's run: `eb run` with the inputs, its outcome as step outputs.

The step itself always succeeds (the verdict cache is saved, the comment posted and the run
folder uploaded whatever the verdict); gate.sh, the action's last step, exits with the code.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from ghenv import env, set_output, workdir
from runfolder import holds_anything, set_run_outputs


def command() -> list[str]:
    """`eb run` with the `args` input, then what the action itself decides."""
    argv = ["eb", "run", *shlex.split(env("EB_ARGS"))]
    argv += ["--output-dir", env("EB_OUTPUT_DIR"), "--flat-output"]
    if env("EB_SHARD"):
        argv += ["--shard", env("EB_SHARD")]
    if env("EB_BASELINE_DIR"):
        argv += ["--baseline", env("EB_BASELINE_DIR")]
    return argv


def main() -> None:
    argv = command()
    print("+ " + shlex.join(argv), flush=True)
    environ = dict(os.environ)
    if env("EB_CACHE_MODE"):
        # A pull request from a fork reuses verdicts but never writes them.
        environ["EVAL_BANANA_CACHE_MODE"] = env("EB_CACHE_MODE")
    run_dir = Path(env("EB_OUTPUT_DIR"))
    held_before = holds_anything(run_dir)
    code = subprocess.run(argv, cwd=workdir(), env=environ, check=False).returncode
    set_output("exit-code", str(code))
    set_run_outputs(run_dir=run_dir, held_before=held_before)


if __name__ == "__main__":
    main()
