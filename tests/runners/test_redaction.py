"""No secret lands in a file eb writes or on its console, even when a check prints its environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_banana.core.masking import cut
from eval_banana.runners.redact import MASK, Redactor, is_credential_name, redactor_for
from eval_banana.runners.secretforms import SecretForms

SECRET = "sk-live-0123456789abcdef"
TOKEN = "ghp_tokenvalue123456"
LISTED = "listed-secret-value"
SHORT = "abc12"  # under six characters: left alone

# Prints the whole environment on stdout and on stderr, then fails with a secret in its message.
LEAKY = """\
import os, sys
for name, value in sorted(os.environ.items()):
    print(f"{name}={value}")
    print(f"{name}={value}", file=sys.stderr)
raise SystemExit("leaking " + os.environ["PAYMENT_API_KEY"])
"""


def _project(root: Path) -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\n\n[execution]\nredact = ["MY_PLAIN_*"]\n'
    )
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "leaky.yaml").write_text(
        "schema_version: 1\nid: leaky\ntype: deterministic\ndescription: Prints its env.\n"
        f"script: {json.dumps(LEAKY)}\n"
    )
    return root


def _every_file(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()]


def test_a_check_that_prints_its_environment_leaves_no_secret_anywhere(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    junit = tmp_path / "junit.xml"
    summary = tmp_path / "summary.md"
    result_doc = tmp_path / "result.md"
    environ = {
        **os.environ,
        "PAYMENT_API_KEY": SECRET,
        "GITHUB_TOKEN": TOKEN,
        "MY_PLAIN_VALUE": LISTED,
        "SHORT_SECRET": SHORT,
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    done = subprocess.run(
        [
            sys.executable, "-m", "eval_banana", "run", "--cwd", str(root),
            "--junit-xml", str(junit), "--annotations", "github", "--result-out", str(result_doc),
        ],
        capture_output=True, text=True, env=environ, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    written = [*_every_file(root / "runs"), junit, summary, result_doc]
    assert len(written) >= 12
    for path in written:
        data = path.read_bytes()
        for secret in (SECRET, TOKEN, LISTED):
            assert secret.encode() not in data, f"{secret} leaked into {path}"
    for stream in (done.stdout, done.stderr):
        assert SECRET not in stream and TOKEN not in stream and LISTED not in stream
    (run_dir,) = list((root / "runs").iterdir())
    stdout_file = next((run_dir / "checks").glob("leaky-*.stdout.txt")).read_text()
    assert f"PAYMENT_API_KEY={MASK}" in stdout_file and f"GITHUB_TOKEN={MASK}" in stdout_file
    assert f"SHORT_SECRET={SHORT}" in stdout_file  # too short to redact, as documented
    report = json.loads((run_dir / "report.json").read_text())
    assert report["checks"][0]["reason"] == f"leaking {MASK}"


PRINTS_TWO_DSNS = """\
import os
print("DSN_A=" + os.environ.get("DSN_A", "unset"))
print("DSN_B=" + os.environ.get("DSN_B", "unset"))
"""


def _eb_run(*, root: Path, flags: list[str], environ: dict[str, str]) -> Path:
    """Run `eb run` on `root` with `flags`; the run folder it wrote."""
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), *flags],
        capture_output=True, text=True, env=environ, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run_dir,) = list((root / "runs").iterdir())
    return run_dir


def _dsn_project(root: Path) -> Path:
    """A project whose one check prints the variables DSN_A and DSN_B (runs in `runs/`)."""
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text('[core]\noutput_dir = "runs"\n')
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "dsns.yaml").write_text(
        "schema_version: 1\nid: dsns\ntype: deterministic\ndescription: Prints two DSNs.\n"
        f"script: {json.dumps(PRINTS_TWO_DSNS)}\n"
    )
    return root


def test_a_comma_separated_redact_flag_masks_every_name_in_every_file(tmp_path: Path) -> None:
    root = _dsn_project(tmp_path / "proj")
    first, second = "postgres://u:pw-aaaaaa@db", "postgres://u:pw-bbbbbb@db"
    environ = {**os.environ, "DSN_A": first, "DSN_B": second}
    run_dir = _eb_run(root=root, flags=["--redact", "DSN_A,DSN_B"], environ=environ)
    for path in _every_file(run_dir):
        data = path.read_bytes()
        assert first.encode() not in data and second.encode() not in data, f"leaked into {path}"
    stdout_file = next((run_dir / "checks").glob("dsns-*.stdout.txt")).read_text()
    assert stdout_file == f"DSN_A={MASK}\nDSN_B={MASK}\n"
    config = json.loads((run_dir / "stages" / "config.json").read_text())
    assert config["settings"]["execution"]["redact"] == ["DSN_A", "DSN_B"]


def test_a_comma_separated_env_allow_flag_lets_each_name_through(tmp_path: Path) -> None:
    root = _dsn_project(tmp_path / "proj")
    environ = {**os.environ, "DSN_A": "first-value", "DSN_B": "second-value"}
    flags = ["--env-policy", "allowlist", "--env-allow", "DSN_A,DSN_B", "--env-allow", "PATH"]
    run_dir = _eb_run(root=root, flags=flags, environ=environ)
    stdout_file = next((run_dir / "checks").glob("dsns-*.stdout.txt")).read_text()
    assert stdout_file == "DSN_A=first-value\nDSN_B=second-value\n"


@pytest.mark.parametrize(
    ("name", "redacted"),
    [
        ("OPENAI_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("aws_secret", True),
        ("DB_PASSWORD", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("AWS_ACCESS_KEY_ID", True),  # what an S3 remote's checks receive
        ("R2_ACCESS_KEY_ID", True),
        ("AWS_REGION", False),
        ("KEYBOARD", False),
        ("PATH", False),
        ("EVAL_BANANA_CHECK_TOKEN", False),
    ],
)
def test_which_names_count_as_credentials(name: str, redacted: bool) -> None:
    assert is_credential_name(name=name) is redacted


def test_listed_names_and_patterns_are_redacted_too() -> None:
    redactor = redactor_for(
        environ={"PLAIN": "plainvalue1", "OTHER": "othervalue1"}, names=["PLA*"]
    )
    assert redactor.secrets == ("plainvalue1",)


def test_a_file_is_rewritten_only_when_it_holds_a_secret(tmp_path: Path) -> None:
    redactor = Redactor(secrets=[SECRET])
    clean = tmp_path / "clean.txt"
    clean.write_text("nothing to see\n")
    before = clean.stat().st_mtime_ns, clean.stat().st_ino
    assert redactor.file(clean) is False
    assert (clean.stat().st_mtime_ns, clean.stat().st_ino) == before


def test_a_secret_split_across_read_blocks_is_still_masked(tmp_path: Path) -> None:
    # The file is read in 1 MiB blocks: put secrets across every block boundary.
    block = 1 << 20
    parts = []
    for offset in (block - 5, 2 * block - 1, 3 * block - len(SECRET) + 1):
        parts.append((offset, SECRET))
    data = bytearray(b"x" * (3 * block + 100))
    for offset, secret in parts:
        data[offset : offset + len(secret)] = secret.encode()
    path = tmp_path / "big.txt"
    path.write_bytes(bytes(data))
    assert Redactor(secrets=[SECRET]).file(path) is True
    text = path.read_bytes()
    assert SECRET.encode() not in text
    assert text.count(MASK.encode()) == 3
    assert len(text) == len(data) - 3 * (len(SECRET) - len(MASK))


def test_a_secret_containing_another_is_masked_whole() -> None:
    redactor = Redactor(secrets=["abcdef", "abcdefghij"])
    assert redactor.text("x abcdefghij y abcdef") == f"x {MASK} y {MASK}"


# An agent that breaks without a verdict, quoting a secret of its environment on stderr.
BROKEN_AGENT = """\
import os, sys
print("cannot reach the model with key " + os.environ["PAYMENT_API_KEY"], file=sys.stderr)
raise SystemExit(3)
"""


def test_a_warning_quoting_what_a_judge_printed_is_masked_on_the_console(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    agent = tmp_path / "broken_agent.py"
    agent.write_text(BROKEN_AGENT)
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\n\n[harness]\nagent = "broken"\n\n'
        f"[agents.broken]\ncommand = {json.dumps([sys.executable, str(agent)])}\n"
    )
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "judged.yaml").write_text(
        "schema_version: 1\nid: judged\ntype: harness_judge\ndescription: Judged.\n"
        "instructions: Judge it.\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root)],
        capture_output=True, text=True, env={**os.environ, "PAYMENT_API_KEY": SECRET},
        stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    # The runner's warning still says what the agent reported, with the secret masked.
    assert "warning: Harness judge check judged failed: Agent exited with code 3" in done.stderr
    assert f"cannot reach the model with key {MASK}" in done.stderr
    assert SECRET not in done.stdout + done.stderr
    for path in _every_file(root / "runs"):
        assert SECRET.encode() not in path.read_bytes(), path


ODD = 'a<b>&c"d\\e/f\tgé😀h'


def _upper_hex(text: str) -> str:
    return re.sub(r"\\u([0-9a-f]{4})", lambda match: "\\u" + match.group(1).upper(), text)


@pytest.mark.parametrize(
    "written",
    [
        ODD,
        json.dumps(ODD)[1:-1],  # Python: non-ASCII as \uXXXX
        json.dumps(ODD, ensure_ascii=False)[1:-1],  # JavaScript, Rust
        _upper_hex(json.dumps(ODD)[1:-1].replace("/", "\\/")),  # \/, hex in capitals
        json.dumps(ODD, ensure_ascii=False)[1:-1]  # Go: <, > and & escaped too
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026"),
        json.dumps(json.dumps(ODD)[1:-1])[1:-1],  # JSON quoted in JSON
        'a\\u003Cb>&c\\"d\\\\e/f\\u0009g\\u00e9😀h',  # mixed
    ],
)
def test_a_secret_is_masked_however_a_json_encoder_wrote_it(written: str, tmp_path: Path) -> None:
    redactor = Redactor(secrets=[ODD])
    assert redactor.text(f"key={written};") == f"key={MASK};"
    path = tmp_path / "out.jsonl"
    path.write_bytes(f"key={written};".encode())
    assert redactor.file(path) is True
    assert path.read_bytes() == f"key={MASK};".encode()


def test_an_escaped_secret_split_across_read_blocks_is_still_masked(tmp_path: Path) -> None:
    escaped = json.dumps(ODD)[1:-1].encode()
    block = 1 << 20
    data = bytearray(b"x" * (3 * block))
    for offset in (block - 3, 2 * block - len(escaped) + 2):
        data[offset : offset + len(escaped)] = escaped
    path = tmp_path / "big.jsonl"
    path.write_bytes(bytes(data))
    assert Redactor(secrets=[ODD]).file(path) is True
    text = path.read_bytes()
    assert escaped not in text and text.count(MASK.encode()) == 2
    assert len(text) == len(data) - 2 * (len(escaped) - len(MASK))


# ------------------------------------------------------------ many secrets, one pass


def _one_secret_at_a_time(text: str, *, secrets: list[str]) -> str:
    """The masking every secret searched for in turn gives, longest first."""
    for secret in sorted({s for s in secrets if len(s) >= 6}, key=lambda v: (-len(v), v)):
        text = SecretForms(secret).masked(text, mask=MASK)
    return text


class _EverySecretSearched:
    """A masker that searches the text for each secret in turn (what a Redactor must equal)."""

    def __init__(self, secrets: list[str]) -> None:
        self._forms = [SecretForms(s) for s in sorted({s for s in secrets if len(s) >= 6})]
        self.reach = max((forms.longest for forms in self._forms), default=1) - 1

    def spans(self, text: str) -> list[tuple[int, int]]:
        return sorted(span for forms in self._forms for span in forms.text_spans(text))


TRICKY = {
    # the shorter secret starts first and overlaps the longer one
    "overlapping": (["zzzabc", "abcdefgh"], "..zzzabcdefgh..abcdefgh..zzzabc"),
    # one inside another, and the inner one alone
    "contained": (["sk-inner-1", "Bearer sk-inner-1!"], "Bearer sk-inner-1! and sk-inner-1"),
    # a secret holding the mask's characters appears only once another is masked
    "across a mask": (["ab***cd", "XXXXXXXX"], "abXXXXXXXXcd ab***cd"),
    "escaped forms": (['q"uo\\te1', "uo\\te1zz"], 'x q\\"uo\\\\te1zz y'),
    "self-overlapping": (["aaaaaa", "aaaaaab"], "aaaaaaaaab aaaaaaa"),
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_many_secrets_mask_as_searching_each_in_turn_does(name: str) -> None:
    secrets, text = TRICKY[name]
    redactor = Redactor(secrets=secrets)
    assert redactor.text(text) == _one_secret_at_a_time(text, secrets=secrets)
    alone = _EverySecretSearched(secrets)
    assert redactor.spans(text) == alone.spans(text)
    for limit in range(0, len(text) + 2, 3):
        for edges in ({}, {"open_start": True}, {"open_end": True, "keep_end": True}):
            assert cut(text, masker=redactor, limit=limit, **edges) == cut(
                text, masker=alone, limit=limit, **edges
            ), (limit, edges)


@settings(max_examples=300, deadline=None)
@given(
    secrets=st.lists(st.text(alphabet='ab*"\\\n', min_size=6, max_size=9), max_size=4),
    pieces=st.lists(st.text(alphabet='ab*"\\\nn', max_size=12), max_size=6),
)
def test_any_secrets_mask_as_searching_each_in_turn_does(
    secrets: list[str], pieces: list[str]
) -> None:
    text = "".join(
        piece + (secrets[i % len(secrets)] if secrets else "") for i, piece in enumerate(pieces)
    )
    redactor = Redactor(secrets=secrets)
    assert redactor.text(text) == _one_secret_at_a_time(text, secrets=secrets)
    assert redactor.spans(text) == _EverySecretSearched(secrets).spans(text)


def test_a_text_is_searched_only_for_the_secrets_it_may_hold(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # 200 secrets over an output that holds two: the output is read once to learn which, and
    # searched for those two, not once per secret.
    searched: list[SecretForms] = []
    for method in ("masked", "text_spans", "occurs_in", "spans"):
        original = getattr(SecretForms, method)

        def counted(self: SecretForms, *args: Any, _original: Any = original, **kw: Any) -> Any:
            searched.append(self)
            return _original(self, *args, **kw)

        monkeypatch.setattr(SecretForms, method, counted)
    secrets = [f"sk-{n:04d}-0123456789abcdef" for n in range(200)]
    redactor = Redactor(secrets=secrets)
    output = "log line\n" * 1000 + secrets[7] + "\n" + "log line\n" * 1000 + secrets[150]
    assert redactor.text(output).count(MASK) == 2
    assert len(searched) == 2, f"{len(searched)} searches for 2 secrets"
    searched.clear()
    assert len(redactor.spans(output)) == 2 and len(searched) == 2
    path = tmp_path / "out.txt"
    path.write_text(output)
    searched.clear()
    assert redactor.file(path) is True
    assert len(set(searched)) == 2, f"{len(set(searched))} secrets searched for, 2 there"
    assert path.read_text() == redactor.text(output)


PRINTS_THREE_DSNS = """\
import os
for name in ("DSN_FILE", "DSN_VAR", "DSN_FLAG"):
    print(name + "=" + os.environ[name])
