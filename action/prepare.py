"""The eval_banana action, before the run: check the inputs and work out the baseline, the
verdict cache's key and whether this job may write the cache.

Writes the outputs the later steps of action.yml read (see `main`). Stops the job with exit 2
on an input that cannot work, before anything is installed or run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ghenv import env, event, fail, flag, pull_request_number, set_output, workdir

_SHARD = re.compile(r"^([0-9]+)/([0-9]+)$")
# docs/incremental.md keys the verdict cache this way: the branch and the commit, so each
# commit saves anew (actions/cache never overwrites a key), restored from the newest of
# the branch, then of the branch a pull request targets, then of the default branch.
_PREFIX = "eb-verdicts"


def _shard() -> tuple[str, str]:
    """K and N of the `shard` input (K/N or empty): they name the artifact and the cache."""
    text = env("EB_SHARD")
    if not text:
        return "", ""
    match = _SHARD.match(text)
    if match is None or not 1 <= int(match.group(1)) <= int(match.group(2)):
        fail(f"input shard={text!r} is not K/N with 1 <= K <= N (e.g. 2/4), or empty")
        raise AssertionError  # unreachable: fail() exits
    return match.group(1), match.group(2)


def _baseline(*, root: Path) -> None:
    """A folder under the project (or absolute) is used as it is; anything else is the name
    of an artifact of this workflow run (or of `baseline-run-id`) to download."""
    text = env("EB_BASELINE")
    if not text:
        set_output("baseline-kind", "none")
        set_output("baseline-dir", "")
        return
    folder = (root / text).resolve()
    if folder.is_dir():
        if not (folder / "report.json").is_file():
            fail(f"input baseline={text!r} is a folder but not a run folder (no report.json)")
        set_output("baseline-kind", "dir")
        set_output("baseline-dir", str(folder))
        return
    if "/" in text or "\\" in text:
        fail(
            f"input baseline={text!r} is not a folder under {root}; an artifact name holds no slash"
        )
    target = Path(env("RUNNER_TEMP") or root) / "eb-baseline"
    set_output("baseline-kind", "artifact")
    set_output("baseline-name", text)
    set_output("baseline-dir", str(target))


def _cache(*, root: Path, event: dict[str, Any], shard: tuple[str, str]) -> None:
    cache_on = flag("EB_CACHE")
    set_output("cache-path", str(root / (env("EB_CACHE_PATH") or ".eval-banana/cache")))
    pull = event.get("pull_request") or {}
    fork = bool(((pull.get("head") or {}).get("repo") or {}).get("fork"))
    # Pull requests from forks reuse verdicts but never write them (docs/incremental.md).
    set_output("cache-mode", "read-only" if cache_on and fork else "")
    set_output("cache-save", "true" if cache_on and not fork else "false")
    # A shard's checks depend on K and N alone, so each shard keeps a cache of its own slice.
    scope = f"{_PREFIX}-shard{shard[0]}of{shard[1]}" if shard[0] else _PREFIX
    branches = [env("GITHUB_REF_NAME"), env("GITHUB_BASE_REF")]
    branches.append(str((event.get("repository") or {}).get("default_branch") or "main"))
    ordered = [name for index, name in enumerate(branches) if name and name not in branches[:index]]
    set_output("cache-key", f"{scope}-{ordered[0] if ordered else 'none'}-{env('GITHUB_SHA')}")
    set_output("cache-restore-keys", "\n".join(f"{scope}-{name}-" for name in ordered))


def main() -> None:
    root = workdir()
    if not root.is_dir():
        fail(f"input working-directory={env('EB_WORKING_DIRECTORY')!r} is not a folder ({root})")
    shard = _shard()
    if shard[0] and flag("EB_COMMENT"):
        # Each shard sees its slice only; the merge action comments on the whole run.
        fail("inputs shard and comment together: comment from the merge action instead")
    set_output("shard", env("EB_SHARD"))
    # A shard's run folder is what the merge action collects, so it is always kept.
    artifact = env("EB_ARTIFACT") or (f"eval-shard-{shard[0]}" if shard[0] else "")
    set_output("artifact-name", artifact)
    set_output("output-dir", str(root / (env("EB_OUTPUT_DIR") or "eval-results")))
    _baseline(root=root)
    _cache(root=root, event=event(), shard=shard)
    set_output("pr-number", pull_request_number())


if __name__ == "__main__":
    main()
