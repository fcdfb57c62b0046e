"""The eval_banana merge action's run: `eb merge` over every downloaded shard folder.

download-artifact puts each artifact in a folder of its own name under the download path;
those folders are the shard run folders. Like run.py, the step succeeds and writes the
outcome as outputs; gate.sh exits with it.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from ghenv import env, fail, flag, set_output, workdir
from runfolder import holds_anything, set_run_outputs


def main() -> None:
    # The comment step's `if:` compares the input with 'true': any other word is refused here
    # rather than silently posting nothing.
    flag("EB_COMMENT", called="input comment")
    shards = Path(env("EB_SHARDS_DIR"))
    folders = sorted(str(p) for p in shards.iterdir() if p.is_dir()) if shards.is_dir() else []
    if not folders:
        fail(f"no shard run folder was downloaded into {shards} (pattern {env('EB_PATTERN')!r})")
    out = str(workdir() / (env("EB_OUTPUT_DIR") or "eval-results"))
    argv = ["eb", "merge", *folders, "--output-dir", out, "--flat-output"]
    argv += shlex.split(env("EB_ARGS"))
    print("+ " + shlex.join(argv), flush=True)
    held_before = holds_anything(Path(out))
    code = subprocess.run(argv, cwd=workdir(), check=False).returncode
    set_output("exit-code", str(code))
    set_run_outputs(run_dir=Path(out), held_before=held_before)


if __name__ == "__main__":
    main()
