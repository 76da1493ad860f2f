"""Engine constraints in the proxy: the structural tag sent to vLLM/SGLang, the client's own constraint left
alone, a refused constraint dropped (and remembered), a vLLM without a tool parser served anyway."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support import Reply, ScriptedUpstream
from toolguard.engines import engine_of_models

from .conftest import client_for
from .helpers import MESSAGES, TOOLS, good
from .proxy_server import ProxyServer

CALL = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}'
NO_PARSER = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'


def _create(proxy: ProxyServer, **kw: Any) -> Any:
    with client_for(proxy) as client:
        return client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES, **kw)


def _tag(request: Any) -> dict[str, Any]:
    fmt = request.body.get("response_format")
    assert isinstance(fmt, dict) and fmt["type"] == "structural_tag", request.body
    return fmt["format"]


@pytest.fixture
def vllm(make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream) -> ProxyServer:
    return make_proxy(upstream=upstream.base_url, engine="vllm")


def test_the_whole_turn_tag_goes_to_vllm(vllm: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good())
    raw = _create(vllm, tools=TOOLS, parallel_tool_calls=False)
    assert raw.headers["x-toolguard-engine-constraint"] == "structural_tag"
    sent = upstream.chat_requests[0]
    tag = _tag(sent)
    assert tag["type"] == "triggered_tags" and tag["triggers"] == ["<tool_call>"]
    assert [t["begin"] for t in tag["tags"]] == ['<tool_call>\n{"name": "get_weather", "arguments": ']
    assert tag["stop_after_first"] is True and tag["at_least_one"] is False
    assert "<tool_response>" in tag["excludes"]
    assert sent.body["tool_choice"] == "auto"


def test_required_and_named_choices_are_forced_by_the_tag(
    vllm: ProxyServer, upstream: ScriptedUpstream
) -> None:
    forecast = {
        "type": "function",
        "function": {"name": "get_forecast", "parameters": {"type": "object", "properties": {}}},
    }
    upstream.script(good(), Reply.call("get_forecast", "{}"))
    _create(vllm, tools=[*TOOLS, forecast], tool_choice="required")
    _create(
        vllm, tools=[*TOOLS, forecast], tool_choice={"type": "function", "function": {"name": "get_forecast"}}
    )
    required, named = (_tag(r) for r in upstream.chat_requests)
    assert required["at_least_one"] is True and len(required["tags"]) == 2
    assert named["at_least_one"] is True and [t["begin"] for t in named["tags"]] == [
        '<tool_call>\n{"name": "get_forecast", "arguments": '
    ]
    assert all(r.body["tool_choice"] == "auto" for r in upstream.chat_requests), (
        "vLLM's own required path would ignore the tag: the Guard enforces the client's choice"
    )


def test_the_clients_own_constraint_wins(vllm: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good())
    own = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    raw = _create(vllm, tools=TOOLS, response_format=own)
    assert upstream.chat_requests[0].body["response_format"] == own
    assert raw.headers["x-toolguard-engine-constraint"] == "none"


def test_a_refused_constraint_is_dropped_and_remembered(
    vllm: ProxyServer, upstream: ScriptedUpstream
) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "tag_items",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
                    },
                },
            },
        }
    ]
    upstream.script(
        Reply.error(400, message="Invalid structural tag: unsupported keyword uniqueItems"),
        Reply.call("tag_items", '{"tags": ["a", "b"]}'),
        Reply.call("tag_items", '{"tags": ["c"]}'),
    )
    raw = _create(vllm, tools=tools)
    assert raw.headers["x-toolguard-engine-constraint"] == "refused"
    assert raw.parse().choices[0].message.tool_calls[0].function.arguments == '{"tags": ["a", "b"]}'
    first, second = upstream.chat_requests
    assert "response_format" in first.body and "response_format" not in second.body
    raw = _create(vllm, tools=tools)
    assert raw.headers["x-toolguard-engine-constraint"] == "refused"
    assert "response_format" not in upstream.chat_requests[2].body, "remembered for this tool set"
    metrics = httpx.get(vllm.base_url.removesuffix("/v1") + "/metrics").text
    assert 'toolguard_first_attempts_total{constraint="refused",valid="true"} 2' in metrics


def test_a_400_about_something_else_reaches_the_client(vllm: ProxyServer, upstream: ScriptedUpstream) -> None:
    import openai

    upstream.script(
        Reply.error(400, message="context length exceeded"),
        Reply.error(400, message="context length exceeded"),
    )
    with pytest.raises(openai.BadRequestError) as info:
        _create(vllm, tools=TOOLS)
    assert "context length exceeded" in info.value.message


def test_vllm_without_a_tool_parser_is_served(vllm: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.error(400, message=NO_PARSER), Reply.text(f"<tool_call>\n{CALL}\n</tool_call>"))
    raw = _create(vllm, tools=TOOLS, tool_choice="required")
    choice = raw.parse().choices[0]
    assert choice.finish_reason == "tool_calls"
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {"city": "Paris", "unit": "c"}
    _refused, served = upstream.chat_requests
    assert served.body["tool_choice"] == "none" and _tag(served)["at_least_one"] is True
    upstream.script(Reply.text(f"<tool_call>\n{CALL}\n</tool_call>"))
    _create(vllm, tools=TOOLS)
    assert upstream.chat_requests[2].body["tool_choice"] == "none", "remembered: no second 400"


def test_no_parser_without_constraints(
    make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream
) -> None:
    proxy = make_proxy(upstream=upstream.base_url, engine="vllm", engine_constraints="off")
    upstream.script(Reply.error(400, message=NO_PARSER), Reply.text(f"<tool_call>\n{CALL}\n</tool_call>"))
    raw = _create(proxy, tools=TOOLS)
    assert raw.parse().choices[0].message.tool_calls[0].function.name == "get_weather"
    served = upstream.chat_requests[1].body
    assert served["tool_choice"] == "none" and "response_format" not in served
    assert raw.headers["x-toolguard-engine-constraint"] == "none"


@pytest.mark.parametrize("owner", ["vllm", "sglang"])
def test_the_engine_is_detected_once(
    make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream, owner: str
) -> None:
    upstream.owned_by = owner
    proxy = make_proxy(upstream=upstream.base_url, engine="auto")
    upstream.script(good(), good())
    _create(proxy, tools=TOOLS)
    _create(proxy, tools=TOOLS)
    assert [r.path for r in upstream.requests].count("/v1/models") == 1
    assert all("response_format" in r.body for r in upstream.chat_requests)


def test_other_engines_get_nothing_extra(
    make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream
) -> None:
    upstream.owned_by = "llamacpp"
    proxy = make_proxy(upstream=upstream.base_url, engine="auto")
    upstream.script(good())
    raw = _create(proxy, tools=TOOLS)
    assert "response_format" not in upstream.chat_requests[0].body
    assert raw.headers["x-toolguard-engine-constraint"] == "none"


def test_engine_names() -> None:
    assert engine_of_models({"data": [{"id": "x", "owned_by": "vllm"}]}) == "vllm"
    assert engine_of_models({"data": [{"id": "x", "owned_by": "llamacpp"}]}) == "llamacpp"
    assert engine_of_models({"data": [{"id": "gpt-4o", "owned_by": "system"}]}) == "openai"
    assert engine_of_models({"data": [{"id": "x", "owned_by": "library"}]}) == "generic"
    assert engine_of_models(None, "llama.cpp") == "llamacpp"


def test_a_stream_says_its_constraint(vllm: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good())
    with httpx.stream(
        "POST",
        vllm.base_url + "/chat/completions",
        json={"model": "m", "messages": MESSAGES, "tools": TOOLS, "stream": True},
        timeout=20,
    ) as r:
        assert r.headers["x-toolguard-engine-constraint"] == "structural_tag"
        r.read()
    metrics = httpx.get(vllm.base_url.removesuffix("/v1") + "/metrics").text
    assert 'toolguard_first_attempts_total{constraint="structural_tag",valid="true"} 1' in metrics
