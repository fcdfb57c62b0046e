"""`eb merge`: the shard runs of one plan become one complete run folder, scored and reported
exactly as `eb run` scores and reports a run on one machine.

The merged folder has all seven stage files, each valid against its schema and chained to the
others by digests (so `eb status` works on it), the shards' evidence (`checks/<stem>.*`) and
frozen scripts (`stages/snapshots/`) hard-linked where the file system allows, else copied, and
every result in the order one machine would have planned it. CI jobs may check the project out
at different absolute paths: paths under a shard's project root are moved under the merge's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from eval_banana.checks.shard import relative_source
from eval_banana.core import forked
from eval_banana.core.errors import MergeError, OutputDirError
from eval_banana.core.files import write_model
from eval_banana.models.config import Selection
from eval_banana.models.result import CheckResult, SkippedCheck
from eval_banana.models.stages import (
    ConfigDoc,
    DiscoverDoc,
    ExecuteDoc,
    GuardDoc,
    PlanDoc,
    PlannedCheck,
    ProblemModel,
    ShardSource,
)
from eval_banana.pipeline.run import RunOutcome, finish_run
from eval_banana.reporting import ReportExtras
from eval_banana.reporting.console import Console
from eval_banana.scaleout.shardset import ShardRun, check_chain, read_shard_set
from eval_banana.settings.folders import refuse_junit_target
from eval_banana.settings.rundir import new_run_id, prepare_run_dir, prune_runs
from eval_banana.stagefiles.layout import envelope, stage_path
from eval_banana.stagefiles.read import read_stage_file
from eval_banana.stagefiles.text import file_element_texts
from eval_banana.stages.config import resolve_config, write_config_stage
from eval_banana.stages.execute import write_execute_stage

# Below this many evidence files the links take a few hundredths of a second: not worth a fork.
LINK_FORK_FILES = 2_000

# Settings that shape this merge's own outputs: taken from the merge's command line and config,
# not from the shards (every other setting is the shards').
# The merge's own, not the shards': where it writes (and how many earlier runs it keeps there),
# and where its run history lives (the merging machine's history, which `eb merge --history`
# and [history] name).
OUTPUT_SETTINGS: tuple[str, ...] = (
    "core.output_dir",
    "core.keep_runs",
    "core.junit_xml",
    "history.mode",
    "history.dir",
    "history.keep",
)


class MergeRequest(NamedTuple):
    """What `eb merge` was asked to do."""

    run_dirs: Sequence[Path]
    cwd: Path
    cli_values: Mapping[str, object]
    environ: Mapping[str, str]
    no_project_config: bool = False
    flat_output: bool = False
    extras: ReportExtras | None = None


class _Roots(NamedTuple):
    """Moves a path from one shard's project root to the merged run's."""

    old: str
    new: str

    def move(self, path: str) -> str:
        prefix = self.old.rstrip("/") + "/"
        if self.old == self.new or not path.startswith(prefix):
            return path
        return self.new.rstrip("/") + "/" + path[len(prefix) :]


def _roots(*, run: ShardRun, config: ConfigDoc) -> _Roots:
    return _Roots(old=run.project_root, new=config.project_root)


def merged_config(*, local: ConfigDoc, first: ShardRun) -> ConfigDoc:
    """The shards' settings (they agree on the ones that matter), in the merge's project, with
    the merge's own output folder, JUnit target and run history; no shard."""
    settings = first.config.settings.model_copy(deep=True)
    for name in OUTPUT_SETTINGS:  # one list says which, for the values and their sources
        table, _, key = name.partition(".")
        setattr(getattr(settings, table), key, getattr(getattr(local.settings, table), key))
    sources = dict(first.config.sources)
    sources.update({name: local.sources[name] for name in OUTPUT_SETTINGS})
    selection: Selection = first.plan.selection.model_copy(update={"shard": None})
    if selection.select is not None:
        # The merged run executed the whole plan, every part of it once.
        whole = selection.select.model_copy(update={"ids": list(selection.select.plan_ids)})
        selection = selection.model_copy(update={"select": whole})
    return local.model_copy(
        update={"settings": settings, "sources": sources, "selection": selection}
    )


class _Discovered(NamedTuple):
    doc: DiscoverDoc
    # `id()` of files left as the first shard listed them -> their text there (stagetext.py).
    texts: dict[int, tuple[str, str]]


