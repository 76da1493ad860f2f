"""The SDK reports each decision to ``on_event`` as the record the proxy logs (``FlowEvent.decision``)."""

from __future__ import annotations

from typing import Any

import pytest

import toolguard
from tests.sdk.helpers import MESSAGES, WEATHER_TOOL
from tests.support import Reply, ScriptedUpstream
from toolguard._decisions import Decision, format_decision


@pytest.mark.parametrize("stream", [False, True])
def test_a_reask_and_the_release_are_decisions(client: Any, upstream: ScriptedUpstream, stream: bool) -> None:
    upstream.script(Reply.call("get_weather", '{"city": "Paris", "unit": "kelvin"}'),
                    Reply.call("get_weather", '{"city": "Paris"}'))
    seen: list[Decision] = []
    wrapped = toolguard.wrap(client, on_event=lambda e: e.decision and seen.append(e.decision))
    out = wrapped.chat.completions.create(model="m", messages=MESSAGES, tools=[WEATHER_TOOL], stream=stream)
    if stream:
        list(out)
    assert [(d.action, d.verdict, d.attempt, d.retries, d.door) for d in seen] == [
        ("re-asked", "rejected", 1, 0, "sdk"),
        ("released", "ok", 2, 1, "sdk"),
    ]
    assert seen[0].path == "/unit" and seen[0].keyword == "enum" and seen[0].latency is not None
    line = format_decision(seen[0])
    assert line.startswith("decision=re-asked door=sdk attempt=1")
    assert "kelvin" not in line and "/unit" not in line


def test_a_give_up_is_a_decision(client: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(*[Reply.call("get_weather", '{"unit": "kelvin"}')] * 3)
    seen: list[Decision] = []
    wrapped = toolguard.wrap(client, on_event=lambda e: e.decision and seen.append(e.decision))
    with pytest.raises(toolguard.ToolCallRejected):
        wrapped.chat.completions.create(model="m", messages=MESSAGES, tools=[WEATHER_TOOL])
    assert [d.action for d in seen] == ["re-asked", "re-asked", "gave-up"]
    assert seen[-1].summary() == {"verdict": "rejected", "action": "gave-up", "retries": 2, "attempts": 3,
                                  "reason": "reask", "tool": "get_weather", "keyword": "enum", "offset": 10}
