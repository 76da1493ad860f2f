"""How ``/v1/messages`` and ``/v1/responses`` reach the upstream (``--protocols``): natively where it serves
them, translated over chat completions where it does not (found by a 404 on first use, remembered), with
the official clients, what the upstream was sent and ``x-toolguard-protocol`` and the metric saying which.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.support import Reply, ScriptedUpstream

from .conftest import client_for
from .helpers import good
from .proxy_server import ProxyServer
from .test_messages import ASK as MESSAGES_ASK
from .test_messages import TOOL as MESSAGES_TOOL
from .test_responses import ASK as RESPONSES_ASK
from .test_responses import TOOL as RESPONSES_TOOL

anthropic = pytest.importorskip("anthropic")


@pytest.fixture
def chat_only(_chat_only: ScriptedUpstream) -> Iterator[ScriptedUpstream]:
    _chat_only.reset()
    yield _chat_only
    _chat_only.reset()


def _messages(proxy: ProxyServer, *, stream: bool) -> tuple[str, dict[str, Any]]:
    """(``x-toolguard-protocol``, the message) of one Messages request."""
    kw: dict[str, Any] = {"model": "m", "max_tokens": 64, "messages": MESSAGES_ASK, "tools": [MESSAGES_TOOL]}
    with anthropic.Anthropic(base_url=proxy.root, api_key="k", max_retries=0, timeout=20) as client:
        if not stream:
            raw = client.messages.with_raw_response.create(**kw)
            return raw.headers["x-toolguard-protocol"], raw.parse().model_dump()
        with client.messages.with_streaming_response.create(**kw, stream=True) as response:
            header = response.headers["x-toolguard-protocol"]
            events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
        stop = [e for e in events if e["type"] == "message_delta"][-1]["delta"]["stop_reason"]
        return header, {"stop_reason": stop}


def _responses(proxy: ProxyServer, *, stream: bool) -> tuple[str, dict[str, Any]]:
    kw: dict[str, Any] = {"model": "m", "input": RESPONSES_ASK, "tools": [RESPONSES_TOOL]}
    with client_for(proxy) as client:
        if not stream:
            raw = client.responses.with_raw_response.create(**kw)
            return raw.headers["x-toolguard-protocol"], raw.parse().model_dump()
        with client.responses.with_streaming_response.create(**kw, stream=True) as response:
            header = response.headers["x-toolguard-protocol"]
            events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
        return header, events[-1]["response"]


ASKS = {"messages": _messages, "responses": _responses}


def _protocol_metric(proxy: ProxyServer, route: str, upstream: str) -> int:
    text = httpx.get(proxy.root + "/metrics").text
    prefix = f'toolguard_protocol_requests_total{{route="{route}",upstream="{upstream}"}} '
    return sum(int(line[len(prefix) :]) for line in text.splitlines() if line.startswith(prefix))


def _on(upstream: ScriptedUpstream, route: str) -> int:
    return len(upstream.messages_requests if route == "messages" else upstream.responses_requests)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("route", ["messages", "responses"])
def test_a_missing_endpoint_is_found_once_and_translated_at_once(
    route: str, stream: bool, chat_only: ScriptedUpstream, make_proxy: Callable[..., ProxyServer]
) -> None:
    proxy = make_proxy(upstream=chat_only.base_url)  # protocols: auto
    chat_only.script(good(), good())
    header, _ = ASKS[route](proxy, stream=stream)
    # the first request: a 404 on the protocol's path, then the same attempt over chat; no error shown
    assert header == "translated"
    assert (_on(chat_only, route), len(chat_only.chat_requests)) == (1, 1)
    header, _ = ASKS[route](proxy, stream=stream)
    # remembered: the second goes straight to chat completions
    assert header == "translated"
    assert (_on(chat_only, route), len(chat_only.chat_requests)) == (1, 2)
    assert _protocol_metric(proxy, route, "translated") == 2
    assert _protocol_metric(proxy, route, "native") == 0


def test_what_is_found_missing_is_per_protocol(
    chat_only: ScriptedUpstream, make_proxy: Callable[..., ProxyServer]
) -> None:
    proxy = make_proxy(upstream=chat_only.base_url)
    chat_only.script(good(), good())
    _messages(proxy, stream=False)
    _responses(proxy, stream=False)
    assert (len(chat_only.messages_requests), len(chat_only.responses_requests)) == (1, 1)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("route", ["messages", "responses"])
def test_a_serving_upstream_is_used_natively(
    route: str, stream: bool, upstream: ScriptedUpstream, make_proxy: Callable[..., ProxyServer]
) -> None:
    proxy = make_proxy(upstream=upstream.base_url)
    upstream.script(good(), good())
    for _ in range(2):
        header, _ = ASKS[route](proxy, stream=stream)
        assert header == "native"
    assert _on(upstream, route) == 2 and not upstream.chat_requests
    assert _protocol_metric(proxy, route, "native") == 2


@pytest.mark.parametrize("route", ["messages", "responses"])
def test_native_never_translates(
    route: str, chat_only: ScriptedUpstream, make_proxy: Callable[..., ProxyServer]
) -> None:
    proxy = make_proxy(upstream=chat_only.base_url, protocols="native")
    error = anthropic.NotFoundError if route == "messages" else pytest.importorskip("openai").NotFoundError
    with pytest.raises(error) as info:
        ASKS[route](proxy, stream=False)
    assert "serves no" in str(info.value)  # the upstream's own 404, in the protocol's error shape
    if route == "messages":
        assert info.value.body["type"] == "error" and info.value.body["error"]["type"] == "not_found_error"
    assert _on(chat_only, route) == 1 and not chat_only.chat_requests


@pytest.mark.parametrize("route", ["messages", "responses"])
def test_translate_never_tries_the_endpoint(
    route: str, upstream: ScriptedUpstream, make_proxy: Callable[..., ProxyServer]
) -> None:
    proxy = make_proxy(upstream=upstream.base_url, protocols="translate")
    upstream.script(good())
    header, _ = ASKS[route](proxy, stream=True)
    assert header == "translated" and _on(upstream, route) == 0 and len(upstream.chat_requests) == 1


def test_a_404_on_both_paths_is_the_client_s_and_not_remembered(
    chat_only: ScriptedUpstream, make_proxy: Callable[..., ProxyServer]
) -> None:
    """A 404 from chat completions too (a model the upstream does not serve): the endpoint may be there."""
    proxy = make_proxy(upstream=chat_only.base_url)
    chat_only.script(Reply.error(404, message="no such model"), good())
    with pytest.raises(anthropic.NotFoundError):
        _messages(proxy, stream=False)
    header, _ = _messages(proxy, stream=False)
    assert header == "translated"
    assert len(chat_only.messages_requests) == 2  # tried again: nothing was remembered from the first


def test_fields_the_chat_view_drops_reach_a_native_upstream(
    upstream: ScriptedUpstream, make_proxy: Callable[..., ProxyServer]
) -> None:
    proxy = make_proxy(upstream=upstream.base_url)
    upstream.script(good(), good())
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather in Paris?", "cache_control": {"type": "ephemeral"}}
            ],
        }
    ]
    with anthropic.Anthropic(base_url=proxy.root, api_key="k", max_retries=0, timeout=20) as client:
        client.messages.create(
            model="m",
            max_tokens=2048,
            messages=messages,  # type: ignore[arg-type]
            tools=[MESSAGES_TOOL],
            metadata={"user_id": "u-1"},
            thinking={"type": "enabled", "budget_tokens": 1024},
        )
    sent = upstream.messages_requests[0].body
    assert sent["metadata"] == {"user_id": "u-1"}
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert sent["messages"] == messages
    with client_for(proxy) as client:
        client.responses.create(
            model="m", input=RESPONSES_ASK, tools=[RESPONSES_TOOL], store=False, metadata={"run": "7"}
        )
    sent = upstream.responses_requests[0].body
    assert sent["store"] is False and sent["metadata"] == {"run": "7"}


def test_a_native_thinking_signature_comes_back_unchanged(
    upstream: ScriptedUpstream, make_proxy: Callable[..., ProxyServer]
) -> None:
    from .test_messages import REASONING_CHUNKS

    proxy = make_proxy(upstream=upstream.base_url)
    upstream.script(Reply(chunks=REASONING_CHUNKS, finish_reason="tool_calls", signature="c2lnLTE="))
    with anthropic.Anthropic(base_url=proxy.root, api_key="k", max_retries=0, timeout=20) as client:
        message = client.messages.create(
            model="m", max_tokens=64, messages=MESSAGES_ASK, tools=[MESSAGES_TOOL]
        )
    assert message.content[0].type == "thinking" and message.content[0].signature == "c2lnLTE="
    # the next turn carries the block back as it came: the upstream gets it unchanged
    upstream.script(Reply.text("It is sunny."))
    history = [
        *MESSAGES_ASK,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": message.content[1].id, "content": "sunny"}],
        },
    ]
    with anthropic.Anthropic(base_url=proxy.root, api_key="k", max_retries=0, timeout=20) as client:
        client.messages.create(model="m", max_tokens=64, messages=history, tools=[MESSAGES_TOOL])  # type: ignore[arg-type]
    resent = upstream.messages_requests[1].body["messages"][1]["content"][0]
    assert resent["type"] == "thinking" and resent["signature"] == "c2lnLTE="


def test_the_engine_tag_goes_natively_where_the_endpoint_takes_it(
    upstream: ScriptedUpstream, make_proxy: Callable[..., ProxyServer]
) -> None:
    """vLLM's Responses endpoint takes the whole-turn tag as ``structured_outputs.structural_tag`` (with
    ``tool_choice: auto``: with ``required`` it ignores the tag)."""
    proxy = make_proxy(upstream=upstream.base_url, engine="vllm")
    upstream.script(good())
    with client_for(proxy) as client:
        raw = client.responses.with_raw_response.create(
            model="m", input=RESPONSES_ASK, tools=[RESPONSES_TOOL], tool_choice="required"
        )
    assert raw.headers["x-toolguard-engine-constraint"] == "structural_tag"
    assert raw.headers["x-toolguard-protocol"] == "native"
    sent = upstream.responses_requests[0].body
    tag = json.loads(sent["structured_outputs"]["structural_tag"])
    assert tag["type"] == "structural_tag" and sent["tool_choice"] == "auto"
    assert "strict" not in sent["tools"][0] and sent["input"] == RESPONSES_ASK


def test_messages_go_over_chat_in_front_of_an_engine_whose_messages_take_no_tag(
    upstream: ScriptedUpstream, make_proxy: Callable[..., ProxyServer]
) -> None:
    """vLLM's Messages endpoint ignores any constraint: ``auto`` sends a Messages request with tools over
    its chat completions, with the tag; ``native`` sends it to /v1/messages without one."""
    auto = make_proxy(upstream=upstream.base_url, engine="vllm")
    upstream.script(good(), good())
    raw = _raw_messages(auto)
    assert raw.headers["x-toolguard-protocol"] == "translated"
    assert raw.headers["x-toolguard-engine-constraint"] == "structural_tag"
    assert upstream.chat_requests[0].body["response_format"]["type"] == "structural_tag"
    native = make_proxy(upstream=upstream.base_url, engine="vllm", protocols="native")
    raw = _raw_messages(native)
    assert raw.headers["x-toolguard-protocol"] == "native"
    assert "x-toolguard-engine-constraint" not in raw.headers
    sent = upstream.messages_requests[0].body
    assert "structured_outputs" not in sent and "response_format" not in sent


def _raw_messages(proxy: ProxyServer) -> Any:
    with anthropic.Anthropic(base_url=proxy.root, api_key="k", max_retries=0, timeout=20) as client:
        return client.messages.with_raw_response.create(
            model="m",
            max_tokens=64,
            messages=MESSAGES_ASK,
            tools=[MESSAGES_TOOL],
            tool_choice={"type": "any"},
        )
