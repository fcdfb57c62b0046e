"""`eb init`: the config template, the check schema for editors, a first passing check, a small
dataset family (one check file, three cases), and a `.eval-banana/.gitignore` that keeps run
folders out of git."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.errors import ConfigError, WriteFault
from eval_banana.core.files import write_text_atomic
from eval_banana.core.realpaths import real_path
from eval_banana.settings.configfile import find_config_file, refuse_unprintable_root

CONFIG_PATH = Path(".eval-banana") / "config.toml"
SCHEMA_PATH = Path(".eval-banana") / "schemas" / "check.schema.json"
EXAMPLE_PATH = Path("eval_checks") / "example_check.yaml"
# A dataset family (docs/datasets.md): a new project sees cases from its first run.
EXAMPLE_CASES_PATH = Path("eval_checks") / "example_cases.yaml"
# Next to the results folder, so it holds wherever the project sits in its repository and the
# project's own .gitignore is never touched.
GITIGNORE_PATH = Path(".eval-banana") / ".gitignore"
# eb's outputs: run folders, the verdict cache (`[cache] dir`'s default) and the run history
# (`[history] dir`'s default; CI keeps it with a cache or artifacts, docs/history.md).
IGNORED_FOLDERS: tuple[str, ...] = ("results", "cache", "history")
# What eb remembers for `eb run --last-failed`, and the files runs wrote beside their run
# folders (settings/written.py): this machine's state, not a source.
IGNORED_FILES: tuple[str, ...] = ("lastfailed.json", "written.json")
_HEADER = (
    "# Written by `eb init`: eb's run folders, verdict cache, run history and records of failed "
    "checks and of the files runs wrote are outputs, not sources.\n"
)
# The entries `eb init` has added to the file, each once: a line the user deletes later is their
# choice and is not added back (the cache holds its secret.key, so it is added once at least).
_ADDED_MARK = "# eb init added (and never adds again): "
# Said after the files written: a second `eb run` reusing verdicts must not come as a surprise.
CACHE_NOTE = (
    "The verdict cache is on ([cache] mode in .eval-banana/config.toml): a check whose "
    "definition and inputs are unchanged reuses its last verdict; `eb run --cache off` runs "
    "every check."
)


def _ignores(*, folder: str, lines: list[str]) -> bool:
    spellings = {folder, f"{folder}/", f"/{folder}", f"/{folder}/", f"{folder}/*", f"/{folder}/*"}
    return any(line.strip() in spellings for line in lines)


def _package_text(*, name: str) -> str | None:
    """A text file shipped inside the eval_banana package, or None when it is absent."""
    resource = resources.files("eval_banana").joinpath(name)
    if not resource.is_file():
        return None
    return resource.read_text(encoding="utf-8")


def config_template() -> str:
    """The `.eval-banana/config.toml` that `eb init` writes."""
    text = _package_text(name="templates/config.toml")
    if text is None:
        raise ConfigError("The eval_banana installation lacks templates/config.toml")
    return text


def example_check() -> str:
    """The `eval_checks/example_check.yaml` that `eb init` writes (a deterministic pass)."""
    text = _package_text(name="templates/example_check.yaml")
    if text is None:
        raise ConfigError("The eval_banana installation lacks templates/example_check.yaml")
    return text


def example_cases() -> str:
    """The `eval_checks/example_cases.yaml` that `eb init` writes (a family of three cases)."""
    text = _package_text(name="templates/example_cases.yaml")
    if text is None:
        raise ConfigError("The eval_banana installation lacks templates/example_cases.yaml")
    return text


def check_schema() -> str:
    """The published check schema; generated from the model when the file is not shipped."""
    text = _package_text(name="schemas/check.schema.json")
    if text is not None:
        return text
    from eval_banana.publish.schemas import render, schema_builders

    return render(schema_builders()["check"]())


def _entries_missing(*, lines: list[str]) -> list[str]:
    """eb's entries the file does not ignore, in eb's order."""
    folders = [
        f"{folder}/" for folder in IGNORED_FOLDERS if not _ignores(folder=folder, lines=lines)
    ]
    names = [
        name
        for name in IGNORED_FILES
        if not any(line.strip() in (name, f"/{name}") for line in lines)
    ]
    return folders + names


def _added_before(*, lines: list[str]) -> list[str]:
    """The entries the file's mark says `eb init` added on an earlier run."""
    marks = [line.strip()[len(_ADDED_MARK) :] for line in lines if line.startswith(_ADDED_MARK)]
    return [entry.strip() for mark in marks for entry in mark.split(",") if entry.strip()]


def _gitignore_text(*, current: str | None) -> str | None:
    """The .gitignore to write, or None to leave it as it is.

    Each of eb's entries is added once: when it is missing and the file's mark does not say eb
    added it before (then the user removed it on purpose).
    """
    lines = (current or "").splitlines()
    added = _added_before(lines=lines)
    missing = [entry for entry in _entries_missing(lines=lines) if entry not in added]
    if not missing:
        return None
    # eb's lines end as the file's own do: a CRLF file stays CRLF throughout.
    newline = _line_ending(current or "")
    mark = _ADDED_MARK + ", ".join([*added, *missing]) + newline
    new_lines = "".join(f"{entry}{newline}" for entry in missing) + mark
    if current is None:
        return _HEADER + new_lines
    # The user's lines as they are; only eb's old mark gives way.
    kept = "".join(
        line for line in current.splitlines(keepends=True) if not line.startswith(_ADDED_MARK)
    )
    separator = "" if kept == "" or kept.endswith(("\n", "\r")) else newline
    return f"{kept}{separator}{new_lines}"


