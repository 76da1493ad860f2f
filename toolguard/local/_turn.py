"""The whole assistant turn as a small automaton around the engine's call grammar.

A turn is free text and/or tool calls in the model's call format, then an end-of-turn token. The engine only
ever sees one call object (``{"name": ..., "arguments": ...}``, see ``_engines``); everything around it is
handled here, identically for every engine, as a few node kinds:

- ``free``: unconstrained text (``tool_choice="auto"``), watched byte by byte for the call marker
  (``<tool_call>``) with an incremental KMP matcher. A token that would complete the marker *and* carry text
  past it is masked out (``Vocab.marker_bans``), so the call always starts cleanly at a token boundary. With
  ``tool_choice="none"`` every completion of the marker is masked out.
- ``lit``: fixed framing text (``<tool_call>\\n``, ``\\n</tool_call>``, ``[``, ``, ``), possibly a choice
  between several literals and/or the end of the turn (parallel calls). Allowed: tokens whose bytes are a
  prefix of a live option. A single live option is forced (jump-forward).
- ``call``: the engine matcher; its bitmask, restricted to non-special ids. When the call object closes
  (the grammar is accepting, and a call object cannot be extended past its final ``}``), the automaton moves
  on.
- ``jstart``: bare-JSON format with ``"auto"``: the first token either opens the call (as the engine allows)
  or starts free text that does not begin with ``{`` or ``[``. (Bare JSON with ``"none"`` is plain free
  text: there is no marker to keep out.)
- ``end``: only end-of-turn ids (every eos id declared by the tokenizer and generation config); ``done``
  after one is consumed.

Per token the work is O(1) outside ``call`` (a table lookup, or a precomputed mask) plus the engine's own mask
inside it. The state records byte spans of the content and of each call, so the caller can build a result
without re-parsing, and knows whether a call was left open (truncated).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .._exceptions import UsageError
from ._engines import Engine, Matcher
from ._vocab import MarkerWatch, Vocab, ids_to_bitmask, words_for

__all__ = ["FORMATS", "CallFormat", "FormatName", "Mask", "TurnGrammar", "TurnState"]

FormatName = Literal["hermes", "json"]
Mode = Literal["auto", "required", "none"]
Phase = Literal["free", "lit", "call", "jstart", "end", "done", "error"]


@dataclass(frozen=True, slots=True)
class CallFormat:
    """How calls are framed in the model's output."""

    name: str
    open: str = ""  # marker opening a call (hermes: "<tool_call>")
    after_open: str = ""  # text forced right after the marker
    close: str = ""  # text closing a call
    between: str = ""  # text between parallel calls (before the next ``open``)
    list_open: str = ""  # bare JSON: parallel calls form a list
    list_close: str = ""


FORMATS: dict[str, CallFormat] = {
    "hermes": CallFormat("hermes", open="<tool_call>", after_open="\n", close="\n</tool_call>", between="\n"),
    "json": CallFormat("json", between=", ", list_open="[", list_close="]"),
}


@dataclass(slots=True)
class Mask:
    """What to do to one row of logits: ``all`` (nothing), ``ban`` (these ids to -inf), ``single`` (only
    ``token``), ``words`` (the bitmask in ``words``)."""

    kind: Literal["all", "ban", "single", "words"]
    ids: Any = None
    token: int = -1


_ALL = Mask("all")


