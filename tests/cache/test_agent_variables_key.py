"""The variables the config file sets for a judge's agent are part of its verdict key.

`[harness.env]` and an `[agents.<name>] fixed_env` are handed to the agent as written, so a
value there decides what the agent answers: changing one must judge again, not reuse the
verdict given under the old value. A `provider_env` placeholder counts by its text, never by
the value it reads from eb's environment (docs/incremental.md), and that value is never written.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from tests.processes import REPO, eb_process

# Answers by JUDGE_MODE; echoes JUDGE_TOKEN (a secret eb must mask) on stderr and in its reason.
AGENT = """\
import json, os, sys
with open({log!r}, "a", encoding="utf-8") as handle:
    handle.write("started\\n")
token = os.environ.get("JUDGE_TOKEN", "")
print("token is " + token, file=sys.stderr)
strict = os.environ.get("JUDGE_MODE") == "strict"
print(json.dumps({{"score": 0 if strict else 1, "reason": "mode judged, token " + token}}))
"""

CHECK = textwrap.dedent(
    """\
    schema_version: 1
    id: judge1
    type: harness_judge
    description: Something holds.
    instructions: Answer.
    inputs: []
    """
)


class Judged:
    """A project whose one judge is answered by AGENT, and the log of the agent's starts."""

    def __init__(self, *, tmp_path: Path, agent_table: str, harness_env: str) -> None:
        self.root = tmp_path / "proj"
        self.log = tmp_path / "starts.log"
        agent = tmp_path / "agent.py"
        agent.write_text(AGENT.format(log=str(self.log)))
        (self.root / "eval_checks").mkdir(parents=True)
        (self.root / "eval_checks" / "judge1.yaml").write_text(CHECK)
        self.config = self.root / ".eval-banana" / "config.toml"
        self.config.parent.mkdir()
        command = json.dumps([sys.executable, str(agent)])
        # No whole-run replay: each run looks the judge's verdict up by its own key.
        self.config.write_text(
            '[cache]\nmode = "on"\nreplay = false\n\n'
            '[harness]\nagent = "stand_in"\nisolation = "off"\n\n'
            f"[harness.env]\n{harness_env}\n\n"
            f'[agents.stand_in]\ncommand = {command}\nmodel_flag = ""\n{agent_table}\n'
        )

    def starts(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    def edit_config(self, old: str, new: str) -> None:
        text = self.config.read_text()
        assert old in text, text
        self.config.write_text(text.replace(old, new))

    def run(self, *, environ: dict[str, str] | None = None) -> tuple[int, str, bool]:
        """Run; the judge's status, whether it was answered from the cache, and eb's exit."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_")}
        env.update({"PYTHONPATH": str(REPO), **(environ or {})})
        done = eb_process(self.root, "run", "--json", env=env)
        report = json.loads(done.stdout)
        (check,) = report["checks"]
        hit = bool((check["details"].get("cache") or {}).get("hit"))
        return done.returncode, check["status"], hit


@pytest.mark.parametrize(
    ("agent_table", "harness_env", "lenient", "strict"),
    [
        ("", 'JUDGE_MODE = "lenient"', 'JUDGE_MODE = "lenient"', 'JUDGE_MODE = "strict"'),
        (
            'fixed_env = { JUDGE_MODE = "lenient" }',
            "",
            'fixed_env = { JUDGE_MODE = "lenient" }',
            'fixed_env = { JUDGE_MODE = "strict" }',
        ),
    ],
    ids=["harness.env", "fixed_env"],
)
def test_a_changed_variable_value_in_the_config_judges_again(
    tmp_path: Path, agent_table: str, harness_env: str, lenient: str, strict: str
) -> None:
    project = Judged(tmp_path=tmp_path, agent_table=agent_table, harness_env=harness_env)
    assert project.run() == (0, "passed", False)
    assert project.run() == (0, "passed", True)  # unchanged: reused
    assert project.starts() == 1
    project.edit_config(lenient, strict)
    # The agent answers otherwise under the new value: it is asked again, and fails.
    assert project.run() == (1, "failed", False)
    assert project.starts() == 2
    assert project.run() == (1, "failed", True)
    assert project.starts() == 2
    # Back to the old value: the verdict judged under it is still stored.
    project.edit_config(strict, lenient)
    assert project.run() == (0, "passed", True)
    assert project.starts() == 2


def test_a_placeholder_counts_by_its_text_and_its_value_is_never_written(
    tmp_path: Path,
) -> None:
    first_secret = "s3cret-first-0a1b2c3d"
    second_secret = "s3cret-second-4e5f6a7b"
    project = Judged(
        tmp_path=tmp_path,
        agent_table='provider_env = { JUDGE_TOKEN = "{env:TOKEN_SOURCE}" }',
        harness_env="",
    )
    both = {"TOKEN_SOURCE": first_secret, "OTHER_SOURCE": second_secret}
    assert project.run(environ=both) == (0, "passed", False)
    # A rotated value behind the same reference reuses the verdict (documented: eb's own
    # environment never counts by value).
    rotated = {"TOKEN_SOURCE": second_secret, "OTHER_SOURCE": first_secret}
    assert project.run(environ=rotated) == (0, "passed", True)
    assert project.starts() == 1
    # Another reference is another setting: the judge runs again.
    project.edit_config("{env:TOKEN_SOURCE}", "{env:OTHER_SOURCE}")
    assert project.run(environ=both) == (0, "passed", False)
    assert project.starts() == 2
    assert project.run(environ=both) == (0, "passed", True)
    # Neither value is in any file eb wrote: cache entries, blobs, run folders, stage files.
    written = [path for path in (project.root / ".eval-banana").rglob("*") if path.is_file()]
    assert any("cache" in path.parts for path in written)
    assert any("results" in path.parts for path in written)
    for path in written:
        data = path.read_bytes()
        for secret in (first_secret, second_secret):
            assert secret.encode() not in data, path