def _merged_discover(*, first: ShardRun, config: ConfigDoc, inputs: dict[str, str]) -> _Discovered:
    """What the shards discovered (the first one's list; they share one selection)."""
    # Vouched for by the digest the shard's plan recorded, as the shard's other files are.
    read = read_stage_file(
        run_dir=first.run_dir, stage="discover", vouched=first.plan.inputs.get("discover")
    )
    doc: DiscoverDoc = read.doc
    check_chain(run_dir=first.run_dir, docs={"discover": doc}, digests=first.digests)
    roots = _roots(run=first, config=config)
    files = doc.files
    texts: dict[int, tuple[str, str]] = {}
    if roots.old != roots.new:
        files = [item.model_copy(update={"path": roots.move(item.path)}) for item in doc.files]
    else:
        texts = file_element_texts(data=read.data, field="files", elements=files)
    merged = doc.model_copy(
        update={
            **envelope(stage="discover", run_id=config.run_id, inputs=inputs),
            "roots": [roots.move(root) for root in doc.roots],
            "check_dirs": [roots.move(folder) for folder in doc.check_dirs],
            "files": files,
        }
    )
    return _Discovered(doc=merged, texts=texts)


class _Ordered(NamedTuple):
    """The union of the shards' checks and results, in one machine's plan order, and the
    checks their files skip (every shard lists all of them: `skip:` is outside the split)."""

    checks: list[PlannedCheck]
    results: list[CheckResult]
    skipped: list[SkippedCheck]


def _skipped(*, runs: Sequence[ShardRun], config: ConfigDoc) -> list[SkippedCheck]:
    """Each skipped check once, in one machine's order, under the merge's project root."""
    found: dict[tuple[str, str], SkippedCheck] = {}
    for run in runs:
        roots = _roots(run=run, config=config)
        for item in run.plan.skipped:
            relative = relative_source(source_path=item.source_path, project_root=run.project_root)
            if (relative, item.check_id) not in found:
                moved = roots.move(item.source_path)
                found[(relative, item.check_id)] = (
                    item
                    if moved == item.source_path
                    else item.model_copy(update={"source_path": moved})
                )
    # By file only, and stably: within a family the cases stay in the order the shards list
    # them, which is the dataset's (a sort by id would put `b` before `a` when `a` came first).
    return [found[key] for key in sorted(found, key=lambda key: key[0])]


def _order(*, runs: Sequence[ShardRun], config: ConfigDoc) -> _Ordered:
    """Check files by path, a family's cases in dataset order: the shards split a family by
    case id, so the cases of one file come from several shards and their order in any one
    shard's plan says nothing about the others'."""
    rows: list[tuple[tuple[str, int], PlannedCheck, CheckResult]] = []
    for run in runs:
        roots = _roots(run=run, config=config)
        for check, result in zip(run.plan.checks, run.execute.results, strict=True):
            relative = relative_source(source_path=check.source_path, project_root=run.project_root)
            key = (relative, check.case_index or 0)
            if roots.old == roots.new:  # the usual CI case: every job checks out at one path
                rows.append((key, check, result))
                continue
            moved = check.model_copy(
                update={
                    "source_path": roots.move(check.source_path),
                    "script_path": roots.move(check.script_path) if check.script_path else None,
                }
            )
            rows.append((key, moved, result.model_copy(update={"source_path": moved.source_path})))
    rows.sort(key=lambda row: row[0])
    return _Ordered(
        checks=[row[1] for row in rows],
        results=[row[2] for row in rows],
        skipped=_skipped(runs=runs, config=config),
    )


def _merged_plan(
    *, first: ShardRun, ordered: _Ordered, config: ConfigDoc, inputs: dict[str, str]
) -> PlanDoc:
    return first.plan.model_copy(
        update={
            **envelope(stage="validate", run_id=config.run_id, inputs=inputs),
            "ok": True,
            "selection": config.selection,
            "checks": ordered.checks,
            "skipped": ordered.skipped,
            "errors": [],
            "allow_empty": None,
        }
    )


def _unique(problems: Sequence[ProblemModel]) -> list[ProblemModel]:
    return list({(p.message, p.file): p for p in problems}.values())


