"""Shared bits of the SDK tests: scripted replies and a chunk accumulator."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.support import Call, Reply
from tests.support.weather import GOOD_ARGS as GOOD_ARGS  # re-exported for the tests that import helpers
from tests.support.weather import LOOP_UNIT
from tests.support.weather import MESSAGES as MESSAGES
from tests.support.weather import WEATHER_TOOL as WEATHER_TOOL


def good(**kw: Any) -> Reply:
    return Reply.call("get_weather", '{"city": ', '"Paris", ', '"unit": "c"}', **kw)


def bad_json(**kw: Any) -> Reply:
    return Reply.call("get_weather", '{"city": ', "Paris}", **kw)


def bad_schema(**kw: Any) -> Reply:
    return Reply.call("get_weather", '{"city": "Paris", ', '"unit": "kelvin"}', **kw)


def unknown_tool(**kw: Any) -> Reply:
    return Reply.call("get_wether", '{"city": "Paris"}', **kw)


def runaway_content(**kw: Any) -> Reply:
    return Reply.text(*([LOOP_UNIT] * 40), **kw)


def runaway_arguments(**kw: Any) -> Reply:
    return Reply.call(
        "get_weather", '{"city": "Paris", "note": "', *(["it rains and it pours all day. "] * 60), '"}', **kw
    )


def truncated(**kw: Any) -> Reply:
    return Reply.call("get_weather", '{"city": ', '"Pa', finish_reason="length", **kw)


def call_in_content(**kw: Any) -> Reply:
    return Reply.text(
        "<tool_call>\n", '{"name": "get_weather", ', '"arguments": {"city": "Paris"}}', "\n</tool_call>", **kw
    )


def fabricated(**kw: Any) -> Reply:
    return Reply(
        tool_calls=(Call("get_weather", ('{"city": "Paris"}',)),),
        content_after=("The weather is 21C.",),
        **kw,
    )


@dataclass
class Collected:
    content: str = ""
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    finish_reason: str | None = None
    chunks: list[Any] = field(default_factory=list)

    def add(self, chunk: Any) -> None:
        self.chunks.append(chunk)
        if not chunk.choices:
            return
        choice = chunk.choices[0]
        self.content += choice.delta.content or ""
        for tc in choice.delta.tool_calls or ():
            slot = self.calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            slot["id"] = tc.id or slot["id"]
            if tc.function is not None:
                slot["name"] += tc.function.name or ""
                slot["arguments"] += tc.function.arguments or ""
        if choice.finish_reason is not None:
            self.finish_reason = choice.finish_reason


def collect(stream: Any) -> Collected:
    out = Collected()
    for chunk in stream:
        out.add(chunk)
    return out


async def acollect(stream: Any) -> Collected:
    out = Collected()
    async for chunk in stream:
        out.add(chunk)
    return out
