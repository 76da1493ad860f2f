"""``toolguard.wrap(anthropic.Anthropic(...))``: the official anthropic client against the ScriptedUpstream's
``/v1/messages`` (a fake model server speaking Anthropic Messages), its ``messages.create`` guarded by the
SDK wrapper's own re-ask flow (no proxy in between: every decision seen here is the wrapper's)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import toolguard
from tests.sdk import helpers as h
from tests.support import ScriptedUpstream
from toolguard import FlowEvent, Policy, RunawayGeneration, ToolCallRejected, UsageError
from toolguard.sdk import guard_report

anthropic = pytest.importorskip("anthropic")
from anthropic.types import Message  # noqa: E402

TOOL = {
    "name": "get_weather",
    "description": "Current weather in a city.",
    "input_schema": h.WEATHER_TOOL["function"]["parameters"],
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture
def claude(upstream: ScriptedUpstream) -> Iterator[Any]:
    with anthropic.Anthropic(base_url=upstream.root, api_key="test", max_retries=2, timeout=10) as c:
        yield c


def _create(wrapped: Any, **kw: Any) -> Any:
    return wrapped.messages.create(
        model="m", max_tokens=kw.pop("max_tokens", 256), messages=ASK, tools=[TOOL], **kw
    )


def test_a_valid_call_is_returned_as_a_tool_use_block(claude: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.good(usage={"prompt_tokens": 12, "completion_tokens": 7}))
    message = _create(toolguard.wrap(claude))
    assert isinstance(message, Message) and message.stop_reason == "tool_use"
    [block] = message.content
    assert block.type == "tool_use" and block.name == "get_weather"
    assert block.input == {"city": "Paris", "unit": "c"}
    assert (message.usage.input_tokens, message.usage.output_tokens) == (12, 7)
    [sent] = upstream.messages_requests
    assert sent.body["messages"] == ASK and sent.body["tools"] == [TOOL] and "seed" not in sent.body
    report = guard_report(message)
    assert report is not None and report.verdict.ok and len(report.attempts) == 1


def test_an_invalid_call_is_reasked_as_an_error_tool_result(claude: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.bad_schema(), h.good())
    events: list[FlowEvent] = []
    message = _create(toolguard.wrap(claude, on_event=events.append))
    assert [b.input for b in message.content if b.type == "tool_use"] == [{"city": "Paris", "unit": "c"}]
    retries = [e for e in events if e.kind == "retry"]
    assert len(retries) == 1 and retries[0].reason == "reask"
    first, second = (r.body for r in upstream.messages_requests)
    assert first["messages"] == ASK
    assert second["messages"][0] == ASK[0]
    failed, answer = second["messages"][1:]
    [use] = failed["content"]
    assert failed["role"] == "assistant" and use["type"] == "tool_use" and use["input"]["unit"] == "kelvin"
    [result] = answer["content"]
    assert answer["role"] == "user" and result["type"] == "tool_result" and result["is_error"] is True
    assert result["tool_use_id"] == use["id"] and "unit" in result["content"]


def test_reasks_run_out_into_tool_call_rejected(claude: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.bad_schema(), h.bad_schema())
    with pytest.raises(ToolCallRejected) as info:
        _create(toolguard.wrap(claude, policy=Policy(max_reasks=1)))
    assert len(info.value.attempts) == 2 and len(upstream.messages_requests) == 2


def test_a_runaway_is_retried_with_a_lower_temperature(claude: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.runaway_content(), h.good())
    events: list[FlowEvent] = []
    message = _create(toolguard.wrap(claude, on_event=events.append), temperature=0.9)
    assert message.stop_reason == "tool_use"
    assert [e.reason for e in events if e.kind == "retry"] == ["runaway"]
    first, second = (r.body for r in upstream.messages_requests)
    assert second["temperature"] < first["temperature"] == 0.9
    assert second["messages"] == first["messages"] == ASK and "seed" not in second


def test_runaway_retries_run_out_into_runaway_generation(claude: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.runaway_content(), h.runaway_content())
    with pytest.raises(RunawayGeneration):
        _create(toolguard.wrap(claude, policy=Policy(max_runaway_retries=1)))
    assert len(upstream.messages_requests) == 2


def test_an_upstream_error_is_retried_with_the_clients_budget(
    claude: Any, upstream: ScriptedUpstream
) -> None:
    from tests.support import Reply

    upstream.script(Reply.error(503, retry_after=0), h.good())
    message = _create(toolguard.wrap(claude))
    assert message.stop_reason == "tool_use" and len(upstream.messages_requests) == 2


def test_a_client_error_is_the_sdks_own(claude: Any, upstream: ScriptedUpstream) -> None:
    from tests.support import Reply

    upstream.script(Reply.error(400))
    with pytest.raises(anthropic.BadRequestError):
        _create(toolguard.wrap(claude))
    assert len(upstream.messages_requests) == 1


def test_plain_text_passes_and_the_rest_is_delegated(claude: Any, upstream: ScriptedUpstream) -> None:
    from tests.support import Reply

    upstream.script(Reply.text("It is sunny."))
    wrapped = toolguard.wrap(claude)
    message = _create(wrapped)
    assert message.stop_reason == "end_turn" and message.content[0].text == "It is sunny."
    assert wrapped.base_url == claude.base_url
    with pytest.raises(UsageError):
        toolguard.wrap(wrapped)
    upstream.script(Reply.text("It is sunny."))
    events = list(_create(wrapped, stream=True))  # streamed cases: test_sdk_protocol_streams.py
    assert [e.type for e in events][-1] == "message_stop"


@pytest.mark.anyio
async def test_async_anthropic_is_guarded_the_same_way(upstream: ScriptedUpstream) -> None:
    upstream.script(h.bad_schema(), h.good())
    async with anthropic.AsyncAnthropic(base_url=upstream.root, api_key="test", timeout=10) as client:
        message = await toolguard.wrap(client).messages.create(
            model="m", max_tokens=256, messages=ASK, tools=[TOOL]
        )
    assert isinstance(message, Message)
    assert [b.input for b in message.content if b.type == "tool_use"] == [{"city": "Paris", "unit": "c"}]
    assert len(upstream.messages_requests) == 2
