"""The bookkeeping of guarded MCP calls: where an answer lands, the idempotency keys, JSON-RPC replies.

``Slot`` is where the server's answer to one forwarded call lands (per upstream generation, so an answer
from a server that was since restarted is never taken for the new one's); ``GuardedCall`` is one client
call in flight (its fingerprint, cancel scope and reply); ``KeyStore`` remembers the answers of calls that
carried an idempotency key (an LRU shared by the sessions of one guard), so a repeated key runs the call
once. ``call_fingerprint`` and ``idempotency_key`` read a call's identity, ``error_reply`` and
``result_reply`` build the JSON-RPC replies. Pure data; O(1) per call beyond ``json.dumps`` of its arguments.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp_types import ErrorData, JSONRPCError, JSONRPCResponse

from ._config import IDEMPOTENCY_META_KEYS

__all__ = [
    "GuardedCall",
    "KeyStore",
    "Slot",
    "call_fingerprint",
    "error_reply",
    "idempotency_key",
    "result_reply",
]


@dataclass(slots=True)
class Slot:
    """Where the server's answer to one guarded call lands."""

    generation: int = 0
    event: anyio.Event = field(default_factory=anyio.Event)
    answer: Any = None  # JSONRPCResponse | JSONRPCError | UpstreamLost


@dataclass(slots=True)
class GuardedCall:
    name: Any
    fingerprint: str
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    slot: Slot | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    reply: Any = None


class KeyStore:
    """Answers to calls that carried an idempotency key, shared by the sessions of one guard (an LRU)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._done: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()
        self._running: dict[str, tuple[str, anyio.Event]] = {}

    def remember(self, key: str, fingerprint: str, result: dict[str, Any]) -> None:
        self._done[key] = (fingerprint, result)
        self._done.move_to_end(key)
        while len(self._done) > self.limit:
            self._done.popitem(last=False)


def call_fingerprint(params: Mapping[str, Any]) -> str:
    return json.dumps([params.get("name"), params.get("arguments")], sort_keys=True, default=str)


def idempotency_key(params: Mapping[str, Any]) -> str | None:
    meta = params.get("_meta")
    if not isinstance(meta, Mapping):
        return None
    for key in IDEMPOTENCY_META_KEYS:
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def error_reply(rid: Any, code: int, message: str, data: Any = None) -> JSONRPCError:
    error = (
        ErrorData(code=code, message=message)
        if data is None
        else ErrorData(code=code, message=message, data=data)
    )
    return JSONRPCError(jsonrpc="2.0", id=rid, error=error)


def result_reply(rid: Any, result: dict[str, Any]) -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=rid, result=result)
