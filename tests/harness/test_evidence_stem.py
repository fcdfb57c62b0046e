"""Every runner names its evidence through RunContext.evidence_stem, so one check can run twice.

Retries keep the canonical stem; repeated samples (a later feature) will give each sample its
own stem, e.g. `<stem>.s1`. Either way no runner may write under the check's stem by itself.
"""

from __future__ import annotations

import json
import os
import textwrap
import threading
from pathlib import Path

from eval_banana.runners.base import RunContext
from eval_banana.runners.deterministic import run_deterministic
from eval_banana.runners.harness_judge import run_harness_judge
from tests.builders import make_config, planned_inline
from tests.harness.judge_rig import Rig


def test_a_judge_writes_prompt_stdout_and_stderr_under_the_evidence_stem(rig: Rig) -> None:
    ctx = rig.context(agent="claude")
    sample = ctx.model_copy(update={"evidence_stem": f"{ctx.check.stem}.s1"})
    result = run_harness_judge(sample)
    assert result.status == "passed", result.error_detail
    names = sorted(path.name for path in (rig.run_dir / "checks").iterdir())
    stem = ctx.check.stem
    # Every file under the sample's stem, none under the check's own (stderr only if any).
    assert {f"{stem}.s1.prompt.txt", f"{stem}.s1.stdout.txt"} <= set(names)
    assert all(name.startswith(f"{stem}.s1.") for name in names), names
    assert result.details["raw_response_path"] == f"checks/{stem}.s1.stdout.txt"


def test_a_deterministic_check_uses_the_evidence_stem_for_files_and_output_dir(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    run_dir = tmp_path / "run"
    (run_dir / "checks").mkdir(parents=True)
    script = textwrap.dedent(
        """
        import json, sys
        from pathlib import Path
        ctx = json.loads(Path(sys.argv[1]).read_text())
        Path(ctx["output_dir"], "evidence.txt").write_text("kept")
        print(ctx["output_dir"])
        print("a note", file=sys.stderr)
        """
    )
    check = planned_inline(id="c1", script=script, project_root=root)
    ctx = RunContext(
        check=check,
        config=make_config(project_root=root),
        harness=None,
        run_dir=run_dir,
        project_root=root,
        base_env=dict(os.environ),
        placeholder_env=dict(os.environ),
        cancel=threading.Event(),
        evidence_stem=f"{check.stem}.s2",
    )
    result = run_deterministic(ctx)
    assert result.status == "passed", result.stderr
    checks = run_dir / "checks"
    sample = f"{check.stem}.s2"
    assert (checks / sample / "evidence.txt").read_text() == "kept"
    assert json.dumps(result.stdout.strip()) == json.dumps(str(checks / sample))
    assert sorted(path.name for path in checks.iterdir()) == sorted(
        [sample, f"{sample}.stdout.txt", f"{sample}.stderr.txt"]
    )
