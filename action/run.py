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
    code = subprocess.run(argv, cwd=workdir(), env=environ, check=False).returncode
    run_dir = Path(env("EB_OUTPUT_DIR"))
    report = run_dir / "report.json"
    set_output("exit-code", str(code))
    # A run that never started (exit 2 on a bad flag) has no folder: the outputs say so.
    set_output("run-dir", str(run_dir) if run_dir.is_dir() else "")
    set_output("report-json", str(report) if report.is_file() else "")


if __name__ == "__main__":
    main()
