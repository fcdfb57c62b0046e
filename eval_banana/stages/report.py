"""Stage 7, report: report.json and report.md, plus stages/report.json."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.core import canonjson
from eval_banana.core.errors import WriteFault
from eval_banana.core.files import (
    fault_clearing_earlier,
    sha256_bytes,
    write_bytes_atomic,
    write_json_atomic,
)
from eval_banana.core.realpaths import real_path
from eval_banana.models.stages import ConfigDoc, ExecuteDoc, ReportDoc, ReportFault, ScoreDoc
from eval_banana.reporttext.markdown import render_markdown
from eval_banana.settings.origin import origin_in
from eval_banana.stagefiles.layout import REPORT_JSON, REPORT_MD, envelope
from eval_banana.stagefiles.write import refusing_wrong_place, write_stage_model
from eval_banana.stages.execute import document_digest, execution_ms

REPORT_SCHEMA_VERSION = 1


class ReportsBeside(NamedTuple):
    """What the reports written after report.json and report.md (report.html, the JUnit file)
    leave for stages/report.json to record: the digest of the page written (None: none asked
    for, or it could not be written), and each report that could not be written, with why."""

    page_digest: str | None = None
    faults: tuple[ReportFault, ...] = ()


class ReportOutcome(NamedTuple):
    """What the report stage wrote: the report.json object, its stage document, the paths."""

    report: dict[str, Any]
    doc: ReportDoc
    report_json: Path
    report_md: Path
    markdown: str  # report.md's text, so later writers need not read it back
    digest: str


def build_report(
    *, run_dir: Path, config: ConfigDoc, execute: ExecuteDoc, score: ScoreDoc
) -> dict[str, Any]:
    """The report.json object: eval-banana's keys in its order, our additions after."""
    shard = config.selection.shard
    report: dict[str, Any] = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "run_id": execute.run_id,
        "project_root": config.project_root,
        "output_dir": str(real_path(run_dir)),
        "started_at": execute.started_at,
        "completed_at": execute.completed_at,
        # After `eb update`, the run's own time plus its updates', not the days between them.
        "duration_ms": execution_ms(doc=execute),
        "total_checks": score.total_checks,
        "passed_checks": score.passed_checks,
        "failed_checks": score.failed_checks,
        "errored_checks": score.errored_checks,
        "points_earned": score.points_earned,
        "total_points": score.total_points,
        "percentage": score.percentage,
        "pass_threshold": score.pass_threshold,
        "meets_threshold": score.meets_threshold,
        "run_passed": score.run_passed,
        "checks": [result.model_dump(mode="json") for result in execute.results],
        # Additive keys: readers of schema_version 1 ignore what they do not know.
        "not_run_checks": score.not_run_checks,
        "aborted_by": score.aborted_by,
        **_ran_environment(config=config, execute=execute),
        # Token fuse: what judges reported, and what the fuse could not see.
        "tokens_used": execute.tokens_used,
        "warnings": [warning.model_dump(mode="json") for warning in execute.warnings],
        # Selected checks whose file says `skip:`: listed, never run, outside every count.
        "skipped_checks": score.skipped_checks,
        "skipped": [skipped.model_dump(mode="json") for skipped in execute.skipped],
        # maxfail: launching stopped after that many failures; the rest are not run.
        # The one the checks ran under: `eb stage execute --maxfail` may have overridden the
        # run's own setting.
        "maxfail": config.settings.core.maxfail if execute.maxfail is None else execute.maxfail,
        "halted_by": score.halted_by,
        # Scale-out (docs/scale-out.md): the shard of a shard run, why a run with no check
        # passed, and the shard runs a merged run was gathered from.
        "shard": shard.model_dump(mode="json") if shard is not None else None,
        "allow_empty": execute.allow_empty,
        "merged_from": [source.model_dump(mode="json") for source in execute.merged_from],
        # What the judges reported about their own tokens and cost, totalled (score stage).
        "judge_usage": None
        if score.judge_usage is None
        else score.judge_usage.model_dump(mode="json"),
        # The verdict cache and incremental selection (docs/incremental.md).
        "cached_checks": score.cached_checks,
        "selection_note": selection_note(
            config=config, total=score.total_checks, skipped=score.skipped_checks
        ),
        # Sampled checks (docs/judges.md#repeats): how many disagreed with themselves.
        "flaky_checks": score.flaky_checks,
        "fail_on_flaky": score.fail_on_flaky,
        # Dataset families (docs/datasets.md): pass rate per family and its own gate.
        "families": [family.model_dump(mode="json") for family in score.families],
        # Why judges errored (details.error_class), counted: docs/judges.md#error-classes.
        "error_classes": [entry.model_dump(mode="json") for entry in score.error_classes],
        # What the verdict cache's tiers did (docs/shared-cache.md); null with the cache off.
        "cache": None if execute.cache is None else execute.cache.model_dump(mode="json"),
        # `eb update` keeps the run's started_at and says here when it ran checks again.
        "updated_at": execute.updated_at,
    }
    return report


