"""Streamed twins of the Messages and Responses SDK cases: ``wrap(anthropic.Anthropic())`` and
``wrap(openai.OpenAI()).responses``, ``create(stream=True)`` and ``.stream()``, hold and pass, sync and
async, the official clients against the ScriptedUpstream's streamed ``/v1/messages`` and ``/v1/responses``
(a fake model server). What the caller gets is the SDK's own event objects and stream helpers; every
decision seen here is the wrapper's (no proxy in between)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

import toolguard
from tests.sdk import helpers as h
from tests.support import Reply, ScriptedUpstream
from toolguard import FlowEvent, Policy, RunawayGeneration, ToolCallRejected
from toolguard.sdk import guard_report

anthropic = pytest.importorskip("anthropic")
import openai  # noqa: E402
from anthropic.types import RawMessageStreamEvent  # noqa: E402
from openai.types.responses import ResponseStreamEvent  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

PARAMS = h.WEATHER_TOOL["function"]["parameters"]
MESSAGES_TOOL = {"name": "get_weather", "description": "Current weather in a city.", "input_schema": PARAMS}
RESPONSES_TOOL = {"type": "function", "name": "get_weather", "parameters": PARAMS}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
FAST = Policy(backoff_initial=0.01, backoff_jitter=0)
PASS = Policy(stream="pass", backoff_initial=0.01, backoff_jitter=0)
EVENT_TYPES = {"messages": TypeAdapter(RawMessageStreamEvent), "responses": TypeAdapter(ResponseStreamEvent)}


@dataclass
class Got:
    """What the caller saw: text, calls (name, arguments), the end, every event."""

    text: str = ""
    calls: list[list[str]] = field(default_factory=list)
    end: str | None = None
    events: list[Any] = field(default_factory=list)
    report: Any = None
    final: Any = None


def _read_messages(events: Any, got: Got) -> None:
    for e in events:
        got.events.append(e)
        if e.type == "content_block_start" and e.content_block.type == "tool_use":
            got.calls.append([e.content_block.name, ""])
        elif e.type == "content_block_delta" and e.delta.type == "text_delta":
            got.text += e.delta.text
        elif e.type == "content_block_delta" and e.delta.type == "input_json_delta":
            got.calls[-1][1] += e.delta.partial_json
        elif e.type == "message_delta":
            got.end = e.delta.stop_reason


def _read_responses(events: Any, got: Got) -> None:
    for e in events:
        got.events.append(e)
        if e.type == "response.output_item.added" and e.item.type == "function_call":
            got.calls.append([e.item.name, ""])
        elif e.type == "response.output_text.delta":
            got.text += e.delta
        elif e.type == "response.function_call_arguments.delta":
            got.calls[-1][1] += e.delta
        elif e.type in ("response.completed", "response.incomplete", "response.failed"):
            got.end = e.type


class Door:
    """One protocol's guarded stream, through ``create(stream=True)`` or ``.stream()``."""

    def __init__(self, protocol: str, how: str, upstream: ScriptedUpstream) -> None:
        self.protocol, self.how, self.upstream = protocol, how, upstream

    def client(self, **kw: Any) -> Any:
        if self.protocol == "messages":
            return anthropic.Anthropic(base_url=self.upstream.root, api_key="t", max_retries=2, timeout=10)
        return openai.OpenAI(base_url=self.upstream.base_url, api_key="t", max_retries=2, timeout=10)

    def args(self, **kw: Any) -> dict[str, Any]:
        if self.protocol == "messages":
            return {
                "model": "m",
                "max_tokens": kw.pop("max_tokens", 256),
                "messages": ASK,
                "tools": [MESSAGES_TOOL],
                **kw,
            }
        if "max_tokens" in kw:
            kw["max_output_tokens"] = kw.pop("max_tokens")
        return {"model": "m", "input": ASK, "tools": [RESPONSES_TOOL], **kw}

    def endpoint(self, wrapped: Any) -> Any:
        return wrapped.messages if self.protocol == "messages" else wrapped.responses

    def run(self, policy: Policy = FAST, events: list[FlowEvent] | None = None, **kw: Any) -> Got:
        got = Got()
        read = _read_messages if self.protocol == "messages" else _read_responses
        with self.client() as client:
            endpoint = self.endpoint(
                toolguard.wrap(client, policy=policy, on_event=(events if events is not None else []).append)
            )
            if self.how == "create":
                stream = endpoint.create(stream=True, **self.args(**kw))
                with stream:
                    read(stream, got)
                got.report = guard_report(stream)
            else:
                with endpoint.stream(**self.args(**kw)) as stream:
                    read(stream, got)
                    if got.end in ("message_stop", "end_turn", "tool_use", "response.completed"):
                        got.final = (
                            stream.get_final_message()
                            if self.protocol == "messages"
                            else stream.get_final_response()
                        )
                    got.report = guard_report(stream)
        for e in got.events:
            if self.how == "create":  # the raw events: exactly the SDK's own types
                EVENT_TYPES[self.protocol].validate_python(e.model_dump(exclude_none=True, mode="json"))
        return got

    @property
    def requests(self) -> list[Any]:
        return (
            self.upstream.messages_requests
            if self.protocol == "messages"
            else self.upstream.responses_requests
        )

    def failure(self) -> Any:
        """How a failure after something was shown ends: raised (Messages), or ``response.failed``."""
        return anthropic.APIStatusError if self.protocol == "messages" else None

    @property
    def called(self) -> str:
        return "tool_use" if self.protocol == "messages" else "response.completed"


