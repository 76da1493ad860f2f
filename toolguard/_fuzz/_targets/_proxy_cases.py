"""Case generation for the ``proxy`` fuzz target: upstream response scripts and client requests.

Upstream responses are ``HostileUpstream`` scripts (raw bytes, pauses, resets): OpenAI SSE streams with valid
or invalid tool-call arguments, mutated framing, truncation, a slow drip, a giant chunk, non-stream JSON,
error statuses with odd ``retry-after``, random bytes, silence, a reset, broken chunked encoding. Client
requests are chat completions (stream or not, generated tool schemas, every ``tool_choice``), malformed
bodies, other paths, and clients that leave mid-stream. Everything is drawn from one ``random.Random``, so a
case is a pure function of its seed; generation is O(size of the case).
"""

from __future__ import annotations

import base64
import json
import random
from typing import Any

from .._hostile import Step, write_step
from .._instances import gen_instance
from .._jsongen import dump, gen_schema
from ._sse import _mutate_bytes

__all__ = ["make_request"]

_TOOL_NAMES = ("get_weather", "book_flight", "search", "write_file")

# -- upstream responses ------------------------------------------------------------------------------------


def _http(status: int, headers: dict[str, str], body: bytes, *, length: bool = True) -> bytes:
    reason = {200: "OK", 400: "Bad Request", 429: "Too Many Requests", 500: "Internal Server Error"}.get(
        status, "X"
    )
    lines = [f"HTTP/1.1 {status} {reason}", "connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    if length:
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    payload: dict[str, Any] = {
        "id": "chatcmpl-fz",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        payload = {**payload, "choices": [], "usage": usage}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _arguments(rng: random.Random, schema: Any) -> str:
    text = dump(rng, gen_instance(rng, schema)).strip()
    if rng.random() < 0.2:  # a model mistake
        text = rng.choice(
            [text[: max(1, len(text) // 2)], text + "}", text.replace(":", "", 1), '{"oops": 1}']
        )
    return text


def _sse_events(rng: random.Random, tools: list[dict[str, Any]]) -> list[bytes]:
    events = [_chunk({"role": "assistant", "content": ""})]
    kind = rng.choice(["content", "tool", "tool", "both", "parallel"]) if tools else "content"
    if kind in ("content", "both"):
        text = rng.choice(
            ["Sure, let me check.", "The answer is 42.", "Voilà 😀 ", "ha " * rng.randint(1, 60)]
        )
        for i in range(0, len(text), 7):
            events.append(_chunk({"content": text[i : i + 7]}))
    finish = "stop"
    if kind in ("tool", "both", "parallel"):
        for index in range(2 if kind == "parallel" else 1):
            tool = rng.choice(tools)["function"]
            args = _arguments(rng, tool.get("parameters", {}))
            events.append(
                _chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": f"call_{index}",
                                "type": "function",
                                "function": {"name": tool["name"], "arguments": ""},
                            }
                        ]
                    }
                )
            )
            cut = sorted(rng.sample(range(1, len(args)), min(3, len(args) - 1))) if len(args) > 1 else []
            for a, b in zip([0, *cut], [*cut, len(args)], strict=True):
                events.append(
                    _chunk({"tool_calls": [{"index": index, "function": {"arguments": args[a:b]}}]})
                )
        finish = "tool_calls"
    if rng.random() < 0.1:
        finish = "length"
    events.append(_chunk({}, finish))
    if rng.random() < 0.3:
        events.append(_chunk({}, None, usage={"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}))
    events.append(b"data: [DONE]\n\n")
    return events


def _completion(rng: random.Random, tools: list[dict[str, Any]]) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if tools and rng.random() < 0.7:
        tool = rng.choice(tools)["function"]
        message["tool_calls"] = [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": tool["name"], "arguments": _arguments(rng, tool.get("parameters", {}))},
            }
        ]
        finish = "tool_calls"
    else:
        message["content"] = rng.choice(["Hello.", "", "x" * 50])
    if rng.random() < 0.1:
        finish = "length"
    return json.dumps(
        {
            "id": "chatcmpl-fz",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
        }
    ).encode()


_SSE_HEAD = {"content-type": "text/event-stream"}
_JSON_HEAD = {"content-type": "application/json"}


def _response(rng: random.Random, tools: list[dict[str, Any]], stream: bool) -> tuple[str, list[Step]]:
    kind = rng.choice(
        [
            "sse",
            "sse",
            "sse-mutated",
            "sse-truncated",
            "sse-drip",
            "sse-giant",
            "json",
            "json",
            "json-truncated",
            "status",
            "random-bytes",
            "silent",
            "reset",
            "chunked-bad",
            "mismatch",
        ]
    )
    if kind.startswith("sse") and not stream:
        kind = "json"
    if kind in ("json", "json-truncated") and stream:
        kind = "sse"
    if kind == "mismatch":
        kind, stream = ("json", False) if stream else ("sse", True)
    events = _sse_events(rng, tools)
    body = b"".join(events)
    head = _http(200, _SSE_HEAD, b"", length=False)
    if kind == "sse":
        return kind, [write_step(head + body)]
    if kind == "sse-mutated":
        return kind, [write_step(head + _mutate_bytes(rng, body))]
    if kind == "sse-truncated":
        return kind, [write_step(head + body[: rng.randint(0, len(body))])]
    if kind == "sse-drip":
        data, steps, i = head + body, [], 0
        while i < len(data):
            size = rng.randint(1, 40)
            steps += [write_step(data[i : i + size]), ["s", rng.randint(0, 15)]]
            i += size
        return kind, steps[:400]
    if kind == "sse-giant":
        blob = "".join(rng.choice("abcdefghij klmnop") for _ in range(64)) * rng.choice(
            [2_000, 20_000, 70_000]
        )
        giant = _chunk({"content": blob}) if rng.random() < 0.5 else b"data: " + blob.encode()
        return kind, [write_step(head + events[0] + giant + body)]
    if kind == "json":
        return kind, [write_step(_http(200, _JSON_HEAD, _completion(rng, tools)))]
    if kind == "json-truncated":
        full = _http(200, _JSON_HEAD, _completion(rng, tools))
        return kind, [write_step(full[: rng.randint(0, len(full))])]
    if kind == "status":
        status = rng.choice([400, 401, 404, 429, 500, 502, 503])
        headers = dict(_JSON_HEAD)
        if status == 429 or rng.random() < 0.2:
            headers["retry-after"] = rng.choice(
                ["0", "1", "soon", "-5", "99999", "Wed, 21 Oct 2015 07:28:00 GMT"]
            )
        error = rng.choice([b'{"error": {"message": "nope", "type": "x"}}', b"<html>oops</html>", b"", b"{"])
        return kind, [write_step(_http(status, headers, error))]
    if kind == "random-bytes":
        return kind, [write_step(bytes(rng.randrange(256) for _ in range(rng.randint(0, 300))))]
    if kind == "silent":
        return kind, [["s", rng.choice([2500, 10000])]]  # outlasts the leak grace: a leak stays visible
    if kind == "reset":
        return kind, [write_step(head + body[: rng.randint(0, len(body))]), ["x"]]
    # chunked-bad: transfer-encoding chunked with a broken size line
    chunked = _http(200, {**_SSE_HEAD, "transfer-encoding": "chunked"}, b"", length=False)
    return kind, [
        write_step(chunked + f"{len(body):x}\r\n".encode() + body[: len(body) // 2] + b"\r\nzz\r\n")
    ]


# -- client requests ---------------------------------------------------------------------------------------


def _tools(rng: random.Random) -> list[dict[str, Any]]:
    names = rng.sample(_TOOL_NAMES, rng.randint(1, 2))
    return [
        {"type": "function", "function": {"name": n, "description": "fuzz", "parameters": _tool_schema(rng)}}
        for n in names
    ]


def _tool_schema(rng: random.Random) -> dict[str, Any]:
    schema = gen_schema(rng, max_depth=2)
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {"x": schema}, "required": ["x"]}
    return schema


def make_request(rng: random.Random, sid: str) -> dict[str, Any]:
    roll = rng.random()
    tools = _tools(rng)
    stream = rng.random() < 0.6
    headers = {"x-fuzz-script": sid, "content-type": "application/json"}
    read_limit = None
    if roll < 0.72:
        body: dict[str, Any] = {
            "model": sid,
            "messages": [{"role": "user", "content": "weather in Paris?"}],
            "tools": tools,
            "stream": stream,
        }
        choice = rng.choice([None, "auto", "required", "named", "none"])
        if choice == "named":
            body["tool_choice"] = {"type": "function", "function": {"name": tools[0]["function"]["name"]}}
        elif choice is not None:
            body["tool_choice"] = choice
        if stream and rng.random() < 0.3:
            body["stream_options"] = {"include_usage": True}
        if stream and rng.random() < 0.15:
            read_limit = rng.randint(0, 200)  # the client leaves mid-stream
        raw = json.dumps(body).encode()
        method, path = "POST", "/v1/chat/completions"
    elif roll < 0.85:
        method, path = "POST", "/v1/chat/completions"
        raw = rng.choice(
            [
                b"",
                b"{",
                b"[]",
                b"null",
                b'{"messages": 5}',
                bytes(rng.randrange(256) for _ in range(100)),
                json.dumps(
                    {
                        "model": sid,
                        "messages": [{"role": "user", "content": "x"}],
                        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": 5}}}],
                    }
                ).encode(),
                json.dumps(
                    {
                        "model": sid,
                        "messages": [{"role": "user", "content": "x"}],
                        "tools": [
                            {
                                "type": "function",
                                "function": {
                                    "name": "f",
                                    "parameters": {
                                        "type": "object",
                                        "properties": {"a": {"$ref": "http://example.com/s.json"}},
                                    },
                                },
                            }
                        ],
                    }
                ).encode(),
                json.dumps(
                    {
                        "model": sid,
                        "messages": [{"role": "user", "content": "x"}],
                        "stream": stream,
                        "tools": [
                            {
                                "type": "function",
                                "function": {
                                    "name": "f",
                                    "parameters": {
                                        "type": "object",
                                        "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}},
                                    },
                                },
                            }
                        ],
                    }
                ).encode(),
                ("[" * 5000 + "]" * 5000).encode(),
                b'{"model": "' + sid.encode() + b'", "messages": [], "x": "' + b"a" * 3_000_000 + b'"}',
            ]
        )
        if rng.random() < 0.2:
            headers["content-type"] = "text/plain"
    else:
        method, path = rng.choice(
            [
                ("GET", "/v1/models"),
                ("GET", "/healthz"),
                ("GET", "/metrics"),
                ("DELETE", "/v1/chat/completions"),
                ("GET", "/nope"),
                ("POST", "/v1/embeddings"),
                ("GET", "/v1/chat/completions"),
            ]
        )
        raw = b"" if method == "GET" else b'{"input": "x"}'
    responses = [_response(rng, tools, stream)[1] for _ in range(rng.choice([1, 1, 2, 3]))]
    return {
        "script": sid,
        "method": method,
        "path": path,
        "headers": headers,
        "body_b64": base64.b64encode(raw).decode(),
        "read_limit": read_limit,
        "responses": responses,
        "mode": rng.choice(["hold", "pass"]),
    }
