"""`--shard auto`: the shard index and count every CI engine already hands its parallel jobs.

Each engine names them its own way and counts from 0 or from 1; this table is the one place
that knows. Every source that is set is read: none is a usage error, and so are two that
disagree, since running the wrong slice silently would leave checks unrun (or run twice) in
the merged verdict. A source with one of its two variables set is an error too: a half-set
source is a misconfigured job, not an absent one; but a count of 1 alone names no shard (GitLab
sets CI_NODE_TOTAL=1 in every job that is not parallel).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from eval_banana.core.digits import ascii_whole
from eval_banana.core.errors import UsageError
from eval_banana.core.words import given_value
from eval_banana.models.config import MAX_SHARDS, Shard

# eb's own variable, `K/N` as --shard takes it, for any engine the table does not know.
OWN_VARIABLE = "EVAL_BANANA_SHARD"
# A Kubernetes Indexed Job gives each pod its index but not the completion count.
KUBERNETES_TOTAL = "EVAL_BANANA_SHARD_TOTAL"
_HINT = (
    "Run inside a parallel CI job that sets one of these, set EVAL_BANANA_SHARD=K/N, "
    "or pass --shard K/N (docs/scale-out.md lists each engine's variables)."
)


@dataclass(frozen=True)
class IndexSource:
    """One engine's pair of variables: the job's index and the number of jobs."""

    engine: str
    index: str
    total: str
    first: int  # the index the engine gives its first job: 0 or 1


SOURCES: tuple[IndexSource, ...] = (
    IndexSource(engine="GitLab CI", index="CI_NODE_INDEX", total="CI_NODE_TOTAL", first=1),
    IndexSource(
        engine="Buildkite",
        index="BUILDKITE_PARALLEL_JOB",
        total="BUILDKITE_PARALLEL_JOB_COUNT",
        first=0,
    ),
    IndexSource(engine="CircleCI", index="CIRCLE_NODE_INDEX", total="CIRCLE_NODE_TOTAL", first=0),
    IndexSource(
        engine="Kubernetes Indexed Job",
        index="JOB_COMPLETION_INDEX",
        total=KUBERNETES_TOTAL,
        first=0,
    ),
    IndexSource(
        engine="Azure Pipelines",
        index="SYSTEM_JOBPOSITIONINPHASE",
        total="SYSTEM_TOTALJOBSINPHASE",
        first=1,
    ),
)
# Every variable --shard auto reads, in the order it looks (tests clear them all).
AUTO_VARIABLES: tuple[str, ...] = (
    *(name for source in SOURCES for name in (source.index, source.total)),
    OWN_VARIABLE,
)


@dataclass(frozen=True)
class _Found:
    label: str  # how an error names the source: its variables and their values
    shard: Shard


def _looked_for() -> str:
    pairs = [f"{source.index}/{source.total} ({source.engine})" for source in SOURCES]
    return ", ".join([*pairs, f"{OWN_VARIABLE}=K/N (eb's own)"])


def _whole(*, name: str, value: str) -> int:
    number = ascii_whole(value)
    if number is None:
        raise UsageError(
            f"--shard auto: {name}={given_value(value)} is not a whole number",
            hint=f"Fix or unset {name}. {_HINT}",
        )
    return number


def _in_range(*, label: str, index: int, total: int, first: int, variables: list[str]) -> Shard:
    """Slice `index` of `total`, counted from `first`, as eb's 1-based K of N."""
    if not 1 <= total <= MAX_SHARDS:
        raise UsageError(
            f"--shard auto: {label}: the total must lie between 1 and {MAX_SHARDS:,}", hint=_HINT
        )
    if not first <= index < first + total:
        raise UsageError(
            f"--shard auto: {label}: the index must lie between {first} and "
            f"{first + total - 1} (this engine counts its jobs from {first})",
            hint=_HINT,
        )
    return Shard(index=index - first + 1, total=total, variables=variables)


def _read_pair(*, source: IndexSource, environ: Mapping[str, str]) -> _Found | None:
    index_text = environ.get(source.index, "").strip()
    total_text = environ.get(source.total, "").strip()
    if not index_text and (not total_text or ascii_whole(total_text) == 1):
        # A count of one job without an index is no shard: GitLab sets CI_NODE_TOTAL=1 in
        # every job, and CI_NODE_INDEX only in one with `parallel:`.
        return None
    if not index_text or not total_text:
        present, absent = (
            (source.index, source.total) if index_text else (source.total, source.index)
        )
        raise UsageError(
            f"--shard auto: {present} is set but {absent} is not ({source.engine} sets both)",
            hint=f"Set {absent} as well, or unset {present}. {_HINT}",
        )
    label = f"{source.index}={index_text} {source.total}={total_text} ({source.engine})"
    shard = _in_range(
        label=label,
        index=_whole(name=source.index, value=index_text),
        total=_whole(name=source.total, value=total_text),
        first=source.first,
        variables=[source.index, source.total],
    )
    return _Found(label=label, shard=shard)


def _read_own(*, environ: Mapping[str, str]) -> _Found | None:
    text = environ.get(OWN_VARIABLE, "").strip()
    if not text:
        return None
    head, slash, tail = text.partition("/")
    # `2/3/4` has one slash too many: that is the form, not a number, that is wrong.
    if not slash or "/" in tail:
        raise UsageError(
            f"--shard auto: {OWN_VARIABLE}={text!r} is not of the form K/N",
            hint=f"Write {OWN_VARIABLE}=K/N with 1 <= K <= N (e.g. 2/4).",
        )
    label = f"{OWN_VARIABLE}={text}"
    shard = _in_range(
        label=label,
        index=_whole(name=f"{OWN_VARIABLE} (K)", value=head.strip()),
        total=_whole(name=f"{OWN_VARIABLE} (N)", value=tail.strip()),
        first=1,
        variables=[OWN_VARIABLE],
    )
    return _Found(label=label, shard=shard)


def shard_from_environment(*, environ: Mapping[str, str]) -> Shard:
    """K/N from whichever engine's variables are set; they must agree, and one must be set."""
    found = [
        hit
        for hit in (
            *(_read_pair(source=source, environ=environ) for source in SOURCES),
            _read_own(environ=environ),
        )
        if hit is not None
    ]
    if not found:
        raise UsageError(
            f"--shard auto found no shard index in the environment; it looked for {_looked_for()}",
            hint=_HINT,
        )
    first = found[0]
    for other in found[1:]:
        if (other.shard.index, other.shard.total) != (first.shard.index, first.shard.total):
            raise UsageError(
                f"--shard auto: the environment names two shards: {first.label} is "
                f"{first.shard.index}/{first.shard.total}, {other.label} is "
                f"{other.shard.index}/{other.shard.total}",
                hint="Unset the variables of the engine that is not running this job, or "
                "pass --shard K/N.",
            )
    variables = [name for hit in found for name in hit.shard.variables]
    return Shard(index=first.shard.index, total=first.shard.total, variables=variables)
