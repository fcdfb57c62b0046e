"""Generate the reference docs from the models and settings (`invoke docs`); a test checks drift."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from eval_banana.assertions.paths import WHOLE_PLACEHOLDER_PATTERN
from eval_banana.core.realpaths import real_path
from eval_banana.stagefiles.layout import STAGE_FILES, STAGE_NAMES, stage_path

if TYPE_CHECKING:
    from eval_banana.settings.table import SettingSpec

REPO = Path(__file__).resolve().parents[2]
EXIT_CODES = (
    (0, "the run passed, or the command succeeded"),
    (
        1,
        "the run did not pass (`eb run`, `eb update`, `eb stage score/report`): the "
        "threshold was not met, a check errored, `--maxfail` stopped it, a dataset family's "
        "`min_pass_rate` did not hold, or a check was flaky under `--fail-on-flaky`; a stage "
        "file is not ok (`eb status`)",
    ),
    (
        2,
        "setup or usage error: bad flags, config, check definitions, no checks, guard "
        "refusal, flat-output refusal, unreadable stage file; nothing ran",
    ),
    (
        3,
        "the run was aborted (interrupt, run-time fuse, token or cost fuse); unrun checks are "
        "`error` with `details.not_run: true`",
    ),
)
EXIT_CODES_AND_VERBOSE = (
    "`--verbose` never changes the exit code: with it, a failure also prints its Python "
    "traceback as `debug:` lines on stderr, followed by the same message as without it."
)
# A line the console loses is not the command's verdict.
EXIT_CODES_AND_CONSOLE = (
    "The console never changes the exit code either. A stderr that cannot be written (a log "
    "on a full disk, a log pipe whose reader died) costs only the warnings, notices and "
    "progress lines it loses, and a stdout whose reader has gone (`eb list | head -1`, "
    "`eb run --json | head -c 100`) only the output it loses: the command still writes every "
    "file it writes otherwise (the reports, `diff.json`) and exits with its own code "
    "(`eb list | head -1` exits 0). A stdout that cannot be written for another reason (a "
    "full disk under `eb run > out.txt`) is a "
    "[write fault](fail-closed.md#faults-are-infrastructure-never-verdicts) (exit 3), for "
    "every command, `--json` and `--help` included: one line on stderr, `Cannot write "
    "standard output: No space left on device`, which a run that had started ends with `; "
    "the run is aborted`. An error that `--json` could not print there is told on stderr "
    "first, as without `--json`. An eb started with stdout, stderr or stdin closed (`eb run "
    ">&-`, `2>&-`, as some CI wrappers and daemons start programs) opens the null device "
    "there first thing: the lines it would print there are lost, and no file it opens later "
    "(a check's output, a pipe to a child) takes their place."
)


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


_KIND_TYPES = {
    "path": "string (path)",
    "optional_path": "string (path)",
    "threshold": "number, 0.0-1.0",
    "integer": "integer",
    "positive_integer": "integer ≥ 1",
    "non_negative_integer": "integer ≥ 0 (0 = none)",
    "count": "integer ≥ 0",
    "non_negative_number": "number ≥ 0 (0 = none)",
    "optional_string": "string",
    "folder_names": "list of folder names",
    "glob_list": "list of glob patterns",
    "name_list": "list of strings",
    "string_table": "table of strings",
    "repeat_count": "integer from 1 to 20",
    "boolean": "true or false",
    "agent_tables": "tables",
    "ignored": "any (ignored)",
}


def _kind_type(*, spec: SettingSpec) -> str:
    if spec.kind == "choice":
        quoted = [f'"{choice}"' for choice in spec.choices]
        return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]
    return _KIND_TYPES[spec.kind]


def _settings_table() -> list[str]:
    from eval_banana.settings.table import SETTINGS

    rows = [
        "| setting | type | default | env var | flag | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for spec in SETTINGS:
        if spec.name == "agents":
            continue
        default = json.dumps(spec.default, allow_nan=False) if spec.default is not None else "unset"
        rows.append(
            f"| `[{spec.section}] {spec.key}` | {_cell(_kind_type(spec=spec))} | "
            f"`{_cell(default)}` | "
            f"{f'`{spec.env}`' if spec.env else '—'} | {f'`{spec.flag}`' if spec.flag else '—'} | "
            f"{_cell(spec.help)} |"
        )
    return rows


def _empty_paths_rule() -> str:
    """One sentence: which folder settings refuse an empty value, from each source alike."""
    from eval_banana.settings.table import SETTINGS

    folders = [spec for spec in SETTINGS if spec.kind == "path"]
    names = ", ".join(f"`[{spec.section}] {spec.key}`" for spec in folders)
    roots = " and ".join(f'`{spec.flag} ""`' for spec in folders if spec.empty_flag_is_root)
    return (
        f"{names} must not be empty or blank (spaces only), whether a flag, a variable or the "
        "file sets it (an empty folder would put its files straight into the project root, a "
        f"blank one make a folder named by spaces there); only {roots} is allowed, and means "
        "the project root."
    )


def _union_rule() -> str:
    """One sentence: which lists join the names of every source instead of taking one."""
    from eval_banana.settings.table import SETTINGS

    names = " and ".join(
        f"`[{spec.section}] {spec.key}`" for spec in SETTINGS if spec.combine == "union"
    )
    return (
        f"{names} is the exception: it joins the names of the file, the variable and the flag "
        "(an empty variable adds none), so neither can drop a name the project masks."
    )


def _home_paths_rule() -> str:
    """One sentence: how every path setting reads a leading `~` and a relative path."""
    from eval_banana.settings.table import SETTINGS

    paths = [spec for spec in SETTINGS if spec.kind in ("path", "optional_path")]
    names = ", ".join(f"`[{spec.section}] {spec.key}`" for spec in paths)
    return (
        f"{names} and a `[cache] remote` that is a folder read a leading `~` (or `~user`) as "
        "that home folder, whether a flag, a variable or the file sets them (no shell expands "
        "it in a TOML file or a CI `env:` block); a relative path is joined to the project "
        "root."
    )


def _shards_agree_rule() -> str:
    """One sentence: which settings every shard `eb merge` joins must share."""
    from eval_banana.settings.table import VERDICT_SETTINGS

    names = [f"`[{spec.section}] {spec.key}`" for spec in VERDICT_SETTINGS]
    return (
        f"{', '.join(names[:-1])} and {names[-1]} shape the verdict or are stated in the report: "
        "`eb merge` refuses shards that ran with different values of any of them "
        "([scale-out](scale-out.md#merging-eb-merge-run_dir))."
    )


_SCALARS = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "true or false",
    "object": "mapping",
    "null": "empty",
}
_PLURALS = {
    "string": "strings",
    "integer": "integers",
    "number": "numbers",
    "mapping": "mappings",
    "assertion": "assertions (see below)",
}


def _literal(value: object) -> str:
    return f"`{value}`" if isinstance(value, str) else f"`{json.dumps(value, allow_nan=False)}`"


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def yaml_type(schema: dict[str, Any]) -> str:
    """A field's type as a YAML author reads it (string, list of strings, one of `a`, `b`)."""
    if "const" in schema:
        value = schema["const"]
        return (
            _literal(value) if isinstance(value, str) else f"the {schema['type']} {_literal(value)}"
        )
    if "enum" in schema:
        return "one of " + ", ".join(_literal(value) for value in schema["enum"])
    if "$ref" in schema:
        return "any JSON value" if _ref_name(schema["$ref"]) == "JsonValue" else "mapping"
    for union in ("anyOf", "oneOf"):
        if union in schema:
            members = [part for part in schema[union] if part.get("type") != "null"]
            if all("$ref" in part for part in members) and len(members) > 1:
                return "assertion"
            return " or ".join(yaml_type(part) for part in members)
    if schema.get("pattern") == WHOLE_PLACEHOLDER_PATTERN:
        return "a `{{ case.<field> }}` placeholder (in a dataset family)"
    kind = _SCALARS.get(str(schema.get("type")), "any value")
    if schema.get("type") == "array":
        item = yaml_type(schema.get("items", {}))
        listed = f"list of {_PLURALS.get(item, item)}"
        return f"{listed}, at least {schema['minItems']}" if "minItems" in schema else listed
    if "minimum" in schema:
        return f"{kind} ≥ {schema['minimum']}"
    if "maxLength" in schema:
        return f"{kind} of at most {schema['maxLength']} characters"
    return kind


