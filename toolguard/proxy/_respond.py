"""ASGI response helpers shared by every route of the proxy; error bodies are ``toolguard._openai``'s."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .._openai import error_body

__all__ = [
    "SSE_HEADERS",
    "Receive",
    "Scope",
    "Send",
    "error_body",
    "send_bytes",
    "send_error",
    "send_json",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# No compression and no buffering by intermediaries (nginx honours x-accel-buffering).
SSE_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


async def send_bytes(
    send: Send,
    status: int,
    body: bytes,
    *,
    content_type: bytes,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    raw = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    if headers:
        raw.extend(headers)
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def send_json(
    send: Send, status: int, obj: Any, *, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    await send_bytes(send, status, body, content_type=b"application/json", headers=headers)


async def send_error(
    send: Send,
    status: int,
    message: str,
    *,
    code: str | None = None,
    param: str | None = None,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    await send_json(send, status, error_body(message, status=status, code=code, param=param), headers=headers)
