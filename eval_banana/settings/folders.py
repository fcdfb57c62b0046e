"""eb's own folders and files inside a project.

Run folders and the verdict cache never count as project files (for the cache key, for
--changed-since, for a judge's view of the project). The config file in use and the calibration
record beside it do not count for the cache key either: every setting a verdict depends on is a
component of the key by itself, so editing `max_parallel_checks` must not rerun every check that
reads the whole project."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from eval_banana.core.errors import LinkLoopError, OutputDirError
from eval_banana.core.files import LOOP_FIX, link_loop, never_written
from eval_banana.core.ownmark import calibration_folder_name, holds_only_runs
from eval_banana.core.streams import stream_files
from eval_banana.models.config import CacheSettings
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.table import SETTINGS_BY_NAME
from eval_banana.settings.written import still_written, written_record_path

CALIBRATION_FILE = "calibration.json"
# The variable GitHub Actions sets to the file a step appends its job summary to: a file eb
# writes outside the run folder, so never one of the project's.
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
_CONFIG_FOLDER = ".eval-banana"


def setting_path(*, value: str, project_root: Path | str) -> Path:
    """Where a path setting points: a leading `~` (or `~user`) is that home folder, from the
    file, a variable or a flag alike (no shell expands it in a TOML file or a CI `env:` block,
    and a folder named `~` in the project is never meant), and a relative path is joined to
    the project root."""
    return Path(project_root) / Path(value).expanduser()


def cache_dir(*, config: ConfigDoc) -> Path:
    """The configured cache folder (`setting_path`)."""
    return setting_path(value=config.settings.cache.dir, project_root=config.project_root)


def history_dir(*, config: ConfigDoc) -> Path:
    """The configured history folder (`[history] dir`, `setting_path`): where every run
    leaves its record (never a project file, whatever writes it)."""
    return setting_path(value=config.settings.history.dir, project_root=config.project_root)


def remote_folder(*, config: ConfigDoc) -> Path | None:
    """The folder a `[cache] remote` names when it is a path or a file:// URL, joined to the
    project root when relative (as every folder setting is); None for another kind of remote
    (or a file URL of another host, which the remote refuses), or none."""
    remote = config.settings.cache.remote
    if not remote:
        return None
    if "://" in remote:
        try:
            parts = urlsplit(remote)
        except ValueError:
            # A host part that cannot be read (`file://[::1/x`): no folder of this machine.
            # The remote refuses it as a setup error whenever it would be used.
            return None
        if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
            return None
        return Path(unquote(parts.path))
    return setting_path(value=remote, project_root=config.project_root)


def cache_settings(*, config: ConfigDoc) -> CacheSettings:
    """The `[cache]` settings as the cache tiers use them: a shared cache folder given as a
    relative path is the one below the project root, wherever eb was started from."""
    settings = config.settings.cache
    folder = remote_folder(config=config)
    if folder is None or "://" in (settings.remote or ""):
        return settings
    return settings.model_copy(update={"remote": str(folder)})


def written_folders(*, config: ConfigDoc) -> list[Path]:
    """The output, cache and history folders (wherever they are configured), a shared cache
    that is a folder, and the output and history folders the project names or defaults to:
    every folder eb writes its runs, verdicts and records into, whatever else they hold."""
    root = Path(config.project_root)
    folders = [
        output_folders(config=config)[0],
        cache_dir(config=config),
        history_dir(config=config),
    ]
    shared = remote_folder(config=config)
    if shared is not None:
        folders.append(shared)
    usual = [*output_folders(config=config)[1:], history_dir_default(project_root=root)]
    folders.extend(folder for folder in usual if folder not in folders)
    return folders


def output_folders(*, config: ConfigDoc) -> list[Path]:
    """The output folder in use, then the one the project names and the default, when they
    are others: where earlier runs may have left their run folders."""
    root = Path(config.project_root)
    folders = [setting_path(value=config.settings.core.output_dir, project_root=root)]
    for value in (config.project_output_dir, str(SETTINGS_BY_NAME["core.output_dir"].default)):
        folder = setting_path(value=value, project_root=root) if value else None
        if folder is not None and folder not in folders:
            folders.append(folder)
    return folders


def history_dir_default(*, project_root: Path) -> Path:
    return setting_path(
        value=str(SETTINGS_BY_NAME["history.dir"].default), project_root=project_root
    )


def own_folders(*, config: ConfigDoc) -> list[Path]:
    """eb's folders that never count as the project's (`written_folders`): a run sent elsewhere
    (`--output-dir`, EVAL_BANANA_OUTPUT_DIR) must not count the run folders or run records
    earlier runs left there as project files (reading each, and keying every check on them). A
    shared cache folder inside the project (what `actions/cache` carries) changes with every
    verdict stored: counted, it would make every check a miss.

    An output folder that holds anything but eb's runs and calibrations (`--output-dir ci`
    beside `ci/eval_checks/`) stays the project's, or its checks, datasets and inputs would
    vanish without a word: there only the current run's folder and the current calibration's
    (this run id's: a calibration's files must not look like a judge's writes) are left out by
    their paths, and every other run folder by its config stage, every other calibration's by
    its mark, as anywhere in the project (core/ownmark.py)."""
    outputs = output_folders(config=config)
    folders = [
        folder
        for folder in written_folders(config=config)
        if folder not in outputs or holds_only_runs(folder=str(folder))
    ]
    if outputs[0] not in folders:
        folders.append(outputs[0] / config.run_id)
        folders.append(outputs[0] / calibration_folder_name(run_id=config.run_id))
    return folders


def own_folders_below(*, config: ConfigDoc) -> frozenset[str]:
    """eb's own folders inside the project (`own_folders`), normalised as walks spell paths:
    what discovery never walks and a `cases_from` glob never looks in.

    They hold only what eb wrote (a run folder per run, the cache's entries and blobs, one
    record per run), so walking them finds no check and grows with every run kept: tens of
    thousands of entries after a few runs of a big suite. A folder that is the root itself
    (`output_dir = ""`) or holds it is never skipped."""
    prefix = str(Path(config.project_root)) + os.sep
    below = (os.path.normpath(folder) for folder in own_folders(config=config))
    return frozenset(folder for folder in below if folder.startswith(prefix))


LAST_FAILED_FILE = "lastfailed.json"


def last_failed_path(*, config: ConfigDoc) -> Path:
    """Where `eb run` remembers failures: beside the config file in use, else in
    `<project root>/.eval-banana/`."""
    if config.config_file:
        return Path(config.config_file).parent / LAST_FAILED_FILE
    return Path(config.project_root) / ".eval-banana" / LAST_FAILED_FILE


def written_files(*, config: ConfigDoc) -> list[Path]:
    """The files eb itself writes outside its own folders: the calibration record `eb
    calibrate` writes beside the config file, the failures every `eb run` remembers there, and
    the files the run writes beside its run folder (the JUnit file, --result-out, the GitHub
    step summary), those an earlier run wrote there and noted that still hold what it wrote
    (settings/written.py), and the file eb's own stdout or stderr is sent to (`eb run >
    eb.log`). Another eb run may rewrite them at any moment, so a watch on the project must
    never take them for a check's or judge's change."""
    found = [
        record_path(config=config),
        last_failed_path(config=config),
        written_record_path(config=config),
        *(Path(path) for path in config.outputs),
        *still_written(config=config, cache_folder=cache_dir(config=config)),
        *stream_files(),
    ]
    junit = config.settings.core.junit_xml
    if junit:
        found.append(junit_file(setting=junit, project_root=Path(config.project_root)))
    return found


def own_files(*, config: ConfigDoc) -> list[Path]:
    """The files eb writes (`written_files`) and the config file in use: rewritten by every
    run, or (the config file) a part of every key setting by setting, they would otherwise
    change the project's state each time."""
    found = written_files(config=config)
    if config.config_file:
        found.append(Path(config.config_file))
    return found


def junit_file(*, setting: str, project_root: Path) -> Path:
    """`[core] junit_xml` / `--junit-xml`, as every path setting (`setting_path`)."""
    return setting_path(value=setting, project_root=project_root)


_JUNIT_FIX = "give --junit-xml (or [core] junit_xml, EVAL_BANANA_JUNIT_XML) a file path"


def junit_loop(*, path: Path, after_run: bool = False) -> LinkLoopError:
    """The JUnit path is a symbolic link loop (`after_run`: one made while the run went on)."""
    return LinkLoopError(
        f"Cannot write the JUnit XML to {path}: it is a symbolic link loop",
        file=str(path),
        hint=f"{LOOP_FIX}, or {_JUNIT_FIX}",
        after_run=after_run,
    )


def summary_loop(*, path: Path) -> LinkLoopError:
    """`$GITHUB_STEP_SUMMARY` names a symbolic link loop: a warning (the summary is a copy of
    report.md, whose failure costs only itself), in the words of the other reports' refusal."""
    return LinkLoopError(
        f"could not append the report to ${STEP_SUMMARY_ENV} ({path}): it is a symbolic link "
        "loop; report.md in the run folder holds it",
        file=str(path),
        hint=f"{LOOP_FIX}, or set ${STEP_SUMMARY_ENV} to a file",
    )


def refuse_junit_target(*, config: ConfigDoc) -> None:
    """Refuse, before anything runs, a JUnit path that cannot become a file: a folder at the
    path, a symbolic link loop, or a file where one of its folders would be. Missing folders are
    made when the file is written, as for `--output-dir` and `--result-out`; a typo must not cost
    a whole run."""
    setting = config.settings.core.junit_xml
    if not setting:
        return
    path = junit_file(setting=setting, project_root=Path(config.project_root))
    fix = _JUNIT_FIX
    if link_loop(path=path):
        raise junit_loop(path=path)
    if path.is_dir():
        raise OutputDirError(
            f"Cannot write the JUnit XML to {path}: it is a folder", file=str(path), hint=fix
        )
    kind = never_written(path=path)
    if kind is not None:
        raise OutputDirError(
            f"Cannot write the JUnit XML to {path}: it is {kind}",
            file=str(path),
            hint=f"{fix}, a character device such as /dev/null, or a FIFO",
        )
    # The nearest folder that exists must be a folder, or the missing ones cannot be made.
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputDirError(
            f"Cannot write the JUnit XML to {path}: {parent} is not a folder",
            file=str(path),
            hint=fix,
        )


def record_path(*, config: ConfigDoc) -> Path:
    """Beside the config file in use, else `<project root>/.eval-banana/calibration.json`."""
    if config.config_file:
        return Path(config.config_file).parent / CALIBRATION_FILE
    return Path(config.project_root) / _CONFIG_FOLDER / CALIBRATION_FILE
