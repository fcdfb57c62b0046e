"""Shared behaviour of the stand-in agent CLIs in this folder (tests put it first on PATH).

Each stand-in parses its real CLI's flags (see docs/agents.md), fails like the
real one on a wrong or missing flag, and prints that CLI's real output format. Environment:

- STANDIN_SCORE (0|1, default 1), STANDIN_REASON: the verdict printed; STANDIN_VERDICT: raw
  verdict text instead.
- STANDIN_MODE: ok (default), no_verdict, exit_nonzero, verdict_exit1, error_result, sleep, tool
  (opencode: its recorded tool call before the verdict),
  big (STANDIN_BYTES of extra output, default 1 MB), stderr_big, plus per-agent variants.
- STANDIN_RECORD: append {"agent", "argv", "env", "cwd", "stdin_is_devnull"} as one JSON line.
- STANDIN_CHILD_PID: in sleep mode, the pid of the spawned `sleep` child is written here.
- STANDIN_EXPECT_MODEL / STANDIN_EXPECT_EFFORT: when set, the model / effort this agent must
  receive through its template's channel ("" = must receive none); a mismatch fails the run.

Per-check steering for runs with several judges: a line `standin: key=value ...` in the check's
instructions sets score, mode, reason (use _ for spaces), sleep (seconds before answering),
needs (`<file>:<text>`: score 1 only when that file holds the text).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import NoReturn

PREAMBLE_MARK = "evaluation judge"


def die(message: str, code: int, *, stream: str = "stderr") -> NoReturn:
    out = sys.stderr if stream == "stderr" else sys.stdout
    out.write(message.rstrip("\n") + "\n")
    out.flush()
    sys.exit(code)


def _stdin_is_devnull() -> bool:
    try:
        here, null = os.fstat(0), os.stat(os.devnull)
    except OSError:
        return False
    return (here.st_dev, here.st_ino, here.st_rdev) == (null.st_dev, null.st_ino, null.st_rdev)


def start(agent: str) -> None:
    """Record what was received; refuse a stdin that is not /dev/null (agents read it)."""
    devnull = _stdin_is_devnull()
    record = os.environ.get("STANDIN_RECORD")
    if record:
        line = {
            "agent": agent,
            "argv": sys.argv[1:],
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "stdin_is_devnull": devnull,
        }
        with open(record, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
    if not devnull:
        die(f"{agent} stand-in: stdin is not /dev/null; the real CLI would read it", 97)


def mode() -> str:
    return os.environ.get("STANDIN_MODE", "ok")


def verdict() -> str:
    raw = os.environ.get("STANDIN_VERDICT")
    if raw is not None:
        return raw
    score = int(os.environ.get("STANDIN_SCORE", "1"))
    reason = os.environ.get("STANDIN_REASON", f"The stand-in was told to give {score}.")
    return json.dumps({"score": score, "reason": reason})


def big_size() -> int:
    return int(os.environ.get("STANDIN_BYTES", str(1 << 20)))


def check_prompt(prompt: str | None, agent: str, code: int) -> str:
    """The prompt must arrive as one argument holding the judge prompt's sections."""
    if not prompt or "Check Description:" not in prompt or "Instructions:" not in prompt:
        die(f"{agent} stand-in: no judge prompt where the real CLI expects it: {prompt!r}", code)
    _apply_directives(prompt)
    return prompt


def _apply_directives(prompt: str) -> None:
    for line in prompt.splitlines():
        if not line.strip().startswith("standin:"):
            continue
        for item in line.split(":", 1)[1].split():
            key, _, value = item.partition("=")
            if key == "sleep":
                time.sleep(float(value))
            elif key == "reason":
                # Reasons are prose: `_` stands for a space there (and only there).
                os.environ["STANDIN_REASON"] = value.replace("_", " ")
            elif key in ("score", "mode"):
                os.environ[f"STANDIN_{key.upper()}"] = value
            elif key == "needs":
                # `needs=<file>:<text>`: pass only when the file (from where the judge runs)
                # holds the text, so calibration cases can tell good from bad.
                path, _, text = value.partition(":")
                try:
                    with open(path, encoding="utf-8") as handle:
                        held = text in handle.read()
                except OSError:
                    held = False
                os.environ["STANDIN_SCORE"] = "1" if held else "0"


def expect(kind: str, received: str | None, agent: str, code: int) -> None:
    """Compare the model/effort received with STANDIN_EXPECT_<KIND>, if the test set one."""
    wanted = os.environ.get(f"STANDIN_EXPECT_{kind.upper()}")
    if wanted is None:
        return
    if (received or "") != wanted:
        die(f"{agent} stand-in: expected {kind} {wanted!r}, received {received!r}", code)


def sleep_with_child() -> NoReturn:
    """Spawn a grandchild `sleep` (same process group) and hang, for timeout tests."""
    child = subprocess.Popen(["sleep", "300"])
    pid_file = os.environ.get("STANDIN_CHILD_PID")
    if pid_file:
        with open(pid_file, "w", encoding="utf-8") as handle:
            handle.write(str(child.pid))
    sys.stdout.write("partial output before the hang\n")
    sys.stdout.flush()
    time.sleep(300)
    sys.exit(0)


