"""Run every case of the selected judges, each sample in its own copy, and measure agreement.

A sample's answer is the judge's own verdict (before a control's `expect: fail` is applied):
a case labels the verdict a trustworthy judge gives on it. An error never agrees with a label,
and a sample charged with a change to the project or to eb's own files is one
(calibration/watch.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, NamedTuple

from eval_banana.calibration.cases import CaseFileError, case_workspace
from eval_banana.calibration.figures import (
    AGREEING_STATUS,
    case_agreed,
    cases_of,
    figures_of,
    own_samples,
)
from eval_banana.calibration.key import calibration_key
from eval_banana.calibration.watch import SampleWatch
from eval_banana.core import log
from eval_banana.core.canonjson import dumps
from eval_banana.core.files import write_text_atomic
from eval_banana.core.ownmark import mark_folder
from eval_banana.isolation.session import Looks
from eval_banana.models.calibration import CaseOutcome, CaseSample, JudgeCalibration
from eval_banana.models.config import Settings
from eval_banana.models.repeats import rule_of, sample_count
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, PlannedCheck, ResolvedHarness
from eval_banana.runners import orphans, runner_for
from eval_banana.runners.base import ProjectView, RunContext
from eval_banana.runners.fuses import RunFuses
from eval_banana.runners.redact import Redactor, redact_check, run_redactor
from eval_banana.runners.results import error_result, exception_result, iso, utc_now
from eval_banana.runners.retries import EVIDENCE_SUFFIXES, run_attempts
from eval_banana.settings.envpolicy import build_base_env, inherited_env

SampleDone = Callable[[PlannedCheck, str, CaseSample], None]


class CaseRun(NamedTuple):
    """One sample of one case of one judge."""

    check: PlannedCheck
    case: int  # 0-based position in the check's `calibration:`
    sample: int  # 1-based
    stem: str  # its evidence stem under checks/


def case_stem(*, stem: str, case: int, sample: int) -> str:
    """`<stem>.c<case>.s<sample>` (both 1-based), so no two samples share evidence files."""
    return f"{stem}.c{case + 1}.s{sample}"


def plan_runs(
    *,
    checks: Sequence[PlannedCheck],
    default_repeats: int,
    definitions: Mapping[str, Sequence[dict[str, Any]]] | None = None,
) -> list[CaseRun]:
    """Every sample of every case, judge by judge, case by case. `definitions`: judge id ->
    its definition as rendered for each case, for a family judge (each case gives the row its
    prompt is rendered with); a single judge's cases share its definition."""
    runs = []
    for check in checks:
        samples = sample_count(definition=check.definition, default=default_repeats)
        rendered = (definitions or {}).get(check.id)
        for case in range(len(cases_of(check))):
            judged = check
            if rendered is not None:
                judged = check.model_copy(update={"definition": rendered[case]})
            for sample in range(1, samples + 1):
                stem = case_stem(stem=check.stem, case=case, sample=sample)
                runs.append(CaseRun(check=judged, case=case, sample=sample, stem=stem))
    return runs


def _write_result(*, checks_dir: Path, stem: str, result: CheckResult) -> Path:
    path = checks_dir / f"{stem}.json"
    write_text_atomic(path=path, text=dumps(result))
    return path


def _observe(*, ctx: RunContext) -> CheckResult:
    """The judge's own answer; an exception becomes an error result, as in a run."""
    started = utc_now()
    try:
        return runner_for(check_type=ctx.check.type)(ctx)
    except Exception as exc:  # noqa: BLE001 - one broken sample never sinks the calibration
        return exception_result(check=ctx.check, started=started, exc=exc)


