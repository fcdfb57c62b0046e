"""The fault campaign as tests: mutated check files, configs and stage files.

Whatever the input, eb answers with an exit code, never a traceback: 2 for anything invalid,
and a check file that is invalid never gets as far as `passed`. Hypothesis mutates known-good
inputs (structured edits and raw text edits); `eb` runs in this process through its real CLI
boundary, so an exception escaping `eval_banana.cli.main` fails the example.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eval_banana.cli import main

BASE_CHECKS: dict[str, dict[str, Any]] = {
    "deterministic": {
        "schema_version": 1,
        "id": "fuzzed",
        "type": "deterministic",
        "description": "A check under fuzzing.",
        "tags": ["fast"],
        "script": "pass\n",
    },
    "harness_judge": {
        "schema_version": 1,
        "id": "fuzzed",
        "type": "harness_judge",
        "description": "A judge under fuzzing.",
        "instructions": "Decide.",
        "model": "m1",
    },
    "assertions": {
        "schema_version": 1,
        "id": "fuzzed",
        "type": "assertions",
        "description": "Assertions under fuzzing.",
        "artifact": "out.json",
        "assert": [{"path": "a", "op": "equals", "value": 1}],
    },
}
FIELD_NAMES = sorted({key for check in BASE_CHECKS.values() for key in check} | {"expect"})

# Values YAML can carry, including the awkward ones: tags, anchors, deep nesting, odd scalars.
RAW_VALUES = st.sampled_from(
    [
        "!!binary aGVsbG8=",
        "!!set {a: null}",
        "!!omap [a: 1]",
        "2024-01-02",
        "2024-01-02T03:04:05Z",
        "yes",
        "0x1F",
        ".nan",
        "-.inf",
        "~",
        "''",
        '"  "',
        "[" * 60 + "]" * 60,
        "{a: {b: {c: [1, 2, {d: e}]}}}",
        "&anchor x",
        "*undefined_alias",
        "!custom tag",
        "|\n  multi\n  line",
        '"\\udc80"',
        "1e400",
        str(2**70),
    ]
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)

# Mutation campaigns, run by .ci/run (`pytest -m exhaustive`), not the README's command.
pytestmark = pytest.mark.exhaustive


@st.composite
def check_file_texts(draw: st.DrawFn) -> str:
    """A check file: a valid one of some type, then one to three edits."""
    document = dict(BASE_CHECKS[draw(st.sampled_from(sorted(BASE_CHECKS)))])
    raw: dict[str, str] = {}
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        edit = draw(st.sampled_from(["drop", "value", "raw", "raw", "rename", "add"]))
        # Raw edits go mostly to fields the check has, where a coerced value would slip in.
        present = sorted(document) or FIELD_NAMES
        key = draw(st.sampled_from(present if edit == "raw" else FIELD_NAMES))
        if edit == "drop":
            document.pop(key, None)
        elif edit == "value":
            document[key] = draw(JSON_VALUES)
        elif edit == "raw":
            raw[key] = draw(RAW_VALUES)
            document.pop(key, None)
        elif edit == "rename" and key in document:
            document[key + draw(st.sampled_from(["s", "_", "X"]))] = document.pop(key)
        elif edit == "add":
            document[draw(st.text(min_size=1, max_size=10))] = draw(JSON_VALUES)
    text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False)
    text += "".join(f"{key}: {value}\n" for key, value in raw.items())
    if draw(st.booleans()):
        # A raw edit of the text itself: cut it, or insert characters somewhere.
        position = draw(st.integers(min_value=0, max_value=len(text)))
        if draw(st.booleans()):
            text = text[:position]
        else:
            text = text[:position] + draw(st.text(max_size=6)) + text[position:]
    return text


def _plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    return value is None or isinstance(value, str | int | float | bool)


def _eb(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="eb-fuzz-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _write_project(root: Path, *, check_text: str, config: str) -> None:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(config, encoding="utf-8")
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "fuzzed.yaml").write_text(check_text, encoding="utf-8")
    (root / "out.json").write_text('{"a": 1}')


FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(text=check_file_texts())
def test_a_mutated_check_file_is_valid_or_a_setup_error_and_never_passes_when_invalid(
    text: str,
) -> None:
    with _scratch() as root:
        _write_project(root, check_text=text, config="[core]\ncheck_timeout_seconds = 10\n")
        validated, _, _ = _eb("validate", "--cwd", str(root))
        assert validated in (0, 2)
        if validated == 0:
            # What was accepted is plain data: no YAML tag slipped a bytes, date or set through.
            assert _plain(yaml.safe_load(text))
        ran, _, _ = _eb("run", "--cwd", str(root), "--no-html")
        if validated == 2:
            assert ran == 2  # an invalid check never runs, so it can never pass
            assert not list((root / ".eval-banana" / "results").glob("*/report.json"))
        else:
            # A valid judge has no agent here (setup error); anything else ran to a verdict.
            assert ran in (0, 1, 2)


# A dataset family and the rows it reads: every format, bad rows and odd cells among them.
FAMILY_ROWS = st.lists(
    st.sampled_from(
        [
            {"id": "a", "q": "1"},
            {"id": "b", "q": "2", "tags": ["t"]},
            {"q": "3", "skip": "later"},
            {"id": "a", "q": "repeated id"},
            {"id": 7, "q": "7"},
            {"id": "x y", "q": "8"},
            {"q": None},
            {"q": {"deep": [1, {"x": 2}]}},
            {"tags": "not a list"},
            "not a mapping",
            [1, 2],
            None,
        ]
    ),
    max_size=5,
)
ROW_TEXT_EDITS = st.sampled_from(
    ["", "\n", "\n\n", "\ufeff", "{", "- ", "sep=,\n", "a;b\n", ",\n", "---\n", "\r", "no\n"]
)
FAMILY_FIELDS = {
    "cases": st.just("ROWS"),
    "cases_from": st.sampled_from(
        ["data/rows.jsonl", "data/rows.csv", "data/rows.yaml", "data/rows.json", "data/*", "x/*"]
    ),
    "case_schema": st.sampled_from(
        [{"properties": {"q": {"type": "integer"}}}, {"$ref": "#/nowhere"}, {"pattern": "(a"}]
    ),
    "min_pass_rate": st.sampled_from([0.5, 1, 0, 2, "0.9", None, True]),
    "description": st.sampled_from(["{{ case.q }}", "{{ case.missing }}", "{{", "{{{{ x"]),
    "skip": st.sampled_from(["why", 3, ""]),
}


def _row_file_text(fmt: str, rows: list[Any]) -> str:
    if fmt == "jsonl":
        return "".join(json.dumps(row) + "\n" for row in rows)
    if fmt == "json":
        return json.dumps(rows)
    if fmt == "yaml":
        return yaml.safe_dump(rows)
    names = sorted({key for row in rows if isinstance(row, dict) for key in row}) or ["q"]
    return (
        ",".join(names)
        + "\n"
        + "".join(
            ",".join(str(row.get(name, "")) if isinstance(row, dict) else "" for name in names)
            + "\n"
            for row in rows
        )
    )


@st.composite
def family_projects(draw: st.DrawFn) -> tuple[str, dict[str, str]]:
    """A family's check file (of any type) and its dataset files, each maybe edited raw."""
    document = dict(BASE_CHECKS[draw(st.sampled_from(sorted(BASE_CHECKS)))])
    document["description"] = "case {{ case.q }}"
    for key in draw(st.lists(st.sampled_from(sorted(FAMILY_FIELDS)), min_size=1, max_size=4)):
        value = draw(FAMILY_FIELDS[key])
        document[key] = draw(FAMILY_ROWS) if value == "ROWS" else value
    files: dict[str, str] = {}
    for fmt in draw(
        st.lists(st.sampled_from(["csv", "jsonl", "yaml", "json"]), min_size=1, max_size=2)
    ):
        text = _row_file_text(fmt, draw(FAMILY_ROWS))
        # Edits at the file's start and end most of all, where readers look first and last.
        position = draw(
            st.sampled_from([0, len(text)]) | st.integers(min_value=0, max_value=len(text))
        )
        files[f"data/rows.{fmt}"] = text[:position] + draw(ROW_TEXT_EDITS) + text[position:]
    if "cases_from" not in document or draw(st.booleans()):
        document["cases_from"] = draw(st.sampled_from([*sorted(files), "data/*"]))
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False), files


