"""The release gate (``toolguard._release``) on its own: what a client may see of Guard-judged events."""

from __future__ import annotations

from typing import Any

from toolguard import ContentDelta, Finish, Guard, ToolCallDelta
from toolguard._release import CallArguments, CallStart, Piece, ReleaseGate, Text, coalesce

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def run(gate: ReleaseGate, events: list[Any], **guard_kw: Any) -> tuple[list[Piece], Guard]:
    """Feed one attempt; return what the gate released (with ``accept()`` when the verdict is usable)."""
    guard = Guard(TOOLS, **guard_kw)
    gate.begin(guard)
    out: list[Piece] = []
    for event in events:
        verdict = guard.feed(event)
        out.extend(gate.feed(event, verdict))
        if verdict.kind != "ok":
            break
    if guard.close().usable:
        out.extend(gate.accept())
    return out, guard


def text_of(pieces: list[Piece]) -> str:
    return "".join(p.text for p in pieces if isinstance(p, Text))


def test_a_marker_prefix_is_held_until_it_is_known_not_to_be_a_call() -> None:
    gate = ReleaseGate("hold")
    guard = Guard(TOOLS)
    gate.begin(guard)
    first = ContentDelta("Sure. <tool_")
    assert gate.feed(first, guard.feed(first)) == [Text("Sure. ")]  # the prose before it goes out at once
    rest = ContentDelta("s are handy.")
    assert gate.feed(rest, guard.feed(rest)) == [Text("<tool_s are handy.")]


def test_a_marker_prefix_that_opens_a_call_is_never_shown() -> None:
    events = [ContentDelta("Sure. "), ContentDelta("<tool_"), ContentDelta('call>{"name": "get_weather"}')]
    pieces, guard = run(ReleaseGate("pass"), events)
    assert guard.verdict.kind == "call_in_content"
    assert text_of(pieces) == "Sure. "


def test_text_ending_in_a_marker_prefix_is_released_at_the_end() -> None:
    pieces, _ = run(ReleaseGate("hold"), [ContentDelta("a list ["), Finish("stop")])
    assert text_of(pieces) == "a list [" and pieces[-1] == Text("[")


def test_a_bare_json_head_is_held_while_it_may_be_a_call() -> None:
    gate = ReleaseGate("hold")
    guard = Guard(TOOLS)
    gate.begin(guard)
    head = ContentDelta('{"name": "Ali')
    assert gate.feed(head, guard.feed(head)) == []
    tail = ContentDelta('ce"} is a JSON object.')
    assert text_of(gate.feed(tail, guard.feed(tail))) == '{"name": "Alice"} is a JSON object.'


def test_hold_releases_call_fragments_only_when_accepted() -> None:
    call = [ToolCallDelta(0, "c1", "get_weather", '{"city": '), ToolCallDelta(0, None, None, '"Paris"}')]
    gate = ReleaseGate("hold")
    guard = Guard(TOOLS)
    gate.begin(guard)
    for event in call:
        assert gate.feed(event, guard.feed(event)) == []
    assert gate.accept() == [CallStart(0, "c1", "get_weather", '{"city": '), CallArguments(0, '"Paris"}')]
    assert coalesce(gate.accept() or [CallStart(0, "c1", "get_weather", "{"), CallArguments(0, "}")]) == [
        CallStart(0, "c1", "get_weather", "{}")
    ]


def test_pass_numbers_a_retrys_call_after_the_one_shown() -> None:
    gate = ReleaseGate("pass")
    bad = [ToolCallDelta(0, "a", "get_weather", '{"city": '), ToolCallDelta(0, None, None, "42}")]
    first, guard = run(gate, bad)
    assert guard.verdict.kind == "rejected" and first == [CallStart(0, "a", "get_weather", '{"city": ')]
    assert gate.retry_visible(guard.verdict)
    second, _ = run(gate, [ToolCallDelta(0, "b", "get_weather", '{"city": "Rome"}'), Finish("tool_calls")])
    assert second == [CallStart(1, "b", "get_weather", '{"city": "Rome"}')]


def test_hold_a_failed_call_leaves_no_index_behind() -> None:
    gate = ReleaseGate("hold")
    _, guard = run(gate, [ToolCallDelta(0, "a", "get_wether", "{}")])
    assert guard.verdict.kind == "unknown_tool" and not gate.retry_visible(guard.verdict)
    second, _ = run(gate, [ToolCallDelta(0, "b", "get_weather", '{"city": "Rome"}'), Finish("tool_calls")])
    assert second == [CallStart(0, "b", "get_weather", '{"city": "Rome"}')]


def test_a_retrys_text_follows_what_was_shown_once() -> None:
    gate = ReleaseGate("hold")
    bad = [ContentDelta("That "), ToolCallDelta(0, "a", "get_wether", "{}")]
    first, _ = run(gate, bad)
    assert text_of(first) == "That "
    again = [ContentDelta("That "), ContentDelta("did not work."), Finish("stop")]
    second, _ = run(gate, again)
    assert text_of(second) == "did not work."  # no "ThatThat": the repeated start is not shown again
    assert gate.shown_text == "That did not work."


def test_a_retry_answering_with_a_call_drops_its_own_preamble() -> None:
    gate = ReleaseGate("hold")
    run(gate, [ContentDelta("Let me check. "), ToolCallDelta(0, "a", "get_wether", "{}")])
    second, _ = run(
        gate,
        [ContentDelta("Checking. "), ToolCallDelta(0, "b", "get_weather", '{"city": "Rome"}'), Finish(None)],
    )
    assert second == [CallStart(0, "b", "get_weather", '{"city": "Rome"}')]


def test_required_call_holds_the_text_to_the_end() -> None:
    gate = ReleaseGate("hold", hold_content=True)
    pieces, guard = run(gate, [ContentDelta("Sure."), Finish("stop")], tool_choice="required")
    assert guard.verdict.kind == "missing_call" and pieces == []


def test_fabricated_text_is_never_released() -> None:
    events = [ToolCallDelta(0, "a", "get_weather", '{"city": "Rome"}'), ContentDelta("It is 21C.")]
    pieces, guard = run(ReleaseGate("pass"), events)
    assert guard.verdict.kind == "fabricated"
    assert pieces == [CallStart(0, "a", "get_weather", '{"city": "Rome"}')]
    assert ReleaseGate.finish_reason(guard) == "tool_calls"


def test_a_loop_in_shown_text_cannot_be_retried_invisibly() -> None:
    gate = ReleaseGate("hold")
    pieces, guard = run(gate, [ContentDelta("Let me check the weather in Paris for you now. ")] * 40)
    assert guard.verdict.kind == "runaway" and pieces
    assert gate.retry_visible(guard.verdict)


def test_a_repaired_call_is_released_as_a_call_with_the_prose_before_it() -> None:
    gate = ReleaseGate("hold")
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    events = [ContentDelta("Let me look. " + call[:9]), ContentDelta(call[9:]), Finish("stop")]
    pieces, guard = run(gate, events, repair=True)
    assert guard.verdict.kind == "ok" and guard.repaired
    assert pieces == [Text("Let me look. "), CallStart(0, None, "get_weather", '{"city": "Paris"}')]
    assert ReleaseGate.finish_reason(guard) == "tool_calls"