class Calibrator:
    """What every sample of one `eb calibrate` shares: config, harness, folders, environment."""

    def __init__(
        self,
        *,
        config: ConfigDoc,
        harness: ResolvedHarness,
        run_dir: Path,
        watch: SampleWatch,
        environ: Mapping[str, str],
        cancel: threading.Event,
        fuses: RunFuses | None = None,
    ) -> None:
        self.config = config
        self.fuses = fuses
        self.harness = harness
        self.run_dir = run_dir
        self.root = Path(config.project_root)
        self.watch = watch
        self.cancel = cancel
        self.base_env = build_base_env(settings=config.settings.execution, environ=environ)
        self.placeholder_env = inherited_env(environ=environ)
        self.redactor: Redactor = run_redactor(config=config, harness=harness, environ=environ)
        # Each sample's run and result by its stem, for the last look to charge.
        self.judged: dict[str, tuple[CaseRun, CheckResult]] = {}
        self._judged_lock = threading.Lock()

    def sample(self, run: CaseRun) -> CaseSample:
        """Run one sample in a fresh copy with the case's files; the copy is removed after."""
        case = cases_of(run.check)[run.case]
        expect = case.get("expect")
        started = utc_now()
        files = case.get("files") or {}
        try:
            workspace = case_workspace(root=self.root, paths=self.watch.paths, files=files)
        except (CaseFileError, OSError) as exc:
            result = error_result(
                check=run.check,
                started=started,
                error_detail=f"calibration case '{case.get('name')}': {exc}",
            )
            return self._record(run=run, result=result, expect=expect)
        try:
            ctx = RunContext(
                check=run.check,
                config=self.config,
                harness=self.harness,
                run_dir=self.run_dir,
                project_root=self.root,
                base_env=self.base_env,
                placeholder_env=self.placeholder_env,
                cancel=self.cancel,
                evidence_stem=run.stem,
                view=ProjectView(path=workspace.path, cwd=workspace.cwd, wrap=workspace.wrap),
                redactor=self.redactor,
                # The judges' usage counts against [harness] token_fuse and cost_fuse_usd.
                report_tokens=self.fuses.report_tokens if self.fuses is not None else None,
                report_cost=self.fuses.report_cost if self.fuses is not None else None,
            )
            result = self.watch.judged(
                key=run.stem,
                check=run.check,
                workspace=workspace,
                files=files,
                run_in=lambda: run_attempts(
                    ctx=ctx,
                    run_once=_observe,
                    retries=self.config.settings.harness.retries,
                    write_result=_write_result,
                ),
            )
        finally:
            workspace.remove()
        return self._record(run=run, result=result, expect=expect)

    def _record(self, *, run: CaseRun, result: CheckResult, expect: object) -> CaseSample:
        checks_dir = self.run_dir / "checks"
        if self.redactor:
            # Retried attempts' evidence too, as a run masks it.
            result = redact_check(
                run_dir=self.run_dir, stem=run.stem, result=result, redactor=self.redactor
            )
        _write_result(checks_dir=checks_dir, stem=run.stem, result=result)
        with self._judged_lock:
            self.judged[run.stem] = (run, result)
        evidence = {
            key: f"checks/{run.stem}{suffix}"
            for key, suffix in EVIDENCE_SUFFIXES.items()
            if (checks_dir / f"{run.stem}{suffix}").is_file()
        }
        evidence["result"] = f"checks/{run.stem}.json"
        status = result.status
        return CaseSample(
            sample=run.sample,
            status=status,
            agreed=status == AGREEING_STATUS["pass" if expect == "pass" else "fail"],
            reason=result.reason if status != "error" else result.error_detail,
            evidence=evidence,
        )

    def charge_late(self, *, looks: Looks) -> list[tuple[CaseRun, CaseSample]]:
        """The samples the last looks charged with a change to the project or to eb's own
        state, each made an isolation `error` (never agreeing) and its result written again,
        as `eb run` makes the checks it charges."""
        from eval_banana.isolation.charges import late_charges, state_charges
        from eval_banana.isolation.session import with_late_project_change, with_state_change

        mode = self.config.settings.harness.isolation
        project = late_charges(report=looks.project)
        state = state_charges(report=looks.state, ran=list(self.judged), command="calibrate")
        charged = []
        for stem in sorted(project.keys() | state.keys()):
            run, result = self.judged[stem]
            for paths, when in state.get(stem, []):
                result = with_state_change(
                    result=result, mode=mode, paths=paths, when=when, command="calibrate"
                )
            for seen, paths in project.get(stem, []):
                result = with_late_project_change(
                    result=result,
                    check=run.check,
                    mode=mode,
                    paths=paths,
                    seen=seen,
                    command="calibrate",
                )
            expect = cases_of(run.check)[run.case].get("expect")
            charged.append((run, self._record(run=run, result=result, expect=expect)))
        return charged


