"""A shared cache's URL or endpoint with a password or a query in the config file, from real
`eb` processes: config.json records them masked, every later command finds config.json what
the file gives (compared masked), and no output or stage file ever holds the secret."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import check_yaml
from tests.processes import REPO, eb_process

# (the [cache] lines, the secret they hold); the verdict cache is off, so nothing is asked.
SECRET_SETTINGS = [
    pytest.param('remote = "https://eb:s3cret-pw@cache.example/eb"\n', "s3cret-pw", id="password"),
    pytest.param('remote = "http://127.0.0.1:9/eb?token=abc123"\n', "abc123", id="query"),
    pytest.param(
        'remote = "s3://ci-caches/eb"\nremote_endpoint = "http://ci:s3cret-pw@minio:9000"\n',
        "s3cret-pw",
        id="endpoint-password",
    ),
    pytest.param(
        'remote = "s3://ci-caches/eb"\n'
        'remote_endpoint = "http://minio:9000/?X-Amz-Signature=abc123"\n',
        "abc123",
        id="endpoint-query",
    ),
]


def _environ() -> dict[str, str]:
    """This environment without eb's settings or AWS's."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("EVAL_BANANA_", "AWS_"))
    }
    return {**kept, "PYTHONPATH": str(REPO)}


def _secret_project(project: Callable[..., Path], *, cache_lines: str) -> Path:
    config = f'[core]\noutput_dir = "results"\n[cache]\nmode = "off"\n{cache_lines}'
    return project({"eval_checks/ok.yaml": check_yaml("ok")}, config=config)


def _stage_files_text(root: Path) -> str:
    return "".join(path.read_text() for path in root.glob("results/*/stages/*.json"))


@pytest.mark.parametrize(("cache_lines", "secret"), SECRET_SETTINGS)
def test_a_masked_setting_in_config_json_is_what_the_config_file_gives(
    project: Callable[..., Path], cache_lines: str, secret: str
) -> None:
    root = _secret_project(project, cache_lines=cache_lines)
    environ = _environ()
    done = eb_process(root, "run", env=environ)
    assert done.returncode == 0, done.stdout + done.stderr
    status = eb_process(root, "status", env=environ)
    assert status.returncode == 0, status.stdout + status.stderr
    assert "invalid" not in status.stdout + status.stderr
    assert "config    stages/config.json     ok" in status.stdout
    updated = eb_process(root, "update", env=environ)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    reported = eb_process(root, "stage", "report", env=environ)
    assert reported.returncode == 0, reported.stdout + reported.stderr
    for later in (status, updated, reported):
        assert secret not in later.stdout + later.stderr
    assert "***" in _stage_files_text(root)


@pytest.mark.parametrize(("cache_lines", "secret"), SECRET_SETTINGS[:2])
def test_an_unused_shared_cache_is_told_with_its_secret_masked(
    project: Callable[..., Path], cache_lines: str, secret: str
) -> None:
    root = _secret_project(project, cache_lines=cache_lines)
    done = eb_process(root, "run", env=_environ())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "is not used: the verdict cache is off" in done.stderr
    assert "***" in done.stderr
    assert secret not in done.stdout + done.stderr
    # The warning is also written into config.json.
    assert secret not in _stage_files_text(root)