@FUZZ
@given(project=family_projects())
def test_a_mutated_dataset_family_is_valid_or_a_setup_error_and_never_passes_when_invalid(
    project: tuple[str, dict[str, str]],
) -> None:
    check_text, files = project
    with _scratch() as root:
        _write_project(root, check_text=check_text, config="[core]\ncheck_timeout_seconds = 10\n")
        for relative, text in files.items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text(text, encoding="utf-8")
        validated, _, _ = _eb("validate", "--cwd", str(root), "--json")
        assert validated in (0, 2)
        listed, _, _ = _eb("list", "--cases", "--cwd", str(root))
        assert listed in (0, 2)
        ran, _, _ = _eb("run", "--cwd", str(root), "--no-html")
        if validated == 2:
            assert ran == 2  # an invalid family never runs, so none of its cases can pass
            assert not list((root / ".eval-banana" / "results").glob("*/report.json"))
        else:
            assert ran in (0, 1, 2)


CONFIG_KEYS = [
    ("core", "output_dir"),
    ("core", "pass_threshold"),
    ("core", "max_parallel_checks"),
    ("core", "check_timeout_seconds"),
    ("core", "junit_xml"),
    ("discovery", "exclude_dirs"),
    ("harness", "agent"),
    ("harness", "timeout_seconds"),
    ("harness", "env"),
    ("execution", "env"),
    ("execution", "env_allow"),
    ("agents.custom", "command"),
    ("agents.custom", "output_dialect"),
    ("agents.claude", "shared_flags"),
    ("nonsense", "key"),
]
TOML_VALUES = st.sampled_from(
    [
        '""',
        '"x"',
        "0",
        "-1",
        "1.5",
        "nan",
        "inf",
        "true",
        "1979-05-27T07:32:00Z",
        "07:32:00",
        "[]",
        '["a", 1]',
        "[[1], [2]]",
        "{ a = 1 }",
        "{ a = { b = [] } }",
        "[" * 1000 + "]" * 1000,
        '"""multi\nline"""',
        str(2**64),
        "0x10",
        "'literal'",
    ]
)


