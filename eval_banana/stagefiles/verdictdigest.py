"""The digest of what decides a result's verdict, as execute.json records it per check.

A result in execute.json edited by hand (a failure made a pass) would be scored as it says,
while checks/<stem>.json still holds the result the check reached: the check file cannot be
compared without reading and rendering every one of them again. This digest names the fields
the score stage reads a verdict from, taken when the result is made, so that one edited
afterwards is told when execute.json is read with it.
"""

from __future__ import annotations

import hashlib
import json

from eval_banana.models.repeats import is_flaky
from eval_banana.models.result import NOT_RUN, STOPPED, CheckResult


def verdict_digest(result: CheckResult) -> str:
    """`sha256:<hex>` of the fields the score stage reads a verdict or a family's gate from
    (its check, status, observed status, score, exit code, expectation, family, whether its
    samples disagreed, whether it never ran, and whether the run's stop ended it part-way):
    compact JSON of a fixed list, cheap enough for every result of a large run."""
    fields: list[object] = [
        result.check_id,
        result.status,
        result.observed_status,
        result.score,
        result.exit_code,
        result.expect,
        result.family,
        is_flaky(result.details),
        result.details.get(NOT_RUN) is True,
        # A family's gate counts a case the run's stop ended part-way as not run.
        result.details.get(STOPPED) is True,
    ]
    text = json.dumps(fields, separators=(",", ":"), allow_nan=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def verdict_digests(results: list[CheckResult]) -> dict[str, str]:
    """Check id -> `verdict_digest` of each result."""
    return {result.check_id: verdict_digest(result) for result in results}
