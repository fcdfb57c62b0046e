"""Text at the edges of Unicode, each of which ended a run in a traceback.

Half a surrogate pair: JSON can escape one (`\\ud800`), JavaScript writes one when it cuts a
string inside an emoji, and no UTF-8 file can hold one; from a judge's answer, an artifact or a
dataset it reached the first report eb wrote. A console that cannot encode a character (stdout
redirected on Windows is cp1252) met it in a judge's reason.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from eval_banana.core.jsonvalues import lone_surrogate
from tests.conftest import check_yaml
from tests.reporting.conftest import latest_run_dir, run_eb

HALF = "\\ud83d"  # the JSON escape of an emoji's first half, as a cut leaves it

TEXT_AGENT = f"""\
import sys
print(r'{{"score": 0, "reason": "The answer ends in a cut emoji {HALF}"}}')
"""

# claude's stream-json: the model's name, its text and its error each hold half a pair.
CLAUDE_AGENT = f"""\
import sys
print(r'{{"type": "system", "subtype": "init", "model": "m{HALF}"}}')
print(r'{{"type": "assistant", "message": {{"content": [{{"type": "text", "text": "hm {HALF}"}}]}}}}')
print(r'{{"type": "result", "subtype": "error_during_execution", "is_error": true, '
      r'"result": "boom {HALF} here", "usage": {{"input_tokens": 1, "output_tokens": 2}}}}')
