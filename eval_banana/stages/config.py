"""Config stage: find `.eval-banana/config.toml`, layer CLI > EVAL_BANANA_* > file > defaults.

Every value is recorded as written with where it came from; nothing from the process
environment other than eb's own EVAL_BANANA_* settings reaches the document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from eval_banana.checks.keywords import compile_selector
from eval_banana.core.errors import ConfigError
from eval_banana.core.files import sha256_bytes
from eval_banana.core.startfolder import resolved
from eval_banana.core.words import given_value
from eval_banana.models.config import Selection, Settings, SettingSource
from eval_banana.models.stages import ConfigDoc, ProblemModel
from eval_banana.settings.configfile import (
    CONFIG_DIR,
    CONFIG_NAME,
    check_structure,
    find_config_file,
    load_toml,
    read_config_bytes,
    refuse_unprintable_root,
)
from eval_banana.settings.origin import setting_origin
from eval_banana.settings.table import (
    SETTINGS,
    SETTINGS_BY_NAME,
    SettingSpec,
    SettingValueError,
    coerce_text,
    coerce_typed,
    show,
)
from eval_banana.stagefiles.layout import envelope
from eval_banana.stagefiles.write import write_stage_model

if TYPE_CHECKING:
    from eval_banana.remote.opening import EndpointProblem

_MISSING = object()


# --- values from each layer --------------------------------------------------------------------


def _file_value(*, spec: SettingSpec, table: dict[str, Any], path: Path | None) -> object:
    section = table.get(spec.section)
    if path is None or not isinstance(section, dict) or spec.key not in section:
        return _MISSING
    raw = section[spec.key]
    if spec.kind == "path" and _blank(raw):
        # The same refusal as for an empty environment variable: an empty folder name would put
        # run folders straight into the project root.
        raise ConfigError(
            f"[{spec.section}] {spec.key} must not be empty or blank, got {show(raw)} (in {path})",
            file=str(path),
            field_path=spec.name,
            hint=f"delete the key to use the default ({show(spec.default)}), or name a folder",
        )
    try:
        return coerce_typed(spec=spec, value=raw)
    except SettingValueError as exc:
        separator = ": " if spec.kind == "optional_string" else " "  # eval-banana's phrase
        got = "" if spec.kind == "string_table" else f", got {show(raw)}"
        raise ConfigError(
            f"{spec.label}{separator}{exc.reason}{got} (in {path})",
            file=str(path),
            field_path=spec.name,
            hint=_type_hint(spec=spec),
        ) from None


def _type_hint(*, spec: SettingSpec) -> str | None:
    hints = {
        "threshold": f"write e.g. {spec.key} = 0.8",
        "path": f'write e.g. {spec.key} = "path/to/dir" (a quoted string)',
        "optional_path": f'write e.g. {spec.key} = "path/to/file" (a quoted string)',
        "optional_string": f'write a quoted string, or "" to leave {spec.name} unset',
        "folder_names": f'write folder names, e.g. {spec.key} = ["vendor", "node_modules"]',
        "glob_list": f'write e.g. {spec.key} = ["build/**", "*.log"]',
        "name_list": f'write e.g. {spec.key} = ["NAME_1", "NAME_2"]',
        "string_table": 'write e.g. [harness.env] then NAME = "value" lines',
        "boolean": f"write {spec.key} = true or {spec.key} = false (without quotes)",
        "repeat_count": f"write e.g. {spec.key} = 3 (a whole number from 1 to 20)",
        "choice": f"write {spec.key} = " + " or ".join(f'"{choice}"' for choice in spec.choices),
    }
    return hints.get(spec.kind, f"write e.g. {spec.key} = 1 (a number without quotes)")


def _blank(value: object) -> bool:
    """An empty or whitespace-only folder name: "" would put eb's files into the project root,
    and " " makes a folder named by spaces there, which nobody means."""
    return isinstance(value, str) and not value.strip()


def _env_value(*, spec: SettingSpec, raw: str) -> object:
    assert spec.env is not None
    if spec.kind == "path" and _blank(raw):
        # An empty value would put run folders straight into the project root.
        raise ConfigError(
            f"{spec.env} must not be empty or blank, got {given_value(raw)}",
            field_path=spec.name,
            hint=f"unset {spec.env} to use [{spec.section}] {spec.key} or the default",
        )
    try:
        return coerce_text(spec=spec, text=raw)
    except SettingValueError as exc:
        # The variable's name and a phrase, never Python's own message.
        raise ConfigError(
            f"{spec.env} {exc.reason}, got {given_value(raw)}", field_path=spec.name
        ) from None


def _cli_value(*, spec: SettingSpec, value: object) -> object:
    label = spec.flag or spec.name
    if spec.kind == "path" and _blank(value) and (value != "" or not spec.empty_flag_is_root):
        # As from the file and the variable: an empty folder name would scatter the cache (its
        # secret key too) or the history records over the project root.
        raise ConfigError(
            f"{label} must not be empty or blank, got {show(value)}",
            field_path=spec.name,
            hint=f"drop {label} to use {spec.env}, [{spec.section}] {spec.key} or the default",
        )
    try:
        if isinstance(value, str) and spec.kind not in ("folder_names", "string_table"):
            return coerce_text(spec=spec, text=value)
        return coerce_typed(spec=spec, value=value)
    except SettingValueError as exc:
        raise ConfigError(
            f"{label} {exc.reason}, got {show(value)}", field_path=spec.name
        ) from None


def _layer(
    *,
    spec: SettingSpec,
    table: dict[str, Any],
    path: Path | None,
    cli_values: Mapping[str, object],
    environ: Mapping[str, str],
) -> tuple[object, SettingSource]:
    """The value of one setting and where it came from."""
    # The file is always checked, even when overridden: a typo must not hide behind a flag.
    from_file = _file_value(spec=spec, table=table, path=path)
    if spec.combine == "union":
        return _union_layer(spec=spec, from_file=from_file, cli_values=cli_values, environ=environ)
    if spec.name in cli_values:
        return _cli_value(spec=spec, value=cli_values[spec.name]), "cli"
    # The env var is read only when its flag is absent, so a stale one cannot break the run.
    if spec.env is not None and spec.env in environ:
        return _env_value(spec=spec, raw=environ[spec.env]), "env"
    if from_file is not _MISSING:
        return from_file, "project"
    return spec.default, "default"


# Sources from the lowest to the highest.
_SOURCE_RANKS: tuple[SettingSource, ...] = ("default", "project", "env", "cli")


def _union_layer(
    *,
    spec: SettingSpec,
    from_file: object,
    cli_values: Mapping[str, object],
    environ: Mapping[str, str],
) -> tuple[object, SettingSource]:
    """A "union" setting: the names of the file, the variable and the flag, each once; its
    source the highest that added a name (else the highest given), as config.json records it."""
    given: list[tuple[object, SettingSource]] = [(spec.default, "default")]
    if from_file is not _MISSING:
        given.append((from_file, "project"))
    if spec.env is not None and spec.env in environ:
        given.append((_env_value(spec=spec, raw=environ[spec.env]), "env"))
    if spec.name in cli_values:
        given.append((_cli_value(spec=spec, value=cli_values[spec.name]), "cli"))
    adding = [source for value, source in given if value]
    source = adding[-1] if adding else given[-1][1]
    return _joined_names(values=[value for value, _ in given]), source


def _joined_names(*, values: Sequence[object]) -> list[str]:
    """The names of every list in `values`, each once, in the order first given."""
    joined: list[str] = []
    for value in values:
        assert isinstance(value, list)  # a "union" setting is a list of names
        joined.extend(str(name) for name in value if name not in joined)
    return joined


def _agents(*, table: dict[str, Any], path: Path | None) -> dict[str, Any]:
    # Imported here: the harness package imports the models, not the stages.
    from eval_banana.harness.templates import parse_agent_tables

    raw = table.get("agents", {}) if path is not None else {}
    return dict(parse_agent_tables(raw=raw, config_path=str(path) if path else ""))


def resolve_config(
    *,
    cwd: Path,
    cli_values: Mapping[str, object],
    environ: Mapping[str, str],
    no_project_config: bool,
    selection: Selection,
    run_id: str,
) -> ConfigDoc:
    """Layer CLI > EVAL_BANANA_* > project file > defaults into the config stage document."""
    # A bad -k / --tag expression is a usage error before any run folder exists.
    compile_selector(keyword=selection.keyword, tags=selection.tags)
    start = resolved(cwd, environ=environ)
    if not start.is_dir():
        raise ConfigError(
            f"--cwd is not a directory: {start}", hint="pass an existing project folder"
        )
    unknown = sorted(
        name
        for name in cli_values
        if name not in SETTINGS_BY_NAME
        or SETTINGS_BY_NAME[name].kind in ("ignored", "agent_tables")
    )
    if unknown:
        raise ConfigError(
            f"Unknown {'setting' if len(unknown) == 1 else 'settings'} given as flags: "
            + ", ".join(unknown)
        )
    path = None if no_project_config else find_config_file(start=start)
    refuse_unprintable_root(root=path.parent.parent if path is not None else start)
    data = read_config_bytes(path=path) if path is not None else None
    table: dict[str, Any] = (
        load_toml(path=path, data=data) if path is not None and data is not None else {}
    )
    try:
        warnings = check_structure(table=table, path=path) if path is not None else []
        sections: dict[str, dict[str, object]] = {}
        sources: dict[str, SettingSource] = {}
        for spec in SETTINGS:
            if spec.kind in ("ignored", "agent_tables"):
                continue
            value, source = _layer(
                spec=spec, table=table, path=path, cli_values=cli_values, environ=environ
            )
            sections.setdefault(spec.section, {})[spec.key] = value
            sources[spec.name] = source
        named_output = _file_value(spec=SETTINGS_BY_NAME["core.output_dir"], table=table, path=path)
        agents = _agents(table=table, path=path)
    except ConfigError as exc:
        _place_in_file(problems=[exc], path=path, data=data)
        raise
    sources["agents"] = "project" if path is not None and table.get("agents") else "default"
    # Every value was checked against its SettingSpec above.
    settings = Settings.model_validate({**sections, "agents": agents})
    warnings.extend(_unused_remote(settings=settings, sources=sources, path=path))
    _place_in_file(problems=warnings, path=path, data=data)
    unusable = _unusable_remote(settings=settings, sources=sources, path=path, environ=environ)
    if unusable is not None:
        _place_in_file(problems=[unusable], path=path, data=data)
        raise unusable
    head = envelope(stage="config", run_id=run_id, inputs={})
    return ConfigDoc.model_validate(
        {
            **head,
            "run_created_at": head["created_at"],
            "project_root": str(path.parent.parent if path is not None else start),
            "config_file": str(path) if path is not None else None,
            "config_file_sha256": sha256_bytes(data=data) if data is not None else None,
            "no_project_config": no_project_config,
            "project_output_dir": None if named_output is _MISSING else named_output,
            "settings": settings,
            "sources": sources,
            "selection": selection,
            "warnings": warnings,
        }
    )


def laid_over(
    *,
    config: ConfigDoc,
    names: Sequence[str],
    cli_values: Mapping[str, object],
    environ: Mapping[str, str],
) -> ConfigDoc:
    """`config` with the settings `names` taken again as a stage rerun takes them: a flag given
    now, else the run's own flag as recorded, else an EVAL_BANANA_* variable set now, else the
    value recorded (the config file is not read again: its edits make config.json stale). A
    "union" setting keeps the names recorded and adds those given now."""
    sections = config.settings.model_dump()
    sources = dict(config.sources)
    for name in names:
        spec = SETTINGS_BY_NAME[name]
        source: SettingSource
        if spec.combine == "union":
            # The run's names stay masked: what is given now only adds to them.
            recorded: list[object] = sections[spec.section][spec.key]
            value, given = _union_layer(
                spec=spec, from_file=recorded, cli_values=cli_values, environ=environ
            )
            if value == recorded:
                continue  # nothing added now
            ranks = (_SOURCE_RANKS.index(given), _SOURCE_RANKS.index(sources.get(name, "default")))
            source = _SOURCE_RANKS[max(ranks)]
        elif name in cli_values:
            value, source = _cli_value(spec=spec, value=cli_values[name]), "cli"
        elif sources.get(name) != "cli" and spec.env is not None and spec.env in environ:
            value, source = _env_value(spec=spec, raw=environ[spec.env]), "env"
        else:
            continue
        sections[spec.section][spec.key] = value
        sources[name] = source
    if sources == config.sources and sections == config.settings.model_dump():
        return config  # nothing given now: the recorded document, as it was read
    settings = Settings.model_validate(sections)
    path = Path(config.config_file) if config.config_file is not None else None
    unusable = _unusable_remote(settings=settings, sources=sources, path=path, environ=environ)
    if unusable is not None:
        raise unusable
    return config.model_copy(update={"settings": settings, "sources": sources})


def settings_against_sources(*, config: ConfigDoc) -> tuple[str, str] | None:
    """The first setting of `config` that is not what its source gives: a default that is
    not the settings table's, or a project value that is not the config file's (read again,
    when its bytes are those the config stage read). None when every one is; (JSON path, why)
    otherwise. Values given by a flag or a variable are not compared: nothing recorded them
    but config.json."""
    table = _unchanged_file_table(config=config)
    path = Path(config.config_file) if config.config_file is not None else None
    # Masked again, should `config` not come from a stage file: masking a masked URL keeps it.
    recorded = masked_settings(settings=config.settings).model_dump()
    expected = config.settings.model_dump()
    compared: list[SettingSpec] = []
    for spec in SETTINGS:
        if spec.kind in ("ignored", "agent_tables"):
            continue
        source = config.sources.get(spec.name)
        if source == "default":
            value: object = spec.default
        elif source == "project" and table is not None:
            try:
                value = _file_value(spec=spec, table=table, path=path)
            except ConfigError:
                continue  # the config stage would refuse it: not what config.json holds
            if value is _MISSING:
                return f"$.sources.{spec.name}", f"the config file sets no {spec.label}"
        else:
            continue
        expected[spec.section][spec.key] = value
        compared.append(spec)
    # Compared as config.json records them: masked where it masks (its secrets were never
    # written), so no message here ever shows what the file holds unmasked.
    resolved_now = masked_settings(settings=Settings.model_validate(expected)).model_dump()
    for spec in compared:
        if resolved_now[spec.section][spec.key] != recorded[spec.section][spec.key]:
            given = (
                "it is the default"
                if config.sources[spec.name] == "default"
                else f"{config.config_file} sets it"
            )
            return f"$.settings.{spec.name}", (
                f"is {show(recorded[spec.section][spec.key])} where sources says {given} "
                f"({show(resolved_now[spec.section][spec.key])})"
            )
    return None


def _unchanged_file_table(*, config: ConfigDoc) -> dict[str, Any] | None:
    """The config file's TOML table, when it still has the bytes the config stage read; None
    without one, or when it changed or cannot be read (`eb status` shows the stage stale)."""
    if config.config_file is None or config.config_file_sha256 is None:
        return None
    path = Path(config.config_file)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if sha256_bytes(data=data) != config.config_file_sha256:
        return None
    try:
        return load_toml(path=path, data=data)
    except ConfigError:
        return None


class _Placeable(Protocol):
    file: str | None
    field_path: str | None
    line: int | None


def _place_in_file(
    *, problems: Sequence[_Placeable], path: Path | None, data: bytes | None
) -> None:
    """Give the problems told about a setting of the config file the line it stands on (for
    `--json` and the annotations on a pull request): the TOML reader keeps no positions."""
    if path is None or data is None:
        return
    from eval_banana.settings.tomllines import setting_line

    text = data.decode("utf-8", errors="replace")
    for problem in problems:
        if problem.file == str(path) and problem.field_path and problem.line is None:
            problem.line = setting_line(text=text, field_path=problem.field_path)


def _unused_remote(
    *, settings: Settings, sources: dict[str, SettingSource], path: Path | None
) -> list[ProblemModel]:
    """A shared cache named while the verdict cache is off is never asked: said, not ignored
    (a CI job that sets the remote expects its runners to share verdicts)."""
    cache = settings.cache
    if not cache.remote or cache.mode != "off" or cache.remote_mode == "off":
        return []
    spec = SETTINGS_BY_NAME["cache.remote"]
    # Where the remote was named, in the words of that place.
    given = {"cli": spec.flag, "env": spec.env}.get(sources.get("cache.remote", "")) or (
        "[cache] remote"
    )
    # Where the cache was turned off: the fix is made there (the file may already say "on").
    mode = setting_origin(
        name="cache.mode", sources=sources, config_file=str(path) if path is not None else None
    )
    other = "" if mode.source == "cli" else " (or pass --cache on)"
    from eval_banana.core.secreturl import shown_url

    # Masked: the warning is printed, and written into config.json.
    return [
        ProblemModel(
            message=f"The shared cache {shown_url(cache.remote)} ({given}) is not used: the "
            f"verdict cache is off ({mode.given(cache.mode)})",
            file=mode.file if mode.source != "default" else mode.config_file,
            field_path="cache.mode",
            hint=f"{mode.to_set('on')}{other} to use it",
        )
    ]


def _unusable_remote(
    *,
    settings: Settings,
    sources: dict[str, SettingSource],
    path: Path | None,
    environ: Mapping[str, str],
) -> ConfigError | None:
    """A shared cache URL eb could never use, as the setup error it is, whatever the cache
    holds (a run answered by a replay would otherwise never say it)."""
    cache = settings.cache
    if not cache.remote or cache.mode == "off" or cache.remote_mode == "off":
        return None  # never asked (the unused remote is a warning of its own)
    from eval_banana.remote.opening import endpoint_problem, url_problem

    spec = SETTINGS_BY_NAME["cache.remote"]
    given = sources.get("cache.remote")
    source = {"cli": spec.flag, "env": spec.env}.get(given or "") or (
        str(path) if path is not None else None
    )
    problem = url_problem(url=cache.remote, source=source)
    if problem is not None:
        return problem
    if not cache.remote_endpoint:
        return _boto3_endpoint_error(url=cache.remote, environ=environ)
    endpoint = endpoint_problem(url=cache.remote, endpoint=cache.remote_endpoint)
    if endpoint is None:
        return None
    return _endpoint_error(
        problem=endpoint, endpoint=cache.remote_endpoint, sources=sources, path=path
    )


def _boto3_endpoint_error(*, url: str, environ: Mapping[str, str]) -> ConfigError | None:
    """The setup error of an S3 endpoint given in boto3's own variable (the first set, as the
    backend reads them) with a query, which boto3 refuses at every request; None otherwise.
    Any other refusal of it is boto3's to say when the client is made (a warning of the run)."""
    from eval_banana.core.secreturl import S3_ENDPOINT_VARIABLES, shown_url
    from eval_banana.remote.opening import endpoint_query_problem

    variable = next((name for name in S3_ENDPOINT_VARIABLES if environ.get(name)), None)
    if variable is None:
        return None
    endpoint = environ[variable]
    problem = endpoint_query_problem(url=url, endpoint=endpoint)
    if problem is None:
        return None
    return ConfigError(
        f"{variable} {problem.reason}, got {given_value(shown_url(endpoint))}",
        field_path="cache.remote_endpoint",
        hint=problem.hint,
    )


