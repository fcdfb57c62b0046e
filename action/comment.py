"""The eval_banana action's pull-request comment: one per pull request, updated in place.

The body is the run's summary (from report.json) and, with a baseline, `eb diff --format md`.
It starts with a hidden marker; the comment that starts with it and was written by this step's
own token is edited on the next push instead of a new one being added (a marker in anyone
else's comment is left alone). Talks to GitHub only through the `gh` CLI the runners ship
(GH_TOKEN).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ghenv import env, fail, flag, pull_request_number, set_output, workdir

MARKER = "<!-- eval-banana:comment -->"
# Who writes the comments of a workflow's own token (`github.token`), as REST names it.
ACTIONS_BOT = "github-actions[bot]"
# GitHub refuses a comment body over 65,536 characters. The report is cut well below that,
# so that the cut note and the link to the run after it always fit too.
GITHUB_LIMIT = 65_536
_REPORT_BUDGET = 60_000
CUT_NOTE = "... (cut to fit a GitHub comment: the full report is in the run's artifacts)"
_LISTED = 25


Escape = Callable[[str], str]


def escapers() -> tuple[Escape, Escape] | None:
    """report.md's own escaping (md_cell, md_text), so a judge's words show in the comment as
    words: no link, image, raw HTML or `<!--` (docs/compatibility.md). None when the eb
    installed has none: the install failed (this step runs anyway, to say the run did not
    finish) or an older eb was pinned. Imported here, not at the top, for that reason."""
    try:
        from eval_banana.reporttext.markdown import md_cell, md_text
    except ImportError:
        return None
    return md_cell, md_text


def _status(report: dict[str, Any], *, exit_code: str) -> str:
    if report.get("aborted_by"):
        return "aborted"
    # eb's exit code is the verdict the job gates on; the report's may be the better one only
    # when eb ended the run after writing it (exit 3: report.html or JUnit not written).
    passed = report.get("run_passed") and exit_code in ("", "0")
    return "passed" if passed else "did not pass"


def _ended_after_report(*, exit_code: str) -> list[str]:
    """A line saying the run ended otherwise than its report says, as the step summary does."""
    if exit_code in ("", "0", "1"):
        return []
    return [
        f"**eb ended this run with exit {exit_code} after writing this report**: the counts "
        "below are what the checks earned; the run did not pass (the run's log says why).",
        "",
    ]


def summary(report: dict[str, Any], *, exit_code: str) -> str:
    """The verdict, the counts and the checks that did not pass (the first few)."""
    passed, total = report.get("passed_checks", 0), report.get("total_checks", 0)
    threshold = float(report.get("pass_threshold", 1.0)) * 100
    lines = [
        *_ended_after_report(exit_code=exit_code),
        f"**{_status(report, exit_code=exit_code)}**: {passed}/{total} checks passed "
        f"({float(report.get('percentage', 0.0)):.1f} %, threshold {threshold:.0f} %)",
    ]
    if report.get("cached_checks"):
        lines.append(f"{report['cached_checks']} verdicts reused from the cache.")
    bad = [c for c in report.get("checks", []) if c.get("status") != "passed"]
    escaping = escapers()
    if bad and escaping is None:
        # Without report.md's escaping a judge's words could become markup: none are shown.
        lines.append(f"\n{len(bad)} checks did not pass: see the run's report.")
    elif bad and escaping is not None:
        md_cell, md_text = escaping
        lines += ["", "| check | status | reason |", "| --- | --- | --- |"]
        for check in bad[:_LISTED]:
            # Cut before escaping, so that no escape is cut in half.
            reason = md_text(" ".join(str(check.get("reason") or "").split())[:200])
            check_id = md_cell(str(check.get("check_id")))
            lines.append(f"| `{check_id}` | {check.get('status')} | {reason} |")
        if len(bad) > _LISTED:
            lines.append(f"\n... and {len(bad) - _LISTED} more (see the run's report).")
    return "\n".join(lines)


def diff(*, baseline: str, run_dir: str) -> str:
    """`eb diff --format md BASELINE RUN` (exit 1 only means a regression: its text is kept)."""
    done = subprocess.run(
        ["eb", "diff", "--format", "md", baseline, run_dir],
        cwd=workdir(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode in (0, 1):
        return done.stdout.strip()
    return f"`eb diff` could not compare with the baseline:\n\n```\n{done.stderr.strip()}\n```"


@dataclass(frozen=True)
class _Open:
    """What the lines so far leave open: `<details>` folds, and a code fence (its backticks)."""

    details: int = 0
    fence: str = ""

    def after(self, *, line: str) -> _Open:
        stripped = line.strip()
        if self.fence:
            closes = stripped.startswith(self.fence) and not stripped.strip("`")
            return _Open(details=self.details, fence="" if closes else self.fence)
        if stripped.startswith("```"):
            return _Open(
                details=self.details, fence="`" * (len(stripped) - len(stripped.lstrip("`")))
            )
        # eb diff opens a fold on a line of its own; a judge's `<` is escaped, never this.
        if stripped.startswith("<details>"):
            return _Open(details=self.details + 1)
        if stripped == "</details>":
            return _Open(details=max(self.details - 1, 0))
        return self

    def closing(self) -> list[str]:
        """The lines that close them: the fence, then each fold after a blank line."""
        return ([self.fence] if self.fence else []) + ["", "</details>"] * self.details


def fitted(*, lines: list[str], budget: int) -> tuple[list[str], bool]:
    """The first `lines` that fit in `budget` characters with what they leave open closed
    after them, and whether any was left out. The cut falls between lines: a row cut in half
    breaks its table, and a fold left open would hide the cut note and all after it."""
    kept: list[str] = []
    size, state = 0, _Open()
    for line in lines:
        later = state.after(line=line)
        closing = sum(len(close) + 1 for close in later.closing())
        if size + len(line) + 1 + closing > budget:
            return [*kept, *state.closing()], True
        kept.append(line)
        size, state = size + len(line) + 1, later
    return kept, False


def body() -> str:
    run_dir, report_path = env("EB_RUN_DIR"), env("EB_REPORT_JSON")
    parts = [MARKER, "### eval_banana", ""]
    finished = bool(report_path) and Path(report_path).is_file()
    if finished:
        report = json.loads(Path(report_path).read_text(encoding="utf-8"))
        parts.append(summary(report, exit_code=env("EB_EXIT_CODE")))
    else:
        # No report of this run's own (run.py names none it did not write): no verdict to show.
        code = env("EB_EXIT_CODE")
        parts.append(
            f"**did not finish**: eb exited {code} before writing this run's report (the run's "
            "log says why)."
            if code
            else "**did not finish**: eb did not run (a step before it failed: the job's log "
            "says why)."
        )
    if env("EB_BASELINE_DIR") and run_dir and finished:
        parts += ["", diff(baseline=env("EB_BASELINE_DIR"), run_dir=run_dir)]
    link = "/".join([env("GITHUB_SERVER_URL"), env("GITHUB_REPOSITORY"), "actions/runs"])
    tail = ["", f"[The run's log and artifacts]({link}/{env('GITHUB_RUN_ID')})"]
    tail = tail if env("GITHUB_RUN_ID") else []
    # The link and the cut note come after the cut, so they are never what is cut.
    room = GITHUB_LIMIT - len("\n".join(["", CUT_NOTE, *tail])) - 2
    kept, cut = fitted(lines="\n".join(parts).split("\n"), budget=min(_REPORT_BUDGET, room))
    return "\n".join([*kept, *(["", CUT_NOTE] if cut else []), *tail]) + "\n"


def _gh(*args: str) -> str:
    done = subprocess.run(["gh", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        fail(f"gh {' '.join(args[:3])} failed: {done.stderr.strip()}", code=1)
    return done.stdout


def _pages(text: str) -> list[dict[str, Any]]:
    """`gh api --paginate` prints one JSON array per page, back to back."""
    decoder, items, at = json.JSONDecoder(), [], 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        page, at = decoder.raw_decode(text, at)
        items += page if isinstance(page, list) else [page]
    return [item for item in items if isinstance(item, dict)]


def author() -> str | None:
    """The login this step's token comments as, or None when GitHub does not say.

    The workflow's own token (the `github-token` default) writes as github-actions[bot]. Any
    other token is asked: GraphQL's `viewer` answers for an app's token (`<app>[bot]`) and a
    person's alike, where REST's /user refuses an app.
    """
    if flag("EB_TOKEN_IS_GITHUB_TOKEN", called="EB_TOKEN_IS_GITHUB_TOKEN"):
        return ACTIONS_BOT
    asked = ["api", "graphql", "-f", "query=query { viewer { login } }"]
    done = subprocess.run(
        ["gh", *asked, "--jq", ".data.viewer.login"], capture_output=True, text=True, check=False
    )
    login = done.stdout.strip()
    if done.returncode != 0 or not login:
        print(
            "::warning title=eval_banana action::GitHub did not say who the github-token input "
            f"is ({done.stderr.strip() or 'no login'}): a new comment is posted, none edited",
            file=sys.stderr,
        )
        return None
    return login


def ours(comment: dict[str, Any], *, login: str) -> bool:
    """Whether this step's token wrote `comment` as the action does: the marker first.

    A login is unique and a person's never ends in `[bot]`, so a bot's login with the type
    Bot is the bot; anyone may put the marker in a comment of theirs, and that is not ours.
    """
    user = comment.get("user") or {}
    kind = "Bot" if login.endswith("[bot]") else "User"
    if user.get("login") != login or user.get("type") != kind:
        return False
    return str(comment.get("body") or "").startswith(MARKER)


def previous(*, repo: str, number: str) -> int | None:
    """The id of the comment this step's token wrote earlier on this pull request, if any."""
    login = author()
    if login is None:
        return None
    listed = _pages(_gh("api", "--paginate", f"repos/{repo}/issues/{number}/comments"))
    for comment in listed:
        if ours(comment, login=login):
            return int(comment["id"])
    return None


def main() -> None:
    number, repo = pull_request_number(), env("GITHUB_REPOSITORY")
    if not number:
        print("Not a pull request: no comment to post.")
        return
    text = body()
    existing = previous(repo=repo, number=number)
    with tempfile.TemporaryDirectory() as folder:
        payload = Path(folder) / "body.json"
        payload.write_text(json.dumps({"body": text}), encoding="utf-8")
        if existing is None:
            route, method = f"repos/{repo}/issues/{number}/comments", "POST"
        else:
            route, method = f"repos/{repo}/issues/comments/{existing}", "PATCH"
        posted = json.loads(_gh("api", "--method", method, route, "--input", str(payload)))
    set_output("comment-url", str(posted.get("html_url") or ""))
    print(f"{'Updated' if existing else 'Posted'} {posted.get('html_url') or 'the comment'}")


if __name__ == "__main__":
    main()
