"""The loopback model server the conformance suite points the real agents at."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.model_server import FAIL_TEXT, PASS_TEXT, ModelServer


@pytest.fixture
def server() -> Iterator[ModelServer]:
    running = ModelServer(models=["m1", "m2"]).start()
    try:
        yield running
    finally:
        running.stop()


def _post(server: ModelServer, path: str, body: dict[str, Any]) -> tuple[int, str]:
    request = urllib.request.Request(
        server.url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _events(text: str) -> list[Any]:
    return [
        json.loads(line[6:]) if line[6:] != "[DONE]" else "[DONE]"
        for line in text.splitlines()
        if line.startswith("data: ")
    ]


def test_anthropic_stream_carries_the_scripted_text_and_usage(server: ModelServer) -> None:
    body = {
        "model": "claude-x",
        "stream": True,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Check Description: a"}]}
        ],
        "output_config": {"effort": "high"},
    }
    status, text = _post(server, "/v1/messages", body)
    assert status == 200
    events = _events(text)
    deltas = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
    assert "".join(deltas) == PASS_TEXT and len(deltas) == 3
    assert events[-2]["usage"] == {"input_tokens": 120, "output_tokens": 30}
    (seen,) = server.model_requests()
    assert (seen.api, seen.model, seen.effort) == (
        "anthropic",
        "claude-x",
        {"output_config": {"effort": "high"}},
    )


def test_responses_chat_and_gemini(server: ModelServer) -> None:
    server.script(text=FAIL_TEXT, input_tokens=7, output_tokens=3)
    user = {"role": "user", "content": [{"type": "input_text", "text": "Check Description: b"}]}
    _, text = _post(
        server, "/v1/responses", {"model": "g", "input": [user], "reasoning": {"effort": "low"}}
    )
    completed = _events(text)[-1]
    assert completed["type"] == "response.completed"
    assert completed["response"]["output"][0]["content"][0]["text"] == FAIL_TEXT
    assert completed["response"]["usage"]["total_tokens"] == 10
    _, text = _post(
        server,
        "/v1/chat/completions",
        {
            "model": "c",
            "stream": True,
            "messages": [{"role": "user", "content": "Check Description: c"}],
        },
    )
    chunks = _events(text)
    assert chunks[-1] == "[DONE]" and chunks[-2]["usage"]["prompt_tokens"] == 7
    content = "".join(
        c["choices"][0]["delta"].get("content", "") for c in chunks[:-2] if c["choices"]
    )
    assert content == FAIL_TEXT
    _, text = _post(
        server,
        "/v1beta/models/gem-1:streamGenerateContent?alt=sse",
        {"contents": [{"role": "user", "parts": [{"text": "Check Description: d"}]}]},
    )
    parts = [e["candidates"][0]["content"]["parts"][0]["text"] for e in _events(text)]
    assert "".join(parts) == FAIL_TEXT
    apis = [(r.api, r.model, r.effort) for r in server.model_requests()]
    assert apis == [
        ("responses", "g", {"reasoning": {"effort": "low"}}),
        ("chat", "c", {}),
        ("gemini", "gem-1", {}),
    ]


def test_errors_rules_listing_and_hang(server: ModelServer) -> None:
    server.script_when("case-401", status=401, error_message="bad key")
    status, text = _post(
        server, "/v1/messages", {"messages": [{"role": "user", "content": "case-401"}]}
    )
    assert status == 401 and json.loads(text)["error"] == {
        "type": "authentication_error",
        "message": "bad key",
    }
    status, text = _post(
        server, "/v1beta/models/x:generateContent", {"contents": [{"parts": [{"text": "ok"}]}]}
    )
    assert (
        status == 200
        and json.loads(text)["candidates"][0]["content"]["parts"][0]["text"] == PASS_TEXT
    )
    with urllib.request.urlopen(server.url + "/v1/models", timeout=10) as response:
        assert [m["id"] for m in json.loads(response.read())["data"]] == ["m1", "m2"]
    server.script(hang=True)
    outcome: list[object] = []

    def call() -> None:
        try:
            outcome.append(_post(server, "/v1/messages", {"messages": []}))
        except Exception as exc:  # noqa: BLE001 - the hang ends with a closed connection
            outcome.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    worker.join(0.5)
    assert worker.is_alive()  # no answer while it hangs
    server.stop()
    worker.join(10)
    assert not worker.is_alive() and outcome
