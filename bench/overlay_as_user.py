"""Time `copy` isolation's overlay as an unprivileged user would get it (a user namespace).

The W13 row measures eb as it runs here, as root. This runs, as `nobody`, the commands an
unprivileged eb runs for each judge: make the workspace, run a command in it (`ls`), list what
changed, remove it. Run as root (to act as `nobody`), on a project folder:

    python bench/overlay_as_user.py PROJECT [--times 8]
"""

from __future__ import annotations

import argparse
import os
import pwd
import statistics
import subprocess
import time
from pathlib import Path

from eval_banana.isolation.workspace import make_workspace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--times", type=int, default=8)
    args = parser.parse_args()
    nobody = pwd.getpwnam("nobody")

    def as_nobody() -> None:
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)

    seconds = []
    for _ in range(args.times):
        started = time.perf_counter()
        workspace = make_workspace(root=args.project, paths=[], method="overlay", namespace="user")
        for folder in (
            workspace.scratch,
            *(workspace.scratch / n for n in ("upper", "work", "merged")),
        ):
            os.chown(folder, nobody.pw_uid, nobody.pw_gid)  # as that user's eb would own them
        done = subprocess.run(
            workspace.wrap(["ls"]), cwd=workspace.cwd, capture_output=True, preexec_fn=as_nobody
        )
        if done.returncode != 0:
            raise SystemExit(done.stderr.decode(errors="replace"))
        workspace.changes()
        workspace.remove()
        seconds.append(time.perf_counter() - started)
    print(
        f"per judge: median {statistics.median(seconds):.3f} s, "
        f"min {min(seconds):.3f} s, max {max(seconds):.3f} s ({args.times} times)"
    )


if __name__ == "__main__":
    main()
