"""Regressions for what fuzzing the proxy's OpenAPI description found (fuzz/test_proxy_schemathesis.py).

Each was an unhandled exception, a 500 ``proxy_error``, on a request the proxy should refuse with a 400 or
serve: a ``temperature`` that is not a number (or a ``seed`` that is not an integer) once the model looped,
a tool schema whose ``$schema`` is not a string, a request nested close to Python's recursion limit.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support import Reply, ScriptedUpstream

from .helpers import MESSAGES, TOOLS, runaway_content
from .proxy_server import ProxyServer


def _post(proxy: ProxyServer, body: Any = None, *, content: str | None = None) -> httpx.Response:
    return httpx.post(proxy.base_url + "/chat/completions", json=body, content=content, timeout=20)


@pytest.mark.parametrize(
    "sampling",
    [{"temperature": "AAA"}, {"temperature": [1]}, {"seed": "x"}, {"seed": 1.5, "temperature": True}],
)
def test_a_runaway_retry_ignores_sampling_values_that_are_not_numbers(
    sampling: dict[str, Any], hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(runaway_content(), runaway_content(), runaway_content())
    r = _post(hold, {"model": "m", "messages": MESSAGES, **sampling})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["finish_reason"] == "repetition"
    retry = upstream.chat_requests[1].body  # the retry carries sampling of its own
    assert type(retry["temperature"]) is float
    assert type(retry["seed"]) is int


@pytest.mark.parametrize("declared", [5, ["https://json-schema.org/draft/2020-12/schema"], None])
def test_a_schema_whose_schema_keyword_is_not_a_string_is_refused(
    declared: Any, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"$schema": declared}}}
    r = _post(hold, {"messages": MESSAGES, "tools": [tool]})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_tool_schema"
    assert "$schema" in r.json()["error"]["message"]
    assert upstream.requests == []


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("where", ["messages", "tools", "extra"])
def test_a_body_nested_past_the_cap_is_refused_wherever_the_nesting_is(
    where: str, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    # Around 970 levels (the exact depth depends on the stack), json parsed the body but could not encode it
    # again for the upstream: a RecursionError. Deeper, the parse itself fails (invalid_json).
    for depth in (130, *range(900, 1000, 3)):
        if where == "messages":
            raw = '{"messages":[{"role":"user","content":' + _nested(depth) + "}]}"
        elif where == "tools":
            fn = '{"type":"function","function":{"name":"f","x":' + _nested(depth) + "}}"
            raw = '{"messages":[{"role":"user"}],"tools":[' + fn + "]}"
        else:
            raw = '{"messages":[{"role":"user"}],"metadata":' + _nested(depth) + "}"
        r = _post(hold, content=raw)
        assert r.status_code == 400, (depth, r.text)
        assert r.json()["error"]["code"] in ("invalid_request", "invalid_json")
    assert upstream.requests == []


def test_a_body_within_the_nesting_cap_is_served(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.text("Sunny."))
    schema: Any = {}
    for _ in range(15):  # a schema 31 levels deep (max_schema_depth is 32): the body is 35 deep
        schema = {"type": "object", "properties": {"a": schema}}
    tools = [{**TOOLS[0], "function": {**TOOLS[0]["function"], "parameters": schema}}]
    metadata: dict[str, Any] = {"x": [[[[[[[[[[[[]]]]]]]]]]]]}
    r = _post(hold, {"messages": MESSAGES, "tools": tools, "metadata": metadata})
    assert r.status_code == 200, r.text
    assert upstream.chat_requests[0].body["tools"] == tools