def write(text: str) -> None:
    sys.stdout.write(text)


def flush_and_exit(code: int) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


class Parsed:
    def __init__(self) -> None:
        self.flags: set[str] = set()
        self.values: dict[str, list[str]] = {}
        self.positionals: list[str] = []

    def value(self, name: str) -> str | None:
        found = self.values.get(name)
        return found[-1] if found else None


def parse(
    argv: list[str],
    *,
    flags: dict[str, str],
    valued: dict[str, str],
    unknown: str,
    missing_value: str,
    code: int,
) -> Parsed:
    """Options by alias -> canonical name; `unknown`/`missing_value` are format strings on {opt}."""
    parsed = Parsed()
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "--":
            parsed.positionals.extend(argv[index:])
            break
        if not token.startswith("-") or token == "-":
            parsed.positionals.append(token)
            continue
        name, eq, inline = token.partition("=")
        if name in flags and not eq:
            parsed.flags.add(flags[name])
        elif name in valued:
            if eq:
                value = inline
            elif index < len(argv):
                value = argv[index]
                index += 1
            else:
                die(missing_value.format(opt=name), code)
            parsed.values.setdefault(valued[name], []).append(value)
        else:
            die(unknown.format(opt=name), code)
    return parsed


def decoy() -> str:
    """A verdict the agent did NOT give (seen in a tool result or the prompt): must never count.

    It holds the opposite score, or 1 when the scenario gives no verdict at all.
    """
    score = int(os.environ.get("STANDIN_SCORE", "1"))
    opposite = 1 if mode() == "no_verdict" else 1 - score
    return json.dumps({"score": opposite, "reason": "decoy from a tool result"})


# --- replaying the real CLIs' recorded output ---------------------------------------------------

RECORDINGS = os.path.join(os.path.dirname(os.path.realpath(__file__)), "recordings")


def _pieces(text: str) -> list[str]:
    """The verdict in the three deltas the model server streams (tests/model_server.py)."""
    if len(text) < 3:
        return [text]
    first, second = len(text) // 3, 2 * len(text) // 3
    return [text[:first], text[first:second], text[second:]]


def _escaped(text: str) -> str:
    return json.dumps(text)[1:-1]


def fill(
    text: str,
    *,
    answer: str,
    prompt: str,
    model: str,
    effort: str | None = None,
    cwd: str | None = None,
    home: str | None = None,
    tmp: str | None = None,
) -> str:
    """A recording with this run's values in its placeholders (see tests/agents_real/capture.py)."""
    values = {
        "@@PROMPT_JSON@@": _escaped(prompt),
        "@@PROMPT@@": prompt,
        "@@VERDICT_JSON@@": _escaped(answer),
        "@@VERDICT@@": answer,
        "@@MODEL@@": model,
        "@@CWD@@": cwd or os.getcwd(),
        "@@HOME@@": home or os.environ.get("HOME", "/nonexistent"),
        "@@URL@@": "http://127.0.0.1:9",
        "@@HOSTPORT@@": "127.0.0.1:9",
        "@@TMP@@": tmp or os.environ.get("TMPDIR", "/tmp"),
        "@@EFFORT@@": effort or "none",
    }
    pieces = _pieces(answer)
    for index in range(3):
        values[f"@@PIECE{index}@@"] = _escaped(pieces[index]) if index < len(pieces) else ""
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def recording(agent: str, case: str) -> dict:
    with open(os.path.join(RECORDINGS, agent, f"{case}.json"), encoding="utf-8") as handle:
        return json.load(handle)


def replay(
    agent: str,
    *,
    prompt: str,
    model: str | None,
    default_model: str,
    effort: str | None = None,
    exit_code: int | None = None,
) -> NoReturn:
    """Print exactly what the real CLI printed for this scenario, then exit like it did.

    STANDIN_MODE picks the recording: `error_result` the model's HTTP 500, `tool` a tool call
    before the verdict (where recorded), otherwise the pass
    or fail recording by score, with the answer text swapped in (`no_verdict` answers prose).
    """
    scenario = mode()
    if scenario == "error_result":
        case, answer = "error", ""
    elif scenario == "tool":  # the model called a tool first (recorded for opencode only)
        case, answer = "tool", verdict()
    else:
        answer = "I could not decide." if scenario == "no_verdict" else verdict()
        case = "fail" if os.environ.get("STANDIN_SCORE", "1") == "0" else "pass"
    recorded = recording(agent, case)
    shown_model = model or default_model
    for stream, key in ((sys.stdout, "stdout"), (sys.stderr, "stderr")):
        stream.write(
            fill(recorded[key], answer=answer, prompt=prompt, model=shown_model, effort=effort)
        )
    if exit_code is None:
        exit_code = 1 if scenario in ("exit_nonzero", "verdict_exit1") else recorded["exit_code"]
    flush_and_exit(int(exit_code))


# Scenarios answered from the recordings; the rest are hand-made failure variants.
REPLAYED = ("ok", "no_verdict", "error_result", "exit_nonzero", "verdict_exit1")
