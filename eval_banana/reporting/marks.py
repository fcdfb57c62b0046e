"""report.html's history marks: per check a sparkline of its last outcomes and its badges
("new failure", "fixed", "flaky in history"), from the history folder (docs/history.md).

The marks are drawn into the rows, and the page embeds what they were drawn from in one JSON
block (`eb-trend`: per row its check id, group, definition digest and marks). From that block
alone `redraw` gives a written page the marks of another moment of the history, without the
report: a replayed run's page is its kept run's, with the marks of the history as it is when
the replay runs.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from eval_banana.core import forked

if TYPE_CHECKING:
    from eval_banana.history.trend import Recent

# A check's sparkline: its outcomes in the last runs, this one included (docs/history.md).
SPARK_RUNS = 20
# Flips on one definition, in those runs, that make a check "flaky in history" (as the default
# of `eb history --flaky --min-flips`).
HISTORY_FLAKY_FLIPS = 2
TREND_BLOCK_ID = "eb-trend"


class Trend(NamedTuple):
    """A check in the run history: its last outcomes (this run's last) as letters p, f, e,
    and its badges ("new failure", "fixed", "flaky in history")."""

    letters: str
    badges: tuple[str, ...]


_LETTER = {"passed": "p", "failed": "f", "error": "e"}


def trend_for(*, group: str, digest: str | None, recent: Recent | None) -> Trend | None:
    """A check's sparkline and badges from its recorded runs (None: the history has none).

    "new failure": it fails or errors now and passed the last time it was recorded; "fixed":
    it passes now and did not then; "flaky in history" (instead of those two): its verdict
    flipped at least HISTORY_FLAKY_FLIPS times on its current definition over the runs of the
    sparkline, this one included (as `eb history --flaky` counts the runs it shows).
    """
    if recent is None:
        return None
    now = _LETTER.get(group, "")
    keep = SPARK_RUNS - len(now)
    letters = "".join(map(_LETTER.__getitem__, recent.statuses[-keep:])) + now
    drawn = recent.with_this_run(keep=keep, status=group if now else None, digest=digest)
    flips = drawn.most_flips(digest=digest)
    if flips >= HISTORY_FLAKY_FLIPS:
        # A flaky check's latest flip is its flakiness, not news: no "new failure" or "fixed".
        return Trend(letters=letters, badges=("flaky in history",))
    previous = recent.previous()
    badges: tuple[str, ...] = ()
    if group in ("failed", "error") and previous == "passed":
        badges = ("new failure",)
    elif group == "passed" and previous in ("failed", "error"):
        badges = ("fixed",)
    return Trend(letters=letters, badges=badges)


_SPARK_WORDS = {"p": "\u2713", "f": "\u2717", "e": "E"}


def sparkline(letters: str) -> str:
    """A check's last outcomes as a small SVG, a bar per run (oldest left), one path per
    colour so a row costs the page a handful of elements, not one per run."""
    paths: dict[str, list[str]] = {}
    for index, letter in enumerate(letters):
        paths.setdefault(letter, []).append(f"M{index * 5} 0h4v12h-4z")
    drawn = "".join(
        f'<path class="s-{letter}" d="{"".join(parts)}"/>'
        for letter, parts in sorted(paths.items())
    )
    words = "".join(_SPARK_WORDS[letter] for letter in letters)
    return (
        f'<svg class="spark" width="{len(letters) * 5}" height="12" data-n="{len(letters)}" '
        f'role="img" aria-label="last outcomes {words}"><title>Last outcomes, oldest first: '
        f"{words}</title>{drawn}</svg>"
    )


@functools.lru_cache(maxsize=1024)
def trend_cells(trend: Trend | None) -> tuple[str, str]:
    """(the sparkline under the id, the history badges beside the status); most rows share
    theirs (a suite that passes draws one strip a thousand times), so each is drawn once."""
    if trend is None:
        return "", ""
    badges = "".join(
        f' <span class="hb hb-{badge.split()[0]}">{badge}</span>' for badge in trend.badges
    )
    return sparkline(trend.letters), badges


class MarkedRow(NamedTuple):
    """What a row's marks are drawn from: its check, its group, its definition digest."""

    check_id: str
    group: str
    digest: str | None
    trend: Trend | None


def script_json(value: object) -> str:
    """JSON safe inside <script>: no `<`, `>` or `&` can end the element or start markup."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def trend_block(*, rows: Sequence[MarkedRow]) -> str:
    """The page's `eb-trend` block: one item per row, in page order (`data-i`)."""
    items: list[dict[str, Any]] = []
    for row in rows:
        item: dict[str, Any] = {"id": row.check_id, "g": row.group}
        if row.digest is not None:
            item["d"] = row.digest
        if row.trend is not None:
            item["trend"] = row.trend.letters
            if row.trend.badges:
                item["badges"] = list(row.trend.badges)
        items.append(item)
    return f'<script type="application/json" id="{TREND_BLOCK_ID}">{script_json(items)}</script>\n'


def recent_history(
    *,
    run_id: str | None,
    history_dir: Path | None,
    before: str | None = None,
    own_shards: Collection[str] = (),
) -> dict[str, Recent]:
    """Each check's last recorded runs before run `run_id` (`before`: only records whose file
    sorts before that name, the run's own; `own_shards`: a merged run's shard runs, no runs
    before it), read through the history package (none when history is off: `history_dir`
    None)."""
    if history_dir is None:
        return {}
    from eval_banana.history.trend import recent

    return recent(
        folder=history_dir,
        skip_run_id=run_id or None,
        last=SPARK_RUNS - 1,
        before=before,
        own_shards=own_shards,
    )


# Past this many bytes of records (twenty records of 1,000 checks are about 4 MB), reading them
# in a forked child beside the run pays for the fork.
MARKS_FORK_BYTES = 1 << 20


def begin_recent_history(
    *, run_id: str | None, history_dir: Path
) -> forked.Pending[dict[str, Recent]] | None:
    """`recent_history` begun now in a forked child, while the run goes on, when the records
    are big enough to pay and a fork is safe; else None (read them when they are wanted).
    Begun at a run's start, the marks count the history as it is then: a run that records
    itself meanwhile (another process's) is not among them."""
    from eval_banana.history.trend import recent_bytes

    size = recent_bytes(folder=history_dir, last=SPARK_RUNS)
    if not forked.worth_forking(items=size, threshold=MARKS_FORK_BYTES):
        return None
    return forked.start(
        work=lambda: recent_history(run_id=run_id, history_dir=history_dir), fork=True
    )


_BLOCK_START = b'<script type="application/json" id="' + TREND_BLOCK_ID.encode() + b'">'
_BLOCK_END = b"</script>\n"
# A row as `html_rows._row` writes it: (its start up to the id's button) (its sparkline, if any)
# (up to its status and flaky pill) (its history badges, if any).
_ROW = re.compile(
    rb'(<tr class="r g-[a-z]+" data-i="(\d+)"><td><button class="x" type="button" '
    rb'aria-expanded="false">[^<]*</button>)(?:<svg class="spark".*?</svg>)?'
    rb'(</td><td class="stc"><span class="st">[^<]*</span>(?: <span class="flaky">flaky</span>)?)'
    rb'(?: <span class="hb [^"]*">[^<]*</span>)*',
    re.DOTALL,
)


_ROWS_END = b'<div id="rows-end"></div>'


class NoMarks(ValueError):
    """A page without a readable `eb-trend` block: its marks cannot be redrawn."""


def redraw(*, page: bytes, history: Mapping[str, Recent]) -> bytes:
    """`page` (report.html as `render_html` wrote it) with every row's marks and its
    `eb-trend` block drawn from `history` (empty: no marks), or `page` itself when they are
    drawn so already; NoMarks when it has no block."""
    start = page.rfind(_BLOCK_START)
    stop = page.find(_BLOCK_END, start)
    if start < 0 or stop < 0:
        raise NoMarks("the page has no history block")
    try:
        items = json.loads(page[start + len(_BLOCK_START) : stop])
        rows = [
            MarkedRow(
                check_id=str(item["id"]),
                group=str(item["g"]),
                digest=item.get("d"),
                trend=trend_for(
                    group=str(item["g"]), digest=item.get("d"), recent=history.get(item["id"])
                ),
            )
            for item in items
        ]
    except (ValueError, TypeError, KeyError) as exc:
        raise NoMarks(f"the page's history block is unreadable ({exc})") from None
    block = trend_block(rows=rows).encode()
    if page[start : stop + len(_BLOCK_END)] == block:
        return page  # the marks drawn are those of now (a history that has not moved)
    cells = [trend_cells(row.trend) for row in rows]

    def row_marks(match: re.Match[bytes]) -> bytes:
        index = int(match.group(2))
        spark, badges = cells[index] if index < len(cells) else ("", "")
        return match.group(1) + spark.encode() + match.group(3) + badges.encode()

    # The rows end before the table's end marker: the page data after it is not searched.
    end = page.rfind(_ROWS_END, 0, start)
    end = start if end < 0 else end
    marked = _ROW.sub(row_marks, page[:end])
    return b"".join((marked, page[end:start], block, page[stop + len(_BLOCK_END) :]))
