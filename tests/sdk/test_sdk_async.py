"""``toolguard.wrap(openai.AsyncOpenAI(...))``: the async twin, against the same ScriptedUpstream (a fake)."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion

import toolguard
from tests.sdk import helpers as h
from tests.sdk.helpers import MESSAGES, WEATHER_TOOL
from tests.support import Reply, ScriptedUpstream
from toolguard import Policy, RunawayGeneration, ToolCallRejected
from toolguard.sdk import AsyncGuardedStream, guard_report

pytestmark = pytest.mark.anyio


async def ask(wrapped: Any, *, stream: bool, **kw: Any) -> list[dict[str, str]]:
    args: dict[str, Any] = {"model": "m", "messages": MESSAGES, "tools": [WEATHER_TOOL], **kw}
    if stream:
        result = await wrapped.chat.completions.create(stream=True, **args)
        assert isinstance(result, AsyncGuardedStream)
        async with result:
            got = await h.acollect(result)
        assert got.finish_reason == "tool_calls"
        return [got.calls[i] for i in sorted(got.calls)]
    completion = await wrapped.chat.completions.create(**args)
    assert isinstance(completion, ChatCompletion)
    calls = completion.choices[0].message.tool_calls or []
    return [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in calls]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_fixed_on_retry(aclient: Any, upstream: ScriptedUpstream, stream: bool) -> None:
    upstream.script(h.bad_schema(), h.good())
    calls = await ask(toolguard.wrap(aclient), stream=stream)
    assert len(calls) == 1 and calls[0]["arguments"] == h.GOOD_ARGS
    assert "/unit" in upstream.chat_requests[1].body["messages"][-1]["content"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_retries_run_out(aclient: Any, upstream: ScriptedUpstream, stream: bool) -> None:
    upstream.script(h.unknown_tool(), h.unknown_tool())
    with pytest.raises(ToolCallRejected) as info:
        await ask(toolguard.wrap(aclient, policy=Policy(max_reasks=1)), stream=stream)
    assert info.value.violation.kind == "unknown_tool"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_runaway_then_changed_sampling(aclient: Any, upstream: ScriptedUpstream, stream: bool) -> None:
    upstream.script(h.runaway_arguments(), h.runaway_content())
    with pytest.raises(RunawayGeneration):
        await ask(toolguard.wrap(aclient, policy=Policy(max_runaway_retries=1)), stream=stream)
    first, second = (r.body for r in upstream.chat_requests)
    assert (second.get("temperature"), second.get("seed")) != (first.get("temperature"), first.get("seed"))


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_upstream_failures_are_retried(aclient: Any, upstream: ScriptedUpstream, stream: bool) -> None:
    upstream.script(Reply.error(429, retry_after=0), Reply.error(500, retry_after=0), h.good())
    calls = await ask(toolguard.wrap(aclient), stream=stream)
    assert calls[0]["arguments"] == h.GOOD_ARGS and len(upstream.chat_requests) == 3


async def test_a_disconnect_mid_stream_is_retried(aclient: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.good(disconnect_after=3), h.good())
    calls = await ask(toolguard.wrap(aclient, policy=Policy(backoff_initial=0.01)), stream=True)
    assert calls[0]["arguments"] == h.GOOD_ARGS


async def test_a_client_error_is_raised(aclient: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.error(404))
    with pytest.raises(openai.NotFoundError):
        await ask(toolguard.wrap(aclient), stream=False)


async def test_report_on_the_completion_and_the_stream(aclient: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.good(), h.truncated(), h.good())
    wrapped = toolguard.wrap(aclient)
    completion = await wrapped.chat.completions.create(model="m", messages=MESSAGES, tools=[WEATHER_TOOL])
    report = guard_report(completion)
    assert report is not None and report.verdict.ok and len(report.attempts) == 1
    stream = await wrapped.chat.completions.create(
        model="m", messages=MESSAGES, tools=[WEATHER_TOOL], stream=True, max_tokens=10
    )
    await h.acollect(stream)
    report = guard_report(stream)
    assert report is not None and [a.reason for a in report.attempts] == ["initial", "truncated"]
    assert upstream.chat_requests[-1].body["max_tokens"] == 20