@dataclass(eq=False)
class TurnGrammar:
    """Everything the per-sequence states share: vocabulary tables, the compiled call grammar, the plan."""

    vocab: Vocab
    engine: Engine
    compiled: Any
    mode: Mode
    fmt: CallFormat
    parallel: bool
    end_ids: tuple[int, ...]
    n_vocab: int
    max_calls: int | None = None  # parallel calls: at most this many (None: no limit)
    text_words: np.ndarray = field(init=False)  # ids that are ordinary text (not special, inside the vocab)
    end_words: np.ndarray = field(init=False)
    free_json_words: np.ndarray = field(init=False)  # bare-JSON "auto": text that cannot open a call
    _entry: dict[tuple[bytes, ...], np.ndarray] = field(default_factory=dict, init=False)
    unenforced: dict[str, list[str]] = field(default_factory=dict, init=False)  # tool -> dropped keywords
    uncallable: dict[str, str] = field(default_factory=dict, init=False)  # tool -> why no call can be valid
    toolset: Any = field(default=None, init=False)

    def __post_init__(self) -> None:
        if not self.end_ids:
            raise UsageError("no end-of-turn token: the tokenizer has no eos_token_id; pass end_token_ids")
        self.text_words = self.vocab.text_mask()
        self.end_words = ids_to_bitmask(self.end_ids, self.n_vocab)
        self.free_json_words = (self.text_words & ~self.vocab.first_byte_mask(b"{[")) | self.end_words
        # llguidance never allows special tokens as text; other engines' masks are intersected with text ids
        self.clean_masks = self.engine.name != "llguidance"
        if self.fmt.open:  # once per tokenizer (O(V log V)), for every mode: now, not mid-turn, and not in
            # the first request of another mode (a "none" turn's ~6 ms at 32k landing in a later compile)
            for strict in (False, True):
                _ban_tensors(self.vocab, self.fmt.open.encode(), strict=strict)

    def new_state(self) -> TurnState:
        return TurnState(self)

    def literal_words(self, options: Sequence[bytes], allow_end: bool) -> np.ndarray:
        key = (*options, b"\x00end" if allow_end else b"")
        hit = self._entry.get(key)
        if hit is None:
            ids: list[int] = []
            for text in options:
                ids.extend(self.vocab.literal_tokens(text, 0))
            hit = ids_to_bitmask(ids, self.n_vocab)
            if allow_end:
                hit = hit | self.end_words
            self._entry[key] = hit
        return hit


