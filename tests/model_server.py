"""A stand-in model server on the loopback interface, for running the real agent CLIs in tests.

It speaks just enough of four model APIs for the agents eval_banana drives:

- Anthropic Messages (`POST .../messages`, server-sent events or one JSON body): Claude Code;
- OpenAI Responses (`POST .../responses`, server-sent events): Codex, Grok Build;
- OpenAI Chat Completions (`POST .../chat/completions`, server-sent events or JSON): opencode,
  pi, OpenHands (through LiteLLM);
- Gemini `generateContent` / `streamGenerateContent` (`POST .../models/<m>:<method>`): Gemini CLI.

Every answer is the text a test scripted (`server.script(text=...)`), or an HTTP error
(`script(status=500)`), or no answer at all (`script(hang=True)`, held until the server stops).
`script(tool_call=..., tool_arguments=...)` makes a Chat Completions answer call the agent's own
tool first (streamed `choices[0].delta.tool_calls`) and answer `text` once the tool's result is
back; `script(tool_answer=...)` does the like for Anthropic's schema tool.
`server.script_when(marker, ...)` answers differently to the requests whose user prompt holds
`marker`, so one `eb run` with several judges can get a different answer for each.
Every request is recorded (path, API, model, the effort/reasoning fields, the user's prompt) so a
test can assert on what the agent really sent. The server never calls out anywhere.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

PASS_TEXT = '{"score": 1, "reason": "The model server was told to pass."}'
FAIL_TEXT = '{"score": 0, "reason": "The model server was told to fail."}'
NO_VERDICT_TEXT = "I looked around but I cannot decide."
MALFORMED_TEXT = '{"score": "yes", "reason": "a score that is not the integer 0 or 1"}'

# The longest a scripted hang holds a connection, should a test forget to stop the server.
HANG_LIMIT_S = 600.0


@dataclass
class Script:
    """What the server answers to every model request until the next `script()`."""

    text: str = PASS_TEXT
    status: int = 200
    hang: bool = False
    input_tokens: int = 120
    output_tokens: int = 30
    error_message: str = "scripted failure from the test model server"
    # Anthropic only: when the request offers a tool of this name (Claude Code's
    # `StructuredOutput` under --json-schema) and holds no tool result yet, answer by calling
    # it with `text` (a JSON object) as its input, as a model constrained to a schema does.
    tool_answer: str | None = None
    # Chat Completions only: when the request offers a tool of this name (an agent's own tool,
    # such as opencode's `read`) and holds no tool result yet, first call it with
    # `tool_arguments` (a JSON object); the request that brings its result back gets `text`.
    tool_call: str | None = None
    tool_arguments: str = "{}"


@dataclass
class Recorded:
    """One request as received."""

    method: str
    path: str
    api: str  # anthropic | responses | chat | gemini | models | other
    model: str | None
    stream: bool
    effort: dict[str, Any]
    prompt: str
    headers: dict[str, str]
    body: Any
    status: int = 0  # what the server answered (0: no answer, the request hung)


@dataclass
class _State:
    script: Script = field(default_factory=Script)
    rules: list[tuple[str, Script]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)


def _texts(value: Any) -> Iterator[str]:
    """Every text a message content holds: a string, or a list of parts with `text`."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for part in value:
            if isinstance(part, str):
                yield part
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    yield part["text"]
                elif "content" in part:
                    yield from _texts(part["content"])


def _user_prompt(*, api: str, body: dict[str, Any]) -> str:
    """All text of the user turns, in order (system prompts and tool results left out)."""
    pieces: list[str] = []
    if api in ("anthropic", "chat"):
        for message in body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "user":
                pieces.extend(_texts(message.get("content")))
    elif api == "responses":
        items = body.get("input")
        if isinstance(items, str):
            pieces.append(items)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("role") == "user":
                pieces.extend(_texts(item.get("content")))
    elif api == "gemini":
        for content in body.get("contents") or []:
            if isinstance(content, dict) and content.get("role", "user") == "user":
                pieces.extend(_texts(content.get("parts")))
    return "\n".join(pieces)


# The request fields through which each API carries a reasoning effort or thinking budget.
_EFFORT_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("thinking", "output_config", "effort"),
    "responses": ("reasoning",),
    "chat": ("reasoning_effort", "reasoning", "thinking", "enable_thinking"),
}


