"""Artifacts no assertion can grade, through `eb run`: each fails every assertion of its check
with a reason naming the artifact and what makes it unusable."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import EbResult


def _check(check_id: str, *, artifact: str, assertions: str) -> str:
    return (
        f"schema_version: 1\nid: {check_id}\ntype: assertions\ndescription: d\n"
        f"artifact: {artifact}\nassert:\n{assertions}"
    )


def _results(result: EbResult) -> dict[str, dict[str, Any]]:
    report = json.loads(result.stdout)
    return {check["check_id"]: check for check in report["checks"]}


_OK_AND_SCORE = "  - {path: ok, op: equals, value: 1}\n  - {path: score, op: exists}\n"


def test_nan_infinity_and_numbers_that_do_not_read_as_written_make_the_artifact_unusable(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """Python's readers take YAML's .nan and .inf, JSON's NaN, read 1e400 as infinity and
    1e-400 as 0: graded, `ok equals 1` passed beside them and `equals 0` passed on 1e-400.
    Every assertion fails instead, naming the value's path."""
    artifacts = {
        "nan_yaml": ("out/a.yaml", "score: .nan\nok: 1\n", "score holds NaN"),
        "inf_yaml": ("out/b.yaml", "ok: 1\nscore: [1, -.Inf]\n", "score[1] holds -Infinity"),
        "huge_json": (
            "out/c.json",
            '{"score": 1e400, "ok": 1}',
            "score holds the number 1e400, beyond the largest number a program reads from JSON "
            "(about 1.8e308): read, it would be Infinity, which JSON cannot say",
        ),
        "huge_yaml": ("out/d.yaml", "ok: 1\nscore: -1.0e+999\n", "it would be -Infinity"),
        "nan_json": ("out/e.json", '{"score": NaN, "ok": 1}', "score holds NaN"),
        "tiny_json": (
            "out/f.json",
            '{"ok": 1, "score": {"at": [0.5, 1e-400]}}',
            "score.at[1] holds the number 1e-400, below the smallest number a program reads "
            "from JSON (about 5e-324): read, it would be 0",
        ),
        "tiny_yaml": ("out/g.yaml", "ok: 1\nscore: 1.0e-400\n", "score holds the number 1.0e-400"),
    }
    files = {"out/fine.json": '{"ok": 1, "score": [0.0e-5, 1.5e308, 5e-324]}'}
    for check_id, (artifact, text, _) in artifacts.items():
        files[artifact] = text
        files[f"eval_checks/{check_id}.yaml"] = _check(
            check_id, artifact=artifact, assertions=_OK_AND_SCORE
        )
    files["eval_checks/fine.yaml"] = _check(
        "fine", artifact="out/fine.json", assertions=_OK_AND_SCORE
    )
    root = project(files)

    result = eb("run", "--cwd", str(root), "--no-html", "--json")

    assert result.exit_code == 1
    checks = _results(result)
    assert checks["fine"]["status"] == "passed"
    for check_id, (artifact, _, said) in artifacts.items():
        check = checks[check_id]
        assert check["status"] == "failed", check_id
        messages = [entry["message"] for entry in check["details"]["assertions"]]
        assert len(messages) == 2 and all(
            f"artifact {artifact} is unusable: " in m for m in messages
        )
        assert all(said in message for message in messages), (check_id, messages)


