"""The shared cache's entry document: what eb writes matches its published schema, and the
signature covers every byte."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from eval_banana.cache.remotedoc import remote_text
from eval_banana.remote.signing import opened, sealed, signature_problem

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "schemas" / "remote-cache-entry.schema.json").read_text()
)
KEY = "sha256:" + "ab" * 32
ENTRY = {"key": KEY, "check_id": "j", "result": {"status": "passed"}}


@pytest.mark.parametrize("signing_key", [None, b"the-ci-secret"])
def test_what_eb_writes_is_valid_against_the_published_schema(signing_key: bytes | None) -> None:
    data = sealed(key=signing_key, text=remote_text(key=KEY, entry=ENTRY, inline={}))
    jsonschema.validate(json.loads(data), SCHEMA)
    assert (b'"signature": ' in data) is (signing_key is not None)


def test_the_signature_holds_only_for_the_exact_bytes_and_key() -> None:
    data = sealed(key=b"k1-secret", text=remote_text(key=KEY, entry=ENTRY, inline={}))
    assert signature_problem(key=b"k1-secret", found=opened(data)) is None
    assert signature_problem(key=b"k2-secret", found=opened(data)) is not None
    edited = data.replace(b'"passed"', b'"failed"')
    assert signature_problem(key=b"k1-secret", found=opened(edited)) is not None
    unsigned = remote_text(key=KEY, entry=ENTRY, inline={})
    assert signature_problem(key=b"k1-secret", found=opened(unsigned)) == "has no signature"


def test_the_local_mac_never_travels() -> None:
    text = remote_text(key=KEY, entry={**ENTRY, "mac": "hmac-sha256:" + "0" * 64}, inline={})
    assert b'"mac"' not in text