@pytest.fixture(params=["messages", "responses"])
def protocol(request: Any) -> str:
    return str(request.param)


@pytest.fixture(params=["create", "stream"])
def door(request: Any, protocol: str, upstream: ScriptedUpstream) -> Door:
    return Door(protocol, request.param, upstream)


def _ends_in_failure(door: Door, **kw: Any) -> Got | None:
    error = door.failure()
    if error is not None:
        with pytest.raises(error) as info:
            door.run(**kw)
        body = info.value.body
        assert body["type"] == "error" and body["error"]["type"] in ("invalid_request_error", "api_error")
        return None
    got = door.run(**kw)
    assert got.end == "response.failed" and got.events[-1].type == "response.failed"
    return got


def test_a_valid_call_streams_as_the_protocols_call(door: Door) -> None:
    door.upstream.script(h.good(usage={"prompt_tokens": 12, "completion_tokens": 7}))
    got = door.run()
    assert got.calls == [["get_weather", h.GOOD_ARGS]] and got.end == door.called and not got.text
    assert got.report is not None and got.report.verdict.ok and len(got.report.attempts) == 1
    [sent] = door.requests
    assert sent.body["stream"] is True
    if got.final is not None and door.protocol == "messages":
        [block] = got.final.content
        assert block.input == json.loads(h.GOOD_ARGS) and got.final.usage.output_tokens == 7
    elif got.final is not None:
        assert [(i.name, i.arguments) for i in got.final.output] == [("get_weather", h.GOOD_ARGS)]


@pytest.mark.parametrize("first", [h.bad_json, h.bad_schema, h.unknown_tool], ids=["json", "schema", "tool"])
def test_an_invalid_call_is_reasked_invisibly_in_hold_mode(door: Door, first: Any) -> None:
    door.upstream.script(first(), h.good())
    events: list[FlowEvent] = []
    got = door.run(events=events)
    assert got.calls == [["get_weather", h.GOOD_ARGS]] and got.end == door.called
    assert [e.reason for e in events if e.kind == "retry"] == ["reask"]
    assert [a.verdict.kind for a in got.report.attempts] == [first().tool_calls and _kind(first), "ok"]
    second = door.requests[1].body
    if door.protocol == "messages":
        result = second["messages"][-1]["content"][0]
        assert result["type"] == "tool_result" and result["is_error"] is True
    else:
        assert second["input"][-1]["type"] == "function_call_output"


def _kind(first: Any) -> str:
    return "unknown_tool" if first is h.unknown_tool else "rejected"


def test_in_pass_mode_a_shown_invalid_call_ends_the_stream_in_the_protocols_terms(door: Door) -> None:
    door.upstream.script(h.bad_schema(), h.good())
    got = _ends_in_failure(door, policy=PASS)
    assert len(door.requests) == 1  # never retried: the caller saw the call begin
    if got is not None:
        error = got.events[-1].response.error
        assert error.code == "server_error" and "unit" in error.message
        assert error.toolguard["kind"] == "rejected"  # type: ignore[attr-defined]


