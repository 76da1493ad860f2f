"""``toolguard.wrap(openai.OpenAI(...)).responses.create``: the official openai client against the
ScriptedUpstream's ``/v1/responses`` (a fake model server speaking the Responses API), guarded by the SDK
wrapper's own re-ask flow (no proxy in between: every decision seen here is the wrapper's)."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.responses import Response

import toolguard
from tests.sdk import helpers as h
from tests.support import ScriptedUpstream
from toolguard import FlowEvent, Policy, RunawayGeneration, ToolCallRejected, UsageError
from toolguard.sdk import guard_report

TOOL = {"type": "function", "name": "get_weather", "parameters": h.WEATHER_TOOL["function"]["parameters"]}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def _create(wrapped: Any, **kw: Any) -> Any:
    return wrapped.responses.create(model="m", input=kw.pop("input", ASK), tools=[TOOL], **kw)


def _calls(response: Any) -> list[tuple[str, str]]:
    return [(i.name, i.arguments) for i in response.output if i.type == "function_call"]


def test_a_valid_call_is_a_function_call_item(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.good(usage={"prompt_tokens": 12, "completion_tokens": 7}))
    response = _create(toolguard.wrap(client))
    assert isinstance(response, Response) and response.status == "completed"
    assert _calls(response) == [("get_weather", h.GOOD_ARGS)]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 7)
    [sent] = upstream.responses_requests
    assert sent.body["input"] == ASK and sent.body["tools"] == [TOOL]
    report = guard_report(response)
    assert report is not None and report.verdict.ok and len(report.attempts) == 1


@pytest.mark.parametrize("first", [h.bad_json, h.bad_schema, h.unknown_tool], ids=["json", "schema", "tool"])
def test_an_invalid_call_is_reasked_as_a_function_call_output(
    client: Any, upstream: ScriptedUpstream, first: Any
) -> None:
    upstream.script(first(), h.good())
    events: list[FlowEvent] = []
    response = _create(toolguard.wrap(client, on_event=events.append), input="What is the weather in Paris?")
    assert _calls(response) == [("get_weather", h.GOOD_ARGS)]
    assert [e.reason for e in events if e.kind == "retry"] == ["reask"]
    first_req, second = (r.body for r in upstream.responses_requests)
    assert first_req["input"] == "What is the weather in Paris?"
    asked, call, output = second["input"]
    assert asked == {"role": "user", "content": "What is the weather in Paris?"}
    assert call["type"] == "function_call" and call["name"] == first_req_name(first)
    assert output["type"] == "function_call_output" and output["call_id"] == call["call_id"]
    assert output["output"].startswith("Error: ")


def first_req_name(reply: Any) -> str:
    return "get_wether" if reply is h.unknown_tool else "get_weather"


def test_reasks_run_out_into_tool_call_rejected(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.bad_schema(), h.bad_json())
    with pytest.raises(ToolCallRejected) as info:
        _create(toolguard.wrap(client, policy=Policy(max_reasks=1)))
    assert len(info.value.attempts) == 2 and len(upstream.responses_requests) == 2


def test_a_runaway_is_retried_with_a_lower_temperature(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.runaway_arguments(), h.good())
    response = _create(toolguard.wrap(client), temperature=0.9)
    assert _calls(response) == [("get_weather", h.GOOD_ARGS)]
    first, second = (r.body for r in upstream.responses_requests)
    assert second["temperature"] < first["temperature"] == 0.9
    assert second["input"] == first["input"] == ASK and "seed" not in second


def test_runaway_retries_run_out_into_runaway_generation(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.runaway_content(), h.runaway_content())
    with pytest.raises(RunawayGeneration):
        _create(toolguard.wrap(client, policy=Policy(max_runaway_retries=1)))
    assert len(upstream.responses_requests) == 2


def test_a_truncated_call_is_retried_with_more_room(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.truncated(), h.good())
    response = _create(toolguard.wrap(client), max_output_tokens=40)
    assert _calls(response) == [("get_weather", h.GOOD_ARGS)]
    first, second = (r.body for r in upstream.responses_requests)
    assert second["max_output_tokens"] > first["max_output_tokens"] == 40


def test_stream_returns_the_sdks_own_events(client: Any, upstream: ScriptedUpstream) -> None:
    """(Every streamed case is in test_sdk_protocol_streams.py.)"""
    upstream.script(h.good())
    stream = _create(toolguard.wrap(client), stream=True)
    assert [e.type for e in stream][-1] == "response.completed" and guard_report(stream) is not None
    with pytest.raises(UsageError):
        toolguard.wrap(client).responses.stream(model="m", input=ASK, text_format=dict)


@pytest.mark.anyio
async def test_async_openai_responses_are_guarded_the_same_way(
    aclient: Any, upstream: ScriptedUpstream
) -> None:
    upstream.script(h.bad_schema(), h.good())
    response = await toolguard.wrap(aclient).responses.create(model="m", input=ASK, tools=[TOOL])
    assert isinstance(response, Response) and _calls(response) == [("get_weather", h.GOOD_ARGS)]
    assert len(upstream.responses_requests) == 2