@st.composite
def config_texts(draw: st.DrawFn) -> str:
    lines = ['[core]\npass_threshold = 1.0\n[harness]\nagent = "claude"\n']
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        section, key = draw(st.sampled_from(CONFIG_KEYS))
        lines.append(f"[{section}]\n{key} = {draw(TOML_VALUES)}\n")
    text = "".join(lines)
    if draw(st.booleans()):
        position = draw(st.integers(min_value=0, max_value=len(text)))
        text = text[:position] + draw(st.text(max_size=4)) + text[position:]
    return text


@FUZZ
@given(config=config_texts())
def test_a_mutated_config_is_a_config_or_setup_error_never_a_crash(config: str) -> None:
    check = yaml.safe_dump(BASE_CHECKS["deterministic"])
    with _scratch() as root:
        _write_project(root, check_text=check, config=config)
        for command in ("validate", "list"):
            code, _, err = _eb(command, "--cwd", str(root))
            assert code in (0, 2), err
            assert "Traceback" not in err


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real run folder (a passing and a failing check) that the stage-file test copies."""
    root = tmp_path_factory.mktemp("fuzz-run")
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\ncheck_timeout_seconds = 10\n'
    )
    (root / "eval_checks").mkdir()
    for name, script in (("good", "pass"), ("bad", "raise SystemExit(1)")):
        check = dict(BASE_CHECKS["deterministic"], id=name, script=script)
        (root / "eval_checks" / f"{name}.yaml").write_text(yaml.safe_dump(check))
    assert _eb("run", "--cwd", str(root), "--no-html")[0] == 1
    (run_dir,) = list((root / "runs").iterdir())
    return run_dir


# Each stage file, and the reruns that read it (eb status reads them all).
READERS: dict[str, tuple[str, ...]] = {
    "config.json": ("discover", "score"),
    "discover.json": ("validate",),
    "plan.json": ("guard", "execute"),
    "guard.json": ("execute",),
    "execute.json": ("score", "report"),
    "score.json": ("report",),
}


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _paths(child, (*prefix, index))


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


def _nearby(data: st.DataObject, value: Any) -> Any:
    """A value of the same JSON type, the kind of edit a person or a bug makes."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return data.draw(st.sampled_from([0, -1, value + 1, value - 1, 10**9]))
    if isinstance(value, str):
        return data.draw(st.sampled_from(["", value[:-1], value + "x", "../" + value]))
    if isinstance(value, list):
        return data.draw(st.sampled_from([[], value[:-1], value + value[-1:]]))
    if isinstance(value, dict):
        return {}
    return data.draw(JSON_VALUES)