def _line_ending(text: str) -> str:
    """The line ending `text` writes, as its first line ends: CRLF (a file saved on Windows,
    or checked out there with git's autocrlf) or LF, the default for a file of one line."""
    end = text.find("\n")
    return "\r\n" if end > 0 and text[end - 1] == "\r" else "\n"


def ignore_results(*, root: Path) -> Path | None:
    """Make `.eval-banana/.gitignore` ignore eb's outputs, keeping what it says: each entry is
    added once, never again after the user removed it.

    Returns the file when it was written, None when it was left as it is.
    """
    path = root / GITIGNORE_PATH
    try:
        # Bytes decoded as they are: reading as text would turn CRLF into LF, and the file
        # would be written back with every line ending changed.
        current = path.read_bytes().decode("utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}", file=str(path)) from None
    text = _gitignore_text(current=current)
    if text is None:
        return None
    _write(path=path, text=text)
    return path


def _write(*, path: Path, text: str) -> None:
    """Write one file `eb init` makes; a folder it cannot write in is a setup error (exit 2):
    there is no run to abort."""
    try:
        write_text_atomic(path=path, text=text)
    except (WriteFault, OSError) as exc:
        raise ConfigError(WriteFault.told(path=path, exc=exc), file=str(path)) from None


class InitOutcome(NamedTuple):
    """What `eb init` did: the files it wrote, and a line for each example it did not write."""

    written: list[Path]
    left: list[str]


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _holds_checks(*, folder: Path) -> bool:
    """Whether the project's top `eval_checks/` already holds a YAML file: the user's checks."""
    try:
        return any(
            entry.suffix in (".yaml", ".yml") and entry.name[:1] != "."
            for entry in folder.iterdir()
        )
    except OSError:  # no folder yet (or not one): nothing to keep
        return False


def _examples(*, root: Path) -> tuple[list[tuple[Path, str]], list[str]]:
    """The example checks to write, and a line for each one left as it is.

    A check file is the user's: never overwritten, even with --force. The examples go only into
    an `eval_checks/` that holds no check yet, so a project without checks gets them while one
    the user deleted does not come back next to their own checks.
    """
    examples = ((root / EXAMPLE_PATH, example_check), (root / EXAMPLE_CASES_PATH, example_cases))
    if not _holds_checks(folder=root / EXAMPLE_PATH.parent):
        return [(path, make()) for path, make in examples], []
    left = [
        f"Kept {path} (exists)" if _exists(path) else f"Left out {path} (eval_checks/ holds checks)"
        for path, _ in examples
    ]
    return [], left


def _config_above(*, root: Path) -> Path | None:
    """The config file of the project `root` lies in, found as every eb command finds it
    (settings/configfile.py: the nearest above), or None."""
    return None if root.parent == root else find_config_file(start=root.parent)


def _inside_a_project(*, root: Path, found: Path) -> ConfigError:
    """`eb init` below another project's root: commands run there already work in that project,
    so it is mostly a mistake, and that project's `eb run` would discover the new project's
    checks (its examples' ids among them) next to its own."""
    outer = found.parent.parent
    return ConfigError(
        f"Refusing to make a project in {root}: it is inside the eb project at {outer} "
        f"({found}), whose `eb run` would discover this one's checks too",
        file=str(found),
        hint=f"eb finds that project from any folder below it: add checks in an eval_checks/ "
        f"folder here and run eb from here or from {outer}; pass --nested to make a nested "
        "project on purpose",
    )


def _nested_examples(*, root: Path, outer: Path) -> list[str]:
    """The lines for the examples a nested project does not get: the project above would
    discover them next to its own, whose examples have the same ids."""
    return [
        f"Left out {root / path} (the project at {outer} would discover it too)"
        for path in (EXAMPLE_PATH, EXAMPLE_CASES_PATH)
    ]


def run_init(*, cwd: Path, force: bool, nested: bool = False) -> InitOutcome:
    """Write the config, schema, example check, example family and results ignore under `cwd`.

    An existing .gitignore that already ignores the results is kept as it is and not listed;
    the examples are written only into an `eval_checks/` without checks (`_examples`). A
    folder below another project's root is refused unless `nested`, and a nested project gets
    no examples (`_nested_examples`), also when `force` writes its config again.
    """
    root = real_path(cwd)
    # Refused as `eb run` refuses it, before a file is written (or a path with a line break,
    # which a CI log would read as a line of its own, is printed).
    refuse_unprintable_root(root=root)
    config, schema = root / CONFIG_PATH, root / SCHEMA_PATH
    # The schema is ours and always refreshed; the config may hold the user's edits.
    if not force and _exists(config):
        raise ConfigError(
            f"Refusing to overwrite existing file: {config}",
            file=str(config),
            hint="pass --force to overwrite it (check files are never overwritten)",
        )
    above = _config_above(root=root)
    # A folder with a config of its own is a project already, nested or not; `--force` there
    # still leaves the examples out of one inside another project, as `--nested` did.
    if above is not None and not nested and not _exists(config):
        raise _inside_a_project(root=root, found=above)
    examples, left = (
        ([], _nested_examples(root=root, outer=above.parent.parent))
        if above is not None
        else _examples(root=root)
    )
    contents = [(config, config_template()), (schema, check_schema()), *examples]
    written: list[Path] = []
    for path, text in contents:
        _write(path=path, text=text)
        written.append(path)
    ignored = ignore_results(root=root)
    if ignored is not None:
        written.append(ignored)
    return InitOutcome(written=written, left=left)
