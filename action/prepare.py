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


def from_another_repository(*, event: dict[str, Any]) -> bool:
    """Whether the event is a pull request whose head is not in the base repository.

    Its head repository says whose code runs, not whether that repository is a fork of
    something: a pull request between two branches of a forked repository is that
    repository's own, and one whose head repository was deleted (`head.repo` null) can no
    longer be told apart from a stranger's, so it counts as one.
    """
    pull = event.get("pull_request")
    if not isinstance(pull, dict):
        return False
    head = (pull.get("head") or {}).get("repo")
    base = (pull.get("base") or {}).get("repo")
    if not isinstance(head, dict) or not isinstance(base, dict):
        return True
    head_name, base_name = head.get("full_name"), base.get("full_name")
    return not head_name or head_name != base_name


def _cache(*, cache_on: bool, root: Path, event: dict[str, Any], shard: tuple[str, str]) -> None:
    set_output("cache-path", str(root / (env("EB_CACHE_PATH") or ".eval-banana/cache")))
    fork = from_another_repository(event=event)
    # eb's cache is off unless told: with the input on, the job's own runs use it (`on`), and
    # pull requests from forks reuse verdicts but never write them (docs/incremental.md).
    # run.py decides how the mode reaches eb (a mode the project chose stands on trusted runs).
    set_output("cache-mode", ("read-only" if fork else "on") if cache_on else "")
    set_output("cache-save", "true" if cache_on and not fork else "false")
    # A shard's checks depend on K and N alone, so each shard keeps a cache of its own slice.
    scope = f"{_PREFIX}-shard{shard[0]}of{shard[1]}" if shard[0] else _PREFIX
    branches = [env("GITHUB_REF_NAME"), env("GITHUB_BASE_REF")]
    branches.append(str((event.get("repository") or {}).get("default_branch") or "main"))
    ordered = [name for index, name in enumerate(branches) if name and name not in branches[:index]]
    set_output("cache-key", f"{scope}-{ordered[0] if ordered else 'none'}-{env('GITHUB_SHA')}")
    set_output("cache-restore-keys", "\n".join(f"{scope}-{name}-" for name in ordered))


def _artifact(*, shard: tuple[str, str]) -> str:
    """The artifact name: the input as it is, or for a shard `<input>-K` (`eval-shard-K` by
    default), since every shard job uploads one and a name taken twice fails the upload."""
    name = env("EB_ARTIFACT")
    if not shard[0]:
        return name
    # A shard's run folder is what the merge action collects, so it is always kept.
    return f"{name or 'eval-shard'}-{shard[0]}"


def main() -> None:
    root = workdir()
    if not root.is_dir():
        fail(f"input working-directory={env('EB_WORKING_DIRECTORY')!r} is not a folder ({root})")
    shard = _shard()
    # Both are read before anything else, so a word other than true/false stops the job here.
    cache_on = flag("EB_CACHE", called="input cache")
    comment_on = flag("EB_COMMENT", called="input comment")
    if shard[0] and comment_on:
        # Each shard sees its slice only; the merge action comments on the whole run.
        fail("inputs shard and comment together: comment from the merge action instead")
    set_output("shard", env("EB_SHARD"))
    set_output("artifact-name", _artifact(shard=shard))
    set_output("output-dir", str(root / (env("EB_OUTPUT_DIR") or "eval-results")))
    _baseline(root=root)
    _cache(cache_on=cache_on, root=root, event=event(), shard=shard)
    set_output("pr-number", pull_request_number())


if __name__ == "__main__":
    main()