def _mutate(data: st.DataObject, document: Any) -> Any:
    # Half the edits hit a top-level field (ok, counts, lists), where one value decides a lot.
    top = [(key,) for key in document] if isinstance(document, dict) else []
    paths = top if top and data.draw(st.booleans()) else list(_paths(document))
    where = data.draw(st.sampled_from(paths))
    edit = data.draw(st.sampled_from(["nearby", "nearby", "replace", "delete"]))
    if not where:
        return data.draw(JSON_VALUES) if edit == "replace" else document
    parent = _get(document, where[:-1])
    if edit == "delete":
        del parent[where[-1]]
    elif edit == "nearby":
        parent[where[-1]] = _nearby(data, parent[where[-1]])
    else:
        parent[where[-1]] = data.draw(JSON_VALUES)
    return document


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_stage_file_is_refused_naming_it_or_used_never_a_crash(
    data: st.DataObject, finished_run: Path
) -> None:
    name = data.draw(st.sampled_from(sorted(READERS)))
    with _scratch() as scratch:
        run_dir = scratch / "run"
        shutil.copytree(finished_run, run_dir)
        path = run_dir / "stages" / name
        text = path.read_text()
        if data.draw(st.integers(min_value=0, max_value=3)):
            for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
                text = json.dumps(_mutate(data, json.loads(text)))
        else:
            cut = data.draw(st.integers(min_value=0, max_value=len(text)))
            text = text[:cut] + data.draw(st.text(max_size=4))
        path.write_text(text)
        for args in (("status",), *(("stage", stage) for stage in READERS[name])):
            code, _, err = _eb(*args, "--run-dir", str(run_dir))
            assert code in (0, 1, 2, 3), (args, err)
            assert "Traceback" not in err


