"""The Guard, fed with event lists: every rule, stickiness, chunking independence, import hygiene."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from toolguard import (
    ContentDelta,
    Finish,
    Guard,
    GuardVerdict,
    TokenDelta,
    ToolCallDelta,
    ToolSet,
    UsageError,
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1},
                "note": {"type": "string"},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    },
}
TOOLS = ToolSet.from_openai([WEATHER, SEARCH])


def run(events: list, **kw: object) -> tuple[Guard, list[GuardVerdict]]:
    guard = Guard(TOOLS, **kw)  # type: ignore[arg-type]
    verdicts = []
    for event in events:
        verdicts.append(guard.feed(event))
        if verdicts[-1].done:
            break
    return guard, verdicts


def call(text: str, *, index: int = 0, name: str = "get_weather", pieces: int = 3) -> list[ToolCallDelta]:
    step = max(1, len(text) // pieces)
    frags = [text[i : i + step] for i in range(0, len(text), step)]
    return [
        ToolCallDelta(index, f"call_{index}", name, frags[0]),
        *(ToolCallDelta(index, arguments=f) for f in frags[1:]),
    ]


def test_valid_call_streamed_in_fragments_is_ok() -> None:
    guard, verdicts = run([*call('{"city": "Paris", "days": 2}'), Finish("tool_calls")])
    assert all(v.kind == "ok" for v in verdicts)
    assert verdicts[-1].done and guard.verdict.usable
    assert [c.name for c in guard.tool_calls] == ["get_weather"]
    assert json.loads(guard.tool_calls[0].arguments) == {"city": "Paris", "days": 2}
    message = guard.message()
    assert message["tool_calls"][0]["id"] == "call_0" and message["content"] is None


def test_a_call_without_an_id_gets_a_fresh_one_kept_on_every_read() -> None:
    guard, _ = run([ToolCallDelta(0, None, "get_weather", '{"city": "Paris"}'), Finish("tool_calls")])
    first = guard.message()["tool_calls"][0]["id"]
    assert re.fullmatch(r"call_[0-9a-f]{24}", first)
    assert guard.message()["tool_calls"][0]["id"] == first
    other, _ = run([ToolCallDelta(0, None, "get_weather", '{"city": "Paris"}'), Finish("tool_calls")])
    assert other.message()["tool_calls"][0]["id"] != first  # ids never repeat across turns


def test_schema_violation_is_rejected_at_the_offending_value() -> None:
    text = '{"city": 12, "days": 2}'
    _, verdicts = run([*call(text, pieces=len(text)), Finish("tool_calls")])
    last = verdicts[-1]
    assert last.kind == "rejected" and last.done and last.failed
    assert last.call_index == 0 and last.tool == "get_weather"
    assert last.offset is not None and last.offset <= text.index("12") + 2
    assert last.path == "/city"
    assert len(verdicts) < len(text), "rejected before the end of the arguments"


def test_malformed_json_is_rejected() -> None:
    _, verdicts = run([*call('{"city": Paris}'), Finish("tool_calls")])
    assert verdicts[-1].kind == "rejected"


def test_incomplete_arguments_at_finish_are_rejected_not_a_call() -> None:
    _, verdicts = run([*call('{"city": "Par'), Finish("tool_calls")])
    assert verdicts[-1].kind == "rejected" and verdicts[-1].done


def test_unknown_tool_is_a_violation_at_once() -> None:
    _, verdicts = run([ToolCallDelta(0, "c", "get_wether", ""), ToolCallDelta(0, arguments="{}")])
    assert len(verdicts) == 1
    assert verdicts[0].kind == "unknown_tool" and verdicts[0].tool == "get_wether"
    assert "get_weather" in verdicts[0].message and "search" in verdicts[0].message


def test_a_name_split_over_deltas_is_resolved() -> None:
    events = [ToolCallDelta(0, "c", "get_"), ToolCallDelta(0, None, "weather")]
    events += [ToolCallDelta(0, arguments='{"city": "Oslo"}'), Finish("tool_calls")]
    guard, verdicts = run(events)
    assert verdicts[-1].kind == "ok", verdicts[-1]
    assert guard.tool_calls[0].name == "get_weather"


def test_tool_choice_rules() -> None:
    _, v = run([*call('{"q": "x"}', name="search"), Finish("tool_calls")], tool_choice="none")
    assert v[0].kind == "unknown_tool"
    _, v = run(
        [*call('{"q": "x"}', name="search"), Finish("tool_calls")],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    assert v[0].kind == "unknown_tool" and "tool_choice" in v[0].message
    _, v = run([ContentDelta("It is sunny."), Finish("stop")], tool_choice="required")
    assert v[-1].kind == "missing_call"
    _, v = run([ContentDelta("It is sunny."), Finish("stop")])
    assert v[-1].kind == "ok"


def test_text_after_a_call_is_cut_as_fabricated_and_the_call_stands() -> None:
    guard, verdicts = run(
        [
            *call('{"city": "Paris"}'),
            ContentDelta("\n"),
            ContentDelta("The weather is 21C."),
            Finish("tool_calls"),
        ]
    )
    assert verdicts[-2].kind == "fabricated" and verdicts[-2].usable
    final = guard.close()
    assert final.kind == "fabricated" and final.done and final.usable
    assert guard.fabricated == "The weather is 21C."
    assert guard.content == ""
    assert guard.tool_calls[0].arguments == '{"city": "Paris"}'


def test_text_interrupting_an_open_call_is_a_rejection() -> None:
    _, verdicts = run([*call('{"city": "Par'), ContentDelta("hello")])
    assert verdicts[-1].kind == "rejected" and verdicts[-1].call_index == 0


def test_truncated_by_length_is_never_a_call() -> None:
    _, verdicts = run([*call('{"city": "Paris", "no'), Finish("length")])
    assert verdicts[-1].kind == "truncated" and verdicts[-1].tool == "get_weather"
    # A complete call with finish "length" is fine; so is text cut by length.
    _, v = run([*call('{"city": "Paris"}'), Finish("length")])
    assert v[-1].kind == "ok"
    _, v = run([ContentDelta("Once upon a"), Finish("length")])
    assert v[-1].kind == "ok"


def test_stream_ending_inside_a_call_without_finish_is_truncated() -> None:
    guard = Guard(TOOLS)
    for event in call('{"city": "Par'):
        guard.feed(event)
    assert guard.close().kind == "truncated"


@pytest.mark.parametrize(
    "content",
    [
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        'Sure. [TOOL_CALLS][{"name": "search", "arguments": {"q": "x"}}]',
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        '```json\n{"name": "search", "parameters": {"q": "x"}}\n```',
        '  {"type": "function", "function": {"name": "get_weather", "arguments": "{}"}}',
    ],
)
def test_a_call_written_into_the_content_is_reported(content: str) -> None:
    pieces = [ContentDelta(content[i : i + 5]) for i in range(0, len(content), 5)]
    _, verdicts = run([*pieces, Finish("stop")])
    assert verdicts[-1].kind == "call_in_content", verdicts[-1]
    assert verdicts[-1].where == "content"


@pytest.mark.parametrize(
    "content",
    ['{"name": "Alice", "age": 3}', "Use the get_weather tool, e.g. name: get_weather.", "[1, 2, 3]", ""],
)
def test_ordinary_content_is_not_a_call(content: str) -> None:
    _, verdicts = run([ContentDelta(content), Finish("stop")])
    assert verdicts[-1].kind == "ok"


def test_runaway_content_is_stopped_early() -> None:
    loop = "I will now check the weather again. "
    events = [ContentDelta(loop) for _ in range(40)]
    _, verdicts = run([*events, Finish("stop")])
    assert verdicts[-1].kind == "runaway" and verdicts[-1].where == "content"
    assert len(verdicts) < 20
    assert verdicts[-1].runaway is not None and verdicts[-1].runaway.unit.strip()


def test_runaway_inside_arguments_is_stopped() -> None:
    events = [ToolCallDelta(0, "c", "get_weather", '{"city": "Paris", "note": "')]
    events += [ToolCallDelta(0, arguments="the sky is grey and the rain falls. ") for _ in range(60)]
    _, verdicts = run([*events, Finish("length")])
    assert verdicts[-1].kind == "runaway" and verdicts[-1].where == "arguments"
    assert verdicts[-1].call_index == 0
    assert len(verdicts) < 30


def test_token_runs_are_detected_from_token_ids() -> None:
    events = [TokenDelta(42, " lock") for _ in range(50)]
    _, verdicts = run(events)
    assert verdicts[-1].kind == "runaway" and verdicts[-1].where == "tokens"


def test_failures_are_sticky_and_finish_is_final() -> None:
    guard = Guard(TOOLS)
    first = guard.feed(ToolCallDelta(0, "c", "nope", "{"))
    assert first.kind == "unknown_tool"
    assert guard.feed(ContentDelta("anything")) is first
    assert guard.feed(ToolCallDelta(1, "d", "search", '{"q": "x"}')) is first
    final = guard.feed(Finish("tool_calls"))
    assert final.kind == "unknown_tool" and final.done
    with pytest.raises(UsageError):
        guard.feed(ContentDelta("after the end"))
    assert guard.close() is guard.close()
    with pytest.raises(UsageError):
        guard.feed(Finish("stop"))


def test_feeding_after_close_raises_and_non_events_are_refused() -> None:
    guard = Guard(TOOLS)
    guard.close()
    with pytest.raises(UsageError):
        guard.feed(ContentDelta("x"))
    with pytest.raises(UsageError):
        Guard(TOOLS).feed("text")  # type: ignore[arg-type]


def test_chunking_does_not_change_the_verdict() -> None:
    texts = [
        '{"city": "Paris", "days": 3}',
        '{"city": "Paris", "days": 0}',
        '{"city": "Paris", "x": 1}',
        '{"ci',
    ]
    for text in texts:
        whole = Guard(TOOLS)
        whole.feed(ToolCallDelta(0, "c", "get_weather", text))
        whole.feed(Finish("tool_calls")) if not whole.verdict.done else None
        split = Guard(TOOLS)
        split.feed(ToolCallDelta(0, "c", "get_weather"))
        for ch in text:
            if split.feed(ToolCallDelta(0, arguments=ch)).done:
                break
        split.feed(Finish("tool_calls")) if not split.verdict.done else None
        assert whole.close().kind == split.close().kind, text


def test_parallel_calls_are_each_validated() -> None:
    events = [*call('{"city": "Rome"}'), *call('{"q": 5}', index=1, name="search"), Finish("tool_calls")]
    _, verdicts = run(events)
    assert verdicts[-1].kind == "rejected" and verdicts[-1].call_index == 1


def test_feed_message_and_to_dict() -> None:
    guard = Guard(TOOLS)
    message = {
        "content": None,
        "tool_calls": [{"id": "x", "function": {"name": "search", "arguments": '{"q": 1}'}}],
    }
    verdict = guard.feed_message(message, "tool_calls")
    assert verdict.kind == "rejected" and verdict.done
    data = verdict.to_dict()
    assert data["kind"] == "rejected" and data["tool"] == "search" and json.dumps(data)


def test_guard_without_tools_treats_any_call_as_unknown() -> None:
    guard = Guard()
    assert guard.feed(ToolCallDelta(0, "c", "search", "{}")).kind == "unknown_tool"


def test_sans_io_modules_import_no_io_stack() -> None:
    code = (
        "import sys, toolguard._guard, toolguard._reask, toolguard._policy, toolguard._events,"
        " toolguard._verdict, toolguard._content_calls;"
        "print(','.join(m for m in ('asyncio', 'httpx', 'torch', 'openai', 'anyio') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


HERMES_OK = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


@pytest.mark.parametrize(
    ("text", "reason", "kind"),
    [
        (HERMES_OK, "stop", "ok"),
        ('<tool_call>\n{"name": "get_weather", "arguments": {"city": 3}}\n</tool_call>', "stop", "rejected"),
        ('<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>', "stop", "unknown_tool"),
        (HERMES_OK + "\n<tool_response>sunny</tool_response>", "stop", "fabricated"),
        ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa', "length", "truncated"),
        ('<tool_call>\n{"name": "get_weather", "arguments": {"city": Pa}}\n</tool_call>', "stop", "rejected"),
        ("Just prose, no call.", "stop", "ok"),
    ],
)
def test_raw_local_text_is_parsed_with_a_format(text: str, reason: str, kind: str) -> None:
    guard = Guard(TOOLS, format="hermes")
    for i in range(0, len(text), 3):
        if guard.feed(TokenDelta(1000 + i, text[i : i + 3])).done:
            break
    if not guard.verdict.done:
        guard.feed(Finish(reason))
    assert guard.close().kind == kind
    if kind == "ok" and guard.tool_calls:
        assert guard.tool_calls[0].arguments == '{"city": "Paris"}' and guard.content == "Checking.\n"


@pytest.mark.parametrize(
    ("pieces", "undecided"),
    [
        (['{"na'], True),
        (['  {"name": "Ali'], True),
        (['{"name": "Alice", "age": 3}'], False),
        (["Hello <tool"], True),
        (["Hello [TOOL_"], True),
        (["Hello <b>bold</b>"], False),
        (["x < y and [1, 2]"], False),
        (["Plain prose."], False),
    ],
)
def test_content_undecided_tells_what_may_still_be_a_call(pieces: list[str], undecided: bool) -> None:
    guard = Guard(TOOLS)
    for piece in pieces:
        assert guard.feed(ContentDelta(piece)).ok
    assert guard.content_undecided() is undecided
