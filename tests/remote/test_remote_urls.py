"""A shared-cache URL eb could never use is a setup error of its own, from a real `eb` process:
exit 2, the setting, where it was given and the fix, before any run folder is made; never a
Python traceback (exit 1, which CI reads as checks that failed)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import check_yaml
from tests.processes import REPO, eb_process

# The remote suite: the shared cache's own tests (docs/testing.md).
pytestmark = pytest.mark.remote

CONFIG = '[core]\noutput_dir = "results"\n[cache]\nmode = "on"\n'


def _environ(**extra: str) -> dict[str, str]:
    """This environment without eb's settings or AWS's, then `extra`."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("EVAL_BANANA_", "AWS_"))
    }
    return {**kept, "PYTHONPATH": str(REPO), "AWS_REGION": "us-east-1", **extra}


def _project(project: Callable[..., Path]) -> Path:
    return project({"eval_checks/ok.yaml": check_yaml("ok")}, config=CONFIG)


@pytest.mark.parametrize(
    ("url", "shown", "told", "command"),
    [
        (
            "http://ci:pw-of-ci@127.0.0.1:99999/eb",
            "http://ci:***@127.0.0.1:99999/eb",
            "names the port '99999': a port is a number from 1 to 65535",
            ("cache", "stats", "--remote"),
        ),
        ("https://cache.internal:abc/eb", None, "names the port 'abc'", ("validate",)),
        (
            "http://ci:pw-of-ci@[::1/eb",
            "http://***@[::1/eb",
            "has a host part eb cannot read",
            ("validate",),
        ),
        ("s3://[ci-caches/eb", None, "has a host part eb cannot read", ("cache", "push")),
        ("file://[::1/srv/eb", None, "has a host part eb cannot read", ("validate",)),
    ],
)
def test_a_remote_url_whose_host_or_port_cannot_be_read_is_a_setup_error(
    project: Callable[..., Path],
    url: str,
    shown: str | None,
    told: str,
    command: tuple[str, ...],
) -> None:
    root = _project(project)
    shown = shown or url
    given = {
        ("run", "--cache-remote", url): "--cache-remote",
        command: "EVAL_BANANA_CACHE_REMOTE",
    }
    for args, source in given.items():
        done = eb_process(root, *args, env=_environ(EVAL_BANANA_CACHE_REMOTE=url))
        assert done.returncode == 2, (args, done.stdout + done.stderr)
        assert "Traceback" not in done.stderr
        assert f"[cache] remote '{shown}' (from {source}) {told}" in done.stderr, args
        assert "\nhint: " in done.stderr
        assert "pw-of-ci" not in done.stderr
    assert not (root / "results").exists()  # refused before any run folder was made


@pytest.mark.parametrize(
    ("url", "told"),
    [
        ("s3://", "names no bucket"),
        ("s3:///eb", "names no bucket"),  # `s3://${BUCKET}/eb` with the variable empty
        ("https://", "names no host"),
        ("http://ci:pw-of-ci@/eb", "names no host"),
        ("file://", "names no folder"),  # would be the current folder
    ],
)
def test_a_remote_url_that_names_no_bucket_host_or_folder_is_a_setup_error(
    project: Callable[..., Path], url: str, told: str
) -> None:
    # It used to be a warning when the run opened the remote, and the run went on unshared;
    # eb validate said nothing.
    root = _project(project)
    environ = _environ(EVAL_BANANA_CACHE_REMOTE=url)
    for command in (("validate",), ("run",)):
        done = eb_process(root, *command, env=environ)
        assert done.returncode == 2, (command, done.stdout + done.stderr)
        assert f"(from EVAL_BANANA_CACHE_REMOTE) {told}\nhint: write " in done.stderr
        assert "may be empty" in done.stderr
        assert "pw-of-ci" not in done.stderr
    assert not (root / "results").exists()
    assert not (root / "ac").exists()


@pytest.mark.parametrize("url", ["s3://minio.internal:9000/eb", "s3://AKIA:pw-of-ci@bucket/eb"])
def test_an_s3_url_with_a_port_or_credentials_where_the_bucket_goes_is_a_setup_error(
    project: Callable[..., Path], url: str
) -> None:
    # It was taken as a bucket named `minio.internal:9000`, and every request failed in turn.
    root = _project(project)
    done = eb_process(root, "run", env=_environ(EVAL_BANANA_CACHE_REMOTE=url))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "names a host, port or credentials where the bucket goes" in done.stderr
    assert "[cache] remote_endpoint" in done.stderr
    assert "pw-of-ci" not in done.stderr
    assert not (root / "results").exists()


def test_a_remote_url_that_cannot_be_read_is_no_folder_while_the_cache_is_off(
    project: Callable[..., Path],
) -> None:
    # Never asked, so no setup error; and eb's own folders (a remote that is a folder is one)
    # are found without reading it as one.
    root = _project(project)
    environ = _environ(EVAL_BANANA_CACHE_REMOTE="file://[::1/srv/eb", EVAL_BANANA_CACHE_MODE="off")
    done = eb_process(root, "run", env=environ)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "is not used: the verdict cache is off" in done.stderr
    assert len(list(root.glob("results/*/report.json"))) == 1


@pytest.mark.parametrize(
    ("variables", "told"),
    [
        ({"AWS_ENDPOINT_URL_S3": "minio:9000"}, "Invalid endpoint: minio:9000"),
        ({"AWS_PROFILE": "no-such-profile"}, "(no-such-profile) could not be found"),
        ({"AWS_REGION": "us east 1"}, "'us east 1'"),
    ],
)
def test_what_boto3_refuses_before_any_request_is_said_not_raised(
    project: Callable[..., Path], variables: dict[str, str], told: str
) -> None:
    pytest.importorskip("boto3")
    root = _project(project)
    environ = _environ(
        EVAL_BANANA_CACHE_REMOTE="s3://ci-caches/eb",
        AWS_CONFIG_FILE=str(root / "no-aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(root / "no-aws-credentials"),
        **variables,
    )
    # A run goes on without the shared cache, and says why (as for a remote that is down).
    done = eb_process(root, "run", env=environ)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    warning = "The shared cache s3://ci-caches/eb cannot be used: boto3 cannot set up its S3"
    assert warning in done.stderr and told in done.stderr
    assert len(list(root.glob("results/*/report.json"))) == 1
    # `eb cache` cannot act on it: exit 2 with the reason.
    pushed = eb_process(root, "cache", "push", env=environ)
    assert pushed.returncode == 2, pushed.stdout + pushed.stderr
    assert "Traceback" not in pushed.stderr
    assert told in pushed.stderr