class TurnState:
    """One sequence's position in the turn automaton (see the module docstring).

    Byte bookkeeping: ``buf`` holds the turn's bytes, ``content_end`` where the free text stopped (the first
    call's framing starts there), ``call_spans`` the span of each closed call object, and ``call_open`` says a
    call has started and not closed (its framing included).
    """

    def __init__(self, grammar: TurnGrammar) -> None:
        self.g = grammar
        self.buf = bytearray()
        self.content_end: int | None = None
        self.call_spans: list[tuple[int, int]] = []
        self.call_open = False
        self.n_tokens = 0
        self.n_forced = 0
        self.phase: Phase = "free"
        self.error = ""
        self.matcher: Matcher | None = None
        self._json_start = -1
        self._words = np.zeros(words_for(grammar.n_vocab), dtype=np.int32)
        self._options: list[tuple[bytes, str]] = []  # lit: live (text, next node)
        self._allow_end = False
        self._pos = 0
        self._watch: MarkerWatch | None = None
        self._bans: list[Any] | None = None
        fmt, mode = grammar.fmt, grammar.mode
        if fmt.open:  # marker formats (hermes)
            if mode == "required":
                self._lit([((fmt.open + fmt.after_open).encode(), "call")])
            else:
                self._watch = MarkerWatch(fmt.open.encode())
                self._bans = _ban_tensors(grammar.vocab, fmt.open.encode(), strict=mode == "none")
        elif mode == "required":
            if grammar.parallel:
                self._lit([(fmt.list_open.encode(), "call")])
            else:
                self._enter_call()
        elif mode == "auto":  # bare JSON: the first token opens a call or starts free text
            self.phase = "jstart"
            if grammar.parallel:
                self._options = [(fmt.list_open.encode(), "call")]
            else:
                self.matcher = grammar.engine.matcher(grammar.compiled)

    # ---- queries -----------------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """True once nothing but an end-of-turn token can follow (or one has been consumed)."""
        return self.phase in ("end", "done")

    @property
    def complete(self) -> bool:
        """True when the turn could end here: no call or framing is left open."""
        return self.phase in ("end", "done", "free", "jstart") or (self.phase == "lit" and self._allow_end)

    @property
    def marker_pending(self) -> int:
        """Trailing bytes of free text that may start the call marker (a streamer holds them back)."""
        return self._watch.state if self._watch is not None and self.phase == "free" else 0

    @property
    def open_call_start(self) -> int:
        """Where the JSON of the call being written starts (valid while ``phase == "call"``)."""
        return self._json_start

    def content_bytes(self) -> bytes:
        return bytes(self.buf if self.content_end is None else self.buf[: self.content_end])

    def calls_bytes(self) -> list[bytes]:
        return [bytes(self.buf[a:b]) for a, b in self.call_spans]

    def open_call_bytes(self) -> bytes:
        """The bytes of the call section left open (framing and JSON), empty if none."""
        if self.content_end is None or self.complete:
            return b""
        start = self.call_spans[-1][1] if self.call_spans else self.content_end
        return bytes(self.buf[start:])

    # ---- masks -------------------------------------------------------------------------------------------
    @property
    def engine_matcher(self) -> Matcher | None:
        """The engine matcher whose bitmask the next ``mask()`` needs (None outside a call), so a caller can
        fill the masks of many rows at once (``Engine.fill_batch``) and call ``mask(filled=True)``."""
        return self.matcher if self.phase in ("call", "jstart") else None

    def fill_engine_mask(self) -> None:
        """Compute the engine matcher's bitmask into this state's buffer (the part of ``mask()`` that runs
        without the GIL; a decoder may run it beside the forward pass, then call ``mask(filled=True)``)."""
        assert self.matcher is not None
        self.matcher.fill(self._words)

    def use_buffer(self, words: np.ndarray) -> None:
        """Write engine bitmasks into ``words`` (int32, one row of a caller's batch buffer) from now on."""
        self._words = words

    def mask(self, *, filled: bool = False) -> Mask:
        """The allowed next tokens. ``filled``: the engine matcher's bitmask is already in this state's
        buffer (see ``engine_matcher``)."""
        g, phase = self.g, self.phase
        if phase == "free":
            if self._bans is None or self._watch is None:
                return _ALL
            ban = self._bans[self._watch.state]
            return _ALL if ban is None else Mask("ban", ban)
        if phase == "lit":
            return self._maybe_single(self._lit_words())
        if phase == "call":
            assert self.matcher is not None
            words = self._words
            if not filled:
                self.matcher.fill(words)
            if g.clean_masks:
                np.bitwise_and(words, g.text_words, out=words)
            return Mask("words", words)
        if phase == "jstart":
            words = self._words
            if self.matcher is not None:
                if not filled:
                    self.matcher.fill(words)
                np.bitwise_and(words, g.text_words, out=words)
            elif self._options:
                words[:] = g.literal_words([t for t, _ in self._options], False)
            else:
                words[:] = 0
            np.bitwise_or(words, g.free_json_words, out=words)
            return Mask("words", words)
        if phase == "end":
            if len(g.end_ids) == 1:
                return Mask("single", token=g.end_ids[0])
            return Mask("words", g.end_words)
        return _ALL  # done / error: nothing left to constrain (generate() pads finished rows)

    def _lit_words(self) -> np.ndarray:
        g = self.g
        if self._pos == 0:
            return g.literal_words([t for t, _ in self._options], self._allow_end)
        ids: list[int] = []
        for text, _ in self._options:
            ids.extend(g.vocab.literal_tokens(text, self._pos))
        return ids_to_bitmask(ids, g.n_vocab)

    @staticmethod
    def _maybe_single(words: np.ndarray) -> Mask:
        nz = np.flatnonzero(words)
        if len(nz) == 1:
            w = int(words[nz[0]]) & 0xFFFFFFFF
            if w & (w - 1) == 0:
                return Mask("single", token=int(nz[0]) * 32 + w.bit_length() - 1)
        return Mask("words", words)

    # ---- advancing ---------------------------------------------------------------------------------------
    def forced(self) -> list[int]:
        """Tokens that are the only continuation right now (not yet consumed): jump-forward."""
        if self.phase == "lit" and len(self._options) == 1 and not self._allow_end:
            text, _ = self._options[0]
            return list(self.g.vocab.encode_literal(text[self._pos:]))
        if self.phase == "call" and self.matcher is not None:
            return self.matcher.forced()
        return []

    def advance(self, token: int, *, forced: bool = False) -> bool:
        """Consume ``token``. Returns False (and enters the sticky ``error`` phase) if it was not allowed."""
        self.n_tokens += 1
        self.n_forced += forced
        g, phase = self.g, self.phase
        if phase == "done":
            return True
        if phase == "error":
            return False
        if token in g.end_ids:
            if phase in ("end", "free", "jstart") or (phase == "lit" and self._allow_end and self._pos == 0):
                self.phase = "done"
                return True
            return self._fail("end of turn inside a call")
        data = g.vocab.token_bytes[token] if 0 <= token < g.vocab.size else None
        if data is None:
            return self._fail(f"token {token} is neither text nor an end-of-turn token")
        if phase == "free":
            return self._advance_free(data)
        if phase == "jstart":
            if data[:1] not in (b"{", b"["):
                self.matcher = None
                self._options = []
                self.phase = "free"
                self.buf += data
                return True
            self.phase = "call" if self.matcher is not None else "lit"
            self._begin_call()
            if self.matcher is not None:
                self._json_start = len(self.buf)
                return self._advance_call(token, data)
        if self.phase == "lit":
            return self._advance_lit(data)
        if self.phase == "call":
            return self._advance_call(token, data)
        return self._fail("only an end-of-turn token may follow")

    def _fail(self, why: str) -> bool:
        self.phase = "error"
        self.error = why
        return False

    def _begin_call(self) -> None:
        self.call_open = True
        if self.content_end is None:
            self.content_end = len(self.buf)

    def _advance_free(self, data: bytes) -> bool:
        self.buf += data
        if self._watch is not None:
            hit = self._watch.feed(data)
            if hit >= 0:
                if hit != len(data) or self.g.mode == "none":
                    return self._fail("the call marker arrived inside a token with text after it")
                self.content_end = len(self.buf) - len(self._watch.marker)
                self.call_open = True
                after = self.g.fmt.after_open
                if after:
                    self._lit([(after.encode(), "call")])
                else:  # pragma: no cover - every marker format has text after its marker
                    self._enter_call()
        return True

    def _advance_lit(self, data: bytes) -> bool:
        pos = self._pos
        live = [(t, nxt) for t, nxt in self._options if t[pos:pos + len(data)] == data]
        if not live:
            return self._fail(f"token {data!r} does not fit the call framing")
        if pos == 0 and any(nxt == "call" for _, nxt in live):
            self._begin_call()
        self.buf += data
        self._pos = pos + len(data)
        self._options = live
        self._allow_end = False
        for text, nxt in live:
            if len(text) == self._pos:
                self._goto(nxt)
                break
        return True

    def _advance_call(self, token: int, data: bytes) -> bool:
        assert self.matcher is not None
        if not self.matcher.consume(token):
            return self._fail(f"the grammar refused token {data!r}")
        self.buf += data
        if self.matcher.accepting():  # a call object cannot be extended past its final "}"
            self.call_spans.append((self._json_start, len(self.buf)))
            self.matcher = None
            fmt = self.g.fmt
            if fmt.close:
                self._lit([(fmt.close.encode(), "after")])
            else:
                self.call_open = False
                if self._more_calls():
                    self._lit([(fmt.between.encode(), "call"), (fmt.list_close.encode(), "end")])
                elif self.g.parallel:
                    self._lit([(fmt.list_close.encode(), "end")])
                else:
                    self.phase = "end"
        return True

    # ---- node transitions --------------------------------------------------------------------------------
    def _lit(self, options: list[tuple[bytes, str]], *, allow_end: bool = False) -> None:
        self.phase = "lit"
        self._options = options
        self._allow_end = allow_end
        self._pos = 0

    def _goto(self, node: str) -> None:
        if node == "call":
            self._enter_call()
        elif node == "end":
            self.phase = "end"
        else:  # "after": a hermes call and its framing closed
            self.call_open = False
            fmt = self.g.fmt
            if self._more_calls():
                self._lit([((fmt.between + fmt.open + fmt.after_open).encode(), "call")], allow_end=True)
            else:
                self.phase = "end"

    def _more_calls(self) -> bool:
        g = self.g
        return g.parallel and (g.max_calls is None or len(self.call_spans) < g.max_calls)

    def _enter_call(self) -> None:
        self._begin_call()
        self.phase = "call"
        self.matcher = self.g.engine.matcher(self.g.compiled)
        self._json_start = len(self.buf)


_BAN_CACHE: dict[tuple[str, bytes, bool], list[Any]] = {}


def _ban_tensors(vocab: Vocab, marker: bytes, *, strict: bool) -> list[Any]:
    """Per KMP state: an int64 array of banned ids, or None when nothing is banned."""
    key = (vocab.fingerprint, marker, strict)
    hit = _BAN_CACHE.get(key)
    if hit is None:
        bans = vocab.marker_bans(marker)
        if strict:
            exact = vocab.marker_completions(marker)
            bans = [sorted(set(b) | set(e)) for b, e in zip(bans, exact, strict=True)]
        hit = [np.asarray(b, dtype=np.int64) if b else None for b in bans]
        _BAN_CACHE[key] = hit
    return hit
