"""``toolguard.wrap(openai.OpenAI(...))`` against a ScriptedUpstream (a fake model server): every failure."""

from __future__ import annotations

import json
import time
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

import toolguard
from tests.sdk import helpers as h
from tests.sdk.helpers import MESSAGES, WEATHER_TOOL
from tests.support import Reply, ScriptedUpstream
from toolguard import Policy, RunawayGeneration, ToolCallRejected, TruncatedToolCall, UsageError
from toolguard.sdk import GuardedStream, guard_report

STREAM = pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])


def ask(wrapped: Any, *, stream: bool, **kw: Any) -> tuple[str | None, list[dict[str, str]], str | None]:
    """(content, calls, finish_reason) of one guarded request, stream or not."""
    args: dict[str, Any] = {"model": "m", "messages": MESSAGES, "tools": [WEATHER_TOOL], **kw}
    if stream:
        result = wrapped.chat.completions.create(stream=True, **args)
        assert isinstance(result, GuardedStream)
        got = h.collect(result)
        assert all(isinstance(c, ChatCompletionChunk) for c in got.chunks)
        calls = [got.calls[i] for i in sorted(got.calls)]
        return got.content or None, calls, got.finish_reason
    completion = wrapped.chat.completions.create(**args)
    assert isinstance(completion, ChatCompletion)
    message = completion.choices[0].message
    calls = [
        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
        for c in message.tool_calls or ()
    ]
    return message.content, calls, completion.choices[0].finish_reason


@STREAM
def test_a_valid_call_passes_in_one_request(client: Any, upstream: ScriptedUpstream, stream: bool) -> None:
    upstream.script(h.good())
    content, calls, finish = ask(toolguard.wrap(client), stream=stream)
    assert [c["name"] for c in calls] == ["get_weather"] and calls[0]["arguments"] == h.GOOD_ARGS
    assert finish == "tool_calls" and not content
    assert len(upstream.chat_requests) == 1


@STREAM
@pytest.mark.parametrize(
    ("first", "needle"),
    [(h.bad_json, "get_weather"), (h.bad_schema, "/unit"), (h.unknown_tool, "get_wether")],
    ids=["malformed", "schema", "unknown-tool"],
)
def test_an_invalid_call_is_fixed_on_reask(
    client: Any, upstream: ScriptedUpstream, stream: bool, first: Any, needle: str
) -> None:
    upstream.script(first(), h.good())
    _, calls, finish = ask(toolguard.wrap(client), stream=stream)
    assert len(calls) == 1 and calls[0]["arguments"] == h.GOOD_ARGS and finish == "tool_calls"
    first_req, second = (r.body for r in upstream.chat_requests)
    assert first_req["messages"] == MESSAGES
    reask = second["messages"]
    assert reask[0] == MESSAGES[0] and reask[1]["role"] == "assistant"
    assert reask[2]["role"] == "tool" and reask[2]["tool_call_id"] == reask[1]["tool_calls"][0]["id"]
    assert needle in reask[2]["content"]


@STREAM
def test_reasks_run_out_into_tool_call_rejected(
    client: Any, upstream: ScriptedUpstream, stream: bool
) -> None:
    upstream.script(h.bad_schema(), h.bad_json())
    with pytest.raises(ToolCallRejected) as info:
        ask(toolguard.wrap(client, policy=Policy(max_reasks=1)), stream=stream)
    assert len(info.value.attempts) == 2 and len(upstream.chat_requests) == 2
    assert info.value.violation.kind == "rejected"


@STREAM
@pytest.mark.parametrize("loop", [h.runaway_content, h.runaway_arguments], ids=["content", "arguments"])
def test_a_runaway_is_retried_with_changed_sampling(
    client: Any, upstream: ScriptedUpstream, stream: bool, loop: Any
) -> None:
    upstream.script(loop(), h.good())
    _, calls, _ = ask(toolguard.wrap(client), stream=stream, temperature=0.9, seed=1)
    assert calls[0]["arguments"] == h.GOOD_ARGS
    first, second = (r.body for r in upstream.chat_requests)
    assert second["temperature"] < first["temperature"] and second["seed"] != first["seed"]
    assert second["messages"] == first["messages"]


@STREAM
def test_runaway_retries_run_out_into_runaway_generation(
    client: Any, upstream: ScriptedUpstream, stream: bool
) -> None:
    upstream.script(h.runaway_content(), h.runaway_content())
    with pytest.raises(RunawayGeneration) as info:
        ask(toolguard.wrap(client, policy=Policy(max_runaway_retries=1)), stream=stream)
    assert info.value.violation.runaway is not None and len(info.value.attempts) == 2


@STREAM
def test_a_truncated_call_is_retried_with_more_room(
    client: Any, upstream: ScriptedUpstream, stream: bool
) -> None:
    upstream.script(h.truncated(), h.good())
    _, calls, _ = ask(toolguard.wrap(client), stream=stream, max_tokens=20)
    assert calls[0]["arguments"] == h.GOOD_ARGS
    assert [r.body["max_tokens"] for r in upstream.chat_requests] == [20, 40]