# Calibration records: a real record of two judges, then edits that mostly keep it valid
# against its schema but make it disagree with itself (figures, flags, statuses, labels).
CALIBRATION_CASES = [
    {"name": "good", "expect": "pass", "files": {"answer.txt": "hello\n"}},
    {"name": "bad", "expect": "fail", "files": {"answer.txt": "goodbye\n"}},
]
CALIBRATED_JUDGES = {
    "greets": "file=answer.txt contains=hello",  # agrees on both cases
    "lenient": "answers=pass",  # passes the known-bad case: agreement 0.5
}


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose two judges were measured by `eb calibrate` (the scripted stand-in)."""
    from tests.sampling.test_repeats import scripted_config

    root = tmp_path_factory.mktemp("fuzz-calibration") / "proj"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(scripted_config())
    (root / "answer.txt").write_text("hello world\n")
    (root / "eval_checks").mkdir()
    for check_id, script in CALIBRATED_JUDGES.items():
        check = {
            "schema_version": 1,
            "id": check_id,
            "type": "harness_judge",
            "description": f"Judge {check_id}.",
            "instructions": f"Does answer.txt greet?\nscripted: {script} key={check_id}\n",
            "calibration": CALIBRATION_CASES,
        }
        (root / "eval_checks" / f"{check_id}.yaml").write_text(yaml.safe_dump(check))
    assert _eb("calibrate", "--cwd", str(root))[0] == 1  # the lenient judge disagrees
    return root


def _truthful(entry: Any) -> bool:
    """What the gate may let through at min_agreement 1: finite figures, the check's own cases,
    every sample's answer the case's label, and stored figures and flags that say so."""
    if not _structured(entry):
        return False
    figures = [entry.get(name) for name in ("agreement", "true_pass_rate", "true_fail_rate")]
    if any(not isinstance(v, int | float) or isinstance(v, bool) for v in figures):
        return False
    labels = [(case["name"], case["expect"]) for case in CALIBRATION_CASES]
    outcomes = entry.get("outcomes")
    if [(o.get("name"), o.get("expect")) for o in outcomes] != labels:
        return False
    wanted = {"pass": "passed", "fail": "failed"}
    samples = [(o, s) for o in outcomes for s in o["samples"]]
    every = bool(samples) and all(s.get("status") == wanted[o["expect"]] for o, s in samples)
    flags = all(s.get("agreed") is True for _, s in samples)
    flags = flags and all(o.get("agreed") is True for o in outcomes)
    return every and flags and figures == [1, 1, 1] and entry.get("cases_agreed") == 2


def _structured(entry: Any) -> bool:
    """Whether the entry still has outcomes, each a mapping with a list of sample mappings."""
    outcomes = entry.get("outcomes") if isinstance(entry, dict) else None
    return (
        isinstance(outcomes, list)
        and bool(outcomes)
        and all(
            isinstance(o, dict)
            and isinstance(o.get("samples"), list)
            and all(isinstance(one, dict) for one in o["samples"])
            for o in outcomes
        )
    )


def _forge(data: st.DataObject, entry: dict[str, Any]) -> None:
    """One edit a hand, a tool or a forger makes to a judge's entry, mostly schema-valid."""
    if not _structured(entry):  # an earlier raw edit broke its shape: only raw edits now
        _mutate(data, entry)
        return
    outcome = data.draw(st.sampled_from(entry["outcomes"]))
    # A sample of it (a dict of its own when an earlier edit dropped them all).
    sample = data.draw(st.sampled_from(outcome["samples"])) if outcome["samples"] else {}
    edit = data.draw(
        st.sampled_from(["figure", "figure", "count", "flag", "status", "label", "drop", "raw"])
    )
    if edit == "figure":
        name = data.draw(st.sampled_from(["agreement", "true_pass_rate", "true_fail_rate"]))
        odd = [1.0, 0.0, 0.5, float("nan"), float("inf"), -0.0, 1 - 1e-12, None]
        entry[name] = data.draw(st.sampled_from(odd))
    elif edit == "count":
        entry["cases_agreed"] = data.draw(st.sampled_from([0, 1, 2, 3]))
    elif edit == "flag":
        target = data.draw(st.sampled_from([outcome, sample]))
        target["agreed"] = not target.get("agreed", False)
    elif edit == "status":
        sample["status"] = data.draw(st.sampled_from(["passed", "failed", "error"]))
    elif edit == "label":
        outcome["expect"] = "pass" if outcome.get("expect") == "fail" else "fail"
    elif edit == "drop":
        outcome["samples"] = [s for s in outcome["samples"] if s is not sample]
    else:
        _mutate(data, entry)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_forged_or_damaged_calibration_record_never_lets_an_untruthful_judge_gate(
    data: st.DataObject, calibrated: Path
) -> None:
    record_path = calibrated / ".eval-banana" / "calibration.json"
    original = record_path.read_text()
    record = json.loads(original)
    check_id = data.draw(st.sampled_from(sorted(CALIBRATED_JUDGES)))
    entry = record["checks"][check_id]
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        _forge(data, entry)
    try:
        record_path.write_text(json.dumps(record))
        code, out, err = _eb(
            "validate", "--cwd", str(calibrated), "--require-calibration", "--check-id", check_id
        )
    finally:
        record_path.write_text(original)
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 0:
        # Let through: only a record whose every figure and sample says the judge agreed.
        assert _truthful(entry), (entry, out, err)


# ---- stored verdicts: schema-valid documents that do not hold together are never a pass ----

CACHE_CONFIG = '[core]\nmax_parallel_checks = 1\n\n[cache]\nmode = "on"\n'


@pytest.fixture(scope="module")
def cached_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose failing check `bad` and passing check `good` are cached, and whose second
    (fully cached, failing) run is kept as a replay."""
    root = tmp_path_factory.mktemp("fuzz-cache") / "proj"
    _write_project(root, check_text="", config=CACHE_CONFIG)
    (root / "eval_checks" / "fuzzed.yaml").unlink()
    for name, script in (("good", "pass"), ("bad", "raise SystemExit(1)")):
        check = dict(BASE_CHECKS["deterministic"], id=name, script=script)
        (root / "eval_checks" / f"{name}.yaml").write_text(yaml.safe_dump(check))
    for _ in range(2):
        assert _eb("run", "--cwd", str(root), "--no-html")[0] == 1
    assert len(list((root / ".eval-banana" / "cache" / "runs").rglob("*.json"))) == 1
    return root


def _stored(cache: Path, part: str) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Stored documents by check id (entries) or by key (kept runs)."""
    found = {}
    for path in (cache / part).rglob("*.json"):
        document = json.loads(path.read_bytes())
        found[document.get("check_id", document["key"])] = (path, document)
    return found