"""
DSNS = {
    "DSN_FILE": "postgres://u:pw-file01@db",
    "DSN_VAR": "postgres://u:pw-var001@db",
    "DSN_FLAG": "postgres://u:pw-flag01@db",
}


def _eb(*args: str, root: Path, environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", *args, "--cwd", str(root)],
        capture_output=True, text=True, env=environ, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip


def _three_dsn_project(root: Path) -> Path:
    """A project that lists DSN_FILE in `[execution] redact`; its check prints three DSNs."""
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\n\n[execution]\nredact = ["DSN_FILE"]\n'
    )
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "dsns.yaml").write_text(
        "schema_version: 1\nid: dsns\ntype: deterministic\ndescription: Prints three DSNs.\n"
        f"script: {json.dumps(PRINTS_THREE_DSNS)}\n"
    )
    return root


def _leaked(run_dir: Path) -> list[str]:
    """`name in file` for each DSN written in clear in the run folder."""
    return [
        f"{name} in {path.relative_to(run_dir)}"
        for path in _every_file(run_dir)
        for name, value in DSNS.items()
        if value.encode() in path.read_bytes()
    ]


def test_the_flag_and_the_variable_add_to_the_projects_redact_list(tmp_path: Path) -> None:
    root = _three_dsn_project(tmp_path / "proj")
    environ = {**os.environ, **DSNS, "EVAL_BANANA_REDACT": "DSN_VAR"}
    run_dir = _eb_run(root=root, flags=["--redact", "DSN_FLAG"], environ=environ)
    assert _leaked(run_dir) == []
    config = json.loads((run_dir / "stages" / "config.json").read_text())
    assert config["settings"]["execution"]["redact"] == ["DSN_FILE", "DSN_VAR", "DSN_FLAG"]
    assert config["sources"]["execution.redact"] == "cli"
    status = _eb("status", "--run-dir", str(run_dir), root=root, environ=environ)
    assert status.returncode == 0, status.stdout + status.stderr
    assert "config    stages/config.json     ok" in status.stdout


def test_an_empty_redact_variable_keeps_the_projects_names(tmp_path: Path) -> None:
    root = _three_dsn_project(tmp_path / "proj")
    environ = {**os.environ, **DSNS, "EVAL_BANANA_REDACT": ""}
    run_dir = _eb_run(root=root, flags=[], environ=environ)
    stdout_file = next((run_dir / "checks").glob("dsns-*.stdout.txt")).read_text()
    assert stdout_file.splitlines()[0] == f"DSN_FILE={MASK}"
    assert not [leak for leak in _leaked(run_dir) if leak.startswith("DSN_FILE")]
    config = json.loads((run_dir / "stages" / "config.json").read_text())
    assert config["settings"]["execution"]["redact"] == ["DSN_FILE"]
    status = _eb("status", "--run-dir", str(run_dir), root=root, environ=environ)
    assert status.returncode == 0, status.stdout + status.stderr


def test_a_rerun_of_execute_with_redact_keeps_the_names_the_run_masked(tmp_path: Path) -> None:
    root = _three_dsn_project(tmp_path / "proj")
    environ = {**os.environ, **DSNS}
    run_dir = _eb_run(root=root, flags=["--redact", "DSN_VAR"], environ=environ)
    rerun = _eb(
        "stage", "execute", "--run-dir", str(run_dir), "--redact", "DSN_FLAG",
        root=root, environ=environ,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    # What execute wrote again (report.json is stale, from the run that did not mask DSN_FLAG).
    assert [leak for leak in _leaked(run_dir) if " in checks/" in leak] == []
    stdout_file = next((run_dir / "checks").glob("dsns-*.stdout.txt")).read_text()
    assert stdout_file == f"DSN_FILE={MASK}\nDSN_VAR={MASK}\nDSN_FLAG={MASK}\n"
