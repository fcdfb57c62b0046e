"""What the Action's scripts share: the GitHub Actions files they write and the inputs they read.

GitHub hands a step its inputs as environment variables (set by the `env:` of each step in
action.yml) and takes its outputs as `name=value` lines, or heredoc blocks for values that may
hold a newline, appended to the file named by GITHUB_OUTPUT.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def flag(name: str, *, called: str) -> bool:
    """A `true`/`false` value (GitHub passes every input as text); empty is false.

    Only those two words, in any case: action.yml's `if:` conditions compare an input with
    'true' as GitHub does (case-insensitively), so a `yes` or `1` accepted here would turn a
    script's part on while the steps around it stay off. `called` names the value in the error.
    """
    value = env(name)
    if value.lower() in ("", "false"):
        return False
    if value.lower() == "true":
        return True
    fail(f'{called}={value!r} is not true or false: write "true" or "false"')
    return False  # pragma: no cover - fail() exits


def fail(message: str, *, code: int = 2) -> None:
    """An ::error annotation, then stop the step."""
    print(f"::error title=eval_banana action::{message}", file=sys.stderr)
    raise SystemExit(code)


def set_output(name: str, value: str) -> None:
    """Append one output to $GITHUB_OUTPUT (a heredoc, so any text is safe)."""
    target = env("GITHUB_OUTPUT")
    if not target:
        fail("GITHUB_OUTPUT is not set: these scripts run as steps of the eval_banana action")
    delimiter = f"EB_{secrets.token_hex(8)}"
    with Path(target).open("a", encoding="utf-8") as handle:
        handle.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def event() -> dict[str, Any]:
    """The webhook payload of the event that started the workflow ($GITHUB_EVENT_PATH)."""
    path = env("GITHUB_EVENT_PATH")
    if not path or not Path(path).is_file():
        return {}
    loaded = json.loads(Path(path).read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else {}


def pull_request_number() -> str:
    """The pull request the event is about, or empty (a push, a schedule...)."""
    number = (event().get("pull_request") or {}).get("number")
    return str(number) if isinstance(number, int) else ""


def workdir() -> Path:
    """The project folder: the `working-directory` input, relative to the workspace."""
    base = Path(env("GITHUB_WORKSPACE") or os.getcwd())
    return (base / env("EB_WORKING_DIRECTORY", ".")).resolve()
