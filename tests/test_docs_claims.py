"""What the docs say a command prints is what it prints: each claim is run here.

first-project.md is followed step by step (its check file and its broken line are read from
the page); deterministic-checks.md's word on `reason` and `SyntaxError` is run; ci.md's timing
of `eb validate` must be the benchmark's measured figure it names.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

WORDCOUNT = '''\
"""Count the words of a text file: python wordcount.py FILE."""

import sys


def count_words(text: str) -> int:
    return len(text.split())


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as handle:
        print(count_words(handle.read()))
'''


def eb(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_")}
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def section(*, page: str, title: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def fenced(*, text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def console_claims(*, block: str) -> tuple[list[str], list[str]]:
    """(the command lines, the output lines) of a ```console block, up to `echo $?`."""
    commands: list[str] = []
    output: list[str] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            if line == "$ echo $?":
                break
            commands.append(line[2:])
        elif line != "...":
            output.append(line)
    return commands, output


def shown_as_in_docs(*, line: str) -> str:
    """A printed line with what differs per run (run id, paths, seconds) as the docs write it."""
    return re.sub(r" in \d+\.\d+s$", " in 0.3s", line)


def _shows(*, claim: str, got: str) -> bool:
    """Whether a printed line is the claimed one (a claim ending in `...` is a prefix)."""
    if claim.endswith("..."):
        return got.startswith(claim[:-3])
    return got == shown_as_in_docs(line=claim)


def assert_shown_in_order(*, claimed: list[str], printed: str) -> None:
    lines = [shown_as_in_docs(line=line) for line in printed.splitlines()]
    position = 0
    for claim in claimed:
        while position < len(lines) and not _shows(claim=claim, got=lines[position]):
            position += 1
        assert position < len(lines), f"{claim!r} not printed (in order) in:\n{printed}"
        position += 1


@pytest.fixture
def wordcount(tmp_path: Path) -> Path:
    """first-project.md steps 2 to 4: the script, `eb init`, the page's own check file."""
    root = tmp_path / "wordcount"
    root.mkdir()
    (root / "wordcount.py").write_text(WORDCOUNT, encoding="utf-8")
    assert eb("init", cwd=root).returncode == 0
    (check,) = fenced(
        text=section(page="first-project.md", title="4. Write a check"), language="yaml"
    )
    (root / "eval_checks" / "wordcount_cli.yaml").write_text(check, encoding="utf-8")
    return root


def test_first_project_step_7_prints_what_the_page_shows(wordcount: Path) -> None:
    step = section(page="first-project.md", title="7. Break it on purpose")
    python_blocks = fenced(text=step, language="python")
    broken = python_blocks[0].strip()
    script = wordcount / "wordcount.py"
    script.write_text(
        script.read_text().replace("return len(text.split())", broken), encoding="utf-8"
    )
    (console,) = fenced(text=step, language="console")
    commands, claimed = console_claims(block=console)
    assert commands == ["eb run --check-id wordcount_cli_counts_words"]
    done = eb(*commands[0].split()[1:], cwd=wordcount)
    assert done.returncode == 1, done.stderr
    assert_shown_in_order(claimed=claimed, printed=done.stdout)
    # The page ends where the screen ends: on the closing line of counts.
    assert shown_as_in_docs(line=done.stdout.splitlines()[-1]) == claimed[-1]


def test_first_project_step_5_run_prints_what_the_page_shows(wordcount: Path) -> None:
    (console,) = [
        block
        for block in fenced(
            text=section(page="first-project.md", title="5. Validate, list, run"),
            language="console",
        )
    ]
    run_part = console[console.index("$ eb run") :]
    _, claimed = console_claims(block=run_part)
    done = eb("run", cwd=wordcount)
    assert done.returncode == 0, done.stderr
    claimed = [line for line in claimed if not line.startswith(("Run ID:", "Report:"))]
    assert_shown_in_order(claimed=claimed, printed=done.stdout)


def _deterministic(root: Path, *, check_id: str, script: str) -> None:
    folder = root / "eval_checks"
    folder.mkdir(parents=True, exist_ok=True)
    body = "\n".join(f"  {line}" for line in script.splitlines())
    (folder / f"{check_id}.yaml").write_text(
        f"schema_version: 1\nid: {check_id}\ntype: deterministic\n"
        f"description: {check_id}.\nscript: |\n{body}\n",
        encoding="utf-8",
    )


def test_deterministic_reason_and_syntax_error_are_as_documented(tmp_path: Path) -> None:
    page = (DOCS / "deterministic-checks.md").read_text(encoding="utf-8")
    assert "| the script does not compile (a `SyntaxError`) | `error`" in page
    assert "A failed deterministic check's `reason` is what its script said last" in page
    root = tmp_path / "p"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("", encoding="utf-8")
    _deterministic(root, check_id="raises", script="assert 1 == 2, 'expected 2, got 1'")
    _deterministic(root, check_id="says", script="import sys\nsys.exit('total was 4')")
    _deterministic(root, check_id="silent", script="import sys\nsys.exit(3)")
    _deterministic(root, check_id="broken", script="def (:")
    done = eb("run", "--cwd", str(root), "--json", cwd=tmp_path)
    report = json.loads(done.stdout)
    by_id = {check["check_id"]: check for check in report["checks"]}
    assert (by_id["raises"]["status"], by_id["raises"]["reason"]) == (
        "failed",
        "AssertionError: expected 2, got 1",
    )
    assert by_id["says"]["reason"] == "total was 4"
    assert by_id["silent"]["reason"] == "exit code 3"
    broken = by_id["broken"]
    assert (broken["status"], broken["exit_code"]) == ("error", None)
    assert broken["error_detail"].startswith("Deterministic script does not compile: SyntaxError: ")
    ci = (DOCS / "ci.md").read_text(encoding="utf-8")
    assert "a syntax error still passes\nthe hook; the check is then an `error` in `eb run`" in ci
    assert eb("validate", "--cwd", str(root), cwd=tmp_path).returncode == 0


def test_ci_md_quotes_the_measured_validate_figure_and_says_what_it_is_for() -> None:
    ci = " ".join((DOCS / "ci.md").read_text(encoding="utf-8").split())
    quoted = re.search(r"`eb validate` took ([\d.]+) s \(median\) in our benchmark's (W\d+)", ci)
    assert quoted is not None, "ci.md no longer quotes a measured figure"
    figure, workload = quoted.groups()
    table = (DOCS / "performance.md").read_text(encoding="utf-8")
    row = re.search(rf"^\| {workload} \| eb validate, ([^|]+) \| \d+ \| ([\d.]+) \|", table, re.M)
    assert row is not None, f"performance.md has no eb validate row for {workload}"
    assert row.group(2) == figure
    # What the figure is for: the tree's shape, the excluded folders and the warm cache.
    for said in ("60,000 files", "node_modules", "warm file cache", "cost more"):
        assert said in ci, said


def test_first_project_step_3_init_prints_what_the_page_shows(tmp_path: Path) -> None:
    (console,) = fenced(
        text=section(page="first-project.md", title="3. `eb init`"), language="console"
    )
    commands, claimed = console_claims(block=console)
    assert commands == ["eb init"]
    root = tmp_path / "wordcount"
    root.mkdir()
    done = eb("init", cwd=root)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.replace(str(root.resolve()), "/home/me/wordcount")
    assert printed.splitlines() == claimed


def test_ci_md_names_the_junit_classname_and_failure_message_eb_writes(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    root = tmp_path / "p"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("", encoding="utf-8")
    (root / "eval_checks" / "judges").mkdir(parents=True)
    (root / "eval_checks" / "judges" / "polite.yaml").write_text(
        "schema_version: 1\nid: polite\ntype: deterministic\ndescription: polite.\n"
        "script: exit(1)\n",
        encoding="utf-8",
    )
    (root / "eval_checks" / "qa.yaml").write_text(
        "schema_version: 1\nid: qa_judge\ntype: deterministic\ndescription: case.\n"
        "cases:\n  - {id: refund-07}\nscript: |\n  import sys\n  sys.exit('no refund')\n",
        encoding="utf-8",
    )
    eb("run", "--cwd", str(root), "--junit-xml", str(tmp_path / "j.xml"), cwd=tmp_path)
    written = {
        str(case.get("name")): (case.get("classname"), failure.get("message"))
        for case in ET.parse(tmp_path / "j.xml").iter("testcase")
        for failure in case.iter("failure")
    }
    assert written == {
        "polite": ("eval_checks.judges.polite", "failed: exit code 1"),
        "qa_judge[refund-07]": ("qa_judge", "failed: no refund"),
    }
    # The page's examples are these: a file's path, a case's family, the status then the reason.
    ci = " ".join(section(page="ci.md", title="What a run can write").split())
    assert "`eval_checks/judges/polite.yaml` → `eval_checks.judges.polite`" in ci
    assert "`qa_judge` for `qa_judge[refund-07]`" in ci
    assert "`failed: exit code 1`" in ci and "`failed: <reason>`" in ci


def test_judges_md_quotes_the_flaky_line_eb_run_prints() -> None:
    from eval_banana.reporttext.notes import flaky_line

    page = " ".join(section(page="judges.md", title="Sampling a judge several times").split())
    start = page.index("### Flaky verdicts")
    said = page[start : page.index("With `--fail-on-flaky`", start)]
    one, two = flaky_line(report={"flaky_checks": 1}), flaky_line(report={"flaky_checks": 2})
    assert one is not None and two is not None
    assert f"`{one}`" in said
    assert f"`{two.replace('2 checks', 'N checks')}`" in said


def test_compatibility_md_shows_log_records_as_eb_prints_them(tmp_path: Path) -> None:
    page = " ".join(section(page="compatibility.md", title="Console").split())
    assert "`warning: <message>` (and, with `--verbose`, `debug: <message>`)" in page
    assert "`<logger name>: <message>`" not in page
    root = tmp_path / "p"
    (root / ".eval-banana").mkdir(parents=True)
    # A judge whose agent exits 3: the judge runner logs a warning record.
    command = json.dumps([sys.executable, "-c", "import sys; sys.exit(3)"])
    (root / ".eval-banana" / "config.toml").write_text(
        f'[harness]\nagent = "broken"\n\n[agents.broken]\ncommand = {command}\n', encoding="utf-8"
    )
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "j.yaml").write_text(
        "schema_version: 1\nid: j\ntype: harness_judge\ndescription: j.\ninstructions: Judge.\n",
        encoding="utf-8",
    )
    done = eb("run", "--cwd", str(root), "--verbose", "--cache", "off", cwd=tmp_path)
    lines = done.stderr.splitlines()
    assert any(line.startswith("warning: Harness judge check j failed: ") for line in lines), (
        done.stderr
    )
    assert any(line.startswith("debug: judge j: ") for line in lines), done.stderr
    assert not any(line.startswith("eval_banana.") for line in lines), done.stderr


def _help_commands(*args: str) -> list[str]:
    """The subcommands `eb <args> --help` lists under its positional arguments."""
    done = eb(*args, "--help", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split("positional arguments:", 1)[1].split("\noptions:", 1)[0]
    return re.findall(r"^ {4}([a-z][a-z-]*)\b", listed, flags=re.M)


def test_every_command_eb_help_lists_is_in_the_index_and_the_readme() -> None:
    commands = _help_commands()
    assert "run" in commands and "cache" in commands
    table = section(page="index.md", title="Commands at a glance")
    rows = re.findall(r"^\| `eb ([a-z-]+)[^|]*\|", table, flags=re.M)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for command in commands:
        assert command in rows, f"docs/index.md's table has no row for eb {command}"
        assert re.search(rf"\beb {command}\b", readme), f"README.md never names eb {command}"
    (cache_row,) = [line for line in table.splitlines() if line.startswith("| `eb cache")]
    cache_usage = eb("cache", "--help", cwd=ROOT).stdout
    actions = re.search(r"\{([a-z,]+)\}", cache_usage)
    assert actions is not None
    for action in actions.group(1).split(","):
        for page, text in (("docs/index.md", cache_row), ("README.md", readme)):
            named = f"`{action}`" in text or f"`eb cache {action}`" in text
            assert named, f"{page} never names eb cache {action}"