def remote_endpoint_error(*, config: ConfigDoc) -> ConfigError | None:
    """The `_endpoint_error` of a command that opens the shared cache whatever `[cache] mode`
    says (`eb cache push`, `--remote`), which the config stage left alone while the cache is
    off; None when the endpoint is usable or not used."""
    cache = config.settings.cache
    if not cache.remote:
        return None
    from eval_banana.remote.opening import endpoint_problem

    problem = endpoint_problem(url=cache.remote, endpoint=cache.remote_endpoint)
    if problem is None:
        return None
    path = Path(config.config_file) if config.config_file is not None else None
    return _endpoint_error(
        problem=problem, endpoint=cache.remote_endpoint or "", sources=config.sources, path=path
    )


def _endpoint_error(
    *,
    problem: EndpointProblem,
    endpoint: str,
    sources: Mapping[str, SettingSource],
    path: Path | None,
) -> ConfigError:
    """An `[cache] remote_endpoint` the S3 client cannot take, told as a value of its kind is
    told where it was set: the variable's name, or the key and the config file."""
    from eval_banana.core.secreturl import shown_url

    spec = SETTINGS_BY_NAME["cache.remote_endpoint"]
    shown = shown_url(endpoint)
    if sources.get(spec.name) == "env" and spec.env is not None:
        return ConfigError(
            f"{spec.env} {problem.reason}, got {given_value(shown)}",
            field_path=spec.name,
            hint=problem.hint,
        )
    return ConfigError(
        f"{spec.label} {problem.reason}, got {show(shown)} (in {path})",
        file=str(path) if path is not None else None,
        field_path=spec.name,
        hint=problem.hint,
    )