def test_a_whole_number_longer_than_python_reads_is_told_at_its_place_in_json_as_in_yaml(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """int() refuses more than 4,300 digits: a JSON artifact holding such a number was 'not
    valid JSON' with Python's advice to raise the limit; it is told as YAML tells it, at its
    line and column. Digits in a string and a long fraction before it are not the number."""
    digits = "7" * 5000
    json_text = f'{{"note": "{digits}", "ratio": 0.{digits},\n "id": 1, "checksum": {digits}}}'
    root = project(
        {
            "out/data.json": json_text,
            "out/data.yaml": f"id: 1\nchecksum: {digits}\n",
            "eval_checks/c_json.yaml": _check(
                "c_json", artifact="out/data.json", assertions="  - {path: id, op: exists}\n"
            ),
            "eval_checks/c_yaml.yaml": _check(
                "c_yaml", artifact="out/data.yaml", assertions="  - {path: id, op: exists}\n"
            ),
        }
    )

    result = eb("run", "--cwd", str(root), "--no-html", "--json")

    assert result.exit_code == 1
    checks = _results(result)
    said = "a whole number longer than 4,300 digits, which eb does not read"
    (json_message,) = [entry["message"] for entry in checks["c_json"]["details"]["assertions"]]
    assert (
        json_message == f"id exists: artifact out/data.json is unusable: line 2, column 23: {said}"
    )
    assert "sys.set_int_max_str_digits" not in json_message
    (yaml_message,) = [entry["message"] for entry in checks["c_yaml"]["details"]["assertions"]]
    assert yaml_message.endswith(f"line 2, column 11: {said}")


def test_a_whole_number_in_another_yaml_form_longer_than_python_writes_is_told_so(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """YAML 1.1 reads a hexadecimal, octal, binary or base-60 number at any length; one of more
    than 4,300 decimal digits made the check an `error` whose reason was Python's ValueError,
    with a traceback on the console, where the decimal form fails every assertion."""
    forms = {
        "hex": "0x" + "f" * 4000,
        "octal": "0" + "7" * 4800,
        "binary": "0b" + "1" * 14400,
        "base60": "1" + ":59" * 2500,
        "decimal": "9" * 4400,
    }
    files = {}
    for name, written in forms.items():
        files[f"out/{name}.yaml"] = f"id: 1\ndigest: {written}\n"
        files[f"eval_checks/{name}.yaml"] = _check(
            name, artifact=f"out/{name}.yaml", assertions="  - {path: id, op: exists}\n"
        )
    # Just within the limit, in each form: read as the number it is.
    files["out/fits.yaml"] = f"a: 0x{'f' * 3500}\nb: 0b{'1' * 14000}\nc: {'9' * 4300}\n"
    files["eval_checks/fits.yaml"] = _check(
        "fits", artifact="out/fits.yaml", assertions="  - {path: c, op: exists}\n"
    )
    root = project(files)

    result = eb("run", "--cwd", str(root), "--no-html", "--json")

    assert result.exit_code == 1
    assert "Traceback" not in result.stderr
    checks = _results(result)
    assert checks["fits"]["status"] == "passed"
    said = "line 2, column 9: a whole number longer than 4,300 digits, which eb does not read"
    for name in forms:
        assert checks[name]["status"] == "failed", (name, checks[name].get("error_detail"))
        (message,) = [entry["message"] for entry in checks[name]["details"]["assertions"]]
        assert message == f"id exists: artifact out/{name}.yaml is not valid YAML: {said}"


def test_a_yaml_artifact_beyond_8_mib_is_unusable_and_told_to_be_written_as_json(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """YAML costs about 100 bytes of memory per byte (a 9 MB artifact took 0.94 GB), so the one
    64 MiB cap let a YAML artifact exhaust memory. Beyond 8 MiB it is unusable, with the fix:
    write it as JSON, which the same bytes as JSON (even named .yaml) still are read as."""
    note = "a" * (8 * 1024 * 1024)
    check = "  - {path: title, op: equals, value: x}\n"
    control = _check("big_control", artifact="out/big.yaml", assertions=check).replace(
        "description: d\n", "description: d\nexpect: fail\n"
    )
    root = project(
        {
            "eval_checks/big.yaml": _check("big", artifact="out/big.yaml", assertions=check),
            "eval_checks/big_control.yaml": control,
            "eval_checks/as_json.yaml": _check(
                "as_json", artifact="out/as_json.yaml", assertions=check
            ),
        }
    )
    (root / "out").mkdir()
    (root / "out" / "big.yaml").write_text(f"title: x\nnote: {note}\n")
    (root / "out" / "as_json.yaml").write_text(json.dumps({"title": "x", "note": note}))

    result = eb("run", "--cwd", str(root), "--no-html", "--json")

    assert result.exit_code == 1
    checks = _results(result)
    assert checks["as_json"]["status"] == "passed"
    said = (
        "artifact out/big.yaml is larger than 8,388,608 bytes (8 MiB), the most eb reads as "
        "YAML, which takes about 100 times its size in memory to read: have the program write "
        "the artifact as JSON, which eb reads up to 64 MiB"
    )
    (message,) = [entry["message"] for entry in checks["big"]["details"]["assertions"]]
    assert (checks["big"]["status"], message) == ("failed", f'title equals "x": {said}')
    assert checks["big_control"]["status"] == "error"
    assert said in checks["big_control"]["error_detail"]


def test_utf16_and_utf32_artifacts_without_a_byte_order_mark_are_named_so(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """UTF-16 of ASCII letters without a byte order mark is valid UTF-8 with a NUL in every
    other byte: it was told as a JSON or YAML syntax error, where the same bytes as a dataset
    are named UTF-16."""
    plan = '{"title": "Release plan", "steps": [{"name": "build"}, {"name": "test"}]}\n'
    encodings = {
        "out/le.json": ("utf-16-le", "UTF-16 text without a byte order mark, not UTF-8"),
        "out/be.yaml": ("utf-16-be", "UTF-16 text without a byte order mark, not UTF-8"),
        "out/wide.json": ("utf-32-le", "UTF-32 text, not UTF-8 (two of every four bytes"),
    }
    files = {
        f"eval_checks/check{index}.yaml": _check(
            f"check{index}",
            artifact=artifact,
            assertions="  - {path: steps, op: lengthAtLeast, value: 2}\n",
        )
        for index, artifact in enumerate(encodings)
    }
    root = project(files)
    for artifact, (encoding, _) in encodings.items():
        (root / artifact).parent.mkdir(exist_ok=True)
        (root / artifact).write_bytes(plan.encode(encoding))

    result = eb("run", "--cwd", str(root), "--no-html", "--json")

    assert result.exit_code == 1
    checks = _results(result)
    for index, (artifact, (_, said)) in enumerate(encodings.items()):
        (assertion,) = checks[f"check{index}"]["details"]["assertions"]
        assert assertion["message"].startswith(
            f"steps lengthAtLeast 2: artifact {artifact} is {said}"
        ), assertion["message"]


def _nested(levels: int) -> str:
    """A JSON object `levels` deep: `tree` holds arrays down to "leaf"."""
    inner = levels - 1
    return '{"tree": ' + "[" * inner + '"leaf"' + "]" * inner + "}"


def test_an_artifact_is_read_to_the_depth_bound_and_refused_beyond_it(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A JSON artifact of 985 levels (which json.loads reads) was unusable with Python's
    RecursionError text, while the same bytes as .yaml passed: the cut-off was eb's stack.
    JSON and YAML alike are now read to 200 levels, and deeper is unusable, naming the bound."""
    exists = '  - {path: "tree[0]", op: exists}\n'
    artifacts = {
        "json_at_bound": ("out/a.json", 200),
        "yaml_at_bound": ("out/a.yaml", 200),
        "json_beyond": ("out/b.json", 201),
        "yaml_beyond": ("out/b.yaml", 201),
        "json_far_beyond": ("out/c.json", 985),
        "yaml_far_beyond": ("out/c.yaml", 985),
    }
    files: dict[str, str] = {}
    for check_id, (artifact, levels) in artifacts.items():
        files[artifact] = _nested(levels)
        files[f"eval_checks/{check_id}.yaml"] = _check(
            check_id, artifact=artifact, assertions=exists
        )
    root = project(files)

    result = eb("run", "--cwd", str(root), "--no-html", "--json")

    assert result.exit_code == 1
    checks = _results(result)
    for check_id, (artifact, levels) in artifacts.items():
        (assertion,) = checks[check_id]["details"]["assertions"]
        if levels <= 200:
            assert assertion["ok"], (check_id, assertion["message"])
            continue
        assert assertion["message"] == (
            f"tree[0] exists: artifact {artifact} is nested deeper than 200 levels, the most eb "
            "reads in a JSON or YAML file"
        ), check_id


def test_an_artifact_that_is_a_symlink_loop_is_named_as_one(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """Python 3.11's Path.resolve raised RuntimeError at the loop: the check errored with
    `RuntimeError: Symlink loop from ...` as its reason."""
    root = project(
        {"eval_checks/a.yaml": _check("a", artifact="out/lp.json", assertions=_OK_AND_SCORE)}
    )
    (root / "out").mkdir()
    os.symlink("lp.json", root / "out" / "lp.json")

    result = eb("run", "--cwd", str(root), "--no-html", "--json")

    assert result.exit_code == 1
    check = _results(result)["a"]
    assert check["status"] == "failed", check
    messages = [entry["message"] for entry in check["details"]["assertions"]]
    assert messages and all(
        message.endswith("artifact out/lp.json cannot be read: a symbolic link loop")
        for message in messages
    ), messages