def test_readme_shows_the_demo_family_it_reports_on() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (shown,) = [
        block for block in fenced(text=readme, language="yaml") if "id: greeting_cases" in block
    ]
    demo = ROOT / "examples" / "demo" / "src" / "eval_checks" / "greeting_cases.yaml"
    # The file as it stands, its leading comments (the editor modeline, a note) left out.
    lines = demo.read_text(encoding="utf-8").splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    assert shown == "".join(lines)
    cases = len(re.findall(r"^  - \{id: ", shown, flags=re.M))
    assert f"Family greeting_cases: {cases}/{cases} cases passed" in readme.replace("\n", " ")


def test_first_project_leaves_the_run_folders_to_the_gitignore_eb_init_writes(
    tmp_path: Path,
) -> None:
    done = eb("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ignored = (tmp_path / ".eval-banana" / ".gitignore").read_text(encoding="utf-8")
    assert "results/" in ignored.splitlines()
    step = section(page="first-project.md", title="6. Read the report")
    assert "Add `.eval-banana/results/` to your `.gitignore`" not in step
    assert "`.eval-banana/.gitignore` that `eb init` wrote already\nignores `results/`" in step


def test_what_the_index_and_the_help_say_eb_init_writes_is_what_it_writes(tmp_path: Path) -> None:
    """docs/index.md said "one passing example check" and `eb --help` "an example check", while
    eb init writes a check and a dataset family of three cases."""
    done = eb("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    root = str(tmp_path.resolve()) + "/"
    written = [line[len(f"Wrote {root}") :] for line in done.stdout.splitlines() if "Wrote" in line]
    (row,) = [
        line
        for line in section(page="index.md", title="Commands at a glance").splitlines()
        if line.startswith("| `eb init`")
    ]
    for path in written:
        assert f"`{path}`" in row, f"docs/index.md's eb init row never names {path}"
    # Each example by its kind: a family has cases, a check has none.
    kinds = {
        "an example dataset family" if "cases" in data else "an example check"
        for data in (
            yaml.safe_load((tmp_path / path).read_text(encoding="utf-8"))
            for path in written
            if path.startswith("eval_checks/")
        )
    }
    assert kinds == {"an example check", "an example dataset family"}
    init_help = eb("init", "--help", cwd=tmp_path).stdout.split("\n\n")[1]
    listed = re.search(
        r"^ {4}init +(.*?)\n {4}[a-z]", eb("--help", cwd=tmp_path).stdout, re.M | re.S
    )
    assert listed is not None
    for text in (init_help, listed.group(1)):
        for kind in kinds:
            assert kind in " ".join(text.split()), text


@pytest.mark.parametrize("page", ["CONTRIBUTING.md", "docs/testing.md", "docs/architecture.md"])
def test_the_contributor_pages_name_only_pages_that_exist(page: str) -> None:
    """docs/testing.md's integrations row sent a new contributor to docs/rerunning.md, a page
    that never existed (the sessions run are docs/rerunning-stages.md's)."""
    named = set(re.findall(r"docs/[\w/-]+\.md", (ROOT / page).read_text(encoding="utf-8")))
    assert sorted(path for path in named if not (ROOT / path).is_file()) == []
