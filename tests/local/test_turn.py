"""The turn automaton fed token by token with the locally trained tokenizer (no model): framing, marker
detection in free text, jump-forward, end-of-turn handling and byte bookkeeping."""

from __future__ import annotations

from typing import Any

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("torch")
pytest.importorskip("llguidance")

from _local_toolsets import SMALL  # noqa: E402

from toolguard import UsageError  # noqa: E402
from toolguard.local._mask import allowed_ids  # noqa: E402
from toolguard.local._processor import build_turn_grammar  # noqa: E402
from toolguard.local._turn import TurnState  # noqa: E402
from toolguard.local._vocab import MarkerWatch, Vocab  # noqa: E402

pytestmark = pytest.mark.local

CALL = '{"name": "lookup", "arguments": {"key": "ab", "mode": "fast"}}'


def allowed(state: TurnState) -> set[int]:
    mask = state.mask()
    if mask.kind == "single":
        return {mask.token}
    if mask.kind == "words":
        return set(allowed_ids(mask.ids).tolist())
    raise AssertionError(mask.kind)


def feed_text(state: TurnState, vocab: Vocab, text: str) -> None:
    for token in vocab.encode_literal(text.encode()):
        mask = state.mask()
        if mask.kind == "ban":
            assert token not in mask.ids.tolist(), (text, token)
        elif mask.kind != "all":
            assert token in allowed(state), (text, token)
        assert state.advance(token), state.error


def grammar(tok: Any, choice: str = "required", **kw: Any) -> Any:
    return build_turn_grammar(tok, SMALL, choice, **kw)


def test_required_hermes_turn(bpe_tokenizer: Any) -> None:
    vocab = Vocab.of(bpe_tokenizer)
    state = grammar(bpe_tokenizer).new_state()
    forced = state.forced()
    assert vocab.decode(forced) == b"<tool_call>\n"
    for t in forced:
        state.advance(t, forced=True)
    feed_text(state, vocab, CALL)
    assert state.call_spans and state.phase == "lit"
    assert vocab.decode(state.forced()) == b"\n</tool_call>"
    feed_text(state, vocab, "\n</tool_call>")
    assert state.finished and state.complete
    assert allowed(state) == {bpe_tokenizer.eos_token_id}
    assert state.calls_bytes() == [CALL.encode()]
    assert state.content_bytes() == b""
    assert state.advance(bpe_tokenizer.eos_token_id) and state.phase == "done"


def test_grammar_refuses_wrong_arguments(bpe_tokenizer: Any) -> None:
    vocab = Vocab.of(bpe_tokenizer)
    state = grammar(bpe_tokenizer).new_state()
    feed_text(state, vocab, '<tool_call>\n{"name": "lookup", "arguments": {"key": "ab", "mode": "')
    bad = vocab.encode_literal(b"slow")[0]
    assert bad not in allowed(state)
    assert not state.advance(bad)
    assert state.phase == "error"  # sticky


def test_whitespace_is_bounded(bpe_tokenizer: Any) -> None:
    vocab = Vocab.of(bpe_tokenizer)
    state = grammar(bpe_tokenizer).new_state()
    feed_text(state, vocab, '<tool_call>\n{"name": "lookup", "arguments": {"key": "ab"')
    ok = allowed(state)
    for text in (b"\n", b" ", b"  ", b"\t"):
        for t in vocab.ids_for_bytes(text):
            assert t not in ok
    assert vocab.ids_for_bytes(b",")[0] in ok


def test_auto_mode_marker_in_free_text(bpe_tokenizer: Any) -> None:
    vocab = Vocab.of(bpe_tokenizer)
    g = grammar(bpe_tokenizer, "auto")
    state = g.new_state()
    assert state.mask().kind in ("all", "ban")
    feed_text(state, vocab, "Let me look. <tool_")
    assert state.marker_pending == len(b"<tool_")
    feed_text(state, vocab, "call>")
    assert state.content_bytes() == b"Let me look. "
    assert state.phase == "lit" and vocab.decode(state.forced()) == b"\n"
    for piece in ("\n", CALL, "\n</tool_call>"):
        feed_text(state, vocab, piece)
    assert state.finished and state.calls_bytes() == [CALL.encode()]