def _sign(cache: Path, path: Path, document: dict[str, Any]) -> None:
    from eval_banana.cache.store import CacheStore
    from eval_banana.core.mac import signed_text

    key = CacheStore(folder=cache, max_bytes=1 << 30).secret(create=False)
    assert isinstance(key, bytes)
    body = {name: value for name, value in document.items() if name != "mac"}
    path.write_bytes(signed_text(key=key, text=json.dumps(body, indent=1).encode()))


def _seal(data: st.DataObject, cache: Path, path: Path, document: dict[str, Any]) -> bool:
    """Write `document` signed, with the MAC it had (now stale), or with none; whether signed."""
    how = data.draw(st.sampled_from(["signed", "stale", "none"]))
    if how == "signed":
        _sign(cache, path, document)
    elif how == "stale":
        path.write_text(json.dumps(document))
    else:
        path.write_text(json.dumps({k: v for k, v in document.items() if k != "mac"}))
    return how == "signed"


VERDICT_EDITS: dict[str, Any] = {
    "status": st.sampled_from(["passed", "failed"]),
    "score": st.sampled_from([0, 1]),
    "observed_status": st.sampled_from(["passed", "failed"]),
}


def _forged_pass(document: dict[str, Any], key: str) -> bool:
    """A sound, self-consistent pass for `bad` with no stored text: only something that can
    read the cache's secret writes one, which the MAC does not claim to stop."""
    result = document["result"]
    return (
        document["check_id"] == "bad"
        and document["key"] == key
        and document["expect"] == "pass"
        and (result["status"], result["score"], result["observed_status"])
        == ("passed", 1, "passed")
        and document.get("result_file") is None
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_an_inconsistent_cache_entry_is_never_reused_as_a_pass(
    data: st.DataObject, cached_project: Path
) -> None:
    with _scratch() as scratch:
        root = scratch / "proj"
        shutil.copytree(cached_project, root)
        cache = root / ".eval-banana" / "cache"
        shutil.rmtree(cache / "runs")  # the verdicts are looked up one by one
        entries = _stored(cache, "entries")
        path, document = entries["bad"]
        good = entries["good"][1]
        key = document["key"]
        for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
            edit = data.draw(st.sampled_from([*VERDICT_EDITS, "expect", "swap", "text"]))
            if edit in VERDICT_EDITS:
                document["result"][edit] = data.draw(VERDICT_EDITS[edit])
            elif edit == "expect":
                document["expect"] = data.draw(st.sampled_from(["pass", "fail"]))
            elif edit == "swap":  # another check's identity, files or stored text
                name = data.draw(st.sampled_from(["check_id", "key", "files", "result_file"]))
                document[name] = good[name]
            else:
                document["result_file"] = None
        signed = _seal(data, cache, path, document)
        if signed and _forged_pass(document, key):
            return
        code, out, err = _eb("run", "--cwd", str(root), "--json", "--no-html")
        assert "Traceback" not in err
        assert code == 1, err
        statuses = {c["check_id"]: c["status"] for c in json.loads(out)["checks"]}
        assert statuses["bad"] == "failed", err


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_kept_run_edited_without_the_secret_is_never_replayed(
    data: st.DataObject, cached_project: Path
) -> None:
    with _scratch() as scratch:
        root = scratch / "proj"
        shutil.copytree(cached_project, root)
        cache = root / ".eval-banana" / "cache"
        ((path, document),) = _stored(cache, "runs").values()
        if data.draw(st.booleans()):
            document["exit_code"] = 0  # the edit that would turn the run green
        for _ in range(data.draw(st.integers(min_value=0, max_value=2))):
            document = _mutate(data, document)
        if data.draw(st.booleans()) or not isinstance(document, dict):
            path.write_text(json.dumps(document))  # its old MAC, now stale
        else:
            path.write_text(json.dumps({k: v for k, v in document.items() if k != "mac"}))
        code, out, err = _eb("run", "--cwd", str(root), "--json", "--no-html")
        assert "Traceback" not in err
        assert code == 1, err
        assert "Replayed run" not in err
        statuses = {c["check_id"]: c["status"] for c in json.loads(out)["checks"]}
        assert statuses["bad"] == "failed", err
