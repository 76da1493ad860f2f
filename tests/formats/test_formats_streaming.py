"""StreamingParser: events while the text arrives, and the same result as parse() whatever the chunking."""

from __future__ import annotations

import gc
import time

import pytest

from toolguard import ToolCall, UsageError
from toolguard.formats import (
    ContentDelta,
    FabricationStarted,
    ProblemFound,
    StreamingParser,
    ToolCallCompleted,
    ToolCallStarted,
    parse,
)

SAMPLES = [
    (
        "hermes",
        'Let me check.\n<tool_call>\n{"name": "w", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        "<tool_response>{}</tool_response>",
    ),
    (
        "hermes",
        '<tool_call>{"name": "a", "arguments": {"s": "</tool_call> \\" \\\\u00e9"}}</tool_call><|im_end|>',
    ),
    ("openai", 'x {"name": "a", "arguments": {}}{"name": "b", "arguments": {"x": [1, 2.5e3, true, null]}} y'),
    ("openai", '[{"name": "a", "arguments": "{\\"x\\": 1}"}]'),
    ("openai", '{"name": "a", "arguments": {"x": 1'),
    ("llama3", '<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "parameters": {}}<|eom_id|>'),
    ("llama3", '<|python_tag|>brave_search.call(query="q")<|eom_id|>'),
    ("mistral", '[TOOL_CALLS]a[CALL_ID]id1[ARGS]{"x": 1}[TOOL_CALLS][{"name": "b", "arguments": {}}]</s>'),
    ("react", 'Thought: t\nAction: a\nAction Input: ```json\n{"x": 1}\n```\nObservation: fake'),
    ("react", "Action: a\nAction Input: ```json and a fence line that never ends"),
    ("react", "Action: a\nAction Input: ``"),
    ("openai", '{"name": "a", "arguments": {"n": 1e999, "m": -0}}\n\n\n  user: hi'),
    ("auto", "Plain prose with [links](x) and {braces} and <b>tags</b> and Action: inline.<|eot_id|>more"),
    ("auto", '```json\n{"name": "a", "arguments": {}}\n```\n'),
]


def feed_in(text: str, fmt: str, size: int) -> tuple[list[object], object]:
    parser = StreamingParser(fmt)  # type: ignore[arg-type]
    events: list[object] = []
    for start in range(0, len(text), size):
        events.extend(parser.feed(text[start : start + size]))
    return events, parser.close()


@pytest.mark.parametrize(("fmt", "text"), SAMPLES)
@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 1000])
def test_any_chunking_gives_the_whole_parse(fmt: str, text: str, size: int) -> None:
    events, parsed = feed_in(text, fmt, size)
    whole = parse(text, format=fmt)  # type: ignore[arg-type]
    assert parsed == whole
    streamed = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert whole.content.startswith(streamed)  # content events never run ahead of the truth
    assert [e.call for e in events if isinstance(e, ToolCallCompleted)] == whole.tool_calls[
        : len([e for e in events if isinstance(e, ToolCallCompleted)])
    ]


def test_events_in_order() -> None:
    parser = StreamingParser("hermes")
    events = []
    for chunk in ["Hi <tool", '_call>{"name": "a", ', '"arguments": {}}</tool_call>', "<tool_resp", "onse>x"]:
        events.extend(parser.feed(chunk))
    assert events[0] == ContentDelta("Hi ")
    assert events[1] == ToolCallStarted(index=0, offset=3)
    assert events[2] == ToolCallCompleted(index=0, call=ToolCall("a", "{}"))
    assert events[3] == FabricationStarted(
        offset=len('Hi <tool_call>{"name": "a", "arguments": {}}</tool_call>')
    )
    parsed = parser.close()
    assert parsed.fabricated == "<tool_response>x"


def test_marker_split_across_chunks_is_not_leaked_as_content() -> None:
    parser = StreamingParser("hermes")
    assert parser.feed("ok <tool_") == [ContentDelta("ok ")]
    assert parser.feed("call>") == [ToolCallStarted(index=0, offset=3)]


def test_problem_events_are_reported_as_they_are_found() -> None:
    parser = StreamingParser("openai")
    events = parser.feed('{"name": "a", "arguments": {}}{"name": "b", "arguments": {}}')
    assert any(isinstance(e, ProblemFound) and e.problem.kind == "concatenated" for e in events)


def test_feed_after_close_is_misuse() -> None:
    parser = StreamingParser()
    parser.close()
    with pytest.raises(UsageError):
        parser.feed("x")
    assert parser.close() is parser.close()


def _seconds(fmt: str, text: str, chunk: int) -> float:
    gc.collect()
    gc.disable()  # a collection landing in one run would swamp a few milliseconds
    try:
        start = time.perf_counter()
        parser = StreamingParser(fmt)  # type: ignore[arg-type]
        for i in range(0, len(text), chunk):
            parser.feed(text[i : i + chunk])
        parser.close()
        return time.perf_counter() - start
    finally:
        gc.enable()


def _hermes_turn(n: int) -> str:
    body = ", ".join(f'"k{i}": "value {i} with \\"escapes\\""' for i in range(n))
    return (
        "Prose { with [brackets] " * n + '<tool_call>{"name": "a", "arguments": {' + body + "}}</tool_call>"
    )


SHAPES = {
    "hermes call after prose with brackets": ("hermes", _hermes_turn, 7),
    "braces in prose, one chunk": ("auto", lambda n: "{x [y " * 4 * n, 10**9),
    "fence line that never ends": ("react", lambda n: "Action: a\nAction Input: ```" + "x" * 10 * n, 1),
    "blank lines after a call": (
        "openai",
        lambda n: '{"name": "a", "arguments": {}}' + "\n" * 30 * n + "x",
        7,
    ),
    "unclosed hermes body": ("hermes", lambda n: "<tool_call>" + "x" * 10 * n, 1),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_streaming_is_linear(shape: str) -> None:
    fmt, turn, chunk = SHAPES[shape]
    small, large = turn(300), turn(3000)
    t_small = min(_seconds(fmt, small, chunk) for _ in range(3))
    t_large = min(_seconds(fmt, large, chunk) for _ in range(3))
    assert t_large / t_small < 25, (t_small, t_large)  # 10x the text; quadratic would be ~100x
