"""What a run replay depends on: its key, and the project state it was valid for.

The key names everything that decides a run's plan and the text of its files, short of the
project's files: eb itself, the settings (less where the run folder goes, the cache mode, the
history settings and where the JUnit file goes, which no file of the run but config.json
shows), the check files found and their digests, the agent as resolved on PATH, the names of
the variables the environment policy counts, the interpreter, and the wording eb puts around a
judge's prompt. What only shows the result (--json, --no-html, the JUnit file, annotations,
the step summary) is no part of it: a replay shows its results whichever way is asked.
The project's files are checked apart, after the replay is found: the input states the run's
verdict keys were computed from (`scope_reader`), the files its plan read beside them
(`watched_paths`), and the files its families' `cases_from` name (`watched_datasets`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval_banana.cache.components import interpreter_version, variable_names
from eval_banana.cache.key import Component, framed_key
from eval_banana.cache.verdictsettings import agent_executable
from eval_banana.checks.inputs import CheckInputs, artifact_of
from eval_banana.core.errors import ConfigError
from eval_banana.core.version import tool_version
from eval_banana.models.stages import ConfigDoc, DiscoverDoc, PlannedCheck
from eval_banana.projectstate.blobs import read_identity

if TYPE_CHECKING:
    from eval_banana.cache.replay_entry import WatchedDataset

# Bump when what goes into the key, or what a replay entry holds, changes. 2: entries watch the
# families' datasets (those kept before could replay a family whose rows had changed). 3: neither
# report.html nor the JUnit path is part of the key.
REPLAY_KEY_VERSION = 3
_PREFIX = b"eval-banana/run-replay-key/v%d\0" % REPLAY_KEY_VERSION
_PACKAGE = Path(__file__).resolve().parent.parent
# Config fields that differ from run to run without changing any other file of the run.
# `outputs` too: where the run writes its JUnit file or result document beside the folder.
_RUN_OWN_FIELDS = ("run_id", "created_at", "run_created_at", "inputs", "outputs")
# The history settings too: the history folder is no input of any run (docs/history.md); how
# many earlier run folders are kept, which changes no file of this one; and where the JUnit file
# goes, which a replay writes from the replayed report.
_UNSHOWN_SETTINGS = (
    "core.output_dir",
    "core.keep_runs",
    "core.junit_xml",
    "cache.mode",
    "history.mode",
    "history.dir",
    "history.keep",
)


def code_fingerprint() -> str:
    """eb's version and the size and modification time of each of its modules: an edited
    checkout renders its files differently without a new version number."""
    found: list[str] = []
    stack = [str(_PACKAGE)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    stack.append(entry.path)
                elif entry.name.endswith((".py", ".json", ".toml", ".yaml")):
                    info = entry.stat()
                    found.append(f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}")
    return tool_version() + "\0" + "\0".join(sorted(found))


def _config_text(*, config: ConfigDoc) -> str:
    document: dict[str, Any] = config.model_dump(by_alias=True)
    for name in _RUN_OWN_FIELDS:
        document.pop(name, None)
    for dotted in _UNSHOWN_SETTINGS:
        table, _, name = dotted.partition(".")
        document["settings"][table].pop(name, None)
        document["sources"].pop(dotted, None)
    return json.dumps(document, sort_keys=True, ensure_ascii=False, default=str, allow_nan=False)


def _discover_text(*, discovered: DiscoverDoc) -> str:
    files = "\n".join(
        f"{item.path}\0{item.relative_path}\0{item.size}\0{item.sha256}"
        for item in discovered.files
    )
    rest = {
        "roots": discovered.roots,
        "exclude_dirs": discovered.exclude_dirs,
        "check_dirs": discovered.check_dirs,
        "problems": [problem.model_dump() for problem in discovered.problems],
    }
    return json.dumps(rest, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n" + files


def _harness_text(*, config: ConfigDoc) -> str:
    from eval_banana.harness.resolve import resolve_harness

    try:
        harness = resolve_harness(settings=config.settings, project_root=Path(config.project_root))
    except ConfigError as exc:
        return f"error\0{exc.message}"
    if harness is None:
        return "none"
    return json.dumps(harness.model_dump(), sort_keys=True, ensure_ascii=False, allow_nan=False)


def replay_key(*, config: ConfigDoc, discovered: DiscoverDoc, environ: Mapping[str, str]) -> str:
    """`sha256:<hex>` naming the replay of a run with these settings and check files."""
    components: list[Component] = [
        ("tool", code_fingerprint()),
        ("config", _config_text(config=config)),
        ("discover", _discover_text(discovered=discovered)),
        ("harness", _harness_text(config=config)),
        ("variable_names", "\0".join(variable_names(settings=config.settings, environ=environ))),
        ("interpreter", interpreter_version()),
        ("judge_prompt", _prompt_text()),
    ]
    return framed_key(prefix=_PREFIX, components=components)


def _prompt_text() -> str:
    """eb's prompt version and wording around a judge's own text (part of every judge's key)."""
    from eval_banana.harness.prompt import PROMPT_VERSION, build_prompt

    return PROMPT_VERSION + "\0" + build_prompt(description="\1", instructions="\2")


# ---- the project state a replay was valid for ----


def input_scopes(*, checks: Sequence[PlannedCheck]) -> tuple[bool, list[tuple[str, ...]]]:
    """Whether some check reads the whole project, and the distinct `inputs:` of the rest."""
    from eval_banana.checks.inputs import declared_inputs

    whole = False
    declared: dict[tuple[str, ...], None] = {}
    for check in checks:
        inputs = declared_inputs(check.definition)
        if inputs is None:
            whole = True
        else:
            declared.setdefault(inputs)
    return whole, list(declared)


def scope_reader(
    *,
    config: ConfigDoc,
    whole: bool,
    declared: Sequence[Sequence[str]],
    known: Mapping[str, bytes] | None = None,
) -> CheckInputs:
    """A reader of exactly these input scopes, as the verdict keys' reader reads them."""
    definitions: list[dict[str, Any]] = [{"inputs": list(patterns)} for patterns in declared]
    if whole:
        definitions.append({})
    return CheckInputs(config=config, definitions=definitions, known=known)


def watched_paths(*, config: ConfigDoc, checks: Sequence[PlannedCheck]) -> list[str]:
    """Files the plan and keys read beside the input states: referenced scripts, assertions
    artifacts, the families' dataset files, the calibration record the guard consulted and
    the judges' agent executable when it is a project file (the key holds where it is found,
    and its content only so)."""
    from eval_banana.settings.folders import record_path

    root = Path(config.project_root)
    found = {str(record_path(config=config))}
    if any(check.type == "harness_judge" for check in checks):
        found.update(_project_executable(config=config))
    for check in checks:
        if check.script_path:
            found.add(check.script_path)
        # A case's own files: its check file (in the key) and its dataset files (here).
        found.update(str(root / name) for name in (check.family_files or [])[1:])
        artifact = artifact_of(check) if check.type == "assertions" else ""
        if artifact:
            found.add(str(root / artifact))
    return sorted(found)


def _project_executable(*, config: ConfigDoc) -> list[str]:
    """The agent's executable, when the harness finds it in the project."""
    from eval_banana.harness.resolve import resolve_harness

    root = Path(config.project_root)
    try:
        harness = resolve_harness(settings=config.settings, project_root=root)
    except ConfigError:
        return []
    found = agent_executable(harness=harness, project_root=root)
    if harness is None or harness.executable is None or not found.in_project:
        return []
    return [harness.executable]


def watched_ids(*, paths: Sequence[str]) -> list[tuple[str, str | None]]:
    """Each watched file's id as a reader of it sees it: a symbolic link's holds the file it
    leads to as well (blobs.read_identity), which an edit through the link changes."""
    found: list[tuple[str, str | None]] = []
    for path in paths:
        identity = read_identity(path=path)
        found.append((path, None if identity is None else identity.id))
    return found


def watched_datasets(
    *, config: ConfigDoc, checks: Sequence[PlannedCheck], contents: Mapping[str, bytes]
) -> list[dict[str, Any]] | None:
    """Each planned family's `cases_from` and the files it names now (`contents`: the check
    files' bytes as discovery read them); None when a family's check file cannot be read
    again, so that no replay is kept that could not tell its dataset changed."""
    from eval_banana.checks.definition import parse_yaml_mapping
    from eval_banana.checks.loading import reader_over
    from eval_banana.core.errors import DefinitionError
    from eval_banana.datasets.casesfrom import matched_files
    from eval_banana.datasets.globwalk import dataset_skipped

    root = Path(config.project_root)
    skipped = dataset_skipped(config=config)
    read = reader_over(contents)
    found: list[dict[str, Any]] = []
    for source in dict.fromkeys(check.source_path for check in checks if check.family_files):
        try:
            document = parse_yaml_mapping(data=read(source), path=source)
        except (OSError, DefinitionError):
            return None
        pattern = document.get("cases_from")
        if isinstance(pattern, str):
            files = matched_files(pattern=pattern, root=root, check_file=source, skipped=skipped)
            found.append({"check_file": source, "pattern": pattern, "files": files})
    return found


def datasets_hold(*, config: ConfigDoc, datasets: Sequence[WatchedDataset]) -> bool:
    """Whether every family's `cases_from` names the files it named when the run ran (their
    contents are watched apart)."""
    from eval_banana.datasets.casesfrom import matched_files
    from eval_banana.datasets.globwalk import dataset_skipped

    root = Path(config.project_root)
    skipped = dataset_skipped(config=config)
    return all(
        matched_files(pattern=item.pattern, root=root, check_file=item.check_file, skipped=skipped)
        == item.files
        for item in datasets
    )
