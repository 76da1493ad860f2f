"""The sans-IO re-ask flow, driven by hand: no network, no clock."""

from __future__ import annotations

from typing import Any

import pytest

from toolguard import (
    ContentDelta,
    Finish,
    Policy,
    RunawayGeneration,
    ToolCallDelta,
    ToolCallRejected,
    TruncatedToolCall,
)
from toolguard._exceptions import ConfigError
from toolguard._reask import Attempt, Backoff, Completed, FlowResult, RetryFlow, UpstreamFailure

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
]
BODY = {"model": "m", "messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS}
GOOD = [ToolCallDelta(0, "call_1", "get_weather", '{"city": "Paris"}'), Finish("tool_calls")]
BAD = [ToolCallDelta(0, "call_1", "get_weather", '{"city": 7}'), Finish("tool_calls")]
LOOP = [ContentDelta("Let me think about it once more. ") for _ in range(30)] + [Finish("stop")]
CUT = [ToolCallDelta(0, "call_1", "get_weather", '{"city": "Pa'), Finish("length")]


class Boom(Exception):
    pass


def drive(flow: RetryFlow, script: list[Any]) -> tuple[Any, list[Attempt], list[float]]:
    """Answer each Attempt with the next scripted item: a list of events, or an UpstreamFailure."""
    gen = flow.run()
    attempts: list[Attempt] = []
    sleeps: list[float] = []
    action = next(gen)
    try:
        while True:
            if isinstance(action, Backoff):
                sleeps.append(action.seconds)
                action = gen.send(None)
                continue
            attempts.append(action)
            item = script.pop(0)
            if isinstance(item, UpstreamFailure):
                action = gen.send(item)
                continue
            for event in item:
                if action.guard.feed(event).done:
                    break
            action = gen.send(Completed(response=f"response {action.number}", completion_tokens=40))
    except StopIteration as stop:
        result: FlowResult = stop.value
        return result, attempts, sleeps


def test_first_good_answer_is_returned() -> None:
    result, attempts, _ = drive(RetryFlow(BODY), [GOOD])
    assert result.response == "response 1" and len(attempts) == 1
    assert result.guard.verdict.ok and [e.kind for e in result.events] == ["attempt", "verdict", "done"]


def test_invalid_call_is_reasked_with_the_violation_as_a_tool_message() -> None:
    result, attempts, _ = drive(RetryFlow(BODY), [BAD, GOOD])
    assert result.response == "response 2"
    second = attempts[1]
    assert second.reason == "reask"
    messages = second.body["messages"]
    assert messages[0] == BODY["messages"][0]
    assert messages[1]["role"] == "assistant"
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == '{"city": 7}'
    assert messages[2]["role"] == "tool" and messages[2]["tool_call_id"] == "call_1"
    assert "/city" in messages[2]["content"] and "get_weather" in messages[2]["content"]
    assert BODY["messages"] == [{"role": "user", "content": "Weather in Paris?"}], (
        "the caller's body is untouched"
    )


def test_reasks_carry_only_the_latest_failed_turn() -> None:
    _, attempts, _ = drive(RetryFlow(BODY), [BAD, BAD, GOOD])
    assert len(attempts[2].body["messages"]) == 3


def test_reask_budget_spent_raises_tool_call_rejected_with_attempts() -> None:
    with pytest.raises(ToolCallRejected) as info:
        drive(RetryFlow(BODY, policy=Policy(max_reasks=1)), [BAD, BAD])
    assert len(info.value.attempts) == 2
    assert info.value.violation.kind == "rejected"


def test_call_in_content_is_reasked_with_a_user_message_when_repair_is_off() -> None:
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    flow = RetryFlow(BODY, policy=Policy(repair_calls=False))
    _, attempts, _ = drive(flow, [[ContentDelta(text), Finish("stop")], GOOD])
    added = attempts[1].body["messages"][1:]
    assert added[0]["role"] == "assistant" and "<tool_call>" in added[0]["content"]
    assert added[1]["role"] == "user" and "tool-calling interface" in added[1]["content"]


def test_a_valid_call_written_as_text_is_repaired_on_the_first_attempt() -> None:
    text = 'Checking. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    result, attempts, _ = drive(RetryFlow(BODY), [[ContentDelta(text), Finish("stop")]])
    assert len(attempts) == 1
    assert result.guard.repaired and result.guard.verdict.kind == "ok"
    assert result.guard.message()["content"] == "Checking. "
    assert result.guard.message()["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'


def test_a_call_written_as_text_that_breaks_its_schema_is_reasked_as_a_call() -> None:
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": 7}}</tool_call>'
    _, attempts, _ = drive(RetryFlow(BODY), [[ContentDelta(text), Finish("stop")], GOOD])
    added = attempts[1].body["messages"][1:]
    assert added[0]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert added[1]["role"] == "tool" and "city" in added[1]["content"]


def test_streams_are_repaired_too() -> None:
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    result, attempts, _ = drive(RetryFlow({**BODY, "stream": True}), [[ContentDelta(text), Finish("stop")]])
    assert len(attempts) == 1 and result.guard.repaired


def test_runaway_retries_with_changed_sampling_never_identical() -> None:
    body = {**BODY, "temperature": 0.8, "seed": 5}
    _, attempts, _ = drive(RetryFlow(body), [LOOP, GOOD])
    retry = attempts[1].body
    assert attempts[1].reason == "runaway"
    assert retry["temperature"] < 0.8 and retry["seed"] != 5
    assert retry["messages"] == body["messages"], "the looping text is not fed back"


def test_greedy_runaway_retries_with_some_temperature() -> None:
    _, attempts, _ = drive(RetryFlow({**BODY, "temperature": 0}), [LOOP, GOOD])
    assert attempts[1].body["temperature"] > 0


def test_runaway_copied_from_the_prompt_is_not_retried() -> None:
    prompt = "Let me think about it once more. " * 6
    body = {**BODY, "messages": [{"role": "user", "content": f"Repeat this: {prompt}"}]}
    with pytest.raises(RunawayGeneration) as info:
        drive(RetryFlow(body), [LOOP])
    assert len(info.value.attempts) == 1


def test_truncated_call_is_retried_with_more_room_then_raised() -> None:
    _, attempts, _ = drive(RetryFlow({**BODY, "max_tokens": 30}), [CUT, GOOD])
    assert attempts[1].reason == "truncated" and attempts[1].body["max_tokens"] == 60
    with pytest.raises(TruncatedToolCall):
        drive(RetryFlow({**BODY, "max_tokens": 30}), [CUT, CUT])


def test_truncation_without_a_limit_is_sized_from_usage() -> None:
    _, attempts, _ = drive(RetryFlow(BODY), [CUT, GOOD])
    assert attempts[1].body["max_tokens"] == 80  # 40 completion tokens, doubled


def test_max_completion_tokens_is_the_one_grown_when_given() -> None:
    _, attempts, _ = drive(RetryFlow({**BODY, "max_completion_tokens": 100}), [CUT, GOOD])
    assert attempts[1].body["max_completion_tokens"] == 200 and "max_tokens" not in attempts[1].body


def test_upstream_429_backs_off_as_told_then_retries() -> None:
    fail = UpstreamFailure(Boom("429"), 429, retry_after=1.5)
    result, attempts, sleeps = drive(RetryFlow(BODY), [fail, GOOD])
    assert sleeps == [1.5] and attempts[1].reason == "upstream"
    assert attempts[1].body == attempts[0].body
    assert [e.kind for e in result.events][:4] == ["attempt", "upstream_error", "backoff", "retry"]


def test_upstream_backoff_doubles_without_retry_after_and_is_bounded() -> None:
    fail = UpstreamFailure(Boom("500"), 500)
    exact = Policy(backoff_jitter=0)
    _, _, sleeps = drive(RetryFlow(BODY, policy=exact, upstream_retries=3), [fail, fail, fail, GOOD])
    assert sleeps == [0.5, 1.0, 2.0]
    with pytest.raises(Boom):
        drive(RetryFlow(BODY, upstream_retries=1), [fail, fail])


def test_upstream_backoff_is_jittered_within_its_band() -> None:
    # clients failed by one outage must not all come back at the same instant
    fail = UpstreamFailure(Boom("503"), 503)
    delays = [drive(RetryFlow(BODY, upstream_retries=1), [fail, GOOD])[2][0] for _ in range(40)]
    assert all(0.25 <= d <= 0.5 for d in delays) and len(set(delays)) > 30
    with pytest.raises(ConfigError):
        Policy(backoff_jitter=1.5)


def test_not_retryable_status_and_too_long_retry_after_raise_at_once() -> None:
    with pytest.raises(Boom):
        drive(RetryFlow(BODY), [UpstreamFailure(Boom("400"), 400)])
    with pytest.raises(Boom):
        drive(RetryFlow(BODY), [UpstreamFailure(Boom("429"), 429, retry_after=3600)])


def test_max_attempts_caps_everything() -> None:
    with pytest.raises(ToolCallRejected) as info:
        drive(RetryFlow(BODY, policy=Policy(max_reasks=5, max_attempts=2)), [BAD, BAD, BAD])
    assert len(info.value.attempts) == 2


def test_policy_validates_its_values() -> None:
    with pytest.raises(ConfigError):
        Policy(max_reasks=-1)
    with pytest.raises(ConfigError):
        Policy(stream="buffer")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        Policy(max_tokens_growth=1.0)


def test_on_event_sees_every_step() -> None:
    seen: list[str] = []
    drive(RetryFlow(BODY, on_event=lambda e: seen.append(e.kind)), [BAD, GOOD])
    assert seen == ["attempt", "verdict", "retry", "attempt", "verdict", "done"]


def test_a_repair_is_reported_as_a_decision() -> None:
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    result, _, _ = drive(RetryFlow(BODY), [[ContentDelta(text), Finish("stop")]])
    (done,) = [e.decision for e in result.events if e.kind == "done"]
    assert done is not None and done.action == "released" and done.detail["repaired"] == "tool_calls"
