"""Deterministic checks under `[execution] isolation`: what their errors say, and that
following it works, through `eb run` processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.isolation.rig import run_checks

# A generator that rewrites the file it then checks.
REGENERATES = 'from pathlib import Path\nPath("src/app.py").write_text("VALUE = 2\\n")\n'


def _project(root: Path, *, script: str, config: str = "") -> Path:
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("VALUE = 1\n")
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\n[cache]\nmode = "off"\n[history]\nmode = "off"\n' + config
    )
    (root / "eval_checks" / "gen.yaml").write_text(
        "schema_version: 1\nid: gen\ntype: deterministic\ndescription: g.\n"
        f"script: {json.dumps(script)}\n"
    )
    return root


def _run(root: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The one check's result."""
    (result,) = run_checks(root, *args, env=env)[1].values()
    return result


@pytest.mark.parametrize("mode", ["detect", "copy"])
def test_a_check_s_isolation_error_names_the_setting_that_isolates_checks(
    tmp_path: Path, mode: str
) -> None:
    isolated = f'[execution]\nisolation = "{mode}"\n'
    root = _project(tmp_path / "proj", script=REGENERATES, config=isolated)
    check = _run(root)
    assert check["status"] == "error", check
    detail = check["error_detail"]
    assert "judge" not in detail and "[harness] isolation " not in detail
    assert detail.endswith(
        "list the paths it may write in [harness] isolation_ignore, or set [execution] isolation "
        '(--execution-isolation, EVAL_BANANA_EXECUTION_ISOLATION) to "off" for checks meant to '
        "write"
    ), detail
    # Either way out it names works.
    (root / "src" / "app.py").write_text("VALUE = 1\n")
    assert _run(root, env={"EVAL_BANANA_EXECUTION_ISOLATION": "off"})["status"] == "passed"
    ignoring = _project(
        tmp_path / "ignoring",
        script=REGENERATES,
        config=isolated + '[harness]\nisolation_ignore = ["src/app.py"]\n',
    )
    assert _run(ignoring)["status"] == "passed"


# A formatter that found nothing to change: it saves every file with the bytes it read.
SAVES_UNCHANGED = (
    "from pathlib import Path\n"
    'for path in (Path("src/app.py"), Path("eval_checks/gen.yaml")):\n'
    "    path.write_bytes(path.read_bytes())\n"
)


@pytest.mark.parametrize("mode", ["detect", "copy"])
def test_a_file_saved_unchanged_is_no_change_under_either_mode(tmp_path: Path, mode: str) -> None:
    root = _project(tmp_path / "proj", script=SAVES_UNCHANGED)
    check = _run(root, "--execution-isolation", mode)
    assert check["status"] == "passed", check
    assert check["details"]["isolation"]["changed"] == []
    # One byte more is a change, under either mode.
    script = SAVES_UNCHANGED.replace("path.read_bytes()", 'path.read_bytes() + b" "')
    changed = _project(tmp_path / "changed", script=script)
    check = _run(changed, "--execution-isolation", mode)
    assert check["status"] == "error", check
    assert check["details"]["isolation"]["changed"] == ["eval_checks/gen.yaml", "src/app.py"]


def test_a_script_path_check_in_a_copy_sees_itself_in_the_copy(tmp_path: Path) -> None:
    # `__file__` is where the script is in the project the check sees: a script that writes
    # beside itself writes into the copy (and is told as changing it), never the project.
    root = _project(tmp_path / "proj", script="pass\n")
    (root / "eval_checks" / "helper_mod.py").write_text("PLACE = __file__\n")
    (root / "eval_checks" / "beside.py").write_text(
        "import json, os, sys\n"
        "import helper_mod\n"
        "out = json.load(open(sys.argv[1]))\n"
        "seen = {'file': __file__, 'path0': sys.path[0], 'sibling': helper_mod.PLACE,\n"
        "        'root': out['project_root']}\n"
        "open(os.path.join(out['output_dir'], 'seen.json'), 'w').write(json.dumps(seen))\n"
        "open(os.path.join(os.path.dirname(__file__), 'scratch.txt'), 'w').write('x')\n"
    )
    (root / "eval_checks" / "gen.yaml").write_text(
        "schema_version: 1\nid: gen\ntype: deterministic\ndescription: g.\nscript_path: beside.py\n"
    )
    check = _run(root, "--execution-isolation", "copy")
    assert not (root / "eval_checks" / "scratch.txt").exists()
    assert check["status"] == "error", check
    assert "eval_checks/scratch.txt" in check["error_detail"]
    (seen_file,) = (root / "runs").glob("*/checks/*/seen.json")
    seen = json.loads(seen_file.read_text())
    copy = Path(seen["root"])
    assert copy != root
    assert seen["file"] == str(copy / "eval_checks" / "beside.py")
    assert seen["path0"] == str(copy / "eval_checks")
    assert seen["sibling"] == str(copy / "eval_checks" / "helper_mod.py")
