"""Non-streamed chat completions: validated, re-asked, repaired, labelled with x-toolguard-* headers."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import openai
import pytest

from tests.support import Reply, ScriptedUpstream

from .conftest import client_for
from .helpers import (
    GOOD_ARGS,
    LOOP_UNIT,
    MESSAGES,
    TOOLS,
    WEATHER_TOOL,
    bad_schema,
    good,
    runaway_content,
    truncated,
)
from .proxy_server import ProxyServer


def _create(proxy: ProxyServer, **kw: Any) -> Any:
    with client_for(proxy) as client:
        return client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES, **kw)


def test_valid_answer_passes_unchanged(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good())
    raw = _create(hold, tools=TOOLS)
    assert (raw.headers["x-toolguard-retries"], raw.headers["x-toolguard-verdict"]) == ("0", "ok")
    completion = raw.parse()
    call = completion.choices[0].message.tool_calls[0]
    assert (call.function.name, call.function.arguments) == ("get_weather", GOOD_ARGS)
    assert completion.choices[0].finish_reason == "tool_calls"


def test_invalid_call_is_reasked_and_repaired(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(bad_schema(), good())
    raw = _create(hold, tools=TOOLS)
    assert (raw.headers["x-toolguard-retries"], raw.headers["x-toolguard-verdict"]) == ("1", "ok")
    assert raw.parse().choices[0].message.tool_calls[0].function.arguments == GOOD_ARGS
    reask = upstream.chat_requests[1].body["messages"]
    assert reask[-2]["role"] == "assistant" and reask[-1]["role"] == "tool"
    assert "unit" in reask[-1]["content"]
    usage = raw.parse().usage
    assert (
        usage is not None and usage.total_tokens == 2 * 10 + usage.completion_tokens
    )  # both attempts billed


def test_violation_after_every_retry_is_a_422(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(bad_schema(), bad_schema(), bad_schema())
    with pytest.raises(openai.UnprocessableEntityError) as info:
        _create(hold, tools=TOOLS)
    assert info.value.response.headers["x-toolguard-verdict"] == "rejected"
    assert info.value.response.headers["x-toolguard-retries"] == "2"
    assert info.value.body["code"] == "rejected"


def test_truncated_call_comes_back_as_length_without_calls(
    hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(truncated(), truncated())
    raw = _create(hold, tools=TOOLS, max_tokens=10)
    choice = raw.parse().choices[0]
    assert choice.finish_reason == "length"
    assert not choice.message.tool_calls
    assert upstream.chat_requests[1].body["max_tokens"] == 20
    assert raw.headers["x-toolguard-verdict"] == "truncated"


def test_runaway_content_retried_then_cut(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(runaway_content(), runaway_content())
    raw = _create(hold, temperature=0.7)
    choice = raw.parse().choices[0]
    assert choice.finish_reason == "repetition"
    assert choice.message.content.startswith(LOOP_UNIT)
    assert len(choice.message.content) < 3 * len(LOOP_UNIT)  # cut after one copy
    assert upstream.chat_requests[1].body["temperature"] < 0.7


def test_upstream_errors(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.error(502), good())
    assert _create(hold, tools=TOOLS).headers["x-toolguard-retries"] == "1"
    upstream.script(Reply.error(404, message="model 'm' does not exist"))
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        _create(hold, tools=TOOLS)


def test_structured_output_hints(make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream) -> None:
    proxy = make_proxy(upstream=upstream.base_url, structured_output_hints=True)
    named = {"type": "function", "function": {"name": "get_weather"}}
    upstream.script(good(), good(), good())
    _create(proxy, tools=TOOLS, tool_choice=named)
    _create(proxy, tools=TOOLS, tool_choice="required")
    _create(proxy, tools=TOOLS)
    first, second, third = (r.body for r in upstream.chat_requests)
    assert first["structured_outputs"] == {"json": WEATHER_TOOL["function"]["parameters"]}
    items = second["structured_outputs"]["json"]["items"]["anyOf"]
    assert items[0]["properties"]["name"]["enum"] == ["get_weather"]
    assert "structured_outputs" not in third  # tool_choice auto: nothing to constrain


def test_guided_json_hint_style(make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream) -> None:
    proxy = make_proxy(upstream=upstream.base_url, structured_output_hints=True, hint_style="guided_json")
    upstream.script(good())
    _create(proxy, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert upstream.chat_requests[0].body["guided_json"] == WEATHER_TOOL["function"]["parameters"]
    assert "structured_outputs" not in upstream.chat_requests[0].body


def test_retry_after_is_respected(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.error(429, retry_after=0.6), good())
    started = time.monotonic()
    raw = _create(hold, tools=TOOLS)
    assert time.monotonic() - started >= 0.6
    assert raw.headers["x-toolguard-retries"] == "1"


def test_overall_deadline(make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream) -> None:
    proxy = make_proxy(upstream=upstream.base_url, deadline=1.0, read_timeout=30)
    upstream.script(good(stall=3.0))
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as info:
        _create(proxy, tools=TOOLS)
    assert info.value.status_code == 504
    assert time.monotonic() - started < 2.5


def test_unreachable_upstream(make_proxy: Callable[..., ProxyServer]) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proxy = make_proxy(upstream=f"http://127.0.0.1:{port}/v1", upstream_retries=1)
    with pytest.raises(openai.APIStatusError) as info:
        _create(proxy, tools=TOOLS)
    assert info.value.status_code == 502
    assert "cannot connect" in info.value.message