def figures(
    *,
    check: PlannedCheck,
    harness: ResolvedHarness,
    settings: Settings,
    samples: Mapping[int, list[CaseSample]],
    samples_per_case: int,
    run_dir: Path,
) -> JudgeCalibration:
    """One judge's figures from its samples (by case position): of its verdicts, each decided
    by its rule from as many samples as its file takes (its own repeats, else one), and of
    its samples each taken alone."""
    rule = rule_of(definition=check.definition)
    size = own_samples(check)
    outcomes = []
    for position, case in enumerate(cases_of(check)):
        taken = sorted(samples.get(position, []), key=lambda one: one.sample)
        expect: Literal["pass", "fail"] = "pass" if case.get("expect") == "pass" else "fail"
        outcomes.append(
            CaseOutcome(
                name=str(case.get("name")),
                expect=expect,
                agreed=case_agreed(samples=taken, expect=expect, rule=rule, size=size),
                samples=taken,
            )
        )
    # The same computation the gate makes again from the record (calibration/figures.py).
    measured = figures_of(outcomes, rule=rule, size=size)
    by_sample = figures_of(outcomes, rule=rule, size=1)
    return JudgeCalibration(
        check_id=check.id,
        source_path=check.source_path,
        key=calibration_key(check=check, harness=harness, settings=settings),
        measured_at=iso(utc_now()),
        run_dir=str(run_dir),
        samples_per_case=samples_per_case,
        cases=measured.cases,
        cases_agreed=measured.cases_agreed,
        agreement=measured.agreement,
        true_pass_rate=measured.true_pass_rate,
        true_fail_rate=measured.true_fail_rate,
        aggregate=rule,
        samples_per_verdict=size,
        sample_agreement=by_sample.agreement,
        sample_true_pass_rate=by_sample.true_pass_rate,
        sample_true_fail_rate=by_sample.true_fail_rate,
        outcomes=outcomes,
    )


def calibrate(
    *,
    config: ConfigDoc,
    harness: ResolvedHarness,
    checks: Sequence[PlannedCheck],
    run_dir: Path,
    watch: SampleWatch,
    cancel: threading.Event,
    environ: Mapping[str, str] | None = None,
    on_sample: SampleDone | None = None,
    definitions: Mapping[str, Sequence[dict[str, Any]]] | None = None,
    fuses: RunFuses | None = None,
) -> list[JudgeCalibration]:
    """Run every sample of every case of `checks` on max_parallel_checks threads; the figures.
    `definitions`: as `plan_runs` takes them; `fuses`: counts the judges' usage (a tripped
    fuse sets `cancel`)."""
    # Marked first: in an output folder that holds the user's files too, the mark keeps this
    # evidence out of later runs' project state (their cache keys) and later calibrations' watch.
    mark_folder(folder=run_dir, kind="calibration", ours=lambda _name: False)
    (run_dir / "checks").mkdir(parents=True, exist_ok=True)
    calibrator = Calibrator(
        config=config,
        harness=harness,
        run_dir=run_dir,
        watch=watch,
        environ=os.environ if environ is None else environ,
        cancel=cancel,
        fuses=fuses,
    )
    default_repeats = config.settings.core.repeats
    runs = plan_runs(checks=checks, default_repeats=default_repeats, definitions=definitions)
    taken: dict[str, dict[int, list[CaseSample]]] = {check.id: {} for check in checks}
    lock = threading.Lock()

    def one(run: CaseRun) -> None:
        if cancel.is_set():
            return
        done = calibrator.sample(run)
        with lock:
            taken[run.check.id].setdefault(run.case, []).append(done)
        if on_sample is not None:
            on_sample(run.check, str(cases_of(run.check)[run.case].get("name")), done)

    workers = max(1, min(config.settings.core.max_parallel_checks, len(runs)))
    # A warning quotes what an agent printed or names a file a judge named: masked like the
    # files are, until the last looks are settled.
    with log.masked(calibrator.redactor.text):
        orphans.enable_subreaper()
        try:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="eb-calibrate") as pool:
                for _ in pool.map(one, runs):
                    pass
        finally:
            orphans.end_run()
        # The last looks, once no process a judge started is left: a change they find makes
        # the samples it falls on errors, so a judge that changed the project or eb's files
        # never agrees.
        looks = watch.finish()
    for run, charged in calibrator.charge_late(looks=looks):
        samples = taken[run.check.id][run.case]
        samples[:] = [charged if one.sample == run.sample else one for one in samples]
    return [
        figures(
            check=check,
            harness=harness,
            settings=config.settings,
            samples=taken[check.id],
            samples_per_case=sample_count(definition=check.definition, default=default_repeats),
            run_dir=run_dir,
        )
        for check in checks
    ]
