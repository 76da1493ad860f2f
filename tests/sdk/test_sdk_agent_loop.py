"""A wrapped client is an ``AgentLoop`` model client: re-asks happen inside it, the loop sees clean turns."""

from __future__ import annotations

from typing import Any, Literal

import pytest

import toolguard
from tests.sdk import helpers as h
from tests.support import Reply, ScriptedUpstream
from toolguard import AgentLoop, AsyncAgentLoop, ToolCallRejected


def get_weather(city: str, unit: Literal["c", "f"] = "c", note: str = "") -> str:
    """Current weather in a city."""
    return f"21{unit.upper()} and sunny in {city}"


def test_agent_loop_over_a_wrapped_client(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.bad_schema(), h.good(), Reply.text("It is 21C and sunny in Paris."))
    loop = AgentLoop(toolguard.wrap(client), [get_weather], model="m")
    result = loop.run("What is the weather in Paris?")
    assert result.stop_reason == "final" and result.content == "It is 21C and sunny in Paris."
    assert [r.status for r in result.records] == ["ok"]
    requests = upstream.chat_requests
    assert len(requests) == 3
    # The re-ask lives only inside the wrapper: the loop's next request has the clean call and its result.
    last = requests[2].body["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "tool"]
    assert "21C" in last[2]["content"]


def test_agent_loop_sees_the_typed_exception_when_retries_run_out(
    client: Any, upstream: ScriptedUpstream
) -> None:
    upstream.script(h.unknown_tool(), h.unknown_tool())
    loop = AgentLoop(toolguard.wrap(client, policy=toolguard.Policy(max_reasks=1)), [get_weather], model="m")
    with pytest.raises(ToolCallRejected):
        loop.run("What is the weather in Paris?")


@pytest.mark.anyio
async def test_async_agent_loop_over_a_wrapped_async_client(aclient: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(h.bad_json(), h.good(), Reply.text("Sunny."))
    loop = AsyncAgentLoop(toolguard.wrap(aclient), [get_weather], model="m")
    result = await loop.run("Weather in Paris?")
    assert result.stop_reason == "final" and result.content == "Sunny."
    assert [r.status for r in result.records] == ["ok"]
