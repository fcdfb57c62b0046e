"""The dataset families block of report.html: a row per family with its pass rate and gate,
which the page opens into its cases.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from eval_banana.core.caseid import family_of
from eval_banana.reporting.html_assets import FAMILY_CSS, FAMILY_JS
from eval_banana.reporting.html_rows import Shown, escape, row_reason
from eval_banana.reporting.marks import script_json
from eval_banana.reporttext.families import family_cases_text, family_rate, gate_state


def _gate_text(*, family: dict[str, Any]) -> tuple[str, str]:
    """(row class, gate cell) of a dataset family."""
    gate, state = family.get("min_pass_rate"), gate_state(family=family)
    if state == "at_merge":
        return "gate-none", f"judged by eb merge (min_pass_rate {family['gate_at_merge']!r})"
    if state == "none":
        return "gate-none", "no gate"
    if state == "unmeasured":
        return "gate-none", f"not measured: no case ran (min_pass_rate {gate!r})"
    if state == "held":
        return "gate-held", f"held (min_pass_rate {gate!r})"
    return "gate-broken", f"NOT held (min_pass_rate {gate!r}): the run fails"


def _family_row(*, index: int, family: dict[str, Any]) -> str:
    css_class, gate = _gate_text(family=family)
    # Only part of the family ran: its rate and gate are those of that part, and the cell says
    # whether the selection took that part or the run stopped before the rest, as report.md's.
    ran = escape(family_cases_text(family=family))
    counts = f'<td class="num">{ran}</td>' + "".join(
        f'<td class="num">{int(family.get(key) or 0)}</td>'
        for key in ("passed", "failed", "errored")
    )
    return (
        f'<tr class="fam {css_class}" data-f="{index}">'
        f'<td><button class="x" type="button" aria-expanded="false">'
        f"{escape(str(family.get('id', '')))}</button></td>"
        f'<td class="num">{family_rate(family=family)}</td>{counts}'
        f'<td class="gate">{escape(gate)}</td></tr>'
    )


class Families(NamedTuple):
    """The families table and its script's data; empty for a run without dataset families."""

    table: str
    data: str
    css: str
    script: str


def families_block(*, report: dict[str, Any], shown: list[Shown]) -> Families:
    """A row per dataset family, which the page opens into its cases: their indices into the
    page data, in page order (so failures first, as in the checks table)."""
    families = [item for item in report.get("families") or [] if isinstance(item, dict)]
    if not families:
        return Families(table="", data="", css="", script="")
    members: dict[str, list[int]] = {str(family.get("id")): [] for family in families}
    # The one-line reason of each case that did not pass, as its row in the checks table shows
    # it (`exit code 1` has no text of its own in the page data); a passed case's list line
    # reads its reason from the page data, so 10,000 passed cases add nothing here.
    reasons: dict[str, dict[int, str]] = {family_id: {} for family_id in members}
    for index, item in enumerate(shown):
        family_id = family_of(str(item.check.get("check_id") or ""))
        if family_id in members:
            if item.group not in ("passed", "skipped"):
                reasons[family_id][len(members[family_id])] = row_reason(check=item.check)
            members[family_id].append(index)
    rows = "\n".join(
        _family_row(index=index, family=family) for index, family in enumerate(families)
    )
    table = (
        '<table id="families">\n<caption>Dataset families</caption>\n'
        '<colgroup><col class="f-id"><col><col><col><col><col><col class="f-gate"></colgroup>\n'
        '<thead><tr><th>Family</th><th class="num">Pass rate</th><th class="num">Cases</th>'
        '<th class="num">Passed</th><th class="num">Failed</th><th class="num">Errored</th>'
        "<th>Gate</th></tr></thead>\n"
        f"<tbody>\n{rows}\n</tbody>\n</table>\n"
    )
    data = [
        {"id": family_id, "members": members[family_id], "why": reasons[family_id]}
        for family_id in (str(family.get("id")) for family in families)
    ]
    return Families(
        table=table,
        data=f'<script type="application/json" id="eb-families">{script_json(data)}</script>\n',
        css=FAMILY_CSS,
        script=f"<script>{FAMILY_JS}</script>\n",
    )