def test_reasks_run_out_into_tool_call_rejected(door: Door) -> None:
    door.upstream.script(h.bad_schema(), h.bad_json())
    with pytest.raises(ToolCallRejected) as info:
        door.run(policy=Policy(max_reasks=1))
    assert len(info.value.attempts) == 2 and len(door.requests) == 2


def test_a_runaway_is_retried_with_a_lower_temperature(door: Door) -> None:
    door.upstream.script(h.runaway_arguments(), h.good())
    got = door.run(temperature=0.9)
    assert got.calls == [["get_weather", h.GOOD_ARGS]]
    first, second = (r.body for r in door.requests)
    assert second["temperature"] < first["temperature"] == 0.9


def test_runaway_retries_run_out_into_runaway_generation(door: Door) -> None:
    door.upstream.script(h.runaway_arguments(), h.runaway_arguments())
    with pytest.raises(RunawayGeneration):
        door.run(policy=Policy(max_runaway_retries=1))
    assert len(door.requests) == 2


def test_a_shown_runaway_text_ends_the_stream(door: Door) -> None:
    door.upstream.script(h.runaway_content(), h.good())
    _ends_in_failure(door)
    assert len(door.requests) == 1


def test_a_truncated_call_is_retried_with_more_room(door: Door) -> None:
    door.upstream.script(h.truncated(), h.good())
    got = door.run(max_tokens=40)
    assert got.calls == [["get_weather", h.GOOD_ARGS]]
    key = "max_tokens" if door.protocol == "messages" else "max_output_tokens"
    first, second = (r.body for r in door.requests)
    assert second[key] > first[key] == 40


@pytest.mark.parametrize("status", [503, 429])
def test_an_upstream_error_is_retried(door: Door, status: int) -> None:
    door.upstream.script(Reply.error(status, retry_after=0), h.good())
    got = door.run()
    assert got.calls == [["get_weather", h.GOOD_ARGS]] and len(door.requests) == 2


def test_a_client_error_is_the_sdks_own(door: Door) -> None:
    door.upstream.script(Reply.error(400))
    error = anthropic.BadRequestError if door.protocol == "messages" else openai.BadRequestError
    with pytest.raises(error):
        door.run()
    assert len(door.requests) == 1


@pytest.mark.parametrize(
    "broken",
    [h.good(disconnect_after=4), h.good(malformed_after=4), h.good(error_after=4)],
    ids=["disconnect", "malformed", "error-event"],
)
def test_a_broken_stream_is_retried_invisibly_before_anything_was_shown(door: Door, broken: Reply) -> None:
    events: list[FlowEvent] = []
    door.upstream.script(broken, h.good())
    got = door.run(events=events)
    assert got.calls == [["get_weather", h.GOOD_ARGS]] and got.end == door.called
    assert [e.kind for e in events].count("upstream_error") == 1
    assert [e.delay for e in events if e.kind == "backoff"] == [0.01]


def test_a_stream_broken_after_text_was_shown_ends_in_the_protocols_terms(door: Door) -> None:
    door.upstream.script(Reply.text("It is ", "sunny ", "and ", "warm.", disconnect_after=6), h.good())
    _ends_in_failure(door)
    assert len(door.requests) == 1


def test_text_and_thinking_stream_through(door: Door) -> None:
    door.upstream.script(Reply(reasoning=("Let me think.",), content=("It is ", "sunny.")))
    got = door.run()
    assert got.text == "It is sunny." and not got.calls
    assert got.end == ("end_turn" if door.protocol == "messages" else "response.completed")
    if door.protocol == "messages":
        thinking = [
            e for e in got.events if e.type == "content_block_delta" and e.delta.type == "signature_delta"
        ]
        assert [e.delta.signature for e in thinking] == [Reply().signature]


def test_hold_holds_a_call_whole_and_pass_streams_it(protocol: str, upstream: ScriptedUpstream) -> None:
    import time

    slow = Reply.call("get_weather", '{"city": ', '"Par', 'is", ', '"unit": ', '"c"}', delay=0.04)
    kind = "content_block_delta" if protocol == "messages" else "response.function_call_arguments.delta"
    spans = []
    for policy in (FAST, PASS):
        upstream.script(slow)
        door = Door(protocol, "create", upstream)
        with door.client() as client:
            stream = door.endpoint(toolguard.wrap(client, policy=policy)).create(stream=True, **door.args())
            times = [time.monotonic() for e in stream if e.type == kind]
        assert len(times) == 5
        spans.append(times[-1] - times[0])
    assert spans[0] < 0.03 and spans[1] > 0.1


