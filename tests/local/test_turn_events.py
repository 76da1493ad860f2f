"""``TurnEvents``: a real turn automaton fed token by token (locally trained tokenizer, no model); the events
it yields at every step, and a Guard and the release gate reading them."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

pytest.importorskip("numpy")
pytest.importorskip("torch")
pytest.importorskip("llguidance")

from _local_toolsets import SMALL

from toolguard import ContentDelta, Finish, Guard, ToolCallDelta
from toolguard._release import CallArguments, CallStart, ReleaseGate, Text
from toolguard.local._processor import DEFAULT_SEPARATORS, build_turn_grammar
from toolguard.local._turn_events import TurnEvents
from toolguard.local._vocab import Vocab

pytestmark = pytest.mark.local

CALL = '{"name": "lookup", "arguments": {"key": "ab", "mode": "fast"}}'


def steps(tok: Any, choice: str, texts: list[str]) -> tuple[list[list[Any]], TurnEvents]:
    """Feed ``texts`` one token at a time; return the events of each step."""
    vocab = Vocab.of(tok)
    state = build_turn_grammar(tok, SMALL, choice).new_state()
    ids = itertools.count()
    turn = TurnEvents(DEFAULT_SEPARATORS, lambda: f"call_{next(ids)}")
    out: list[list[Any]] = []
    for text in texts:
        for token in vocab.encode_literal(text.encode()):
            assert state.advance(token), state.error
            out.append(turn.step(state))
    out.append(turn.step(state, final=True))
    return out, turn


def test_text_then_a_call_become_content_and_call_fragments(bpe_tokenizer: Any) -> None:
    per_step, turn = steps(
        bpe_tokenizer, "auto", ["Let me look. <tool_", "call>", "\n", CALL, "\n</tool_call>"]
    )
    events = [e for step in per_step for e in step]
    text = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert text == "Let me look. "  # the marker's bytes were never text
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert calls[0] == ToolCallDelta(0, "call_0", "lookup", "")  # the name once, as soon as the head is whole
    assert "".join(c.arguments for c in calls) == '{"key": "ab", "mode": "fast"}'  # not the object's "}"
    assert sum(1 for c in calls if c.arguments) > 3, "fragments as they are written, not the call at the end"
    assert turn.call_ids == ["call_0"]


def test_a_guard_and_the_gate_read_the_events_like_any_door(bpe_tokenizer: Any) -> None:
    per_step, _ = steps(bpe_tokenizer, "auto", ["Hi. ", "<tool_call>", "\n", CALL, "\n</tool_call>"])
    guard = Guard(SMALL)
    gate = ReleaseGate("pass")
    gate.begin(guard)
    pieces = []
    for event in (e for step in per_step for e in step):
        pieces += gate.feed(event, guard.feed(event))
    assert guard.feed(Finish("tool_calls")).ok
    texts = [p for p in pieces if isinstance(p, Text)]
    (start,) = [p for p in pieces if isinstance(p, CallStart)]
    assert "".join(p.text for p in texts) == "Hi. " and pieces.index(start) == len(texts)
    assert start.name == "lookup" and start.id == "call_0"
    args = start.arguments + "".join(p.arguments for p in pieces if isinstance(p, CallArguments))
    assert args == '{"key": "ab", "mode": "fast"}'


def test_an_open_call_is_reported_with_its_arguments_so_far(bpe_tokenizer: Any) -> None:
    _, turn = steps(bpe_tokenizer, "required", ["<tool_call>\n", CALL[:40]])
    assert turn.open_call() == ("lookup", CALL[32:40])
