"""An S3 remote's AWS_* variables reach checks under env = "inherit", masked in what they print
(docs/shared-cache.md): the access key id as well as the secret key, in the run folder, the
local cache and the shared one that every runner (a fork's pull request too) reads. A real
`eb` process against moto's S3 server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import check_yaml
from tests.processes import REPO, eb_process
from tests.remote_servers import BUCKET, moto_s3

pytestmark = pytest.mark.remote

KEY_ID = "AKIAEXAMPLEID1234567"
SECRET_KEY = "wJalrXUtnFEMIexampleSECRETkey0123456789"
SESSION_TOKEN = "FwoGZXIvYXdzEXAMPLEsessionTOKEN0123456789"
PRINTS_AWS = """\
import os
for name in sorted(os.environ):
    if name.startswith("AWS_"):
        print(name, os.environ[name])
"""


def test_the_access_key_id_a_check_prints_is_masked_everywhere_it_lands(
    project: Callable[..., Path],
) -> None:
    root = project(
        {"eval_checks/aws.yaml": check_yaml("aws", script=PRINTS_AWS)},
        config='[core]\noutput_dir = "results"\n[cache]\nmode = "on"\n',
    )
    with moto_s3() as server:
        environ = {
            **{
                name: value
                for name, value in os.environ.items()
                if not name.startswith(("EVAL_BANANA_", "AWS_"))
            },
            **server.environ,
            "PYTHONPATH": str(REPO),
            "AWS_ACCESS_KEY_ID": KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_SESSION_TOKEN": SESSION_TOKEN,
            "EVAL_BANANA_CACHE_REMOTE": f"s3://{BUCKET}/eb",
        }
        done = eb_process(root, "run", env=environ)
        assert done.returncode == 0, done.stdout + done.stderr
        client = server.client()
        listed = client.list_objects_v2(Bucket=BUCKET, Prefix="eb/")["Contents"]
        shared = {
            item["Key"]: client.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read()
            for item in listed
        }
    assert any(key.startswith("eb/ac/") for key in shared)  # the verdict went up
    (stdout,) = root.glob("results/*/checks/aws*.stdout.txt")
    printed = stdout.read_text()
    assert "AWS_ACCESS_KEY_ID ***\n" in printed  # the check received it; eb masked it
    assert "AWS_SECRET_ACCESS_KEY ***\n" in printed and "AWS_SESSION_TOKEN ***\n" in printed
    assert "AWS_DEFAULT_REGION us-east-1\n" in printed  # not a credential: left as it is
    secrets = [value.encode() for value in (KEY_ID, SECRET_KEY, SESSION_TOKEN)]
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(secret in data for secret in secrets), path
    for key, body in shared.items():
        # An entry carries its small files inline, in base64: in neither form.
        inline = json.loads(body)["inline"].values() if "/ac/" in key else []
        for blob in (body, *(base64.b64decode(text) for text in inline)):
            assert not any(secret in blob for secret in secrets), key
    assert KEY_ID not in done.stdout + done.stderr