def config_warning_lines(*, config: ConfigDoc) -> list[str]:
    """config.json's warnings as the console shows them: each with its fix."""
    return [
        f"{warning.message}; {warning.hint}" if warning.hint else warning.message
        for warning in config.warnings
    ]


def outside_project_warning(*, config: ConfigDoc) -> str | None:
    """What to tell a user who runs eb where no config file was found above the current
    folder; None inside a project (or with --no-project-config, which asks for that)."""
    if config.config_file is not None or config.no_project_config:
        return None
    root = config.project_root
    return (
        f"no {CONFIG_DIR}/{CONFIG_NAME} in {root} or any folder above it, so {root} is taken "
        "as the project root; run `eb init` in your project's folder to make it one "
        "(or pass --cwd)"
    )


def write_config_stage(*, run_dir: Path, doc: ConfigDoc) -> str:
    """Write `<run_dir>/stages/config.json`; return the sha256 digest of its bytes. A shared
    cache URL and its endpoint are written with password and query masked (the run uses them
    as given)."""
    return write_stage_model(run_dir=run_dir, stage="config", model=_as_written(doc))


def _as_written(doc: ConfigDoc) -> ConfigDoc:
    """`doc` with the settings a stage file records masked (`masked_settings`)."""
    settings = masked_settings(settings=doc.settings)
    if settings is doc.settings:
        return doc
    return doc.model_copy(update={"settings": settings})


def masked_settings(*, settings: Settings) -> Settings:
    """`settings` with the shared cache's URL and its S3 endpoint masked, as config.json
    records them: a presigned endpoint's query (`X-Amz-Signature=...`) is as secret as the
    URL's password. `settings` itself when nothing in it is masked."""
    cache = settings.cache
    if not cache.remote and not cache.remote_endpoint:
        return settings
    from eval_banana.core.secreturl import shown_url

    masked = {
        field: shown_url(value)
        for field, value in (("remote", cache.remote), ("remote_endpoint", cache.remote_endpoint))
        if value and shown_url(value) != value
    }
    if not masked:
        return settings
    return settings.model_copy(update={"cache": cache.model_copy(update=masked)})
