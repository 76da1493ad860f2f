"""Hostile requests: refused with a 400 before any upstream call; nothing fetched; nothing hangs."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support import Reply, ScriptedUpstream

from .conftest import client_for
from .helpers import MESSAGES
from .hostile_upstream import HostileUpstream
from .proxy_server import ProxyServer


def _tool(parameters: Any, name: str = "t") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def _post(proxy: ProxyServer, body: Any = None, **kw: Any) -> httpx.Response:
    return httpx.post(proxy.base_url + "/chat/completions", json=body, timeout=10, **kw)


def test_remote_ref_is_refused_and_never_fetched(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    with HostileUpstream() as bait:  # any fetch of the $ref would land here
        ref = f"http://127.0.0.1:{bait.port}/schema.json"
        r = _post(hold, {"model": "m", "messages": MESSAGES, "tools": [_tool({"$ref": ref})]})
        assert r.status_code == 400
        assert r.json()["error"]["code"] == "invalid_tool_schema"
        assert "never fetches" in r.json()["error"]["message"]
        assert bait.requests == 0
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("tools", "needle"),
    [
        (
            [_tool({"type": "object", "properties": {"p": {"type": "string", "pattern": "a" * 2500}}})],
            "pattern",
        ),
        ([_tool({"type": "object"}, name=f"t{i}") for i in range(9)], "too many tools"),
        ([_tool({"type": "object", "description": "x" * 9000})], "bytes"),
        (
            [_tool({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {}}}}})],
            "deeper",
        ),
        ([_tool({"type": "dict", "properties": {"a": {"type": "banana"}}})], "banana"),
    ],
    ids=["pattern-length", "tool-count", "schema-bytes", "schema-depth", "bad-type"],
)
def test_schema_limits(
    tools: list[Any], needle: str, make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream
) -> None:
    proxy = make_proxy(upstream=upstream.base_url, max_tools=8, max_schema_bytes=8192, max_schema_depth=4)
    r = _post(proxy, {"model": "m", "messages": MESSAGES, "tools": tools})
    assert r.status_code == 400, r.text
    assert needle in r.json()["error"]["message"]
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{not json", "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
        (b'{"model": "m"}', "messages"),
        (b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 2}', "n=1"),
    ],
    ids=["garbage", "deep-nesting", "no-messages", "n"],
)
def test_bad_bodies(body: bytes, needle: str, hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    r = httpx.post(
        hold.base_url + "/chat/completions",
        content=body,
        timeout=10,
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400
    assert needle in r.json()["error"]["message"]
    assert upstream.requests == []


def test_catastrophic_pattern_cannot_hang_the_proxy(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    tool = _tool(
        {"type": "object", "properties": {"x": {"type": "string", "pattern": "^(a+)+$"}}}, name="evil"
    )
    hostile = '{"x": "' + "a" * 5000 + '!"}'
    upstream.script(Reply.call("evil", hostile[:20], hostile[20:]), Reply.call("evil", '{"x": "aaa"}'))
    started = time.monotonic()
    with client_for(hold) as client:
        completion = client.chat.completions.create(model="m", messages=MESSAGES, tools=[tool])
    assert time.monotonic() - started < 5
    assert completion.choices[0].message.tool_calls[0].function.arguments == '{"x": "aaa"}'


def test_websocket_and_other_methods(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    r = httpx.get(hold.base_url + "/chat/completions")
    assert r.status_code == 405
    assert upstream.requests == []