def _merged_guard(
    *, runs: Sequence[ShardRun], ordered: _Ordered, config: ConfigDoc, inputs: dict[str, str]
) -> GuardDoc:
    harness = next((run.guard.harness for run in runs if run.guard.harness is not None), None)
    return GuardDoc.model_validate(
        {
            **envelope(stage="guard", run_id=config.run_id, inputs=inputs),
            "ok": True,
            "judge_checks": [c.id for c in ordered.checks if c.type == "harness_judge"],
            "harness": harness,
            "problems": [],
            "warnings": _unique([w for run in runs for w in run.guard.warnings]),
        }
    )


def _tokens(runs: Sequence[ShardRun]) -> int | None:
    counted = [run.execute.tokens_used for run in runs if run.execute.tokens_used is not None]
    return sum(counted) if counted else None


def _cost(runs: Sequence[ShardRun]) -> float | None:
    spent = [run.execute.cost_usd for run in runs if run.execute.cost_usd is not None]
    return sum(spent) if spent else None


def _merged_execute(
    *, runs: Sequence[ShardRun], ordered: _Ordered, config: ConfigDoc, inputs: dict[str, str]
) -> ExecuteDoc:
    # Any shard's stop stops the merged run: a fuse tripped in shard 3 of 4 aborts it, and a
    # shard that stopped launching at maxfail halts it, as the same stop would on one machine.
    aborted = next((run.execute.aborted_by for run in runs if run.execute.aborted_by), None)
    # The maxfail the halting shard ran under is the one the merged run stopped at.
    halting = next((run for run in runs if run.execute.halted_by), runs[0])
    return ExecuteDoc.model_validate(
        {
            **envelope(stage="execute", run_id=config.run_id, inputs=inputs),
            # ISO-8601 UTC strings of one format sort as the moments they name.
            "started_at": min(run.execute.started_at for run in runs),
            "completed_at": max(run.execute.completed_at for run in runs),
            "results": ordered.results,
            "aborted_by": aborted,
            "not_run": [r.check_id for r in ordered.results if r.details.get("not_run") is True],
            # The environment the checks ran under, as the first shard's execute.json records
            # it, as maxfail is carried: the report states this, not config.json's.
            "env_policy": runs[0].execute.env_policy,
            "env_allow": runs[0].execute.env_allow,
            "env_allow_prefixes": runs[0].execute.env_allow_prefixes,
            "skipped": ordered.skipped,
            # Every shard's plan holds the gates of the whole selection; any shard may be empty.
            "family_gates": {
                family: rate for run in runs for family, rate in run.plan.family_gates.items()
            },
            "family_sizes": {
                family: size for run in runs for family, size in run.plan.family_sizes.items()
            },
            "halted_by": halting.execute.halted_by,
            "maxfail": halting.execute.maxfail,
            "tokens_used": _tokens(runs),
            "cost_usd": _cost(runs),
            "warnings": _unique([w for run in runs for w in run.execute.warnings]),
            "merged_from": [
                ShardSource(
                    shard=run.shard.index,
                    total=run.shard.total,
                    run_id=run.execute.run_id,
                    run_dir=str(run.run_dir),
                    checks=len(run.execute.results),
                )
                for run in runs
            ],
            "input_digests": {
                check_id: digest
                for run in runs
                for check_id, digest in run.execute.input_digests.items()
            },
            "artifact_ids": {
                check_id: found
                for run in runs
                for check_id, found in run.execute.artifact_ids.items()
            },
        }
    )


class _Evidence(NamedTuple):
    """The files of one shard's checks/ folder, listed before anything is written, and its
    sub-folders (a check's own output folder), brought whole."""

    folder: str
    names: list[str]
    folders: list[str]


def _shard_evidence(*, runs: Sequence[ShardRun]) -> list[_Evidence]:
    """Each shard's checks/ files and folders; a name in two shards is refused (nothing
    written yet)."""
    found: list[_Evidence] = []
    owner: dict[str, str] = {}
    for run in runs:
        folder = str(run.run_dir / "checks")
        names: list[str] = []
        folders: list[str] = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_file(follow_symlinks=False):
                        names.append(entry.name)
                    elif entry.is_dir(follow_symlinks=False):
                        folders.append(entry.name)
        except OSError:  # a shard with no checks/ folder has no evidence to bring
            names, folders = [], []
        for name in (*names, *folders):
            other = owner.setdefault(name, folder)
            if other != folder:
                raise MergeError(
                    f"Cannot merge: checks/{name} is in two shard folders ({other} and {folder})",
                    file=f"{folder}/{name}",
                    hint="Each shard folder must hold only the files its own run wrote.",
                )
        found.append(_Evidence(folder=folder, names=names, folders=folders))
    return found


