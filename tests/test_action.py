"""The packaged GitHub Action (action.yml, merge/action.yml): their scripts under action/ run
here with a fake GitHub Actions environment and a fake `gh` that records what it is asked."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt

from eval_banana.checks.shardenv import AUTO_VARIABLES
from tests.conftest import check_yaml, judge_yaml

# The integrations suite (`pytest -m integrations`, which .ci/run runs): outside tools
# installed and driven for real, left out of the README's command to keep it under ten minutes.
pytestmark = pytest.mark.integrations

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "action"
MARKER = "<!-- eval-banana:comment -->"

# A `gh` that keeps the pull request's comments in a JSON file, answers the calls the comment
# script makes (who the token is, list, create, edit) as GitHub's API would, and logs every
# call. The token is FAKE_GH_LOGIN (the workflow's own token by default), or one GitHub does
# not name when FAKE_GH_LOGIN is empty; another's comment it may not edit (HTTP 403).
FAKE_GH = textwrap.dedent(
    """\
    #!{python}
    import json, os, sys
    from pathlib import Path

    state = Path(os.environ["FAKE_GH_STATE"])
    comments = json.loads(state.read_text()) if state.exists() else []
    args = sys.argv[1:]
    login = os.environ.get("FAKE_GH_LOGIN", "github-actions[bot]")
    me = {{"login": login, "type": "Bot" if login.endswith("[bot]") else "User"}}
    entry = {{"args": args, "token": os.environ.get("GH_TOKEN")}}
    if "--input" in args:
        entry["input"] = json.loads(Path(args[args.index("--input") + 1]).read_text())
    with open(os.environ["FAKE_GH_LOG"], "a") as log:
        log.write(json.dumps(entry) + "\\n")
    if args[:2] == ["api", "graphql"]:
        # `--jq .data.viewer.login` of `query {{ viewer {{ login }} }}`.
        if not login:
            sys.exit("gh: HTTP 401: Bad credentials")
        print(login)
        sys.exit(0)
    route = [a for a in args if a.startswith("repos/")][0]
    method = args[args.index("--method") + 1] if "--method" in args else "GET"
    if method == "GET":
        # Two pages, back to back, as `gh api --paginate` prints them.
        print(json.dumps(comments[:1]) + json.dumps(comments[1:]))
    elif method == "POST":
        new = {{"id": 100 + len(comments), "body": entry["input"]["body"], "user": me}}
        new["html_url"] = "https://github.test/pr/7#issuecomment-" + str(new["id"])
        comments.append(new)
        print(json.dumps(new))
    else:
        wanted = int(route.rsplit("/", 1)[1])
        hit = [c for c in comments if c["id"] == wanted][0]
        if hit.get("user") != me:
            sys.exit("gh: You must be the author of this comment to edit it (HTTP 403)")
        hit["body"] = entry["input"]["body"]
        print(json.dumps(hit))
    state.write_text(json.dumps(comments))
    """
)


@dataclass
class FakeGitHub:
    """The files and variables of one GitHub Actions job, on tmp_path."""

    root: Path
    workspace: Path
    output: Path
    summary: Path
    event: Path
    bin: Path
    gh_log: Path
    gh_state: Path

    def environ(self, **extra: str) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if k not in AUTO_VARIABLES}
        base.update(
            GITHUB_ACTIONS="true",
            GITHUB_WORKSPACE=str(self.workspace),
            GITHUB_OUTPUT=str(self.output),
            GITHUB_STEP_SUMMARY=str(self.summary),
            GITHUB_EVENT_PATH=str(self.event),
            GITHUB_REPOSITORY="acme/shop",
            GITHUB_SERVER_URL="https://github.test",
            GITHUB_RUN_ID="4242",
            GITHUB_SHA="c0ffee",
            GITHUB_REF_NAME="7/merge",
            GITHUB_BASE_REF="main",
            GITHUB_ACTION_PATH=str(REPO),
            RUNNER_TEMP=str(self.root / "runner-temp"),
            FAKE_GH_LOG=str(self.gh_log),
            FAKE_GH_STATE=str(self.gh_state),
            GH_TOKEN="ghs_test_token",
            PATH=f"{self.bin}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
            + os.environ.get("PATH", ""),
        )
        base.update(extra)
        return base

    def step(self, script: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """Run one script of action/ as its step would, on a fresh $GITHUB_OUTPUT."""
        self.output.write_text("")
        runner = ["bash"] if script.endswith(".sh") else [sys.executable]
        return subprocess.run(
            [*runner, str(SCRIPTS / script)],
            cwd=self.workspace,
            env=self.environ(**extra),
            capture_output=True,
            text=True,
            timeout=300,
        )

    def outputs(self) -> dict[str, str]:
        return parse_outputs(self.output.read_text())

    def gh_calls(self) -> list[dict[str, Any]]:
        if not self.gh_log.exists():
            return []
        return [json.loads(line) for line in self.gh_log.read_text().splitlines()]

    def comments(self) -> list[dict[str, Any]]:
        loaded: list[dict[str, Any]] = json.loads(self.gh_state.read_text())
        return loaded


def parse_outputs(text: str) -> dict[str, str]:
    """$GITHUB_OUTPUT as the runner reads it: `name=value` lines and `name<<DELIM` blocks."""
    found: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            value: list[str] = []
            for inner in lines:
                if inner == delimiter:
                    break
                value.append(inner)
            else:
                raise AssertionError(f"{name}: no closing {delimiter}")
            found[name] = "\n".join(value)
        elif "=" in line:
            name, value_text = line.split("=", 1)
            found[name] = value_text
    return found


@pytest.fixture
def github(tmp_path: Path) -> Iterator[FakeGitHub]:
    workspace = tmp_path / "workspace"
    (workspace / ".eval-banana").mkdir(parents=True)
    (workspace / ".eval-banana" / "config.toml").write_text("")
    for name in ("alpha", "beta", "gamma"):
        (workspace / "eval_checks").mkdir(exist_ok=True)
        (workspace / "eval_checks" / f"{name}.yaml").write_text(check_yaml(name))
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    gh = fake_bin / "gh"
    gh.write_text(FAKE_GH.format(python=sys.executable))
    gh.chmod(0o755)
    event = tmp_path / "event.json"
    _write_event(event, fork=False)
    (tmp_path / "runner-temp").mkdir()
    yield FakeGitHub(
        root=tmp_path,
        workspace=workspace,
        output=tmp_path / "github_output",
        summary=tmp_path / "step_summary.md",
        event=event,
        bin=fake_bin,
        gh_log=tmp_path / "gh.log",
        gh_state=tmp_path / "gh-comments.json",
    )


def _write_event(path: Path, *, fork: bool) -> None:
    head = "stranger/shop" if fork else "acme/shop"
    _write_pull_request(path, head={"full_name": head, "fork": fork})


def _write_pull_request(path: Path, *, head: dict[str, Any] | None) -> None:
    """A pull_request event into acme/shop from the head repository `head` (None: deleted)."""
    pull = {"number": 7, "head": {"repo": head}, "base": {"repo": {"full_name": "acme/shop"}}}
    path.write_text(json.dumps({"pull_request": pull, "repository": {"default_branch": "trunk"}}))


def _break_check(github: FakeGitHub, name: str) -> None:
    path = github.workspace / "eval_checks" / f"{name}.yaml"
    path.write_text(check_yaml(name, script="raise SystemExit(1)"))


def _prepare(github: FakeGitHub, **inputs: str) -> dict[str, str]:
    done = github.step("prepare.py", EB_WORKING_DIRECTORY=".", **inputs)
    assert done.returncode == 0, done.stdout + done.stderr
    return github.outputs()


def _run(github: FakeGitHub, prepared: dict[str, str], **inputs: str) -> dict[str, str]:
    done = github.step(
        "run.py",
        EB_ARGS=inputs.pop("EB_ARGS", "--annotations github"),
        EB_SHARD=prepared["shard"],
        EB_OUTPUT_DIR=prepared["output-dir"],
        EB_BASELINE_DIR=prepared["baseline-dir"],
        EB_CACHE_MODE=prepared["cache-mode"],
        EB_WORKING_DIRECTORY=".",
        **inputs,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return github.outputs()


def _comment(
    github: FakeGitHub, prepared: dict[str, str], ran: dict[str, str], **extra: str
) -> subprocess.CompletedProcess[str]:
    done = github.step(
        "comment.py",
        EB_RUN_DIR=ran["run-dir"],
        EB_REPORT_JSON=ran["report-json"],
        EB_EXIT_CODE=ran["exit-code"],
        EB_BASELINE_DIR=prepared["baseline-dir"],
        EB_WORKING_DIRECTORY=".",
        **{"EB_TOKEN_IS_GITHUB_TOKEN": "true", **extra},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_prepare_works_out_the_cache_key_the_shard_and_the_pull_request(
    github: FakeGitHub,
) -> None:
    prepared = _prepare(github, EB_SHARD="2/4", EB_CACHE="true")
    assert prepared["shard"] == "2/4"
    assert prepared["artifact-name"] == "eval-shard-2"
    assert prepared["pr-number"] == "7"
    assert prepared["output-dir"] == str(github.workspace / "eval-results")
    assert prepared["cache-path"] == str(github.workspace / ".eval-banana" / "cache")
    # Each shard keeps its own slice's verdicts, keyed by branch and commit.
    assert prepared["cache-key"] == "eb-verdicts-shard2of4-7/merge-c0ffee"
    assert prepared["cache-restore-keys"].splitlines() == [
        "eb-verdicts-shard2of4-7/merge-",
        "eb-verdicts-shard2of4-main-",
        "eb-verdicts-shard2of4-trunk-",
    ]
    assert prepared["cache-save"] == "true" and prepared["cache-mode"] == "on"
    assert prepared["baseline-kind"] == "none"


def test_a_fork_reads_the_cache_and_never_writes_it(github: FakeGitHub) -> None:
    _write_event(github.event, fork=True)
    prepared = _prepare(github, EB_CACHE="true")
    assert prepared["cache-mode"] == "read-only" and prepared["cache-save"] == "false"
    assert prepared["cache-key"] == "eb-verdicts-7/merge-c0ffee"
    assert prepared["artifact-name"] == ""
    # And the run step hands the mode to eb: nothing is written into the cache folder.
    ran = _run(github, prepared)
    assert ran["exit-code"] == "0"
    config = json.loads((Path(ran["run-dir"]) / "stages" / "config.json").read_text())
    assert config["settings"]["cache"]["mode"] == "read-only"


def test_prepare_refuses_inputs_that_cannot_work(github: FakeGitHub) -> None:
    for inputs, message in (
        ({"EB_SHARD": "5/4"}, "input shard='5/4' is not K/N"),
        ({"EB_SHARD": "auto"}, "input shard='auto' is not K/N"),
        ({"EB_CACHE": "yes please"}, "input cache='yes please' is not true or false"),
        ({"EB_BASELINE": "some/where"}, "input baseline='some/where' is not a folder under"),
        ({"EB_SHARD": "1/2", "EB_COMMENT": "true"}, "inputs shard and comment together"),
    ):
        done = github.step("prepare.py", **inputs)
        assert done.returncode == 2, inputs
        assert f"::error title=eval_banana action::{message}" in done.stderr, done.stderr
    (github.workspace / "not-a-run").mkdir()
    done = github.step("prepare.py", EB_BASELINE="not-a-run")
    assert done.returncode == 2 and "not a run folder (no report.json)" in done.stderr


def test_a_baseline_that_is_not_a_folder_is_an_artifact_to_download(github: FakeGitHub) -> None:
    prepared = _prepare(github, EB_BASELINE="eval-report-main")
    assert prepared["baseline-kind"] == "artifact"
    assert prepared["baseline-name"] == "eval-report-main"
    assert prepared["baseline-dir"] == str(github.root / "runner-temp" / "eb-baseline")


def test_run_writes_the_outputs_and_the_step_summary_and_gate_gives_the_verdict(
    github: FakeGitHub,
) -> None:
    _break_check(github, "beta")
    prepared = _prepare(github)
    ran = _run(github, prepared)
    run_dir = github.workspace / "eval-results"
    assert ran == {
        "exit-code": "1",
        "run-dir": str(run_dir),
        "report-json": str(run_dir / "report.json"),
    }
    report = json.loads((run_dir / "report.json").read_text())
    assert (report["total_checks"], report["passed_checks"]) == (3, 2)
    # eb itself wrote the job summary, and the `args` input reached it (annotations).
    assert "beta" in github.summary.read_text()
    gated = github.step("gate.sh", EB_EXIT_CODE=ran["exit-code"], EB_SHARD="")
    assert gated.returncode == 1


def test_a_run_that_never_starts_has_empty_outputs_and_fails_the_gate(github: FakeGitHub) -> None:
    ran = _run(github, _prepare(github), EB_ARGS="--no-such-flag")
    assert ran == {"exit-code": "2", "run-dir": "", "report-json": ""}
    assert github.step("gate.sh", EB_EXIT_CODE="2").returncode == 2
    missing = github.step("gate.sh", EB_EXIT_CODE="")
    assert missing.returncode == 2 and "eb did not run" in missing.stderr


def test_a_second_use_in_one_job_that_eb_refuses_names_no_earlier_run(
    github: FakeGitHub,
) -> None:
    """The action twice in one job with the default output-dir: the second `eb run` refuses the
    folder the first one filled, and nothing of the first run is offered as the second's."""
    prepared = _prepare(github)
    first = _run(github, prepared)
    assert first["exit-code"] == "0" and first["report-json"]
    _break_check(github, "beta")
    second = _run(github, prepared)
    assert second == {"exit-code": "2", "run-dir": "", "report-json": ""}
    # The comment says this run did not finish; it does not post the first run's "passed".
    _comment(github, prepared, second)
    body = github.comments()[0]["body"]
    assert "**did not finish**: eb exited 2 before writing this run's report" in body
    assert "passed" not in body


