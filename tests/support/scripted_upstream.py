"""``ScriptedUpstream``: a FAKE OpenAI-compatible model server for tests. It is not a model.

It is a real uvicorn server running in a thread on ``127.0.0.1`` (a free port), serving
``POST /v1/chat/completions``, ``POST /v1/messages`` (Anthropic Messages: a ``message`` with
``thinking``/``text``/``tool_use`` blocks) and ``POST /v1/responses`` (the OpenAI Responses API: a
``response`` with ``reasoning``/``message``/``function_call`` output items), each stream and non-stream, and
``GET /v1/models``. Each request pops the next scripted ``Reply`` from a queue and renders it exactly as the
real API does: a JSON body, or an SSE stream (chat: ``chat.completion.chunk`` objects framed as
``data: {json}\\n\\n`` ... ``data: [DONE]\\n\\n``; Messages: ``event: message_start`` ...
``content_block_start``/``content_block_delta``/``content_block_stop`` ... ``message_delta``,
``message_stop``; Responses: ``response.created`` ... ``response.output_item.added``, the ``.delta``/``.done``
events, ``response.completed`` or ``response.incomplete``). The protocol streams are written by this module's
own small encoders (``_messages_events``, ``_responses_events``) from the reply's chat deltas, never by
toolguard's translators: a fake must not share code with what it tests. Every request is recorded
(``upstream.requests``) so a test can assert what a re-ask carried.

Faults are part of the script, for every protocol: an HTTP error status with ``Retry-After``
(``Reply.error(429, retry_after=0)``), a dropped connection after N events (``disconnect_after``), a
malformed SSE event (``malformed_after``), the protocol's own error event after N events (``error_after``:
chat ``data: {"error": ...}``, Messages ``event: error``, Responses ``event: error``), a slow drip
(``delay`` seconds between events) and a hang before the first byte (``stall``). When the queue is empty
the server answers 500 with a message naming the test's mistake, so a missing script fails loudly.

Usage::

    with ScriptedUpstream() as upstream:
        upstream.script(Reply.call("get_weather", '{"city": "Par', 'is"}'))
        client = openai.OpenAI(base_url=upstream.base_url, api_key="test")
        ...
        assert upstream.requests[0].body["tools"]

``Reply.chunks`` gives full control (a list of raw ``delta`` dicts); F's proxy tests add fault modes
additively (new ``Reply`` fields with defaults that change nothing).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from .scripted_protocols import (
    MODEL,
    anthropic_message,
    chat_usage,
    error_event,
    malformed_event,
    messages_events,
    response,
    responses_events,
)

__all__ = ["Call", "RecordedRequest", "Reply", "ScriptedUpstream"]


@dataclass(frozen=True, slots=True)
class Call:
    """A scripted tool call; ``arguments`` is a sequence of fragments streamed one chunk each."""

    name: str
    arguments: Sequence[str] = ("{}",)
    id: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.arguments)


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted answer. ``content`` and each call's ``arguments`` are fragments: one SSE chunk each.

    ``finish_reason`` defaults to ``"tool_calls"`` when there are calls, else ``"stop"``. ``content_after``
    is content streamed *after* the tool calls (fabricated text); ``reasoning`` is reasoning streamed before
    the content (chat ``reasoning_content``, a Messages ``thinking`` block signed ``signature``, a Responses
    ``reasoning`` item); ``redacted`` is the data of a Messages ``redacted_thinking`` block after it. Fault
    fields: ``status`` (non-200 answers with an OpenAI-style error body and
    ``headers``), ``disconnect_after`` (drop the connection after that many SSE events), ``malformed_after``
    (send a broken ``data:`` line after that many events), ``error_after`` (send the protocol's error event
    after that many events, then end), ``delay`` (seconds before each event), ``stall`` (seconds before the
    response starts).
    """

    content: Sequence[str] = ()
    tool_calls: Sequence[Call] = ()
    content_after: Sequence[str] = ()
    finish_reason: str | None = None
    usage: dict[str, int] | None = None
    chunks: Sequence[dict[str, Any]] | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error_message: str = "scripted error"
    disconnect_after: int | None = None
    malformed_after: int | None = None
    error_after: int | None = None
    reasoning: Sequence[str] = ()
    signature: str = "c2lnbmVkLXNjcmlwdGVk"
    redacted: str | None = None
    delay: float = 0.0
    stall: float = 0.0

    # constructors -------------------------------------------------------------------------------------------
    @classmethod
    def text(cls, *fragments: str, **kw: Any) -> Reply:
        return cls(content=fragments, **kw)

    @classmethod
    def call(cls, name: str, *fragments: str, id: str | None = None, **kw: Any) -> Reply:
        return cls(tool_calls=(Call(name, fragments or ("{}",), id),), **kw)

    @classmethod
    def calls(cls, *calls: Call, **kw: Any) -> Reply:
        return cls(tool_calls=calls, **kw)

    @classmethod
    def error(
        cls, status: int, *, retry_after: float | None = None, message: str = "scripted error"
    ) -> Reply:
        headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
        return cls(status=status, headers=headers, error_message=message)

    # rendering ----------------------------------------------------------------------------------------------
    @property
    def finish(self) -> str:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    def deltas(self, call_ids: Iterator[str]) -> list[dict[str, Any]]:
        """The ``delta`` objects of the stream, in order (the first carries the role)."""
        if self.chunks is not None:
            return [dict(c) for c in self.chunks]
        out: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        out.extend({"reasoning_content": piece} for piece in self.reasoning)
        out.extend({"content": piece} for piece in self.content)
        for index, call in enumerate(self.tool_calls):
            pieces = list(call.arguments) or [""]
            first = {
                "index": index,
                "id": call.id or next(call_ids),
                "type": "function",
                "function": {"name": call.name, "arguments": pieces[0]},
            }
            out.append({"tool_calls": [first]})
            out.extend({"tool_calls": [{"index": index, "function": {"arguments": p}}]} for p in pieces[1:])
        out.extend({"content": piece} for piece in self.content_after)
        return out

    def message(self, call_ids: Iterator[str]) -> dict[str, Any]:
        """The non-stream ``message`` (fragments joined; ``content_after`` appended to the content)."""
        if self.chunks is not None:
            return _merge_deltas(self.deltas(call_ids))
        text = "".join(self.content) + "".join(self.content_after)
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id or next(call_ids),
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.text},
                }
                for c in self.tool_calls
            ]
        return message