sys.exit(1)
"""


def _project(root: Path, *, agent: str, dialect: str) -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        f'[harness]\nagent = "cutter"\nisolation = "off"\n\n[agents.cutter]\n'
        f'command = [{json.dumps(sys.executable)}, "agent.py"]\noutput_dialect = "{dialect}"\n',
        encoding="utf-8",
    )
    (root / "agent.py").write_text(agent, encoding="utf-8")
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "j.yaml").write_text(
        "schema_version: 1\nid: j\ntype: harness_judge\ndescription: d\ninstructions: Grade.\n",
        encoding="utf-8",
    )
    return root


@pytest.mark.parametrize(
    ("agent", "dialect", "field", "said"),
    [
        (TEXT_AGENT, "text", "reason", "The answer ends in a cut emoji \ufffd"),
        (CLAUDE_AGENT, "claude", "error_detail", "The agent reported: boom \ufffd here"),
    ],
)
def test_a_judges_half_surrogate_is_a_replacement_character_in_every_report(
    tmp_path: Path, agent: str, dialect: str, field: str, said: str
) -> None:
    project = _project(tmp_path / "proj", agent=agent, dialect=dialect)
    junit = tmp_path / "junit.xml"
    ran = run_eb("run", "--cwd", str(project), "--junit-xml", str(junit))
    assert ran.returncode == 1, ran.stderr
    assert "Traceback" not in ran.stderr
    run_dir = latest_run_dir(project)
    check = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))["checks"][0]
    assert said in check[field]
    assert said in (run_dir / "report.md").read_text(encoding="utf-8")
    assert said in ran.stdout
    assert (run_dir / "report.html").is_file()
    told = [e.get("message", "") for e in ET.parse(junit).iter() if e.tag in ("failure", "error")]
    assert len(told) == 1 and said in told[0], told
    # The transcript too (it wrote `?` for the half, where the result has U+FFFD).
    (transcript,) = (run_dir / "checks").glob("*.transcript.jsonl")
    texts = [json.loads(line).get("text", "") for line in transcript.read_text().splitlines()]
    assert not [text for text in texts if "?" in text or lone_surrogate(text) is not None]


def test_an_artifact_holding_half_a_surrogate_pair_fails_its_check_saying_where(
    project: Callable[..., Path],
) -> None:
    root = project(
        {
            "out.json": '{"title": "Launch ' + HALF + '"}',
            "eval_checks/a.yaml": "schema_version: 1\nid: a\ntype: assertions\ndescription: d\n"
            "artifact: out.json\nassert:\n  - {path: title, op: equals, value: Launch}\n",
        }
    )
    ran = run_eb("run", "--cwd", str(root))
    assert ran.returncode == 1, ran.stderr
    assert "Traceback" not in ran.stderr
    reason = json.loads((latest_run_dir(root) / "report.json").read_text())["checks"][0]["reason"]
    assert (
        "artifact out.json is not Unicode text: at title, the escape \\ud83d (half of a UTF-16 "
        "surrogate pair, alone); write the character itself, or both halves of its escape pair"
    ) in reason


def test_a_dataset_row_holding_half_a_surrogate_pair_is_told_with_the_fix(
    project: Callable[..., Path],
) -> None:
    root = project(
        {
            "data/rows.jsonl": '{"id": "a", "text": "fine"}\n{"id": "b", "text": "cut '
            + HALF
            + '"}\n',
            "eval_checks/f.yaml": "schema_version: 1\nid: f\ntype: deterministic\n"
            "description: 'row {{ case.text }}'\ncases_from: data/rows.jsonl\nscript: pass\n",
        }
    )
    validated = run_eb("validate", "--cwd", str(root), "--json")
    assert validated.returncode == 2, validated.stderr
    (error,) = json.loads(validated.stdout)["errors"]
    assert error["message"] == (
        "data/rows.jsonl line 2: field text holds the escape \\ud83d (half of a UTF-16 "
        "surrogate pair, alone), which JSON cannot say"
    )
    assert error["hint"].startswith("write the character itself, or both halves of its escape")


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "cp1252"])
def test_a_stream_that_cannot_encode_a_reason_writes_it_escaped(
    tmp_path: Path, encoding: str
) -> None:
    # stdout redirected on Windows is cp1252; a judge's reason can hold any character. It
    # ended the run in a traceback after the report was written, and `eb history` likewise.
    agent = 'print(\'{"score": 0, "reason": "Nope \\\\ud83d\\\\udeab \\\\u2713"}\')\n'
    project = _project(tmp_path / "proj", agent=agent, dialect="text")
    ran = run_eb("run", "--cwd", str(project), PYTHONIOENCODING=encoding)
    assert ran.returncode == 1, ran.stderr
    assert "Traceback" not in ran.stdout + ran.stderr
    assert "FAILED j - Nope \\U0001f6ab \\u2713 (" in ran.stdout
    history = run_eb("history", "--cwd", str(project), PYTHONIOENCODING=encoding)
    assert history.returncode == 0 and "Traceback" not in history.stderr, history.stderr
    # A UTF-8 stream is written as it was.
    plain = run_eb("run", "--cwd", str(project))
    assert "FAILED j - Nope \U0001f6ab \u2713 (" in plain.stdout


def test_a_c_locale_without_utf8_mode_writes_what_it_cannot_encode_escaped(
    project: Callable[..., Path],
) -> None:
    # LC_ALL=C with UTF-8 mode off: Python's streams are ASCII with errors=surrogateescape, not
    # "strict", and `eb list` and `eb history` ended in a UnicodeEncodeError traceback.
    check = check_yaml("cafe", script="raise SystemExit('\u00e9chec')")
    root = project({"eval_checks/cafe.yaml": check.replace("Check cafe.", "V\u00e9rifie")})
    ascii_console = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}
    ran = run_eb("run", "--cwd", str(root), **ascii_console)
    assert ran.returncode == 1 and "FAILED cafe - \\xe9chec" in ran.stdout, ran.stderr
    listed = run_eb("list", "--cwd", str(root), **ascii_console)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("cafe\tdeterministic\tV\\xe9rifie\t")
    history = run_eb("history", "--cwd", str(root), **ascii_console)
    assert history.returncode == 0 and "Traceback" not in history.stderr, history.stderr


def test_a_utf8_check_file_name_read_as_ascii_is_told_with_the_locale_fix(
    project: Callable[..., Path],
) -> None:
    # In a C locale with UTF-8 mode off, données/café.yaml was refused as having "a byte that
    # is not UTF-8 in its name": its bytes are UTF-8, and the fix is the locale.
    root = project({"eval_checks/donn\u00e9es/caf\u00e9.yaml": check_yaml("ok")})
    ascii_names = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}
    refused = run_eb("run", "--cwd", str(root), **ascii_names)
    assert refused.returncode == 2
    assert "is not UTF-8" not in refused.stderr
    assert (
        "donn\\xc3\\xa9es/caf\\xc3\\xa9.yaml has a UTF-8 name (shown as \\xNN) that "
        in refused.stderr
    )
    assert "hint: Run eb with PYTHONUTF8=1 (or LC_ALL=C.UTF-8)" in refused.stderr
    ran = run_eb("run", "--cwd", str(root), **{**ascii_names, "PYTHONUTF8": "1"})
    assert ran.returncode == 0, ran.stderr


# What the artifact holds against what the check expects: each pair prints alike.
ALIKE = {
    "city": ("cafe\u0301", "café"),  # decomposed (as macOS file names are) against composed
    "answer": ("Paris\u200b", "Paris"),  # a zero-width space
    "name": ("a\u00a0b", "a b"),  # a no-break space
    "word": ("\u1112\u1161\u11ab", "\ud55c"),  # a Hangul syllable as jamo: no mark to escape
}


def test_a_failed_assertion_shows_apart_texts_that_print_alike(
    project: Callable[..., Path],
) -> None:
    artifact = {key: found for key, (found, _) in ALIKE.items()}
    artifact |= {"cafe\u0301": 1, "tags": ["Paris\u200b"], "story": "Par\u200bis is far"}
    equals = [{"path": key, "op": "equals", "value": wanted} for key, (_, wanted) in ALIKE.items()]
    others = [
        {"path": "café", "op": "exists"},
        {"path": "tags", "op": "contains", "value": "Paris"},
        {"path": "story", "op": "contains", "value": "Paris"},
        {"path": "city", "op": "equals", "value": "tea"},  # prints otherwise: quoted as it is
    ]
    check = {
        "schema_version": 1,
        "id": "a",
        "type": "assertions",
        "description": "d",
        "artifact": "out.json",
        "assert": equals + others,
    }
    root = project(
        {
            "out.json": json.dumps(artifact),
            "eval_checks/a.yaml": json.dumps(check, ensure_ascii=False),
        }
    )
    ran = run_eb("run", "--cwd", str(root))
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    result = json.loads((latest_run_dir(root) / "report.json").read_text())["checks"][0]
    said = [entry["message"] for entry in result["details"]["assertions"]]
    hidden = (
        "(they print alike: invisible characters, combining marks and non-ASCII spaces are escaped)"
    )
    assert said == [
        f'city equals "café": found the string "cafe\\u0301", not "café" {hidden}',
        f'answer equals "Paris": found the string "Paris\\u200b", not "Paris" {hidden}',
        f'name equals "a b": found the string "a\\u00a0b", not "a b" {hidden}',
        'word equals "\ud55c": found the string "\\u1112\\u1161\\u11ab", not "\\ud55c" '
        "(they print alike: characters beyond ASCII are escaped)",
        f"café exists: path not found: the top level has no key 'café' but has 'cafe\\u0301' {hidden}",
        'tags contains "Paris": found an array of 1 element, none equal to "Paris": its element '
        f'"Paris\\u200b" is not "Paris" {hidden}',
        'story contains "Paris": found the string "Par\\u200bis is far", which does not hold '
        f'"Paris" {hidden}',
        'city equals "tea": found the string "cafe\u0301"',
    ]
    assert said[0] in ran.stdout  # the console's reason too