@STREAM
def test_truncation_retries_run_out_into_truncated_tool_call(
    client: Any, upstream: ScriptedUpstream, stream: bool
) -> None:
    upstream.script(h.truncated(), h.truncated())
    with pytest.raises(TruncatedToolCall) as info:
        ask(toolguard.wrap(client), stream=stream, max_tokens=20)
    assert info.value.violation.kind == "truncated"


def test_a_valid_call_written_into_the_content_is_delivered_as_a_tool_call(
    client: Any, upstream: ScriptedUpstream
) -> None:
    upstream.script(h.call_in_content())
    completion = toolguard.wrap(client).chat.completions.create(
        model="m", messages=MESSAGES, tools=[WEATHER_TOOL]
    )
    assert isinstance(completion, ChatCompletion)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls" and not choice.message.content
    assert choice.message.tool_calls is not None and len(choice.message.tool_calls) == 1
    call = choice.message.tool_calls[0]
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    assert len(upstream.chat_requests) == 1, "a valid call costs no second generation"
    report = guard_report(completion)
    assert report is not None and report.verdict.kind == "ok"


def test_a_valid_call_written_into_the_content_streams_as_a_tool_call(
    client: Any, upstream: ScriptedUpstream
) -> None:
    upstream.script(h.call_in_content())
    content, calls, finish = ask(toolguard.wrap(client), stream=True)
    assert not content and finish == "tool_calls"
    assert calls[0]["name"] == "get_weather" and json.loads(calls[0]["arguments"]) == {"city": "Paris"}
    assert len(upstream.chat_requests) == 1


def test_a_fabricated_result_beside_the_calls_is_cut_from_a_completion(
    client: Any, upstream: ScriptedUpstream
) -> None:
    upstream.script(h.good(content=("On it.\n<tool_response>{\"temperature\": 21}</tool_response>",)))
    completion = toolguard.wrap(client).chat.completions.create(
        model="m", messages=MESSAGES, tools=[WEATHER_TOOL]
    )
    message = completion.choices[0].message
    assert message.content == "On it.\n" and message.tool_calls and len(message.tool_calls) == 1
    report = guard_report(completion)
    assert report is not None and report.verdict.kind == "fabricated"
    assert len(upstream.chat_requests) == 1


@STREAM
def test_a_call_written_into_the_content_is_reasked_without_repair(
    client: Any, upstream: ScriptedUpstream, stream: bool
) -> None:
    upstream.script(h.call_in_content(), h.good())
    policy = toolguard.Policy(repair_calls=False)
    content, calls, _ = ask(toolguard.wrap(client, policy=policy), stream=stream)
    assert calls[0]["arguments"] == h.GOOD_ARGS
    assert not content, "in hold mode the call written as text never reaches the caller"
    reask = upstream.chat_requests[1].body["messages"]
    assert reask[-1]["role"] == "user" and "tool-calling interface" in reask[-1]["content"]


def test_text_after_a_call_is_cut_from_the_stream(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.fabricated())
    stream = toolguard.wrap(client).chat.completions.create(
        model="m", messages=MESSAGES, tools=[WEATHER_TOOL], stream=True
    )
    got = h.collect(stream)
    assert got.content == "" and got.finish_reason == "tool_calls"
    assert json.loads(got.calls[0]["arguments"]) == {"city": "Paris"}
    report = guard_report(stream)
    assert report is not None and report.verdict.kind == "fabricated"
    assert len(upstream.chat_requests) == 1


@STREAM
@pytest.mark.parametrize("status", [429, 500, 503])
def test_upstream_errors_are_retried_with_backoff(
    client: Any, upstream: ScriptedUpstream, stream: bool, status: int
) -> None:
    events: list[Any] = []
    upstream.script(Reply.error(status, retry_after=0), h.good())
    _, calls, _ = ask(toolguard.wrap(client, on_event=events.append), stream=stream)
    assert calls[0]["arguments"] == h.GOOD_ARGS
    backoffs = [e for e in events if e.kind == "backoff"]
    assert len(backoffs) == 1 and backoffs[0].status == status and backoffs[0].delay == 0


