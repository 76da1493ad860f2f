"""Streamed chat completions through the proxy, read by the official openai SDK over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from tests.support import Call, Reply, ScriptedUpstream

from .conftest import client_for
from .helpers import (
    GOOD_ARGS,
    LOOP_UNIT,
    MESSAGES,
    TOOLS,
    accumulate,
    assert_hung_up_on,
    bad_schema,
    good,
    runaway_arguments,
    runaway_content,
    sse_chunks,
    truncated,
    unknown_tool,
)
from .hostile_upstream import Fault, HostileUpstream
from .proxy_server import ProxyServer


def _stream(proxy: ProxyServer, **kw: Any) -> dict[str, Any]:
    with client_for(proxy) as client:
        chunks = list(
            client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, stream=True, **kw)
        )
    return accumulate(chunks)


# ------------------------------------------------------------------------------------------ canonical shape
@pytest.mark.parametrize("mode", ["hold", "pass"])
def test_valid_call_in_canonical_shape(
    mode: str, hold: ProxyServer, passing: ProxyServer, upstream: ScriptedUpstream
) -> None:
    proxy = hold if mode == "hold" else passing
    upstream.script(good())
    events, raw = sse_chunks(
        proxy.base_url,
        {"model": "m", "messages": MESSAGES, "tools": TOOLS, "stream_options": {"include_usage": True}},
    )
    assert raw[-1] == "[DONE]"
    deltas = [c["choices"][0]["delta"] for c in events if c["choices"]]
    assert [d.get("role") for d in deltas].count("assistant") == 1
    headers = [tc for d in deltas for tc in d.get("tool_calls", ()) if "id" in tc]
    assert len(headers) == 1 and headers[0]["type"] == "function"
    assert headers[0]["function"]["name"] == "get_weather"
    args = "".join(tc["function"].get("arguments", "") for d in deltas for tc in d.get("tool_calls", ()))
    assert args == GOOD_ARGS
    finishes = [c["choices"][0]["finish_reason"] for c in events if c["choices"]]
    assert finishes[-1] == "tool_calls" and finishes.count("tool_calls") == 1
    assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] > 0
    assert len({c["id"] for c in events}) == 1
    if mode == "pass":  # prefixes are forwarded as they validate: more than one argument fragment
        assert sum(1 for d in deltas for tc in d.get("tool_calls", ()) if tc["function"].get("arguments")) > 1


def test_usage_chunk_only_when_asked(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good())
    events, _ = sse_chunks(hold.base_url, {"model": "m", "messages": MESSAGES, "tools": TOOLS})
    assert all(c["choices"] for c in events)
    assert "usage" not in events[-1]


def test_plain_text_streams_through(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.text("Hello", ", ", "world."))
    result = _stream(hold)
    assert (result["content"], result["calls"], result["finish"]) == ("Hello, world.", {}, "stop")


def test_parallel_calls_keep_their_indexes(passing: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(
        Reply.calls(
            Call("get_weather", ('{"city": "Pa', 'ris"}')), Call("get_weather", ('{"city": "Ro', 'me"}'))
        )
    )
    result = _stream(passing)
    assert [c["arguments"] for c in result["calls"].values()] == ['{"city": "Paris"}', '{"city": "Rome"}']
    assert all(c["headers"] == "h" for c in result["calls"].values())


# ---------------------------------------------------------------------------------------------- hold mode
@pytest.mark.parametrize(
    "first", [bad_schema, unknown_tool, truncated], ids=["rejected", "unknown", "truncated"]
)
def test_hold_retries_a_failed_call_invisibly(
    first: Callable[[], Reply], hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(first(), good())
    result = _stream(hold, max_tokens=50)
    assert result["calls"][0]["arguments"] == GOOD_ARGS
    assert len(result["calls"]) == 1 and result["finish"] == "tool_calls"
    assert len(upstream.chat_requests) == 2
    second = upstream.chat_requests[1].body
    if first is truncated:
        assert second["max_tokens"] > 50  # more room, same messages
    else:
        assert second["messages"][-1]["role"] == "tool"  # the violation goes back to the model


def test_hold_gives_up_with_an_error_event(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(bad_schema(), bad_schema(), bad_schema())
    with client_for(hold) as client:
        stream = client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, stream=True)
        seen = []
        with pytest.raises(openai.APIError) as info:
            for chunk in stream:
                seen.append(chunk)
    assert "unit" in info.value.message and "3 attempts" in info.value.message
    assert info.value.body["code"] == "rejected"
    assert not any(
        c.choices and c.choices[0].delta.tool_calls for c in seen
    )  # the client never saw a bad call
    assert len(upstream.chat_requests) == 3


def test_hold_truncated_without_room_to_grow_ends_with_length(
    hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(truncated())  # no max_tokens and no usage: nothing to grow, the flow gives up
    result = _stream(hold)
    assert result["finish"] == "length"
    assert result["calls"] == {}  # a truncated call is never shown as a call


def test_fabricated_text_after_the_call_is_cut(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good(content_after=("The weather in Paris is ", "sunny and 25C.")))
    result = _stream(hold)
    assert result["calls"][0]["arguments"] == GOOD_ARGS
    assert result["content"] == "" and result["finish"] == "tool_calls"
    assert len(upstream.chat_requests) == 1


@pytest.mark.parametrize("mode", ["hold", "pass"])
def test_a_valid_call_written_into_content_streams_as_a_tool_call(
    mode: str, hold: ProxyServer, passing: ProxyServer, upstream: ScriptedUpstream
) -> None:
    text = ("Let me look. <tool_", 'call>{"name": "get_weather", ', '"arguments": {"city": "Paris"}}')
    text += ("</tool_call>",)
    upstream.script(Reply.text(*text, "<tool_response>made up</tool_response>"))
    result = _stream(hold if mode == "hold" else passing)
    assert result["calls"][0]["name"] == "get_weather"
    assert json.loads(result["calls"][0]["arguments"]) == {"city": "Paris"}
    assert result["content"] == "Let me look. " and result["finish"] == "tool_calls"
    assert len(upstream.chat_requests) == 1, "no second generation"


def test_an_invalid_call_written_into_content_is_reasked(
    hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(
        Reply.text('<tool_call>{"name": "get_weather", "arguments": {"city": 7}}</tool_call>'), good()
    )
    result = _stream(hold)
    assert result["calls"][0]["arguments"] == GOOD_ARGS
    assert "<tool_call>" not in result["content"]


def test_retry_after_visible_text_keeps_one_preamble(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    bad = Call("get_weather", ('{"city": "Paris", "unit": "kelvin"}',))
    upstream.script(
        Reply(content=("Let me check. ",), tool_calls=(bad,)),
        Reply(content=("Checking. ",), tool_calls=(Call("get_weather", (GOOD_ARGS,)),)),
    )
    result = _stream(hold)
    assert result["content"] == "Let me check. "  # the retry's own preamble is not shown twice
    assert result["calls"][0]["arguments"] == GOOD_ARGS


def test_retry_that_answers_in_text_is_not_lost(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    bad = Call("get_weather", ('{"city": "Paris", "unit": "kelvin"}',))
    upstream.script(Reply(content=("Let me check. ",), tool_calls=(bad,)), Reply.text("It is ", "sunny."))
    result = _stream(hold)
    assert result["content"] == "Let me check. It is sunny."
    assert (result["calls"], result["finish"]) == ({}, "stop")


def test_required_choice_holds_the_text_too(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.text("Sure, it is sunny."), good())
    result = _stream(hold, tool_choice="required")
    assert result["content"] == ""  # the text-only attempt was a violation, and was never shown
    assert result["calls"][0]["arguments"] == GOOD_ARGS


def test_runaway_arguments_retry_with_changed_sampling(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(runaway_arguments(), good())
    result = _stream(hold, temperature=0.8)
    assert result["calls"][0]["arguments"] == GOOD_ARGS
    first, second = (r.body for r in upstream.chat_requests)
    assert second["temperature"] != first["temperature"] or second.get("seed") != first.get("seed")


def test_runaway_content_is_cut_with_finish_reason_repetition(
    hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(runaway_content())
    result = _stream(hold)
    assert result["finish"] == "repetition"
    assert LOOP_UNIT in result["content"] and len(result["content"]) < 40 * len(LOOP_UNIT)
    assert len(upstream.chat_requests) == 1  # the loop was already on screen: a retry could not be invisible


def test_runaway_content_as_an_error(
    make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream
) -> None:
    proxy = make_proxy(upstream=upstream.base_url, runaway_action="error")
    upstream.script(runaway_content())
    with client_for(proxy) as client, pytest.raises(openai.APIError) as info:
        list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    assert info.value.body["code"] == "runaway"


# ---------------------------------------------------------------------------------------------- pass mode
def test_pass_ends_the_stream_with_an_error_the_sdk_raises(
    passing: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(bad_schema())
    seen: list[Any] = []
    with client_for(passing) as client:
        stream = client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, stream=True)
        with pytest.raises(openai.APIError) as info:
            for chunk in stream:
                seen.append(chunk)
    assert info.value.body["code"] == "rejected"
    assert info.value.body["toolguard"]["path"] == "/unit"
    forwarded = accumulate(seen)["calls"][0]["arguments"]
    assert forwarded == '{"city": "Paris", '  # the validated prefix went out at once, the rest never
    assert len(upstream.chat_requests) == 1


def test_pass_retries_while_nothing_is_visible(passing: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(unknown_tool(), good())  # the name fails before any argument is forwarded
    result = _stream(passing)
    assert result["calls"][0]["name"] == "get_weather"
    assert len(upstream.chat_requests) == 2


def test_pass_truncated_call_is_labelled_length(passing: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(truncated())
    result = _stream(passing, max_tokens=5)
    assert result["finish"] == "length"  # never "tool_calls"
    assert len(upstream.chat_requests) == 1


# ------------------------------------------------------------------------------------------ upstream faults
@pytest.mark.parametrize(
    "fault",
    [
        Reply.error(429, retry_after=0),
        Reply.error(500),
        Reply.error(503, retry_after=0.01),
        good(disconnect_after=1),
        good(malformed_after=2),
        good(stall=1.5),  # slower than the proxy's read_timeout of 1 s
    ],
    ids=["429", "500", "503", "disconnect", "malformed", "slow-first-byte"],
)
def test_upstream_faults_are_retried(fault: Reply, hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(fault, good())
    result = _stream(hold)
    assert result["calls"][0]["arguments"] == GOOD_ARGS
    assert result["roles"] == 1


def test_upstream_client_error_is_forwarded(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.error(400, message="context length exceeded"))
    with client_for(hold) as client, pytest.raises(openai.BadRequestError) as info:
        list(client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, stream=True))
    assert "context length exceeded" in info.value.message
    assert len(upstream.chat_requests) == 1


def test_retries_run_out_on_errors(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.error(500), Reply.error(500), Reply.error(500))
    with client_for(hold) as client, pytest.raises(openai.InternalServerError):
        list(client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, stream=True))
    assert len(upstream.chat_requests) == 3


def test_disconnect_after_visible_text_is_an_error_event(
    hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(Reply.text("The weather ", "in Paris ", "is", disconnect_after=3))
    with client_for(hold) as client, pytest.raises(openai.APIError) as info:
        list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    assert info.value.body["code"] == "upstream_error"
    assert len(upstream.chat_requests) == 1


def test_client_disconnect_closes_the_upstream_stream(make_proxy: Callable[..., ProxyServer]) -> None:
    with HostileUpstream(lambda n, body: Fault("drip", events=500, delay=0.01)) as drip:
        proxy = make_proxy(upstream=drip.base_url)
        with httpx.stream(
            "POST",
            proxy.base_url + "/chat/completions",
            timeout=10,
            json={"model": "m", "messages": MESSAGES, "stream": True},
        ) as r:
            for line in r.iter_lines():
                if "tick" in line:
                    break  # leave after the first content chunk
        assert_hung_up_on(drip, proxy)