def _ran_environment(*, config: ConfigDoc, execute: ExecuteDoc) -> dict[str, Any]:
    """report.json's env_policy, env_allow and env_allow_prefixes: those the checks ran under,
    which `eb stage execute --env-policy` and its kin may have set over the run's own."""
    execution = config.settings.execution
    allow, prefixes = execute.env_allow, execute.env_allow_prefixes
    # An execute.json written before eb recorded the lists ran under config.json's.
    return {
        "env_policy": execute.env_policy,
        "env_allow": list(execution.env_allow if allow is None else allow),
        "env_allow_prefixes": list(execution.env_allow_prefixes if prefixes is None else prefixes),
    }


def selection_note(*, config: ConfigDoc, total: int, skipped: int) -> str | None:
    """Why a run that passed has no checks: its incremental selection kept none, or kept only
    checks that are skipped (which cannot run, so they count as no change)."""
    selection = config.selection
    if total:
        return None
    if selection.changed_since is not None:
        return _changed_since_note(ref=selection.changed_since, skipped=skipped)
    if selection.last_failed and config.settings.core.last_failed_none == "skip":
        # Named where it was set: a variable or the file may say skip, with no flag given.
        origin = origin_in(config=config, name="core.last_failed_none")
        return (
            "No check was selected: none of the selected checks failed the last time it ran, "
            f"or those that did are skipped now ({origin.given('skip')})."
        )
    return None


def _changed_since_note(*, ref: str, skipped: int) -> str:
    """What --changed-since kept when it ran nothing: no check, or only skipped ones."""
    if not skipped:
        return f"No check was selected: no check's files changed since {ref}."
    if skipped == 1:
        changed = (
            f"the 1 check whose files changed since {ref} is skipped (skip: in its check file)"
        )
    else:
        changed = (
            f"all {skipped} checks whose files changed since {ref} are skipped "
            "(skip: in their check files)"
        )
    return f"No check ran: {changed}, and no other check's files changed."


def report_json_text(*, report: dict[str, Any]) -> str:
    """UTF-8 JSON, two-space indent, non-ASCII as-is, no final newline, as eval-banana writes it."""
    return canonjson.dumps(report)


def write_reports(
    *,
    run_dir: Path,
    config: ConfigDoc,
    execute: ExecuteDoc,
    score: ScoreDoc,
    inputs: dict[str, str] | None = None,
    run_id: str | None = None,
    built: dict[str, Any] | None = None,
    beside: Callable[[dict[str, Any], WriteFault | None], ReportsBeside] | None = None,
) -> ReportOutcome:
    """Write report.json, report.md and stages/report.json (before any console output).

    `built` is the report object when the caller has built it already (`build_report`);
    `beside` writes the other reports (report.html, the JUnit file) once these are written,
    before the stage file that records the page's digest and the reports it could not write. It
    is given report.md's write fault (None: written), which it then tells (exit 3) as its own
    reports' faults; with no `beside`, that fault is raised once the stage file records it.
    """
    report = (
        built
        if built is not None
        else build_report(run_dir=run_dir, config=config, execute=execute, score=score)
    )
    if run_id is not None:
        report["run_id"] = run_id
    json_path = run_dir / REPORT_JSON
    md_path = run_dir / REPORT_MD
    # As report_json_text gives it, written piece by piece.
    with refusing_wrong_place(path=json_path, stage="report"):
        json_digest = write_json_atomic(path=json_path, document=report, end="")
    markdown = render_markdown(report=report)
    markdown_bytes = markdown.encode("utf-8")
    md_fault = _write_markdown(path=md_path, data=markdown_bytes)
    # Most often the page, rendered in a forked child meanwhile, is ready by now.
    written = beside(report, md_fault) if beside is not None else ReportsBeside()
    if inputs is None:
        inputs = {
            "config": document_digest(doc=config),
            "execute": document_digest(doc=execute),
            "score": document_digest(doc=score),
        }
    document = envelope(stage="report", run_id=report["run_id"], inputs=inputs)
    md_faults = (
        []
        if md_fault is None
        else [
            ReportFault(
                report="report.md",
                path=str(md_path),
                cause=md_fault.cause,
                earlier=md_fault.earlier or None,
            )
        ]
    )
    # The reports' digests, so `eb status` sees one edited after this stage wrote it, and the
    # reports it could not write, so `eb update` writes them: the stage file is written last.
    document.update(
        report_json=str(json_path),
        report_md=str(md_path),
        extra_outputs=[],
        report_json_sha256=json_digest,
        report_md_sha256=None if md_fault is not None else sha256_bytes(data=markdown_bytes),
        report_html_sha256=written.page_digest,
        report_faults=[*md_faults, *written.faults],
    )
    doc = ReportDoc.model_validate(document)
    digest = write_stage_model(run_dir=run_dir, stage="report", model=doc)
    if md_fault is not None and beside is None:
        raise md_fault
    return ReportOutcome(
        report=report,
        doc=doc,
        report_json=json_path,
        report_md=md_path,
        markdown=markdown,
        digest=digest,
    )


def _write_markdown(*, path: Path, data: bytes) -> WriteFault | None:
    """Write report.md; the fault when it cannot be (a full disk, an immutable file): the run
    goes on to write the other reports and show its verdict, then ends with exit 3. An earlier
    report.md there (`eb stage report` over a run) is removed, as it shows the verdict it drew,
    and the fault says so, or that it could not be."""
    try:
        with refusing_wrong_place(path=path, stage="report"):
            write_bytes_atomic(path=path, data=data)
    except WriteFault as fault:
        return fault_clearing_earlier(fault=fault, path=path, fix=fault.hint)
    return None