def test_upstream_retries_follow_the_clients_max_retries(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(*(Reply.error(429, retry_after=0) for _ in range(3)))
    with pytest.raises(openai.RateLimitError):
        ask(toolguard.wrap(client), stream=False)
    assert len(upstream.chat_requests) == 3  # the client's max_retries=2, counted once


def test_a_client_error_is_raised_at_once(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.error(400, message="bad request"))
    with pytest.raises(openai.BadRequestError):
        ask(toolguard.wrap(client), stream=True)
    assert len(upstream.chat_requests) == 1


@pytest.mark.parametrize(
    "broken",
    [Reply.call("get_weather", '{"city": ', '"Paris"}', disconnect_after=2), h.good(malformed_after=2)],
    ids=["disconnect", "malformed-sse"],
)
def test_a_broken_stream_is_retried_invisibly(client: Any, upstream: ScriptedUpstream, broken: Reply) -> None:
    events: list[Any] = []
    upstream.script(broken, h.good())
    exact = Policy(backoff_initial=0.01, backoff_jitter=0)
    wrapped = toolguard.wrap(client, on_event=events.append, policy=exact)
    _, calls, finish = ask(wrapped, stream=True)
    assert len(calls) == 1 and calls[0]["arguments"] == h.GOOD_ARGS and finish == "tool_calls"
    assert [e.kind for e in events].count("upstream_error") == 1
    assert [e.delay for e in events if e.kind == "backoff"] == [0.01]


@pytest.mark.parametrize(
    ("name", "first"),
    [("get_wether", '{"city": "Paris"'), ("get_weather", '{"city": 42')],
    ids=["name", "value"],
)
def test_the_upstream_stream_is_closed_at_the_first_violation(
    client: Any, upstream: ScriptedUpstream, name: str, first: str
) -> None:
    slow_bad = Reply.call(name, first, *([", "] * 40), "}", delay=0.05)
    upstream.script(slow_bad, h.good())
    started = time.monotonic()
    _, calls, _ = ask(toolguard.wrap(client), stream=True)
    assert calls[0]["arguments"] == h.GOOD_ARGS
    assert time.monotonic() - started < 1.0, "the 2-second bad stream was read to its end"


def _tool_chunk_times(wrapped: Any) -> list[float]:
    times = []
    stream = wrapped.chat.completions.create(model="m", messages=MESSAGES, tools=[WEATHER_TOOL], stream=True)
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.tool_calls:
            times.append(time.monotonic())
    return times


def test_hold_releases_calls_whole_and_pass_releases_them_as_they_validate(
    client: Any, upstream: ScriptedUpstream
) -> None:
    slow = Reply.call("get_weather", '{"city": ', '"Par', 'is", ', '"unit": ', '"c"}', delay=0.04)
    upstream.script(slow, slow)
    held = _tool_chunk_times(toolguard.wrap(client))
    passed = _tool_chunk_times(toolguard.wrap(client, policy=Policy(stream="pass")))
    assert len(held) == len(passed) == 5
    assert held[-1] - held[0] < 0.03
    assert passed[-1] - passed[0] > 0.1


def test_in_pass_mode_a_retry_is_announced(client: Any, upstream: ScriptedUpstream) -> None:
    events: list[Any] = []
    upstream.script(h.bad_schema(), h.good())
    wrapped = toolguard.wrap(client, policy=Policy(stream="pass"), on_event=events.append)
    stream = wrapped.chat.completions.create(model="m", messages=MESSAGES, tools=[WEATHER_TOOL], stream=True)
    got = h.collect(stream)
    assert any(e.kind == "retry" and e.reason == "reask" for e in events)
    # The caller saw the failed attempt too: its call just ends (the validated prefix), and the retry's call
    # starts at the next index, never merged into it ("get_weatherget_weather").
    failed = {"id": got.calls[0]["id"], "name": "get_weather", "arguments": '{"city": "Paris", '}
    assert got.calls[0] == failed
    assert got.calls[1]["name"] == "get_weather" and got.calls[1]["arguments"] == h.GOOD_ARGS


def test_every_attempt_is_reported(client: Any, upstream: ScriptedUpstream) -> None:
    events: list[Any] = []
    upstream.script(h.bad_json(), h.good())
    completion = toolguard.wrap(client, on_event=events.append).chat.completions.create(
        model="m", messages=MESSAGES, tools=[WEATHER_TOOL]
    )
    report = guard_report(completion)
    assert report is not None and report.verdict.ok
    assert [a.verdict.kind for a in report.attempts] == ["rejected", "ok"]
    assert [e.kind for e in events] == ["attempt", "verdict", "retry", "attempt", "verdict", "done"]
    assert "_toolguard" not in completion.model_dump_json()


def test_prose_with_brackets_streams_through(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.text("Use a list [1, 2] or <b>bold</b>", " text", "."))
    stream = toolguard.wrap(client).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert h.collect(stream).content == "Use a list [1, 2] or <b>bold</b> text."


def test_plain_text_without_tools_passes(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.text("Hello", " there."))
    completion = toolguard.wrap(client).chat.completions.create(model="m", messages=MESSAGES)
    assert completion.choices[0].message.content == "Hello there."


def test_the_rest_of_the_client_is_delegated(client: Any, upstream: ScriptedUpstream) -> None:
    wrapped = toolguard.wrap(client)
    assert [m.id for m in wrapped.models.list()] == ["scripted-model"]
    assert wrapped.wrapped is client and "OpenAI" in repr(wrapped)


def test_misuse_is_refused(client: Any) -> None:
    wrapped = toolguard.wrap(client)
    with pytest.raises(UsageError):
        toolguard.wrap(wrapped)
    with pytest.raises(UsageError):
        toolguard.wrap(object())
    with pytest.raises(UsageError):
        wrapped.chat.completions.create(model="m", messages=MESSAGES, n=2)