def _link_folder(*, evidence: _Evidence, target: str, target_fd: int) -> None:
    """Link the listed files of one shard's checks/ into `target` (opened as `target_fd`).

    Names are resolved against open folders, not whole paths: a merge links one file per
    check, 10,000 at a time.
    """
    try:
        source_fd = os.open(evidence.folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        for name in evidence.names:
            try:
                os.link(name, name, src_dir_fd=source_fd, dst_dir_fd=target_fd)
            except OSError:
                _link_or_copy(source=f"{evidence.folder}/{name}", target=f"{target}/{name}")
    finally:
        os.close(source_fd)


def _bring_folders(*, evidence: Sequence[_Evidence], run_dir: Path) -> None:
    """Every shard's folders below checks/ (the deterministic checks' output folders)."""
    checks_dir = run_dir / "checks"
    for listed in evidence:
        for name in listed.folders:
            _link_tree(source=f"{listed.folder}/{name}", target=f"{checks_dir}/{name}")


def _link_tree(*, source: str, target: str) -> None:
    """A shard's folder below checks/, as it is: folders made, files linked, links kept.

    An empty folder (a deterministic check that left nothing in its output folder: most of
    them) holds no evidence and is not made: one folder per check would cost a merge of
    10,000 checks seconds, and a cached run does not make them either.
    """
    try:
        _link_entries(source=source, target=target)
    except OSError as exc:
        raise OutputDirError(f"Cannot bring {source} into {target}: {exc}") from None


def _link_entries(*, source: str, target: str) -> None:
    with os.scandir(source) as listing:
        entries = list(listing)
    if not entries:
        return
    with contextlib.suppress(FileExistsError):  # made by an earlier attempt (see _link_or_copy)
        os.mkdir(target)
    for entry in entries:
        inside = f"{target}/{entry.name}"
        if entry.is_symlink():
            _symlink_again(source=entry.path, target=inside)
        elif entry.is_dir():
            _link_entries(source=entry.path, target=inside)
        else:
            _link_or_copy(source=entry.path, target=inside)


def _symlink_again(*, source: str, target: str) -> None:
    """A symbolic link as `source` is, kept as it is when an earlier attempt made it."""
    pointing = os.readlink(source)
    try:
        os.symlink(pointing, target)
    except FileExistsError:
        if not os.path.islink(target) or os.readlink(target) != pointing:
            raise


def _link_or_copy(*, source: str, target: str) -> None:
    """A hard link (no bytes copied), else a copy: another file system, or no link support.

    A link already there to the same file was made by an earlier attempt: a forked child
    ended by a signal part-way, whose work is then done again here.
    """
    try:
        os.link(source, target)
    except FileExistsError:
        if not os.path.samefile(source, target):
            raise OutputDirError(f"Cannot link {source} to {target}: it exists") from None
    except OSError:
        try:
            shutil.copyfile(source, target)
        except OSError as exc:
            raise OutputDirError(f"Cannot copy {source} to {target}: {exc}") from None


def _bring_evidence(
    *, runs: Sequence[ShardRun], evidence: Sequence[_Evidence], run_dir: Path
) -> None:
    """Every shard's checks/ files and frozen scripts, into the merged folder, as they are.

    checks/<stem>.json stays the shard's own copy of each result (byte for byte, naming the
    shard's paths); execute.json and report.json name the merge's.
    """
    checks_dir = str(run_dir / "checks")
    target_fd = os.open(checks_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for listed in evidence:
            _link_folder(evidence=listed, target=checks_dir, target_fd=target_fd)
    finally:
        os.close(target_fd)
    for run in runs:
        for check in run.plan.checks:
            if check.snapshot:
                target = run_dir / check.snapshot
                target.parent.mkdir(parents=True, exist_ok=True)
                _link_or_copy(source=str(run.run_dir / check.snapshot), target=str(target))


def merge_shards(*, request: MergeRequest, console: Console) -> RunOutcome:
    """Check the shard folders, write the merged run folder, score and report it."""
    runs = read_shard_set(run_dirs=[path.resolve() for path in request.run_dirs])
    evidence = _shard_evidence(runs=runs)
    local = resolve_config(
        cwd=request.cwd,
        cli_values=request.cli_values,
        environ=request.environ,
        no_project_config=request.no_project_config,
        selection=Selection(),
        run_id=new_run_id(),
    )
    first = runs[0]
    config = merged_config(local=local, first=first)
    refuse_junit_target(config=config)
    run_dir = prepare_run_dir(config=config, flat_output=request.flat_output)
    digests = {"config": write_config_stage(run_dir=run_dir, doc=config)}
    discovered = _merged_discover(first=first, config=config, inputs=dict(digests))
    digests["discover"] = write_model(
        path=stage_path(run_dir=run_dir, stage="discover"),
        model=discovered.doc,
        rendered=discovered.texts,
    )
    ordered = _order(runs=runs, config=config)

    # Thousands of links are system calls, not Python: a forked child makes them while this
    # process writes the stage files.
    # A child ended by a signal (the kernel's out-of-memory killer, say) leaves its work part
    # done; it is done again here, over what the child made (a Ctrl-C stops this process too).
    def bring_evidence() -> None:
        _bring_evidence(runs=runs, evidence=evidence, run_dir=run_dir)

    def bring_folders() -> None:
        _bring_folders(evidence=evidence, run_dir=run_dir)

    links = forked.start(
        work=bring_evidence,
        fork=forked.worth_forking(
            items=sum(len(listed.names) for listed in evidence), threshold=LINK_FORK_FILES
        ),
    )
    # The checks' output folders (mostly empty: each is looked into) in another child, which
    # nothing waits for until the run is reported: the page links files, not folders.
    try:
        folders = forked.start(
            work=bring_folders,
            fork=forked.worth_forking(
                items=sum(len(listed.folders) for listed in evidence), threshold=LINK_FORK_FILES
            ),
            background=True,
        )
    except BaseException:
        links.abandon()  # a Ctrl-C between the two forks must not leave the links' child behind
        raise
    try:
        executed = _write_merged_stages(
            runs=runs, first=first, ordered=ordered, config=config, digests=digests, run_dir=run_dir
        )
    except BaseException as exc:
        _settle(links, folders, error=exc)
        raise
    # report.html lists checks/ to link each check's files: the links come first.
    try:
        links.finish_or_redo(redo=bring_evidence)
    except BaseException:
        folders.abandon()  # an interrupt: nothing of the merge goes on without it
        raise
    try:
        outcome = finish_run(
            run_dir=run_dir,
            config=config,
            executed=executed,
            digests=digests,
            extras=request.extras,
            console=console,
            kind="merge",
        )
    except BaseException as exc:
        _settle(folders, error=exc)
        raise
    folders.finish_or_redo(redo=bring_folders)
    for problem in prune_runs(config=config, current=run_dir):
        console.warn(problem)
    return outcome


def _settle(*pending: forked.Pending[None], error: BaseException) -> None:
    """Settle forked work while `error` is on its way: it is the one shown.

    After an ordinary error the children finish, so the folder is as complete as it can be.
    After an interrupt (Ctrl-C, or a termination turned into one) they are stopped: a
    Ctrl-C sent to eb alone never reaches them, and waiting on them would keep the user
    waiting for work the run no longer wants.
    """
    for work in pending:
        if not isinstance(error, Exception):
            work.abandon()
            continue
        with contextlib.suppress(Exception):
            work.finish()


def _write_merged_stages(
    *,
    runs: Sequence[ShardRun],
    first: ShardRun,
    ordered: _Ordered,
    config: ConfigDoc,
    digests: dict[str, str],
    run_dir: Path,
) -> ExecuteDoc:
    """The merged plan, guard and execute files (their digests added to `digests`)."""
    plan = _merged_plan(first=first, ordered=ordered, config=config, inputs=dict(digests))
    plan_path = stage_path(run_dir=run_dir, stage="validate")
    # Checks and results that stay as the shards wrote them are copied as text, not rewritten.
    texts = {key: text for run in runs for key, text in run.texts.items()}
    digests["validate"] = write_model(path=plan_path, model=plan, rendered=texts)
    guarded = _merged_guard(
        runs=runs,
        ordered=ordered,
        config=config,
        inputs={k: digests[k] for k in ("config", "validate")},
    )
    digests["guard"] = write_model(path=stage_path(run_dir=run_dir, stage="guard"), model=guarded)
    executed = _merged_execute(
        runs=runs,
        ordered=ordered,
        config=config,
        inputs={k: digests[k] for k in ("config", "validate", "guard")},
    )
    digests["execute"] = write_execute_stage(run_dir=run_dir, doc=executed, rendered=texts)
    return executed