def _effort(*, api: str, body: dict[str, Any]) -> dict[str, Any]:
    if api == "gemini":
        config = body.get("generationConfig") or body.get("generation_config") or {}
        thinking = config.get("thinkingConfig") if isinstance(config, dict) else None
        return {"thinkingConfig": thinking} if thinking is not None else {}
    return {key: body[key] for key in _EFFORT_KEYS.get(api, ()) if body.get(key) is not None}


def _api_of(path: str) -> str:
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/chat/completions"):
        return "chat"
    if ":generateContent" in path or ":streamGenerateContent" in path:
        return "gemini"
    if path.rstrip("/").endswith("/models"):
        return "models"
    return "other"


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out: list[str] = []
    for name, data in events:
        if name is not None:
            out.append(f"event: {name}\n")
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append(f"data: {payload}\n\n")
    return "".join(out).encode("utf-8")


def chunks(text: str) -> list[str]:
    """The answer in three uneven deltas, as a real stream splits it."""
    if len(text) < 3:
        return [text]
    first, second = len(text) // 3, 2 * len(text) // 3
    return [text[:first], text[first:second], text[second:]]


def _offers_tool(*, body: dict[str, Any], name: str) -> bool:
    """Whether an Anthropic request offers tool `name` and no tool result came back yet."""
    tools = body.get("tools") or []
    offered = any(isinstance(tool, dict) and tool.get("name") == name for tool in tools)
    answered = any(
        isinstance(part, dict) and part.get("type") == "tool_result"
        for message in body.get("messages") or []
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for part in message["content"]
    )
    return offered and not answered


def _chat_offers_tool(*, body: dict[str, Any], name: str) -> bool:
    """Whether a Chat Completions request offers tool `name` and holds no tool result yet."""
    tools = body.get("tools") or []
    offered = any(
        isinstance(tool, dict)
        and isinstance(tool.get("function"), dict)
        and tool["function"].get("name") == name
        for tool in tools
    )
    answered = any(
        isinstance(message, dict) and message.get("role") == "tool"
        for message in body.get("messages") or []
    )
    return offered and not answered


def _anthropic_tool_call(*, script: Script, model: str, name: str) -> tuple[bytes, str]:
    """A streamed answer that calls tool `name` with the scripted JSON as its input."""
    usage = {"input_tokens": script.input_tokens, "output_tokens": 1}
    block: dict[str, Any] = {"type": "tool_use", "id": "toolu_model_server", "name": name}
    block["input"] = {}
    message: dict[str, Any] = {
        "id": "msg_model_server",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
    ]
    for piece in chunks(script.text):
        delta = {"type": "input_json_delta", "partial_json": piece}
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"input_tokens": script.input_tokens, "output_tokens": 10},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events), "text/event-stream"


def _anthropic(*, script: Script, model: str, stream: bool) -> tuple[bytes, str]:
    usage_start = {
        "input_tokens": script.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
    }
    message = {
        "id": "msg_model_server",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage_start,
    }
    if not stream:
        done = {
            **message,
            "content": [{"type": "text", "text": script.text}],
            "stop_reason": "end_turn",
            "usage": {**usage_start, "output_tokens": script.output_tokens},
        }
        return json.dumps(done).encode(), "application/json"
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for piece in chunks(script.text):
        delta = {"type": "text_delta", "text": piece}
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {
                    "input_tokens": script.input_tokens,
                    "output_tokens": script.output_tokens,
                },
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events), "text/event-stream"


def _responses(*, script: Script, model: str) -> tuple[bytes, str]:
    item_id = "msg_model_server"
    part = {"type": "output_text", "text": script.text, "annotations": []}
    item = {
        "id": item_id,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [part],
    }
    usage = {
        "input_tokens": script.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": script.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": script.input_tokens + script.output_tokens,
    }
    response = {
        "id": "resp_model_server",
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": model,
        "output": [],
        "usage": None,
    }
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("response.created", {"type": "response.created", "response": response}),
        ("response.in_progress", {"type": "response.in_progress", "response": response}),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress", "content": []},
            },
        ),
        (
            "response.content_part.added",
            {"type": "response.content_part.added", **where, "part": {**part, "text": ""}},
        ),
    ]
    for piece in chunks(script.text):
        events.append(
            (
                "response.output_text.delta",
                {"type": "response.output_text.delta", **where, "delta": piece},
            )
        )
    events += [
        (
            "response.output_text.done",
            {"type": "response.output_text.done", **where, "text": script.text},
        ),
        (
            "response.content_part.done",
            {"type": "response.content_part.done", **where, "part": part},
        ),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": {**response, "status": "completed", "output": [item], "usage": usage},
            },
        ),
    ]
    for number, (_, data) in enumerate(events):
        if isinstance(data, dict):
            data["sequence_number"] = number
    return _sse(events), "text/event-stream"


