"""Engine constraints through ``wrap()``: the structural tag for a vLLM upstream (detected with the client's
own ``models.list()``), a refused tag dropped, a vLLM without a tool parser served anyway (sync and async)."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

import toolguard
from tests.sdk import helpers as h
from tests.sdk.helpers import MESSAGES, WEATHER_TOOL
from tests.support import Reply, ScriptedUpstream

NO_PARSER = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n</tool_call>'


def _create(wrapped: Any, **kw: Any) -> Any:
    return wrapped.chat.completions.create(model="m", messages=MESSAGES, tools=[WEATHER_TOOL], **kw)


def test_a_detected_vllm_gets_the_tag(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.owned_by = "vllm"
    upstream.script(h.good(), h.good())
    wrapped = toolguard.wrap(client)
    _create(wrapped, tool_choice="required")
    _create(wrapped)
    first, second = upstream.chat_requests
    assert first.body["response_format"]["type"] == "structural_tag"
    assert first.body["response_format"]["format"]["at_least_one"] is True
    assert first.body["tool_choice"] == "auto" and second.body["response_format"]["type"] == "structural_tag"
    assert [r.path for r in upstream.requests].count("/v1/models") == 1


def test_constraints_off_and_other_engines_send_nothing(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.owned_by = "vllm"
    upstream.script(h.good(), h.good())
    _create(toolguard.wrap(client, engine_constraints="off"))
    _create(toolguard.wrap(client, engine="llamacpp"))
    assert all("response_format" not in r.body for r in upstream.chat_requests)


def test_a_refused_tag_is_dropped(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(
        Reply.error(400, message="Invalid response_format structural_tag specification."), h.good(), h.good()
    )
    wrapped = toolguard.wrap(client, engine="vllm")
    completion = _create(wrapped)
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    _create(wrapped)
    tagged = ["response_format" in r.body for r in upstream.chat_requests]
    assert tagged == [True, False, False], "dropped, then remembered for this tool set"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_vllm_without_a_tool_parser_is_served(
    client: Any, upstream: ScriptedUpstream, stream: bool
) -> None:
    upstream.script(Reply.error(400, message=NO_PARSER), Reply.text(CALL))
    wrapped = toolguard.wrap(client, engine="vllm")
    if stream:
        got = h.collect(_create(wrapped, tool_choice="required", stream=True))
        calls = [got.calls[i] for i in sorted(got.calls)]
        assert got.finish_reason == "tool_calls"
    else:
        message = _create(wrapped, tool_choice="required").choices[0].message
        calls = [{"name": c.function.name, "arguments": c.function.arguments} for c in message.tool_calls]
    assert calls[0]["name"] == "get_weather"
    assert json.loads(calls[0]["arguments"]) == {"city": "Paris", "unit": "c"}
    assert upstream.chat_requests[1].body["tool_choice"] == "none"


def test_another_400_is_raised(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.error(400, message="context length exceeded"))
    with pytest.raises(openai.BadRequestError):
        _create(toolguard.wrap(client, engine="generic"))
    assert len(upstream.chat_requests) == 1


@pytest.mark.anyio
async def test_async_no_parser(aclient: Any, upstream: ScriptedUpstream) -> None:
    upstream.owned_by = "vllm"
    upstream.script(Reply.error(400, message=NO_PARSER), Reply.text(CALL))
    completion = await toolguard.wrap(aclient).chat.completions.create(
        model="m", messages=MESSAGES, tools=[WEATHER_TOOL]
    )
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert upstream.chat_requests[1].body["response_format"]["type"] == "structural_tag"
