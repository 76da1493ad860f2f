"""The scripted behaviours of the differential suite, each with what every door's client must see.

A ``Scenario`` names the upstream's replies (one per request), the request, the ``Outcome`` every door must
produce, and the documented differences: ``differs`` maps a door tag (see ``Door.tags``; the first matching
tag wins) to ``(outcome, reason)``, where ``reason`` is a key of ``REASONS``, each a paragraph of the README
("Where the doors differ").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.support import Call, Reply
from tests.support.weather import GOOD_ARGS, LOOP_UNIT, MESSAGES, WEATHER_TOOL

from .doors import Outcome

GOOD = GOOD_ARGS
PARIS = '{"city": "Paris"}'
LOOP = LOOP_UNIT
WEATHER = WEATHER_TOOL

#: The README's reasons for a door to differ (tests/differential/test_doors.py checks they are in it).
REASONS = {
    "shown": "A stream cannot take back text it has shown",
    "announce": "`wrap` can announce a retry",
    "ended": "The proxy cannot announce a retry",
    "order": "A non-streamed message has no order",
    "length": 'The proxy answers a truncated call it gave up on with `finish_reason: "length"`',
}


def good(**kw: Any) -> Reply:
    return Reply.call("get_weather", '{"city": ', '"Paris", ', '"unit": "c"}', **kw)


def bad_schema(**kw: Any) -> Reply:
    return Reply.call("get_weather", '{"city": "Paris", ', '"unit": "kelvin"}', **kw)


@dataclass(frozen=True)
class Scenario:
    id: str
    replies: tuple[Reply, ...]
    expect: Outcome
    body: dict[str, Any] = field(default_factory=dict)
    differs: dict[str, tuple[Outcome, str]] = field(default_factory=dict)
    repair: bool = True
    requests: int | None = None  # upstream requests every door makes (None: not checked)

    def request(self) -> dict[str, Any]:
        return {"model": "m", "messages": MESSAGES, "tools": [WEATHER], **self.body}

    def expected(self, tags: tuple[str, ...]) -> tuple[Outcome, str | None]:
        for tag in tags:
            if tag in self.differs:
                outcome, reason = self.differs[tag]
                return outcome, reason
        return self.expect, None


CALL = (("get_weather", GOOD),)
TRUNCATED = Reply.call("get_weather", '{"city": ', '"Pa', finish_reason="length")
LOOPED_ARGS = '{"city": "Paris", "note": "' + "it rains and it pours all day. " * 4

SCENARIOS: list[Scenario] = [
    Scenario(
        "text", (Reply.text("Hello", ", ", "world."),), Outcome("Hello, world.", finish="stop"), requests=1
    ),
    Scenario(
        "prose-with-brackets",
        (Reply.text("Use a list [1, 2] or <b>bold</b>", " text", " <tool"),),
        Outcome("Use a list [1, 2] or <b>bold</b> text <tool", finish="stop"),
    ),
    Scenario("call-split-across-deltas", (good(),), Outcome(calls=CALL, finish="tool_calls"), requests=1),
    Scenario(
        "parallel-calls",
        (
            Reply.calls(
                Call("get_weather", ('{"city": "Pa', 'ris"}')), Call("get_weather", ('{"city": "Ro', 'me"}'))
            ),
        ),
        Outcome(calls=(("get_weather", PARIS), ("get_weather", '{"city": "Rome"}')), finish="tool_calls"),
    ),
    Scenario(
        "fabricated-after-call",
        (good(content_after=("The weather in Paris is ", "sunny and 25C.")),),
        Outcome(calls=CALL, finish="tool_calls"),
        differs={"plain": (Outcome("The weather in Paris is sunny and 25C.", CALL, "tool_calls"), "order")},
        requests=1,
    ),
    Scenario(
        "refusal",
        (Reply(chunks=({"role": "assistant", "content": None}, {"refusal": "I can't help with that."})),),
        Outcome(refusal="I can't help with that.", finish="stop"),
    ),
    Scenario(
        "unknown-tool-then-good",
        (Reply.call("get_wether", PARIS), good()),
        Outcome(calls=CALL, finish="tool_calls"),
    ),
    Scenario(
        "bad-arguments-then-good",
        (bad_schema(), good()),
        Outcome(calls=CALL, finish="tool_calls"),
        differs={
            "sdk-stream-pass": (
                Outcome(
                    calls=(("get_weather", '{"city": "Paris", '), ("get_weather", GOOD)), finish="tool_calls"
                ),
                "announce",
            ),
            "proxy-stream-pass": (
                Outcome(calls=(("get_weather", '{"city": "Paris", '),), error="rejected"),
                "ended",
            ),
        },
    ),
    Scenario(
        "truncated-then-more-room",
        (Reply.call("get_weather", '{"city": ', '"Pa', finish_reason="length"), good()),
        Outcome(calls=CALL, finish="tool_calls"),
        body={"max_tokens": 20},
        differs={
            "sdk-stream-pass": (
                Outcome(calls=(("get_weather", '{"city": "Pa'), ("get_weather", GOOD)), finish="tool_calls"),
                "announce",
            ),
            "proxy-stream-pass": (
                Outcome(calls=(("get_weather", '{"city": "Pa'),), finish="length"),
                "ended",
            ),
        },
    ),
    Scenario(
        "truncated-twice",
        (TRUNCATED, TRUNCATED),
        Outcome(error="truncated"),
        body={"max_tokens": 20},
        differs={
            "sdk-stream-pass": (
                Outcome(
                    calls=(("get_weather", '{"city": "Pa'), ("get_weather", '{"city": "Pa')),
                    error="truncated",
                ),
                "announce",
            ),
            "proxy-stream-pass": (
                Outcome(calls=(("get_weather", '{"city": "Pa'),), finish="length"),
                "ended",
            ),
            "proxy": (Outcome(finish="length"), "length"),
        },
    ),
    Scenario(
        "runaway-arguments-then-good",
        (
            Reply.call(
                "get_weather",
                '{"city": "Paris", "note": "',
                *(["it rains and it pours all day. "] * 60),
                '"}',
            ),
            good(),
        ),
        Outcome(calls=CALL, finish="tool_calls"),
        differs={
            "sdk-stream-pass": (
                Outcome(calls=(("get_weather", LOOPED_ARGS), ("get_weather", GOOD)), finish="tool_calls"),
                "announce",
            ),
            "proxy-stream-pass": (
                Outcome(calls=(("get_weather", LOOPED_ARGS),), finish="repetition"),
                "ended",
            ),
        },
    ),
    Scenario(
        "runaway-text-then-good",
        (Reply.text(*([LOOP] * 40)), good()),
        Outcome(calls=CALL, finish="tool_calls"),
        differs={
            "sdk-stream": (Outcome(LOOP * 2, CALL, "tool_calls"), "announce"),
            "proxy-stream": (Outcome(LOOP * 2, finish="repetition"), "ended"),
        },
    ),
    Scenario(
        "retry-after-visible-text",
        (
            Reply(
                content=("Let me check. ",),
                tool_calls=(Call("get_weather", ('{"city": "Paris", "unit": "kelvin"}',)),),
            ),
            Reply.text("It is ", "sunny."),
        ),
        Outcome("It is sunny.", finish="stop"),
        differs={
            "proxy-stream-pass": (Outcome("Let me check. ", error="rejected"), "ended"),
            "stream": (Outcome("Let me check. It is sunny.", finish="stop"), "shown"),
        },
    ),
    Scenario(
        # the proxy once streamed a retry's first chunk twice ("ThatThat did not work")
        "retry-text-after-no-text",
        (Reply.call("get_wether", PARIS), Reply.text("That ", "did not ", "work.")),
        Outcome("That did not work.", finish="stop"),
    ),
    Scenario(
        "missing-required-call",
        (Reply.text("Sure, it is sunny."), good()),
        Outcome(calls=CALL, finish="tool_calls"),
        body={"tool_choice": "required"},
        differs={
            "sdk-stream-pass": (Outcome("Sure, it is sunny.", CALL, "tool_calls"), "announce"),
            "proxy-stream-pass": (Outcome("Sure, it is sunny.", error="missing_call"), "ended"),
        },
    ),
    Scenario(
        "upstream-error-then-good", (Reply.error(500), good()), Outcome(calls=CALL, finish="tool_calls")
    ),
    Scenario(
        "bare-json-call-in-content",
        (Reply.text('{"name": "get_weather", ', '"arguments": {"city": "Paris"}}'),),
        Outcome(calls=(("get_weather", PARIS),), finish="tool_calls"),
        requests=1,
    ),
    Scenario(
        "marker-split-then-text",  # the example, with repair off
        (Reply.text("Sure. ", "<tool_", 'call>{"name": "get_weather"}'), Reply.text("It is sunny.")),
        Outcome("It is sunny.", finish="stop"),
        differs={
            "proxy-stream-pass": (Outcome("Sure. ", error="call_in_content"), "ended"),
            "stream": (Outcome("Sure. It is sunny.", finish="stop"), "shown"),
        },
        repair=False,
    ),
]


def split_call_in_content(at: int, *, repair: bool) -> Scenario:
    """A hermes call written into the content after some prose, split into two deltas at ``at``."""
    text = CALL_IN_CONTENT
    if repair:
        return Scenario(
            f"call-in-content-{at}",
            (Reply.text(text[:at], text[at:]),),
            Outcome("Sure. ", (("get_weather", PARIS),), "tool_calls"),
            requests=1,
        )
    # Without repair the call is re-asked; the prose released before the delta that completed the marker stays
    # on screen ("<" and the marker's first characters wait; a delta holding the whole marker shows nothing).
    shown = text[: min(at, 6)] if at < 6 + len("<tool_call>") else ""
    differs = {}
    if shown:
        differs = {
            "proxy-stream-pass": (Outcome(shown, error="call_in_content"), "ended"),
            "stream": (Outcome(shown, CALL, "tool_calls"), "shown"),
        }
    return Scenario(
        f"call-in-content-no-repair-{at}",
        (Reply.text(text[:at], text[at:]), good()),
        Outcome(calls=CALL, finish="tool_calls"),
        differs=differs,
        repair=False,
    )


CALL_IN_CONTENT = 'Sure. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