def _chat(*, script: Script, model: str, stream: bool) -> tuple[bytes, str]:
    base = {"id": "chatcmpl-model-server", "created": int(time.time()), "model": model}
    usage = {
        "prompt_tokens": script.input_tokens,
        "completion_tokens": script.output_tokens,
        "total_tokens": script.input_tokens + script.output_tokens,
    }
    if not stream:
        body = {
            **base,
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": script.text},
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        }
        return json.dumps(body).encode(), "application/json"
    chunk = {**base, "object": "chat.completion.chunk"}

    def choice(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, choice({"role": "assistant", "content": ""}, None))
    ]
    events += [(None, choice({"content": piece}, None)) for piece in chunks(script.text)]
    events += [
        (None, choice({}, "stop")),
        (None, {**chunk, "choices": [], "usage": usage}),
        (None, "[DONE]"),
    ]
    return _sse(events), "text/event-stream"


def _chat_tool_call(*, script: Script, model: str, name: str) -> tuple[bytes, str]:
    """A streamed answer that calls tool `name` with the scripted arguments, in three deltas."""
    base = {"id": "chatcmpl-model-server", "created": int(time.time()), "model": model}
    chunk = {**base, "object": "chat.completion.chunk"}

    def choice(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    call: dict[str, Any] = {
        "index": 0,
        "id": "call_model_server",
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, choice({"role": "assistant", "content": None, "tool_calls": [call]}, None))
    ]
    events += [
        (None, choice({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}, None))
        for piece in chunks(script.tool_arguments)
    ]
    usage = {
        "prompt_tokens": script.input_tokens,
        "completion_tokens": 10,
        "total_tokens": script.input_tokens + 10,
    }
    events += [
        (None, choice({}, "tool_calls")),
        (None, {**chunk, "choices": [], "usage": usage}),
        (None, "[DONE]"),
    ]
    return _sse(events), "text/event-stream"


def _gemini(*, script: Script, model: str, stream: bool) -> tuple[bytes, str]:
    usage = {
        "promptTokenCount": script.input_tokens,
        "candidatesTokenCount": script.output_tokens,
        "totalTokenCount": script.input_tokens + script.output_tokens,
    }

    def piece(text: str, *, last: bool) -> dict[str, Any]:
        candidate: dict[str, Any] = {
            "content": {"parts": [{"text": text}], "role": "model"},
            "index": 0,
        }
        if last:
            candidate["finishReason"] = "STOP"
        return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model}

    if not stream:
        return json.dumps(piece(script.text, last=True)).encode(), "application/json"
    pieces = chunks(script.text)
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, piece(text, last=index == len(pieces) - 1)) for index, text in enumerate(pieces)
    ]
    return _sse(events), "text/event-stream"


_ERROR_STATUS = {
    400: ("invalid_request_error", "INVALID_ARGUMENT"),
    401: ("authentication_error", "UNAUTHENTICATED"),
    403: ("permission_error", "PERMISSION_DENIED"),
    429: ("rate_limit_error", "RESOURCE_EXHAUSTED"),
    500: ("api_error", "INTERNAL"),
    503: ("overloaded_error", "UNAVAILABLE"),
}


