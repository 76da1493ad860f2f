"""``TextTurn``: raw model text in a call format -> released prose and whole, validated calls.

The vLLM plugin drives one per request (streaming and not); these tests pin the release rules without vLLM:
calls only whole and valid, prose never with half a marker, the same answer for every chunking.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from toolguard import ToolCall
from toolguard._text_turn import Release, TextTurn
from toolguard.formats import render

WEATHER = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "tools" / "weather.json").read_text())
CALL = render([ToolCall("get_weather", '{"city": "Paris"}')], format="hermes")


def run(text: str, pieces: list[int] | None = None, **kw: object) -> tuple[TextTurn, str, list[ToolCall]]:
    """Feed ``text`` cut at ``pieces`` (positions); return the turn, the prose and the calls released."""
    turn = TextTurn(WEATHER, **kw)  # type: ignore[arg-type]
    cuts = [0, *sorted(set(p for p in (pieces or []) if 0 < p < len(text))), len(text)]
    released: list[Release] = [turn.feed(text[a:b]) for a, b in itertools.pairwise(cuts)]
    released.append(turn.close())
    return turn, "".join(r.content for r in released), [c for r in released for c in r.calls]


def test_prose_and_a_valid_call() -> None:
    turn, prose, calls = run("Let me check. " + CALL)
    assert turn.verdict.kind == "ok"
    assert prose == "Let me check. "
    assert calls == [ToolCall("get_weather", '{"city": "Paris"}')]


def test_a_call_is_released_only_whole_and_prose_never_holds_half_a_marker() -> None:
    turn = TextTurn(WEATHER)
    text = "Sure <tool_call>\n" + CALL[len("<tool_call>\n"):]
    seen: list[Release] = []
    for ch in text:
        seen.append(turn.feed(ch))
        assert "<" not in "".join(r.content for r in seen)  # '<tool_...' is never shown as prose
    seen.append(turn.close())
    released = [r for r in seen if r]
    assert [r.content for r in released if r.content] and released[-1].calls
    assert all(not r.calls for r in released[:-1])  # the call came out in one piece, at its end


def test_invalid_and_unknown_calls_fail_and_are_never_released() -> None:
    bad = CALL.replace('"city"', '"town"')
    turn, _, calls = run(bad)
    assert turn.verdict.failed and turn.verdict.kind == "rejected" and calls == []
    turn, _, calls = run(CALL.replace("get_weather", "delete_files"))
    assert turn.verdict.kind == "unknown_tool" and calls == []
    turn, _, calls = run(CALL, tool_choice={"type": "function", "function": {"name": "get_forecast"}})
    assert turn.verdict.kind == "unknown_tool" and calls == []  # offered, but not the named one


def test_a_truncated_call_is_never_a_call() -> None:
    turn, prose, calls = run("Checking. " + CALL[:30])
    assert turn.verdict.kind == "truncated"
    assert (prose, calls) == ("Checking. ", [])


def test_text_after_the_call_is_cut() -> None:
    turn, prose, calls = run(CALL + "\n<tool_response>\n{\"temperature\": 21}\n</tool_response>")
    assert turn.verdict.kind == "fabricated" and turn.verdict.usable
    assert prose == "" and [c.name for c in calls] == ["get_weather"]


def test_required_without_a_call_fails() -> None:
    turn, _, calls = run("I cannot help with that.", tool_choice="required")
    assert turn.verdict.kind == "missing_call" and calls == []


LOOP = "Here you go: " + "ha" * 200


def test_a_loop_ends_the_turn_where_it_was_recognised() -> None:
    turn, prose, calls = run(LOOP)
    stopped = turn.stopped
    assert stopped is not None and stopped.kind == "runaway" and stopped.runaway is not None
    assert prose == LOOP[: stopped.runaway.detected_at]
    assert len(prose) < 120 and calls == []
    inside = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "' + "la" * 300
    turn, prose, calls = run("One moment. " + inside)
    assert turn.stopped is not None and (prose, calls) == ("One moment. ", [])


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.sampled_from([LOOP, "A. " + CALL, "x" + CALL[:40], CALL + "\nObservation: 3", "ok " * 30]),
       st.lists(st.integers(0, 400), max_size=12))
def test_every_chunking_gives_the_same_answer(text: str, cuts: list[int]) -> None:
    whole = run(text)
    split = run(text, cuts)
    assert (split[0].verdict.kind, split[1], split[2]) == (whole[0].verdict.kind, whole[1], whole[2])
