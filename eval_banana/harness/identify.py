"""Is the program on PATH the one the template was written for? (the two `grok`s)

Two different programs install a `grok` command: xAI's Grok Build CLI (the built-in `grok`
template's flags, distributed on PyPI as `grok-cli-bin` and by xAI's installer) and the npm
package `@vibe-kit/grok-cli`, which rejects those flags (`error: unknown option
'--always-approve'`). The wrong one would turn every judge into an unexplained `error`, so
`eb validate` and the guard ask the program for its `--version` (and, if that is not xAI's,
its `--help`) and name the program to install.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

from eval_banana.models.stages import ResolvedHarness

# xAI's CLI: `grok 0.2.111 (94172f2aa4)`.
_XAI_VERSION = re.compile(r"^grok \d+\.\d+", re.MULTILINE)
# A flag only xAI's CLI has, which the built-in template passes.
_XAI_FLAG = "--always-approve"
# What @vibe-kit/grok-cli's --help shows (its own flag, and its description).
_VIBE_KIT_MARKS = ("--max-tool-rounds", "conversational AI CLI tool powered by Grok")
_PROBE_TIMEOUT_S = 15.0
_PROBE_LIMIT = 64 * 1024


def _probe(*, executable: str, flag: str) -> str:
    """The program's output for one flag (stdout, then stderr), or "" when it cannot tell."""
    import subprocess  # only a grok agent is probed: every other run leaves it unloaded

    try:
        process = subprocess.Popen(
            [executable, flag],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError:
        return ""
    try:
        output, _ = process.communicate(timeout=_PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the program and anything it started
        process.communicate()
        return ""
    return output[:_PROBE_LIMIT].decode("utf-8", errors="replace")


def _looks_like_xai(*, executable: str) -> tuple[bool, str, str]:
    """Whether it is xAI's CLI, with its --version output and (when asked) its --help."""
    version = _probe(executable=executable, flag="--version")
    if _XAI_VERSION.search(version):
        return True, version, ""
    help_text = _probe(executable=executable, flag="--help")
    return _XAI_FLAG in help_text, version, help_text


def wrong_program_message(*, harness: ResolvedHarness) -> str | None:
    """The guard's text when the agent's command is another program than its template's."""
    template = harness.template
    executable = harness.executable
    if executable is None or not template.command:
        return None
    if Path(template.command[0]).name != "grok" or _XAI_FLAG not in template.shared_flags:
        return None  # not the xAI template (a custom table for the other grok is fine)
    is_xai, version, help_text = _looks_like_xai(executable=executable)
    if is_xai:
        return None
    which = (
        "the npm package @vibe-kit/grok-cli"
        if any(mark in help_text for mark in _VIBE_KIT_MARKS)
        else "another program"
    )
    first_line = next((line.strip() for line in version.splitlines() if line.strip()), "")
    said = f" (its --version printed {first_line[:60]!r})" if first_line else ""
    return (
        f"Harness agent '{harness.agent}' runs {executable}, which is {which}{said}, not xAI's "
        f"Grok Build CLI that the grok template drives (that one rejects {_XAI_FLAG}); install "
        "xAI's CLI: pip install grok-cli-bin"
    )


WRONG_GROK_HINT = (
    "Install xAI's Grok Build CLI (pip install grok-cli-bin, which ships the binary inside the "
    "package, or xAI's own installer) and put its grok first on PATH, or describe the other "
    "program in an [agents.grok] table."
)