def _merge_deltas(deltas: Sequence[dict[str, Any]]) -> dict[str, Any]:
    content = "".join(d.get("content") or "" for d in deltas)
    calls: dict[int, dict[str, Any]] = {}
    for d in deltas:
        for tc in d.get("tool_calls") or ():
            slot = calls.setdefault(
                tc["index"], {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
            )
            slot["id"] = tc.get("id") or slot["id"]
            fn = tc.get("function") or {}
            slot["function"]["name"] += fn.get("name") or ""
            slot["function"]["arguments"] += fn.get("arguments") or ""
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    refusal = "".join(d.get("refusal") or "" for d in deltas)
    if refusal:
        message["refusal"] = refusal
    reasoning = "".join(d.get("reasoning_content") or "" for d in deltas)
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class _Disconnect(Exception):
    """Raised inside the ASGI app to make uvicorn drop the connection mid-body."""


class _QuietDisconnects(logging.Filter):
    """Keep uvicorn from logging a traceback for a disconnect the script asked for."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], _Disconnect))


logging.getLogger("uvicorn.error").addFilter(_QuietDisconnects())


class ScriptedUpstream:
    """A fake OpenAI-compatible upstream (see the module docstring). Use as a context manager."""

    def __init__(self, *, chat_only: bool = False) -> None:
        self.chat_only = chat_only  # 404 on /v1/messages and /v1/responses (an upstream without them)
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.owned_by: str | None = None  # the engine its /v1/models names (None: none named)
        self._ids = itertools.count(1)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # scripting ----------------------------------------------------------------------------------------------
    def script(self, *replies: Reply) -> ScriptedUpstream:
        """Append replies to the queue; each request consumes one."""
        with self._lock:
            self._replies.extend(replies)
        return self

    def reset(self) -> None:
        """Forget queued replies and recorded requests (between tests sharing one server)."""
        with self._lock:
            self._replies.clear()
            self.requests.clear()
            self.owned_by = None

    @property
    def pending(self) -> int:
        """Replies still queued."""
        with self._lock:
            return len(self._replies)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def messages_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/v1/messages")]

    @property
    def responses_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/v1/responses")]

    @property
    def root(self) -> str:
        """The server's root URL (the anthropic SDK's ``base_url``: it adds ``/v1/messages``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # lifecycle ----------------------------------------------------------------------------------------------
    def start(self) -> ScriptedUpstream:
        # proto IPPROTO_TCP, not 0: asyncio turns on TCP_NODELAY only for sockets that say they are TCP
        # (with 0, each reused connection stalls ~40 ms on delayed ACKs)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self, log_config=None, lifespan="off", access_log=False, timeout_keep_alive=30
        )
        server = uvicorn.Server(config)
        server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self._server = server
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("ScriptedUpstream did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> ScriptedUpstream:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ASGI ---------------------------------------------------------------------------------------------------
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        path = scope["path"]
        with self._lock:
            self.requests.append(RecordedRequest(scope["method"], path, headers, body))
        if path.endswith("/models"):
            model = {"id": MODEL, "object": "model"}
            if self.owned_by is not None:
                model["owned_by"] = self.owned_by
            await _send_json(send, 200, {"object": "list", "data": [model]})
            return
        messages = path.endswith("/v1/messages")
        responses = path.endswith("/v1/responses")
        if (self.chat_only and (messages or responses)) or (
            not (messages or responses) and not path.endswith("/chat/completions")
        ):
            await _send_json(send, 404, _error_body(f"ScriptedUpstream serves no {path}", "not_found"))
            return
        with self._lock:
            reply = self._replies.popleft() if self._replies else None
        if reply is None:
            await _send_json(
                send, 500, _error_body("ScriptedUpstream: no scripted reply left", "script_exhausted")
            )
            return
        if reply.stall:
            await asyncio.sleep(reply.stall)
        if reply.status != 200:
            await _send_json(send, reply.status, _error_body(reply.error_message, "scripted"), reply.headers)
            return
        stream = isinstance(body, dict) and bool(body.get("stream"))
        if messages:
            message_id = f"msg_scripted_{next(self._ids)}"
            call_ids = (f"toolu_{next(self._ids)}" for _ in itertools.count())
            if stream:
                await self._send_events(send, reply, "messages", messages_events(reply, message_id, call_ids))
            else:
                await _send_json(send, 200, anthropic_message(reply, message_id, call_ids))
            return
        if responses:
            response_id = f"resp_scripted_{next(self._ids)}"
            call_ids = (f"call_{next(self._ids)}" for _ in itertools.count())
            if stream:
                await self._send_events(
                    send, reply, "responses", responses_events(reply, response_id, call_ids)
                )
            else:
                await _send_json(send, 200, response(reply, response_id, call_ids))
            return
        completion_id = f"chatcmpl-scripted-{next(self._ids)}"
        call_ids = (f"call_{next(self._ids)}" for _ in itertools.count())
        if stream:
            include_usage = bool(((body or {}).get("stream_options") or {}).get("include_usage"))
            await self._send_events(
                send, reply, "chat", _chat_events(reply, completion_id, call_ids, include_usage)
            )
        else:
            await _send_json(send, 200, _completion(reply, completion_id, call_ids))

    async def _send_events(self, send: Any, reply: Reply, protocol: str, events: list[bytes]) -> None:
        """Send one SSE stream, event by event, with the reply's faults (the same knobs, every protocol)."""
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
            }
        )
        for n, event in enumerate(events):
            if reply.disconnect_after is not None and n >= reply.disconnect_after:
                raise _Disconnect("ScriptedUpstream: scripted disconnect")
            fault = None
            if reply.malformed_after is not None and n == reply.malformed_after:
                fault = malformed_event(protocol)
            elif reply.error_after is not None and n == reply.error_after:
                fault = error_event(protocol, reply.error_message, n)
            if fault is not None:
                await send({"type": "http.response.body", "body": fault, "more_body": False})
                return
            if reply.delay:
                await asyncio.sleep(reply.delay)
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _chat_events(
    reply: Reply, completion_id: str, call_ids: Iterator[str], include_usage: bool
) -> list[bytes]:
    """The reply as a chat SSE stream: one chunk per delta, the finish chunk, usage, ``[DONE]``."""
    created = 1_700_000_000
    base = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": MODEL}
    events: list[bytes] = []
    for delta in reply.deltas(call_ids):
        chunk = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]}
        events.append(_sse(chunk))
    final = {**base, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": reply.finish}]}
    events.append(_sse(final))
    if include_usage:
        events.append(_sse({**base, "choices": [], "usage": chat_usage(reply)}))
    events.append(b"data: [DONE]\n\n")
    return events


def _sse(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _completion(reply: Reply, completion_id: str, call_ids: Iterator[str]) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [
            {"index": 0, "message": reply.message(call_ids), "logprobs": None, "finish_reason": reply.finish}
        ],
        "usage": chat_usage(reply),
    }


def _error_body(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "scripted_error", "param": None, "code": code}}


async def _send_json(send: Any, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
    payload = json.dumps(obj).encode()
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw_headers += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": payload, "more_body": False})