# ------------------------------------------------------------------------------------------------ async
async def _aread(protocol: str, how: str, upstream: ScriptedUpstream, policy: Policy = FAST) -> Got:
    got = Got()
    read = _read_messages if protocol == "messages" else _read_responses
    if protocol == "messages":
        client: Any = anthropic.AsyncAnthropic(base_url=upstream.root, api_key="t", timeout=10)
        args: dict[str, Any] = {"model": "m", "max_tokens": 256, "messages": ASK, "tools": [MESSAGES_TOOL]}
    else:
        client = openai.AsyncOpenAI(base_url=upstream.base_url, api_key="t", timeout=10)
        args = {"model": "m", "input": ASK, "tools": [RESPONSES_TOOL]}
    async with client:
        wrapped = toolguard.wrap(client, policy=policy)
        endpoint = wrapped.messages if protocol == "messages" else wrapped.responses
        if how == "create":
            stream = await endpoint.create(stream=True, **args)
            events = [e async for e in stream]
            got.report = guard_report(stream)
        else:
            async with endpoint.stream(**args) as stream:
                events = [e async for e in stream]
                got.report = guard_report(stream)
                if protocol == "messages":
                    got.final = await stream.get_final_message()
                else:
                    got.final = await stream.get_final_response()
    read(iter(events), got)
    return got


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["create", "stream"])
async def test_async_streams_are_guarded_the_same_way(
    protocol: str, how: str, upstream: ScriptedUpstream
) -> None:
    upstream.script(h.bad_schema(), h.good())
    got = await _aread(protocol, how, upstream)
    assert got.calls == [["get_weather", h.GOOD_ARGS]]
    assert [a.verdict.kind for a in got.report.attempts] == ["rejected", "ok"]
    if got.final is not None:
        calls = got.final.content if protocol == "messages" else got.final.output
        assert len(calls) == 1


@pytest.mark.anyio
async def test_async_a_shown_failure_ends_in_the_protocols_terms(
    protocol: str, upstream: ScriptedUpstream
) -> None:
    upstream.script(h.bad_schema(), h.good())
    if protocol == "messages":
        with pytest.raises(anthropic.APIStatusError):
            await _aread(protocol, "create", upstream, policy=PASS)
    else:
        got = await _aread(protocol, "create", upstream, policy=PASS)
        assert got.end == "response.failed"


@pytest.mark.anyio
async def test_async_a_broken_stream_is_retried(protocol: str, upstream: ScriptedUpstream) -> None:
    upstream.script(h.good(disconnect_after=3), h.good())
    got = await _aread(protocol, "create", upstream)
    assert got.calls == [["get_weather", h.GOOD_ARGS]] and got.report.verdict.ok


def test_iterating_a_closed_stream_ends_it(protocol: str, upstream: ScriptedUpstream) -> None:
    upstream.script(h.good())
    door = Door(protocol, "create", upstream)
    with door.client() as client:
        stream = door.endpoint(toolguard.wrap(client)).create(stream=True, **door.args())
        next(iter(stream))
        stream.close()
        assert list(stream) == []


def test_reasoning_comes_through_as_it_came(door: Door) -> None:
    """Thinking and its signature, a redacted_thinking block, a reasoning item's id and encrypted content:
    what the chat view has no field for reaches the caller as the upstream sent it."""
    door.upstream.script(Reply(reasoning=("Let me think.",), content=("Sunny.",), redacted="cmVkYWN0ZWQ="))
    got = door.run()
    assert got.text == "Sunny."
    if door.protocol == "messages":
        starts = [e.content_block for e in got.events if e.type == "content_block_start"]
        assert [b.type for b in starts] == ["thinking", "redacted_thinking", "text"]
        assert starts[1].data == "cmVkYWN0ZWQ="
        return
    added = [e.item for e in got.events if e.type == "response.output_item.added"]
    done = [e.item for e in got.events if e.type == "response.output_item.done"]
    assert [i.type for i in done] == ["reasoning", "message"]
    assert added[0].id == done[0].id == "rs_0"  # the upstream's id, from the start
    assert done[0].encrypted_content == Reply().signature
    assert {e.item_id for e in got.events if e.type == "response.reasoning_text.delta"} == {"rs_0"}
