"""`eb history --since REF|DATE`: the moment the window starts.

A date (`2026-03-01`) or an ISO-8601 time (`2026-03-01T12:00:00+00:00`; no zone means UTC)
is taken as it is. Anything else is a git revision, and the window starts at its commit time:
time, unlike ancestry, needs no record's commit in the local clone, so records imported from
other runners (whose commits this clone may never have fetched) are placed all the same.
"""

from __future__ import annotations

import re
from datetime import datetime

from eval_banana.core.errors import ProjectStateError, UsageError
from eval_banana.core.moments import parse_moment
from eval_banana.projectstate import git

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ].*)?$")


def since_moment(*, text: str, root: str) -> datetime:
    """When `--since` starts the window: the date/time given, or the commit time of the git
    revision it names (UsageError when it is neither)."""
    if _DATE.match(text):
        try:
            return parse_moment(text)
        except ValueError:
            raise UsageError(
                f"--since {text!r} is not a valid date or time; give YYYY-MM-DD, an ISO-8601 "
                "time, or a git revision"
            ) from None
    try:
        repo = git.find_repository(root=root)
        # A user's `log.showSignature` prints a signed commit's verification before the time.
        out = git.run(
            args=["log", "-1", "--no-show-signature", "--format=%cI", f"{text}^{{commit}}", "--"],
            cwd=repo.top,
            what=f"log {text}",
        )
    except (git.GitNotStarted, git.GitRefused) as exc:
        raise UsageError(
            f"--since {text!r} is no date (YYYY-MM-DD), and git cannot resolve it as a "
            f"revision: {exc.message}"
        ) from None
    except git.NotARepository:
        raise UsageError(
            f"--since {text!r} is no date (YYYY-MM-DD) and {root} is not in a git work tree "
            "to resolve it as a revision"
        ) from None
    except ProjectStateError:
        raise UsageError(
            f"--since {text!r} names no git revision of {root} and is no date (YYYY-MM-DD)"
        ) from None
    return parse_moment(out.decode("ascii", "replace").strip())