def _required(*, field: Any) -> str:
    if field.is_required():
        return "yes"
    default = field.get_default(call_default_factory=True)
    if default is None:
        return "no"
    return f"no (default {_literal(default)})"


def _fields_table(model: type[BaseModel]) -> list[str]:
    properties = model.model_json_schema(by_alias=True)["properties"]
    rows = ["| key | type | required | meaning |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        key = field.alias or name
        rows.append(
            f"| `{key}` | {_cell(yaml_type(properties[key]))} | {_required(field=field)} | "
            f"{_cell(field.description or '')} |"
        )
    return rows


def _assertions_table() -> list[str]:
    from eval_banana.models.assertions import ASSERTION_MODELS

    rows = ["| `op` | `value` | holds when |", "|---|---|---|"]
    for op, model in ASSERTION_MODELS.items():
        value = model.model_json_schema(by_alias=True)["properties"].get("value")
        shown = _cell(yaml_type(value)) if value is not None else "(none)"
        rows.append(f"| `{op}` | {shown} | {_cell(model.__doc__ or '')} |")
    return rows


def reference_markdown() -> str:
    """docs/reference.md: every config key, check field, stage file and exit code."""
    from eval_banana.models.check import CHECK_MODELS

    lines = [
        "# Reference",
        "",
        "Generated from the models by `invoke docs`; do not edit by hand.",
        "",
        "## Configuration (`.eval-banana/config.toml`)",
        "",
        "Precedence, highest first: flag, `EVAL_BANANA_*` variable, project file, default. "
        + _union_rule(),
        _empty_paths_rule(),
        "",
        _home_paths_rule(),
        "",
        _shards_agree_rule(),
        "",
        *_settings_table(),
        "",
        "## Check files",
        "",
        "Types are as YAML reads them: a string may be quoted or not, but YAML reads an unquoted "
        "`yes`, `no`, `true`, `1` or `1.0` as a boolean or a number, so quote such strings. "
        "A key that is not required may be left out.",
        "",
    ]
    for type_name, model in CHECK_MODELS.items():
        lines += [f"### `type: {type_name}`", "", *_fields_table(model), ""]
    lines += [
        "### Assertions (items of `assert`)",
        "",
        "Each item is a mapping with `path` (string, required: where to look in the artifact), "
        "`op` and, for every op but `exists`, `value`.",
        "",
        *_assertions_table(),
        "",
    ]
    lines += ["## Stage files", "", "| stage | file | schema |", "|---|---|---|"]
    for stage in STAGE_NAMES:
        lines.append(
            f"| {stage} | `stages/{STAGE_FILES[stage]}` | `schemas/stages/{stage}.schema.json` |"
        )
    lines += ["", "## Exit codes", "", "| code | meaning |", "|---|---|"]
    lines += [f"| {code} | {meaning} |" for code, meaning in EXIT_CODES]
    lines += ["", EXIT_CODES_AND_VERBOSE, "", EXIT_CODES_AND_CONSOLE]
    return "\n".join(lines) + "\n"


_VOLATILE = re.compile(
    r'"(created_at|run_created_at|started_at|completed_at|run_id)": "[^"]*"|"(duration_ms)": \d+'
    r"|sha256:[0-9a-f]{64}|[0-9]{8}_[0-9]{6}_[0-9a-f]{8}"
)


_TEMP_DIR = re.compile(
    re.escape(tempfile.gettempdir()) + r"/([A-Za-z0-9._-]+-[0-9a-f]{64})_[a-z0-9_]{8}/"
)


def _normalize(text: str, *, root: str) -> str:
    def repl(match: re.Match[str]) -> str:
        if match.group(1):
            return f'"{match.group(1)}": "<{match.group(1)}>"'
        if match.group(2):
            return f'"{match.group(2)}": 0'
        if match.group(0).startswith("sha256:"):
            return "sha256:<digest>"
        return "<run_id>"

    text = text.replace(root, "<project>")
    # A check's private temp folder shows in tracebacks: its name is random.
    text = _TEMP_DIR.sub(r"<tmp>/\1_<random>/", text)
    return _VOLATILE.sub(repl, text)


def stage_examples() -> dict[str, str]:
    """Run the demo in a temporary copy; return each stage file, normalized for the docs."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "demo"
        shutil.copytree(
            REPO / "examples" / "demo",
            root,
            ignore=shutil.ignore_patterns("results", "__pycache__"),
        )
        subprocess.run(
            [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root)],
            check=True,
            capture_output=True,
        )
        (run_dir,) = (root / ".eval-banana" / "results").iterdir()
        examples = {}
        for stage in STAGE_NAMES:
            raw = stage_path(run_dir=run_dir, stage=stage).read_text()
            document: Any = json.loads(_normalize(raw, root=str(real_path(root))))
            examples[stage] = json.dumps(document, indent=2, sort_keys=True, allow_nan=False) + "\n"
        return examples


def write_docs() -> list[Path]:
    written = [REPO / "docs" / "reference.md"]
    written[0].write_text(reference_markdown(), encoding="utf-8")
    for stage, text in stage_examples().items():
        path = REPO / "docs" / "stages" / f"{stage}.example.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_docs():
        print(written_path.relative_to(REPO))
