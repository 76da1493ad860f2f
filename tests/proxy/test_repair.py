"""Repairs in the proxy: a valid call written as text is delivered as a tool call on the first attempt, a
fabricated result beside the calls is cut; only a call still invalid after repair is re-asked."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support import Reply, ScriptedUpstream

from .conftest import client_for
from .helpers import MESSAGES, TOOLS, good
from .proxy_server import ProxyServer

CALL = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}'


def _create(proxy: ProxyServer, **kw: Any) -> Any:
    with client_for(proxy) as client:
        return client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES, **kw)


def test_hermes_call_in_the_text_becomes_a_tool_call(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.text("Let me look.\n", f"<tool_call>\n{CALL}\n</tool_call>", "<tool_response>x"))
    raw = _create(hold, tools=TOOLS)
    choice = raw.parse().choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me look.\n", "prose before the call stays, text after it is cut"
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris", "unit": "c"}
    assert raw.headers["x-toolguard-retries"] == "0" and len(upstream.chat_requests) == 1
    assert raw.headers["x-toolguard-repaired"] == "tool_calls,fabricated"
    metrics = httpx.get(hold.base_url.removesuffix("/v1") + "/metrics").text
    assert 'toolguard_repairs_total{kind="call_in_content"}' in metrics


def test_every_known_format_is_repaired(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    texts = [
        f"[TOOL_CALLS][{CALL}]",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "c"}',
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}',
        '<|python_tag|>get_weather(city="Paris", unit="c")',
        '<function=get_weather>{"city": "Paris", "unit": "c"}</function>',
        CALL,
        f"```json\n{CALL}\n```",
    ]
    for text in texts:
        upstream.script(Reply.text(text))
        raw = _create(hold, tools=TOOLS)
        (call,) = raw.parse().choices[0].message.tool_calls
        assert json.loads(call.function.arguments) == {"city": "Paris", "unit": "c"}, text
    assert len(upstream.chat_requests) == len(texts), "no re-asks"


def test_a_repaired_call_that_breaks_its_schema_is_reasked(
    hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    bad = '<tool_call>{"name": "get_weather", "arguments": {"city": 7}}</tool_call>'
    upstream.script(Reply.text(bad), good())
    raw = _create(hold, tools=TOOLS)
    assert raw.headers["x-toolguard-retries"] == "1"
    reask = upstream.chat_requests[1].body["messages"]
    assert reask[-2]["tool_calls"][0]["function"]["name"] == "get_weather" and reask[-1]["role"] == "tool"


def test_a_repaired_call_of_a_tool_never_offered_is_reasked(
    hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(Reply.text('<tool_call>{"name": "get_forecast", "arguments": {}}</tool_call>'), good())
    raw = _create(hold, tools=TOOLS)
    assert raw.headers["x-toolguard-retries"] == "1"
    assert raw.parse().choices[0].message.tool_calls[0].function.name == "get_weather"


def test_no_repair_calls_reasks(make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream) -> None:
    proxy = make_proxy(upstream=upstream.base_url, repair_calls=False)
    upstream.script(Reply.text(f"<tool_call>{CALL}</tool_call>"), good())
    raw = _create(proxy, tools=TOOLS)
    assert raw.headers["x-toolguard-retries"] == "1" and "x-toolguard-repaired" not in raw.headers


def test_call_format_per_model(make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream) -> None:
    """A model configured for hermes: a pythonic Llama call is not read as one, so it is re-asked; another
    model's text is detected."""
    proxy = make_proxy(upstream=upstream.base_url, call_formats={"qwen*": "hermes"})
    text = '<|python_tag|>get_weather(city="Paris", unit="c")'
    upstream.script(Reply.text(text), good())
    with client_for(proxy) as client:
        create = client.chat.completions.with_raw_response.create
        raw = create(model="qwen-7b", messages=MESSAGES, tools=TOOLS)
        assert raw.headers["x-toolguard-retries"] == "1"
        upstream.script(Reply.text(text))
        raw = create(model="llama-3.1-8b", messages=MESSAGES, tools=TOOLS)
        assert raw.headers["x-toolguard-retries"] == "0"


def test_fabricated_result_beside_the_calls_is_cut(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good(content=("Checking.\nObservation: 21 degrees, sunny.",)))
    raw = _create(hold, tools=TOOLS)
    message = raw.parse().choices[0].message
    assert message.content == "Checking.\n" and len(message.tool_calls) == 1
    assert raw.headers["x-toolguard-verdict"] == "fabricated"
    assert raw.headers["x-toolguard-repaired"] == "fabricated" and len(upstream.chat_requests) == 1


def test_prose_beside_the_calls_is_kept(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good(content=("I will check the weather in Paris for you.",)))
    message = _create(hold, tools=TOOLS).parse().choices[0].message
    assert message.content == "I will check the weather in Paris for you."


def test_a_repair_is_one_released_decision_line(
    hold: ProxyServer, upstream: ScriptedUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolguard")
    upstream.script(Reply.text(f"<tool_call>{CALL}</tool_call>"))
    _create(hold, tools=TOOLS)
    messages = [r.getMessage() for r in caplog.records if r.name == "toolguard.proxy"]
    lines = [m for m in messages if "decision" in m]
    assert len(lines) == 1 and lines[0].startswith("decision=released") and "repaired=tool_calls" in lines[0]
    assert "Paris" not in lines[0]