def test_a_shard_with_failing_checks_passes_its_job_but_not_a_setup_error(
    github: FakeGitHub,
) -> None:
    assert github.step("gate.sh", EB_EXIT_CODE="1", EB_SHARD="2/4").returncode == 0
    assert github.step("gate.sh", EB_EXIT_CODE="2", EB_SHARD="2/4").returncode == 2
    assert github.step("gate.sh", EB_EXIT_CODE="3", EB_SHARD="2/4").returncode == 3
    assert github.step("gate.sh", EB_EXIT_CODE="0", EB_SHARD="").returncode == 0


def test_the_comment_is_posted_once_then_updated_with_the_summary_and_the_diff(
    github: FakeGitHub,
) -> None:
    # The baseline: the run of main, kept as a folder.
    main = subprocess.run(
        ["eb", "run", "--output-dir", "main-run", "--flat-output"],
        cwd=github.workspace,
        env=github.environ(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert main.returncode == 0, main.stderr
    # Someone else's comment is on the pull request already and must stay untouched.
    github.gh_state.write_text(json.dumps([{"id": 1, "body": "LGTM", "html_url": "x"}]))
    _break_check(github, "gamma")
    prepared = _prepare(github, EB_BASELINE="main-run")
    assert prepared["baseline-kind"] == "dir"
    ran = _run(github, prepared)
    assert ran["exit-code"] == "1"
    _comment(github, prepared, ran)
    calls = github.gh_calls()
    assert [call["args"][:2] for call in calls] == [["api", "--paginate"], ["api", "--method"]]
    assert calls[0]["args"][2] == "repos/acme/shop/issues/7/comments"
    assert calls[1]["args"][2:4] == ["POST", "repos/acme/shop/issues/7/comments"]
    assert all(call["token"] == "ghs_test_token" for call in calls)
    body = calls[1]["input"]["body"]
    assert body.startswith(MARKER)
    assert "**did not pass**: 2/3 checks passed (66.7 %, threshold 100 %)" in body
    assert "| `gamma` | failed |" in body
    # `eb diff --format md` against the baseline, with the regression named.
    assert "eval-banana diff: 1 regression" in body
    assert "| `gamma` | passed -> failed |" in body
    assert "[The run's log and artifacts](https://github.test/acme/shop/actions/runs/4242)" in body
    assert github.outputs()["comment-url"].endswith("#issuecomment-101")

    # The next push: the fix lands, and the same comment is edited, not a second one added.
    (github.workspace / "eval_checks" / "gamma.yaml").write_text(check_yaml("gamma"))
    shutil.rmtree(github.workspace / "eval-results")  # a new job's fresh checkout
    ran = _run(github, prepared)
    assert ran["exit-code"] == "0"
    _comment(github, prepared, ran)
    edit = github.gh_calls()[-1]
    assert edit["args"][2:4] == ["PATCH", "repos/acme/shop/issues/comments/101"]
    comments = github.comments()
    assert [c["id"] for c in comments] == [1, 101]
    assert comments[0]["body"] == "LGTM"
    assert comments[1]["body"].startswith(MARKER)
    assert "**passed**: 3/3 checks passed" in comments[1]["body"]
    assert "eval-banana diff: no regression" in comments[1]["body"]


def _user(login: str) -> dict[str, str]:
    return {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"}


def test_the_comment_edited_is_the_action_s_own_not_one_holding_the_marker(
    github: FakeGitHub,
) -> None:
    """Anyone can write the marker into a comment; only the action's own comment is edited."""
    planted = f"{MARKER}\n### eval_banana\n**passed** (trust me)"
    github.gh_state.write_text(
        json.dumps(
            [
                {"id": 1, "body": planted, "user": _user("mallory")},
                {"id": 2, "body": planted, "user": _user("other-app[bot]")},
                {"id": 3, "body": f"{MARKER}\nold", "user": _user("github-actions[bot]")},
            ]
        )
    )
    prepared = _prepare(github)
    ran = _run(github, prepared)
    _comment(github, prepared, ran)
    assert github.gh_calls()[-1]["args"][2:4] == ["PATCH", "repos/acme/shop/issues/comments/3"]
    bodies = [c["body"] for c in github.comments()]
    assert bodies[:2] == [planted, planted] and "**passed**: 3/3" in bodies[2]


def test_with_another_token_the_comment_edited_is_the_one_that_token_wrote(
    github: FakeGitHub,
) -> None:
    """A person's token (or an app's) comments under its own name: GitHub is asked who it is,
    and that login's own comment with the marker is the one edited."""
    github.gh_state.write_text(
        json.dumps(
            [
                {"id": 1, "body": f"{MARKER}\nold", "user": _user("github-actions[bot]")},
                {"id": 2, "body": f"nice {MARKER}", "user": _user("octo-lead")},
                {"id": 3, "body": f"{MARKER}\nold", "user": _user("octo-lead")},
            ]
        )
    )
    prepared = _prepare(github)
    ran = _run(github, prepared)
    _comment(github, prepared, ran, EB_TOKEN_IS_GITHUB_TOKEN="false", FAKE_GH_LOGIN="octo-lead")
    calls = github.gh_calls()
    assert calls[0]["args"][:2] == ["api", "graphql"]
    assert calls[-1]["args"][2:4] == ["PATCH", "repos/acme/shop/issues/comments/3"]
    # A token GitHub does not name edits nothing: it posts a comment of its own, with a warning.
    done = _comment(github, prepared, ran, EB_TOKEN_IS_GITHUB_TOKEN="false", FAKE_GH_LOGIN="")
    assert "::warning title=eval_banana action::GitHub did not say who" in done.stderr
    assert github.gh_calls()[-1]["args"][2:4] == ["POST", "repos/acme/shop/issues/7/comments"]
    assert [c["id"] for c in github.comments()] == [1, 2, 3, 103]


def test_a_comment_over_github_s_limit_is_cut_between_rows_with_its_folds_closed(
    github: FakeGitHub,
) -> None:
    """60 failing cases with long ids: the summary and the diff's folded "Still failing" table
    run past GitHub's 65,536 characters. The cut falls between rows, closes the fold it cut
    into, and the cut note and the link to the run show after it."""
    (github.workspace / "rows.jsonl").write_text(
        "".join(json.dumps({"id": f"{i:02d}-" + "x" * 1500}) + "\n" for i in range(60))
    )
    (github.workspace / "eval_checks" / "fam.yaml").write_text(
        'schema_version: 1\nid: fam\ntype: deterministic\ndescription: "case {{ case.id }}"\n'
        "cases_from: rows.jsonl\nscript: raise SystemExit('no')\n"
    )
    main = subprocess.run(
        ["eb", "run", "--output-dir", "main-run", "--flat-output"],
        cwd=github.workspace,
        env=github.environ(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert main.returncode == 1, main.stderr
    prepared = _prepare(github, EB_BASELINE="main-run")
    ran = _run(github, prepared)
    _comment(github, prepared, ran)
    body = github.comments()[0]["body"]
    assert 55_000 < len(body) <= 65_536
    assert "<details><summary>Still failing (60)</summary>" in body
    assert body.count("<details>") == body.count("</details>")
    # Every row kept is whole.
    assert all(line.endswith("|") for line in body.splitlines() if line.startswith("|"))
    # After the last fold, outside it, in view: the cut note, then the link to the run.
    rendered = MarkdownIt("commonmark").enable("table").render(body)
    after_folds = rendered.rsplit("</details>", 1)[1]
    assert "cut to fit a GitHub comment" in after_folds
    assert 'href="https://github.test/acme/shop/actions/runs/4242"' in after_folds
    assert body.endswith("(https://github.test/acme/shop/actions/runs/4242)\n")


# A judge talked into writing markup: an image a reader's browser would fetch, a link hiding its
# target, raw HTML and a `<!--` that would hide every row and line after it.
_HOSTILE_REASON = (
    "Looks fine ![t](https://evil.test/t.png) see [docs](https://evil.test/phish) "
    "<b>ok</b> `code` a | b <!-- hide"
)
_HOSTILE_JUDGE = f"""\
import json
print(json.dumps({{"score": 0, "reason": {_HOSTILE_REASON!r}}}))
"""


def test_the_comment_shows_a_judge_s_reason_as_words(github: FakeGitHub) -> None:
    (github.workspace / "judge.py").write_text(_HOSTILE_JUDGE)
    (github.workspace / ".eval-banana" / "config.toml").write_text(
        '[harness]\nagent = "fake"\nisolation = "off"\n\n[agents.fake]\n'
        f'command = [{json.dumps(sys.executable)}, "judge.py"]\n'
    )
    for name in ("judge_a", "judge_b"):
        (github.workspace / "eval_checks" / f"{name}.yaml").write_text(judge_yaml(name))
    prepared = _prepare(github)
    ran = _run(github, prepared)
    assert ran["exit-code"] == "1"
    _comment(github, prepared, ran)
    body = github.comments()[0]["body"]
    rendered = MarkdownIt("commonmark").enable("table").render(body)
    # None of the judge's markup is rendered: no image, no link, no HTML, no comment...
    for made in ("<img", 'evil.test/phish"', "<b>", "<code>code</code>", "<!-- hide"):
        assert made not in rendered, (made, rendered)
    # ...so the second judge's row and the link after them still show, with the words.
    seen = html.unescape(re.sub(r"<[^>]+>", "", rendered))
    assert seen.count("judge_b") == 1 and "The run's log and artifacts" in seen
    assert seen.count(" ".join(_HOSTILE_REASON.split())) == 2, seen


def test_no_pull_request_no_comment(github: FakeGitHub) -> None:
    github.event.write_text(json.dumps({"ref": "refs/heads/main"}))
    prepared = _prepare(github)
    assert prepared["pr-number"] == ""
    done = github.step("comment.py")
    assert done.returncode == 0 and "Not a pull request" in done.stdout
    assert github.gh_calls() == []


def test_install_uses_the_action_s_own_ref_unless_told_otherwise(github: FakeGitHub) -> None:
    log = github.root / "python.log"
    fake = github.bin / "python"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    fake.chmod(0o755)
    eb = github.bin / "eb"
    eb.write_text("#!/bin/sh\necho eb 0.0.0\n")
    eb.chmod(0o755)
    done = github.step("install.sh", EB_ACTION_ROOT="/actions/eval_banana", EB_INSTALL="")
    assert done.returncode == 0, done.stderr
    done = github.step("install.sh", EB_INSTALL="eval-banana-staged==1.2.3")
    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    assert lines[0].endswith("pip install --disable-pip-version-check --quiet /actions/eval_banana")
    assert lines[1].endswith("--quiet eval-banana-staged==1.2.3")


def test_merge_runs_eb_merge_over_every_downloaded_shard(github: FakeGitHub) -> None:
    _break_check(github, "alpha")
    downloads = github.root / "runner-temp" / "eb-shards"
    downloads.mkdir()
    for k in (1, 2):
        prepared = _prepare(github, EB_SHARD=f"{k}/2")
        ran = _run(github, prepared)
        assert ran["exit-code"] in ("0", "1")
        # What download-artifact leaves: each artifact in a folder of its own name.
        Path(ran["run-dir"]).rename(downloads / f"eval-shard-{k}")
    merged = github.step(
        "merge.py",
        EB_SHARDS_DIR=str(downloads),
        EB_ARGS="--junit-xml merged-junit.xml",
        EB_OUTPUT_DIR="eval-merged",
        EB_WORKING_DIRECTORY=".",
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    out = github.outputs()
    run_dir = github.workspace / "eval-merged"
    assert out == {
        "exit-code": "1",
        "run-dir": str(run_dir),
        "report-json": str(run_dir / "report.json"),
    }
    report = json.loads((run_dir / "report.json").read_text())
    assert (report["total_checks"], report["passed_checks"]) == (3, 2)
    assert (github.workspace / "merged-junit.xml").is_file()
    # The merge action's comment is the whole run's, not a shard's.
    _comment(github, {"baseline-dir": ""}, out)
    body = github.comments()[0]["body"]
    assert body.startswith(MARKER) and "**did not pass**: 2/3 checks passed" in body
    assert "| `alpha` | failed |" in body
    # Merged again into the same folder: eb refuses it, and the outputs name no earlier merge.
    again = github.step(
        "merge.py",
        EB_SHARDS_DIR=str(downloads),
        EB_ARGS="",
        EB_OUTPUT_DIR="eval-merged",
        EB_WORKING_DIRECTORY=".",
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert github.outputs() == {"exit-code": "2", "run-dir": "", "report-json": ""}
    empty = github.root / "nothing"
    empty.mkdir()
    refused = github.step("merge.py", EB_SHARDS_DIR=str(empty), EB_PATTERN="eval-shard-*")
    assert refused.returncode == 2 and "no shard run folder was downloaded" in refused.stderr


# The actions each step uses, at the major versions the docs' workflows use.
CURRENT_ACTIONS = {
    "actions/setup-python@v6",
    "actions/cache/restore@v5",
    "actions/cache/save@v5",
    "actions/download-artifact@v7",
    "actions/upload-artifact@v6",
}


def _action_file(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def _expressions(value: object) -> list[str]:
    return re.findall(r"\$\{\{(.*?)\}\}", json.dumps(value))


@pytest.mark.parametrize("path", [REPO / "action.yml", REPO / "merge" / "action.yml"])
def test_each_action_reads_only_what_it_declares_and_its_scripts_write(path: Path) -> None:
    """What actionlint does not check inside a composite action: its own expressions."""
    action = _action_file(path)
    assert action["runs"]["using"] == "composite"
    declared_inputs = set(action["inputs"])
    written: dict[str, set[str]] = {}  # step id -> the outputs its script writes
    for index, step in enumerate(action["runs"]["steps"]):
        where = f"{path.name} step {index + 1}"
        # `if:` is an expression without the ${{ }} around it.
        for expression in [*_expressions(step), str(step.get("if", ""))]:
            for name in re.findall(r"inputs\.([A-Za-z0-9_-]+)", expression):
                assert name in declared_inputs, f"{where}: inputs.{name} is not declared"
            for step_id, name in re.findall(r"steps\.([a-z-]+)\.outputs\.([a-z-]+)", expression):
                assert name in written.get(step_id, set()), f"{where}: steps.{step_id}.{name}"
        if "uses" in step:
            assert step["uses"] in CURRENT_ACTIONS, f"{where}: {step['uses']}"
            continue
        assert step["shell"] == "bash", where
        script_name = re.search(r"action/([a-z]+\.(?:py|sh))", step["run"])
        assert script_name is not None, f"{where}: a step runs a script of action/"
        script = (SCRIPTS / script_name.group(1)).read_text(encoding="utf-8")
        # Every input a script reads is passed to it by its step.
        reads = set(re.findall(r'env\("(EB_[A-Z_]+)"', script))
        reads |= set(re.findall(r"\$\{(EB_[A-Z_]+)", script))
        if "workdir()" in script:  # ghenv.workdir() reads the working-directory input
            reads.add("EB_WORKING_DIRECTORY")
        assert reads <= set(step.get("env", {})), f"{where}: {reads - set(step['env'])}"
        if "id" in step:
            outputs = set(re.findall(r'set_output\("([a-z-]+)"', script))
            for helper in re.findall(r"^from (\w+) import", script, flags=re.MULTILINE):
                if (SCRIPTS / f"{helper}.py").is_file() and helper != "ghenv":
                    helper_text = (SCRIPTS / f"{helper}.py").read_text()
                    outputs |= set(re.findall(r'set_output\("([a-z-]+)"', helper_text))
            written[step["id"]] = outputs
    for name, output in action["outputs"].items():
        match = re.fullmatch(r"\$\{\{ steps\.([a-z-]+)\.outputs\.([a-z-]+) \}\}", output["value"])
        assert match is not None and match.group(2) in written[match.group(1)], name
    assert {"exit-code", "run-dir", "report-json"} <= set(action["outputs"])


def _cache_mode_of(ran: dict[str, str]) -> str:
    config = json.loads((Path(ran["run-dir"]) / "stages" / "config.json").read_text())
    mode: str = config["settings"]["cache"]["mode"]
    return mode


def test_the_cache_input_turns_eb_s_cache_on_for_the_job_s_own_runs(github: FakeGitHub) -> None:
    """eb's cache is off by default: `cache: true` alone must store verdicts and reuse them."""
    prepared = _prepare(github, EB_CACHE="true")
    first = _run(github, prepared)
    assert first["exit-code"] == "0" and _cache_mode_of(first) == "on"
    # The folder the save step keeps now exists; the next job's run reuses every verdict.
    assert (github.workspace / ".eval-banana" / "cache").is_dir()
    second = _run(github, {**prepared, "output-dir": str(github.workspace / "second")})
    assert json.loads(Path(second["report-json"]).read_text())["cached_checks"] == 3
    # A mode the project's file or the job's environment chose stands, and `args` beat both.
    config = github.workspace / ".eval-banana" / "config.toml"
    config.write_text('[cache]\nmode = "refresh"\n')
    by_file = _run(github, {**prepared, "output-dir": str(github.workspace / "third")})
    assert _cache_mode_of(by_file) == "refresh"
    config.write_text("")
    by_env = _run(
        github,
        {**prepared, "output-dir": str(github.workspace / "fourth")},
        EVAL_BANANA_CACHE_MODE="off",
    )
    assert _cache_mode_of(by_env) == "off"
    by_args = _run(
        github, {**prepared, "output-dir": str(github.workspace / "fifth")}, EB_ARGS="--cache off"
    )
    assert _cache_mode_of(by_args) == "off"
    # Without the input the Action sets no mode: eb's own default (off) is kept.
    assert _prepare(github)["cache-mode"] == ""


def test_a_fork_stays_read_only_whatever_args_or_the_project_say(github: FakeGitHub) -> None:
    _write_event(github.event, fork=True)
    (github.workspace / ".eval-banana" / "config.toml").write_text('[cache]\nmode = "on"\n')
    prepared = _prepare(github, EB_CACHE="true")
    ran = _run(github, prepared, EB_ARGS="--cache on", EVAL_BANANA_CACHE_MODE="on")
    assert ran["exit-code"] == "0" and _cache_mode_of(ran) == "read-only"
    assert not (github.workspace / ".eval-banana" / "cache").exists()


def test_the_comment_tells_a_run_eb_ended_after_its_report_from_a_pass(
    github: FakeGitHub,
) -> None:
    """report.json says the checks passed, but eb ended with exit 3 (JUnit not written)."""
    prepared = _prepare(github)
    ran = _run(github, prepared, EB_ARGS="--junit-xml /dev/full")
    assert ran["exit-code"] == "3" and ran["report-json"]
    assert json.loads(Path(ran["report-json"]).read_text())["run_passed"] is True
    _comment(github, prepared, ran)
    body = github.comments()[0]["body"]
    assert "**eb ended this run with exit 3 after writing this report**" in body
    assert "**did not pass**: 3/3 checks passed" in body and "**passed**" not in body


def test_the_comment_is_posted_without_eval_banana_installed(github: FakeGitHub) -> None:
    """The install failed (or an older eb was pinned): the comment still replaces the last
    push's, saying this run did not finish, or giving its counts without the judges' words."""
    bare = [sys.executable, "-E", "-S", str(SCRIPTS / "comment.py")]  # no site, no PYTHONPATH
    environ = github.environ(
        EB_RUN_DIR="",
        EB_REPORT_JSON="",
        EB_EXIT_CODE="",
        EB_BASELINE_DIR="",
        EB_TOKEN_IS_GITHUB_TOKEN="true",
    )
    done = subprocess.run(bare, cwd=github.workspace, env=environ, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "**did not finish**: eb did not run" in github.comments()[0]["body"]
    _break_check(github, "beta")
    prepared = _prepare(github)
    ran = _run(github, prepared)
    environ.update(EB_RUN_DIR=ran["run-dir"], EB_REPORT_JSON=ran["report-json"], EB_EXIT_CODE="1")
    done = subprocess.run(bare, cwd=github.workspace, env=environ, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    body = github.comments()[0]["body"]
    assert "**did not pass**: 2/3 checks passed" in body
    assert "1 checks did not pass: see the run's report." in body and "| `beta`" not in body


def test_a_true_or_false_input_is_refused_in_any_other_word(github: FakeGitHub) -> None:
    """action.yml's `if:` compares these inputs with 'true': `yes` would save a cache never
    restored, and `on` would post no comment, silently."""
    for inputs, message in (
        ({"EB_CACHE": "yes"}, "input cache='yes' is not true or false"),
        ({"EB_COMMENT": "on"}, "input comment='on' is not true or false"),
        ({"EB_COMMENT": "1", "EB_SHARD": "1/2"}, "input comment='1' is not true or false"),
    ):
        done = github.step("prepare.py", **inputs)
        assert done.returncode == 2 and message in done.stderr, (inputs, done.stderr)
    # GitHub compares text case-insensitively, so `True` is true in both places.
    assert _prepare(github, EB_CACHE="True", EB_COMMENT="FALSE")["cache-save"] == "true"
    merged = github.step("merge.py", EB_COMMENT="yes", EB_SHARDS_DIR=str(github.root))
    assert merged.returncode == 2 and "input comment='yes' is not true or false" in merged.stderr


def test_a_fork_is_a_head_repository_other_than_the_base(github: FakeGitHub) -> None:
    # A fork deleted since it opened the pull request: no head repository to trust.
    _write_pull_request(github.event, head=None)
    prepared = _prepare(github, EB_CACHE="true")
    assert (prepared["cache-mode"], prepared["cache-save"]) == ("read-only", "false")
    # Two branches of a repository that is itself a fork: its own pull request.
    _write_pull_request(github.event, head={"full_name": "acme/shop", "fork": True})
    prepared = _prepare(github, EB_CACHE="true")
    assert (prepared["cache-mode"], prepared["cache-save"]) == ("on", "true")


def test_each_shard_uploads_an_artifact_of_its_own_name(github: FakeGitHub) -> None:
    names = [_prepare(github, EB_SHARD=f"{k}/2", EB_ARTIFACT="eval-report") for k in (1, 2)]
    assert [n["artifact-name"] for n in names] == ["eval-report-1", "eval-report-2"]
    assert _prepare(github, EB_SHARD="2/2")["artifact-name"] == "eval-shard-2"
    assert _prepare(github, EB_ARTIFACT="eval-report")["artifact-name"] == "eval-report"


def test_ci_md_takes_the_baseline_from_main_s_own_pushes() -> None:
    """A pull request's run from a fork's branch named main is no baseline of main."""
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    section = text.split("## The eval_banana Action", 1)[1].split("\n## ", 1)[0]
    listing = re.search(r"gh run list [^\n]*\\\n[^\n]*", section)
    assert listing is not None and "--event push" in listing.group(), section
