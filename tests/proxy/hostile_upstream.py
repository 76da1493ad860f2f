"""``HostileUpstream``: a FAKE OpenAI-compatible upstream that misbehaves below HTTP. It is not a model.

``ScriptedUpstream`` (tests/support) is a well-behaved uvicorn app whose *answers* are scripted. This one
speaks raw HTTP/1.1 over asyncio sockets in a thread on ``127.0.0.1``, so it can break what uvicorn never
would: answer with random bytes, close before or in the middle of a response, send an SSE line that never
ends, hang before the headers or before the first body byte. Each request is answered according to ``plan(n,
body) -> Fault`` (``n`` counts requests from 0); the default plan always answers well. Streams use chunked
encoding and keep-alive, so the proxy's connection pool is exercised as in production.

``Fault`` kinds: ``ok`` (a tool call ``get_weather`` with ``{"city": "Paris"}`` streamed in fragments, or a
JSON completion), ``status`` (``Fault("status", status=503, retry_after=0)``), ``garbage``,
``close_before_headers``, ``close_mid_stream`` (after ``events`` SSE events), ``no_newline`` (a ``data:`` line
of ``size`` bytes without a line break), ``hang`` (``delay`` seconds before the headers), ``slow_first_byte``
(headers, then ``delay`` seconds), ``bad_json`` (a ``data:`` event that is not JSON), ``drip`` (``events``
content chunks ``delay`` seconds apart, as chat chunks, or as the protocol's text deltas on ``/v1/messages``
and ``/v1/responses``; ``aborted`` counts those whose reader went away).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["CITY_ARGS", "Fault", "HostileUpstream"]

CITY_ARGS = ('{"ci', 'ty": "Pa', 'ris"', "}")


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str = "ok"
    status: int = 500
    retry_after: float | None = None
    events: int = 2
    size: int = 64 * 1024
    delay: float = 0.0
    arguments: tuple[str, ...] = CITY_ARGS
    name: str = "get_weather"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _events(fault: Fault, include_usage: bool) -> list[bytes]:
    base = {
        "id": "chatcmpl-hostile",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "hostile",
    }

    def ev(delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"

    out = [ev({"role": "assistant", "content": None})]
    first = {
        "index": 0,
        "id": "call_h1",
        "type": "function",
        "function": {"name": fault.name, "arguments": ""},
    }
    out.append(ev({"tool_calls": [first]}))
    out.extend(ev({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}) for a in fault.arguments)
    out.append(ev({}, "tool_calls"))
    if include_usage:
        usage = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
        out.append(b"data: " + json.dumps({**base, "choices": [], "usage": usage}).encode() + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return out


def _completion(fault: Fault) -> bytes:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_h1",
                "type": "function",
                "function": {"name": fault.name, "arguments": "".join(fault.arguments)},
            }
        ],
    }
    body = {
        "id": "chatcmpl-hostile",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "hostile",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }
    return json.dumps(body).encode()


def _drip(path: str, base: dict[str, Any]) -> tuple[bytes, bytes]:
    """(one ``tick `` text event, what opens the stream) in the protocol ``path`` names."""
    if path.endswith("/messages"):
        start = {"type": "message_start", "message": {"id": "msg_hostile", "usage": {"input_tokens": 5}}}
        delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "tick "}}
        return (
            b"event: content_block_delta\ndata: " + json.dumps(delta).encode() + b"\n\n",
            b"event: message_start\ndata: " + json.dumps(start).encode() + b"\n\n",
        )
    if path.endswith("/responses"):
        created = {"type": "response.created", "response": {"id": "resp_hostile"}}
        delta = {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "tick "}
        return (
            b"event: response.output_text.delta\ndata: " + json.dumps(delta).encode() + b"\n\n",
            b"event: response.created\ndata: " + json.dumps(created).encode() + b"\n\n",
        )
    chunk = {
        **base,
        "choices": [{"index": 0, "delta": {"content": "tick "}, "logprobs": None, "finish_reason": None}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n", b""


class HostileUpstream:
    """A fake upstream on raw sockets (see the module docstring). Use as a context manager."""

    def __init__(self, plan: Callable[[int, Any], Fault] | None = None) -> None:
        self.plan: Callable[[int, Any], Fault] = plan or (lambda n, body: Fault())
        self.requests = 0
        self.open_connections = 0
        self.aborted = 0  # streams the proxy closed before their end (drip)
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> HostileUpstream:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("HostileUpstream did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._server = loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            for task in asyncio.all_tasks(loop):
                task.cancel()
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self.open_connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                length = 0
                for line in lines[1:]:
                    key, _, value = line.partition(":")
                    if key.strip().lower() == "content-length":
                        length = int(value.strip())
                raw = await reader.readexactly(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                with self._lock:
                    n = self.requests
                    self.requests += 1
                path = lines[0].split(" ")[1] if lines[0].count(" ") >= 2 else "/"
                keep = await self._answer(writer, self.plan(n, body), body, path)
                await writer.drain()
                if not keep:
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            with self._lock:
                self.open_connections -= 1
            writer.close()

    async def _answer(self, w: asyncio.StreamWriter, fault: Fault, body: Any, path: str = "/") -> bool:
        """Write the answer; return whether the connection may be reused."""
        stream = isinstance(body, dict) and bool(body.get("stream"))
        include_usage = stream and bool((body.get("stream_options") or {}).get("include_usage"))
        kind = fault.kind
        if kind == "garbage":
            w.write(os.urandom(512))
            return False
        if kind == "close_before_headers":
            return False
        if kind == "hang":
            await asyncio.sleep(fault.delay)
        if kind == "status":
            payload = json.dumps(
                {
                    "error": {
                        "message": "hostile upstream says no",
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                }
            ).encode()
            extra = "" if fault.retry_after is None else f"retry-after: {fault.retry_after:g}\r\n"
            w.write(
                f"HTTP/1.1 {fault.status} Error\r\ncontent-type: application/json\r\n"
                f"content-length: {len(payload)}"
                f"\r\n{extra}\r\n".encode()
                + payload
            )
            return True
        if not stream:
            payload = _completion(fault)
            w.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
                % len(payload)
                + payload
            )
            return True
        w.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        if kind == "slow_first_byte":
            await w.drain()
            await asyncio.sleep(fault.delay)
        events = _events(fault, include_usage)
        if kind == "no_newline":
            w.write(_chunk(events[0]))
            w.write(_chunk(b"data: " + b"x" * fault.size))
            await w.drain()
            await asyncio.sleep(fault.delay or 30)
            return False
        if kind == "bad_json":
            events.insert(2, b"data: {this is not json\n\n")
        if kind == "drip":
            base = {
                "id": "chatcmpl-hostile",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "hostile",
            }
            tick, prelude = _drip(path, base)
            if prelude:
                w.write(_chunk(prelude))
            for _ in range(fault.events):
                w.write(_chunk(tick))
                try:
                    await w.drain()
                except ConnectionError:
                    with self._lock:
                        self.aborted += 1
                    return False
                await asyncio.sleep(fault.delay)
        for i, event in enumerate(events):
            if kind == "close_mid_stream" and i >= fault.events:
                return False
            w.write(_chunk(event))
        w.write(b"0\r\n\r\n")
        return True