def _error_body(*, api: str, status: int, message: str) -> bytes:
    kind, google = _ERROR_STATUS.get(status, ("api_error", "UNKNOWN"))
    if api == "anthropic":
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    elif api == "gemini":
        body = {"error": {"code": status, "message": message, "status": google}}
    else:
        body = {"error": {"message": message, "type": kind, "code": status}}
    return json.dumps(body).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        return  # the record is the log

    def _send(self, *, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if content_type == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", errors="replace")

    def do_GET(self) -> None:  # noqa: N802 - the base's name
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802 - the base's name
        self._handle("POST")

    def do_HEAD(self) -> None:  # noqa: N802 - the base's name
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _handle(self, method: str) -> None:
        state = self.server.state
        split = urlsplit(self.path)
        path = split.path
        api = _api_of(path)
        body = self._read_body() if method == "POST" else None
        fields = body if isinstance(body, dict) else {}
        model = fields.get("model") if isinstance(fields.get("model"), str) else None
        if api == "gemini":
            model = path.rsplit("/", 1)[-1].split(":", 1)[0]
        stream = bool(fields.get("stream")) or ":streamGenerateContent" in path
        if api == "gemini" and "alt" in parse_qs(split.query):
            stream = ":streamGenerateContent" in path
        record = Recorded(
            method=method,
            path=path,
            api=api,
            model=model,
            stream=stream,
            effort=_effort(api=api, body=fields),
            prompt=_user_prompt(api=api, body=fields),
            headers={key.lower(): value for key, value in self.headers.items()},
            body=body,
        )
        with state.lock:
            state.requests.append(record)
            script = next(
                (chosen for marker, chosen in state.rules if marker in record.prompt),
                state.script,
            )
        if api == "models":
            listing = {
                "object": "list",
                "data": [
                    {"id": name, "object": "model", "owned_by": "test"} for name in state.models
                ],
                "models": [{"name": f"models/{name}"} for name in state.models],
            }
            record.status = 200
            self._send(
                status=200, body=json.dumps(listing).encode(), content_type="application/json"
            )
            return
        if api == "other":
            record.status = 404
            self._send(
                status=404,
                body=_error_body(api=api, status=404, message=f"no such endpoint: {path}"),
                content_type="application/json",
            )
            return
        if script.hang:
            state.closing.wait(HANG_LIMIT_S)
            self.close_connection = True
            return
        if script.status != 200:
            record.status = script.status
            self._send(
                status=script.status,
                body=_error_body(api=api, status=script.status, message=script.error_message),
                content_type="application/json",
            )
            return
        answered = model or "test-model"
        tool = script.tool_answer
        if api == "anthropic" and tool and stream and _offers_tool(body=fields, name=tool):
            payload, kind = _anthropic_tool_call(script=script, model=answered, name=tool)
        elif api == "anthropic":
            payload, kind = _anthropic(script=script, model=answered, stream=stream)
        elif api == "responses":
            payload, kind = _responses(script=script, model=answered)
        elif (
            api == "chat"
            and script.tool_call
            and stream
            and _chat_offers_tool(body=fields, name=script.tool_call)
        ):
            payload, kind = _chat_tool_call(script=script, model=answered, name=script.tool_call)
        elif api == "chat":
            payload, kind = _chat(script=script, model=answered, stream=stream)
        else:
            payload, kind = _gemini(script=script, model=answered, stream=stream)
        record.status = 200
        self._send(status=200, body=payload, content_type=kind)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # An agent that hangs up mid-answer (killed by a timeout, or done) is not an error here.
        return

    def __init__(self, state: _State) -> None:
        self.state = state
        super().__init__(("127.0.0.1", 0), _Handler)


class ModelServer:
    """The running server: `url`, `script(...)`, `requests`. Start with `start()`, end with `stop()`."""

    def __init__(self, *, models: list[str] | None = None) -> None:
        self._state = _State(models=list(models or ["test-model"]))
        self._server = _Server(self._state)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="model-server", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._state.closing.set()  # releases scripted hangs
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def script(self, **fields: Any) -> Script:
        """Answer every following request this way (fields of `Script`; the rest default)."""
        new = Script(**fields)
        with self._state.lock:
            self._state.script = new
        return new

    def script_when(self, marker: str, **fields: Any) -> Script:
        """Answer this way whenever the user prompt holds `marker` (first matching rule wins)."""
        new = Script(**fields)
        with self._state.lock:
            self._state.rules.append((marker, new))
        return new

    def reset(self) -> None:
        """Forget the requests and rules seen so far and go back to the default script."""
        with self._state.lock:
            self._state.requests.clear()
            self._state.rules.clear()
            self._state.script = Script()

    @property
    def requests(self) -> list[Recorded]:
        with self._state.lock:
            return list(self._state.requests)

    def model_requests(self, *, marker: str = "Check Description:") -> list[Recorded]:
        """The generation requests whose user prompt holds `marker` (the judge's own turns)."""
        return [
            request
            for request in self.requests
            if request.api in ("anthropic", "responses", "chat", "gemini")
            and marker in request.prompt
        ]