def test_marker_with_text_after_it_in_one_token_is_banned(bpe_tokenizer: Any) -> None:
    vocab = Vocab.of(bpe_tokenizer)
    marker = b"<tool_call>"
    bans = vocab.marker_bans(marker)
    watch = MarkerWatch(marker)
    watch.feed(b"<tool_call")
    assert watch.state == len(marker) - 1
    banned = set(bans[watch.state])
    for token, data in enumerate(vocab.token_bytes):
        if data and data.startswith(b">") and len(data) > 1:
            assert token in banned
    assert vocab.ids_for_bytes(b">")[0] not in banned


def test_none_mode_bans_the_marker(bpe_tokenizer: Any) -> None:
    state = grammar(bpe_tokenizer, "none").new_state()
    marker = bpe_tokenizer.convert_tokens_to_ids("<tool_call>")
    mask = state.mask()
    assert mask.kind == "ban" and marker in mask.ids.tolist()


def test_parallel_hermes_calls_then_end(bpe_tokenizer: Any) -> None:
    vocab = Vocab.of(bpe_tokenizer)
    state = grammar(bpe_tokenizer, parallel_tool_calls=True).new_state()
    for piece in ("<tool_call>\n", CALL, "\n</tool_call>"):
        feed_text(state, vocab, piece)
    assert state.complete and not state.finished
    assert bpe_tokenizer.eos_token_id in allowed(state)
    for piece in ("\n<tool_call>\n", CALL, "\n</tool_call>"):
        feed_text(state, vocab, piece)
    assert len(state.call_spans) == 2
    assert state.advance(bpe_tokenizer.eos_token_id)


def test_json_format_parallel_list(bpe_tokenizer: Any) -> None:
    vocab = Vocab.of(bpe_tokenizer)
    state = grammar(bpe_tokenizer, format="json", parallel_tool_calls=True).new_state()
    for piece in ("[", CALL, ", ", CALL, "]"):  # framing and call meet at token boundaries
        feed_text(state, vocab, piece)
    assert state.finished and len(state.call_spans) == 2


def test_json_auto_free_text_cannot_start_with_a_brace(bpe_tokenizer: Any) -> None:
    vocab = Vocab.of(bpe_tokenizer)
    state = grammar(bpe_tokenizer, "auto", format="json").new_state()
    ok = allowed(state)
    brace_tokens = [i for i, b in enumerate(vocab.token_bytes) if b and b[:1] == b"{"]
    assert any(t in ok for t in brace_tokens)  # the call's own first tokens
    assert vocab.ids_for_bytes(b"{\n")[0] not in ok if vocab.ids_for_bytes(b"{\n") else True
    feed_text(state, vocab, "Hello")
    assert state.mask().kind == "all" and state.content_bytes() == b"Hello"


def test_open_call_is_reported_as_open(bpe_tokenizer: Any) -> None:
    vocab = Vocab.of(bpe_tokenizer)
    state = grammar(bpe_tokenizer, "auto").new_state()
    feed_text(state, vocab, "Hi<tool_call>")
    for _ in range(2):  # the forced "\n", then the forced '{"name": "'
        for token in state.forced():
            assert state.advance(token, forced=True)
    feed_text(state, vocab, "lookup")
    assert not state.complete and state.call_open
    assert state.open_call_bytes() == b'<tool_call>\n{"name": "lookup'
    assert state.content_bytes() == b"Hi"


def test_missing_end_token_is_a_usage_error(bpe_tokenizer: Any) -> None:
    from toolguard.local._turn import TurnGrammar

    g = grammar(bpe_tokenizer)
    with pytest.raises(UsageError):
        TurnGrammar(g.vocab, g.engine, g.compiled, "required", g.fmt, False, (), g.n_vocab)


def test_vocab_bytes_round_trip(bpe_tokenizer: Any) -> None:
    vocab = Vocab.of(bpe_tokenizer)
    assert Vocab.of(bpe_tokenizer) is vocab
    text = "naïve café ✓ <tool_call>\n{\"a\": 1}"
    ids = bpe_tokenizer.encode(text, add_special_tokens=False)
    assert vocab.decode(ids).decode("utf-8") == text
    assert vocab.token_bytes[bpe_tokenizer.eos_token_id] is None


def test_json_none_is_free_text(bpe_tokenizer: Any) -> None:
    state = grammar(bpe_tokenizer, "none", format="json").new_state()
    assert state.mask().kind == "all"
    assert state.advance(Vocab.of(bpe_tokenizer).encode_literal(b"{")[0])
    assert state.content_bytes() == b"{"
