"""Shared bits of the proxy tests: a tool, scripted replies, and a reader of raw SSE."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from tests.support import Reply
from tests.support.weather import GOOD_ARGS as GOOD_ARGS  # re-exported for the tests that import helpers
from tests.support.weather import LOOP_UNIT as LOOP_UNIT
from tests.support.weather import MESSAGES as MESSAGES
from tests.support.weather import WEATHER_TOOL

TOOLS = [WEATHER_TOOL]


def good(**kw: Any) -> Reply:
    return Reply.call("get_weather", '{"city": ', '"Paris", ', '"unit": "c"}', **kw)


def bad_schema(**kw: Any) -> Reply:
    return Reply.call("get_weather", '{"city": "Paris", ', '"unit": "kelvin"}', **kw)


def unknown_tool(**kw: Any) -> Reply:
    return Reply.call("get_wether", '{"city": "Paris"}', **kw)


def runaway_content(**kw: Any) -> Reply:
    return Reply.text(*([LOOP_UNIT] * 40), **kw)


def runaway_arguments(**kw: Any) -> Reply:
    return Reply.call(
        "get_weather", '{"city": "Paris", "note": "', *(["it rains and it pours all day. "] * 60), '"}', **kw
    )


def truncated(**kw: Any) -> Reply:
    return Reply.call("get_weather", '{"city": ', '"Pa', finish_reason="length", **kw)


def sse_chunks(base_url: str, body: dict[str, Any], **kw: Any) -> tuple[list[Any], list[str]]:
    """POST a streaming request with plain httpx; return (decoded JSON events, raw data lines)."""
    raw: list[str] = []
    with httpx.stream(
        "POST", base_url + "/chat/completions", json={**body, "stream": True}, timeout=20, **kw
    ) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data: "):
                raw.append(line[6:])
    events = [json.loads(x) for x in raw if x != "[DONE]"]
    return events, raw


def accumulate(chunks: list[Any]) -> dict[str, Any]:
    """Fold SDK stream chunks into (content, calls by index, finish_reason, usage, role count)."""
    content = ""
    calls: dict[int, dict[str, str]] = {}
    finish = None
    usage = None
    roles = 0
    for chunk in chunks:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            roles += delta.role is not None
            content += delta.content or ""
            for tc in delta.tool_calls or ():
                slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": "", "headers": ""})
                if tc.id:
                    slot["id"] += tc.id
                    slot["headers"] += "h"
                if tc.function and tc.function.name:
                    slot["name"] += tc.function.name
                if tc.function and tc.function.arguments:
                    slot["arguments"] += tc.function.arguments
            finish = choice.finish_reason or finish
    return {"content": content, "calls": calls, "finish": finish, "usage": usage, "roles": roles}


def assert_hung_up_on(upstream: Any, proxy: Any) -> None:
    """After a client left mid-stream: the proxy closed its upstream stream (no more tokens paid for) and its
    metrics count the disconnect with no stream left open."""
    deadline = time.monotonic() + 5
    while upstream.aborted == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert upstream.aborted == 1  # the proxy hung up on the upstream: no more tokens paid for
    metrics = httpx.get(proxy.root + "/metrics").text
    assert "toolguard_streams_open 0" in metrics
    assert "toolguard_client_disconnects_total 1" in metrics
