"""Grammar engines behind one small adapter interface.

A tool call is the JSON text ``{"name": <name>, "arguments": <args>}`` written with fixed separators (``", "``
and ``": "`` by default: the layout hermes/Qwen chat templates render and models are trained on), and the call
grammar is the union over the allowed tools of that layout with ``<args>`` constrained by the tool's prepared
schema. Each engine builds it its own way:

- llguidance: a Lark grammar, one alternative per tool, each ``%json{...}`` with ``x-guidance`` separators and
  ``whitespace_flexible: false`` (no whitespace beyond the separators); a ``minLength`` of 0, or of 1 beside
  a ``pattern`` that refuses the empty string, is left out (it says nothing more, and llguidance intersects
  a length with a pattern at a cost: 1.7 ms per mask at 128k instead of 39 µs);
- xgrammar: ``Grammar.union`` of ``Grammar.concat(literal, from_json_schema(any_whitespace=False), literal)``;
- outlines-core: one regex (``build_regex_from_schema`` with whitespace bounded to one optional space),
  indexed over the vocabulary.

``Engine.compile`` is the slow part (run by ``_compile`` in a worker thread with a deadline). ``Matcher``
is per sequence and per call: ``fill`` writes the allowed-token bitmask (int32 words, bit ``i % 32`` of word
``i // 32``), ``consume`` advances, ``accepting`` says the call text is complete, ``forced`` returns tokens
the grammar allows as the only continuation (jump-forward). Engines' own end-of-sequence bits are ignored by
the caller: termination is decided by the turn automaton (``_turn``).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .._exceptions import GrammarError, UnsupportedKeyword
from ..engines._keywords import _SCHEMA_KEYS, _SCHEMA_LISTS, _SCHEMA_MAPS, EngineName
from ._vocab import Vocab, words_for

__all__ = ["ENGINES", "CallSpec", "Engine", "Matcher", "get_engine"]


@dataclass(frozen=True, slots=True)
class CallSpec:
    """What one call grammar accepts: tools as (name, prepared schema as canonical JSON text)."""

    tools: tuple[tuple[str, str], ...]
    separators: tuple[str, str] = (", ", ": ")
    close_objects: bool = True
    lenient: bool = False  # llguidance: ignore what it cannot enforce (the caller validates afterwards)

    @property
    def key(self) -> str:
        fields = [self.tools, self.separators, self.close_objects, self.lenient]
        return json.dumps(fields, separators=(",", ":"))

    def prefix(self, name: str) -> str:
        item, colon = self.separators
        return "{" + '"name"' + colon + json.dumps(name, ensure_ascii=False) + item + '"arguments"' + colon


class Matcher(Protocol):
    def fill(self, words: np.ndarray) -> None: ...
    def consume(self, token: int) -> bool: ...
    def accepting(self) -> bool: ...
    def forced(self) -> list[int]: ...


class Engine(Protocol):
    name: EngineName

    def compile(self, vocab: Vocab, spec: CallSpec, n_vocab: int) -> Any: ...
    def matcher(self, compiled: Any) -> Matcher: ...
    def fill_batch(self, rows: Sequence[tuple[Matcher, int]], words: np.ndarray) -> None: ...


def _fill_each(rows: Sequence[tuple[Matcher, int]], words: np.ndarray) -> None:
    for m, i in rows:
        m.fill(words[i])


# ---------------------------------------------------------------------------------------------------------
# per-tokenizer engine state, built once per (tokenizer fingerprint, vocabulary size)
_PREP: dict[tuple[str, str, int], Any] = {}
_PREP_LOCK = threading.Lock()


def _prepared(engine: str, vocab: Vocab, n_vocab: int, build: Any) -> Any:
    key = (engine, vocab.fingerprint, n_vocab)
    with _PREP_LOCK:
        hit = _PREP.get(key)
    if hit is None:
        hit = build()
        with _PREP_LOCK:
            hit = _PREP.setdefault(key, hit)
    return hit


def _first_eos(vocab: Vocab) -> int:
    eos = getattr(vocab.tokenizer, "eos_token_id", None)
    return int(eos) if isinstance(eos, int) else 0


# ---------------------------------------------------------------------------------------------------------
_LLG_ERRORS = (
    (re.compile(r'Unimplemented keys: \["([^"]+)"'), None),
    (re.compile(r"Unknown format"), "format"),
    (re.compile(r"oneOf constraints are not supported"), "oneOf"),
    (re.compile(r"min/maxProperties"), "minProperties"),
    (re.compile(r"patternProperty regexes"), "patternProperties"),
    (re.compile(r"allOf"), "allOf"),
    (re.compile(r"backreferences are not supported|look-around"), "pattern"),
)


def _lark_literal(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class LLGuidanceEngine:
    name: EngineName = "llguidance"

    def _tokenizer(self, vocab: Vocab, n_vocab: int) -> Any:
        def build() -> Any:
            import llguidance.hf

            return llguidance.hf.from_tokenizer(vocab.tokenizer, n_vocab=n_vocab, eos_token=_first_eos(vocab))

        return _prepared(self.name, vocab, n_vocab, build)

    def grammar(self, spec: CallSpec) -> str:
        item, colon = spec.separators
        opts: dict[str, Any] = {"whitespace_flexible": False, "item_separator": item, "key_separator": colon}
        if spec.lenient:
            opts["lenient"] = True
        lines = ["start: " + " | ".join(f"c{i}" for i in range(len(spec.tools)))]
        for i, (name, schema_text) in enumerate(spec.tools):
            schema = json.loads(schema_text)
            _drop_implied_min_length(schema, 0)
            if isinstance(schema, dict):
                schema = {**schema, "x-guidance": opts}
            elif schema is True:
                schema = {"x-guidance": opts}
            lines.append(f"c{i}: {_lark_literal(spec.prefix(name))} a{i} \"}}\"")
            lines.append(f"a{i}: %json {json.dumps(schema, ensure_ascii=False)}")
        return "\n".join(lines) + "\n"

    def compile(self, vocab: Vocab, spec: CallSpec, n_vocab: int) -> Any:
        from llguidance import LLMatcher

        tok = self._tokenizer(vocab, n_vocab)
        grammar = LLMatcher.grammar_from_lark(self.grammar(spec))
        matcher = LLMatcher(tok, grammar, log_level=0)
        if matcher.is_error():
            raise _llg_error(matcher.get_error())
        return matcher

    def matcher(self, compiled: Any) -> Matcher:
        return _LLGMatcher(compiled.deep_copy())

    def fill_batch(self, rows: Sequence[tuple[Matcher, int]], words: np.ndarray) -> None:
        """Every row's bitmask in one call: llguidance's executor computes them on its thread pool, without
        the GIL (one row goes straight to that matcher). ``words`` is a C-contiguous (batch, n_words) int32
        array."""
        if len(rows) == 1:
            m, i = rows[0]
            m.fill(words[i])
            return
        pairs = [(m._m, i) for m, i in rows]  # type: ignore[attr-defined]
        _executor().unsafe_compute_mask_ptr(pairs, words.ctypes.data, words.shape[1] * 4, words.shape[0])


def _drop_implied_min_length(node: Any, depth: int) -> None:
    """Remove, in place, every ``minLength`` that adds nothing to its node: 0, or 1 beside a ``pattern`` the
    empty string does not match (read as the validator reads it, ``compile_pattern``). The language is the
    same; llguidance's masks for a pattern alone are ~40x cheaper than for a pattern with a length."""
    if not isinstance(node, dict) or depth > 64:
        return
    low = node.get("minLength")
    if type(low) is int and low <= 1:
        pattern = node.get("pattern")
        if low <= 0 or (isinstance(pattern, str) and _refuses_empty(pattern)):
            del node["minLength"]
    for key in _SCHEMA_KEYS:
        _drop_implied_min_length(node.get(key), depth + 1)
    for key in _SCHEMA_MAPS:
        sub = node.get(key)
        if isinstance(sub, dict):
            for child in sub.values():
                _drop_implied_min_length(child, depth + 1)
    for key in _SCHEMA_LISTS:
        sub = node.get(key)
        if isinstance(sub, list):
            for child in sub:
                _drop_implied_min_length(child, depth + 1)


def _refuses_empty(pattern: str) -> bool:
    from .._regex import compile_pattern

    try:
        return compile_pattern(pattern).search("") is None
    except Exception:  # a pattern the validator cannot read: keep the length as written
        return False


_EXECUTOR: Any = None
#: Threads of llguidance's batch mask executor; None: llguidance's default (80% of the CPUs, up to 32).
MASK_THREADS: int | None = None


def _executor() -> Any:
    global _EXECUTOR
    if _EXECUTOR is None:
        from llguidance import LLExecutor

        with _PREP_LOCK:
            if _EXECUTOR is None:
                _EXECUTOR = LLExecutor(MASK_THREADS) if MASK_THREADS else LLExecutor()
    return _EXECUTOR


def _llg_error(message: str) -> Exception:
    for pattern, keyword in _LLG_ERRORS:
        found = pattern.search(message)
        if found:
            exc = UnsupportedKeyword(keyword or found.group(1), engine="llguidance")
            exc.add_note(message[:500])
            return exc
    return GrammarError(f"llguidance refused the grammar: {message[:500]}")


class _LLGMatcher:
    __slots__ = ("_m", "_ptr", "_words")

    def __init__(self, m: Any) -> None:
        self._m = m
        self._words: np.ndarray | None = None
        self._ptr = 0

    def fill(self, words: np.ndarray) -> None:
        if words is not self._words:  # ``ndarray.ctypes`` builds an object: look the address up once
            self._words, self._ptr = words, words.ctypes.data
        self._m.unsafe_compute_mask_ptr(self._ptr, words.nbytes)

    def consume(self, token: int) -> bool:
        return bool(self._m.consume_token(token))

    def accepting(self) -> bool:
        return bool(self._m.is_accepting())

    def forced(self) -> list[int]:
        return list(self._m.compute_ff_tokens())


# ---------------------------------------------------------------------------------------------------------
class XGrammarEngine:
    name: EngineName = "xgrammar"
    #: xgrammar compiles with 8 threads by default; on a shared CPU one is fairer and barely slower.
    max_threads = 1

    def _compiler(self, vocab: Vocab, n_vocab: int) -> Any:
        def build() -> Any:
            import xgrammar as xgr

            info = xgr.TokenizerInfo.from_huggingface(
                vocab.tokenizer, vocab_size=n_vocab, stop_token_ids=[_first_eos(vocab)]
            )
            return xgr.GrammarCompiler(info, max_threads=self.max_threads, cache_enabled=False)

        return _prepared(self.name, vocab, n_vocab, build)

    def compile(self, vocab: Vocab, spec: CallSpec, n_vocab: int) -> Any:
        import xgrammar as xgr

        compiler = self._compiler(vocab, n_vocab)
        item, colon = spec.separators
        alternatives = []
        try:
            for name, schema_text in spec.tools:
                args = xgr.Grammar.from_json_schema(
                    schema_text, any_whitespace=False, separators=(item, colon),
                    strict_mode=spec.close_objects,
                )
                call = xgr.Grammar.concat(_xgr_literal(spec.prefix(name)), args, _xgr_literal("}"))
                alternatives.append(call)
            grammar = alternatives[0] if len(alternatives) == 1 else xgr.Grammar.union(*alternatives)
            return compiler.compile_grammar(grammar)
        except RuntimeError as exc:
            raise GrammarError(f"xgrammar refused the grammar: {str(exc)[:500]}") from exc

    def matcher(self, compiled: Any) -> Matcher:
        import xgrammar as xgr

        return _XGRMatcher(xgr.GrammarMatcher(compiled, terminate_without_stop_token=True))

    def fill_batch(self, rows: Sequence[tuple[Matcher, int]], words: np.ndarray) -> None:
        _fill_each(rows, words)


def _xgr_literal(text: str) -> Any:
    import xgrammar as xgr

    return xgr.Grammar.from_ebnf("root ::= " + json.dumps(text, ensure_ascii=True))


class _XGRMatcher:
    __slots__ = ("_buf", "_m")

    def __init__(self, m: Any) -> None:
        self._m = m
        self._buf: Any = None

    def fill(self, words: np.ndarray) -> None:
        import torch

        if self._buf is None or self._buf.data_ptr() != words.ctypes.data:
            self._buf = torch.from_numpy(words).view(1, -1)
        self._m.fill_next_token_bitmask(self._buf, 0)

    def consume(self, token: int) -> bool:
        return bool(self._m.accept_token(token))

    def accepting(self) -> bool:
        return bool(self._m.is_completed())

    def forced(self) -> list[int]:
        return list(self._m.find_jump_forward_tokens())


# ---------------------------------------------------------------------------------------------------------
_REGEX_SPECIAL = frozenset("\\.^$|?*+()[]{}")
#: outlines-core cannot pin separators exactly; it allows at most one space at each JSON whitespace point.
OUTLINES_WHITESPACE = r"[ ]?"


def _regex_escape(text: str) -> str:
    return "".join("\\" + c if c in _REGEX_SPECIAL else ("\\n" if c == "\n" else c) for c in text)


class OutlinesCoreEngine:
    name: EngineName = "outlines"

    def _vocabulary(self, vocab: Vocab, n_vocab: int) -> Any:
        def build() -> Any:
            import outlines_core

            eos = _first_eos(vocab)
            table: dict[bytes, list[int]] = {}
            for i, b in enumerate(vocab.token_bytes[:n_vocab]):
                if b and i != eos:
                    table.setdefault(b, []).append(i)
            return outlines_core.Vocabulary(eos, table)

        return _prepared(self.name, vocab, n_vocab, build)

    def regex(self, spec: CallSpec) -> str:
        from outlines_core.json_schema import build_regex_from_schema

        parts = []
        for name, schema_text in spec.tools:
            try:
                args = build_regex_from_schema(schema_text, OUTLINES_WHITESPACE)
            except (ValueError, TypeError) as exc:
                raise GrammarError(f"outlines-core refused the schema of {name!r}: {str(exc)[:300]}") from exc
            parts.append(_regex_escape(spec.prefix(name)) + "(?:" + args + ")" + _regex_escape("}"))
        return "(?:" + "|".join(parts) + ")"

    def compile(self, vocab: Vocab, spec: CallSpec, n_vocab: int) -> Any:
        import outlines_core

        vocabulary = self._vocabulary(vocab, n_vocab)
        try:
            return outlines_core.Index(self.regex(spec), vocabulary), _first_eos(vocab)
        except (ValueError, TypeError) as exc:
            raise GrammarError(f"outlines-core could not index the grammar: {str(exc)[:300]}") from exc

    def matcher(self, compiled: Any) -> Matcher:
        import outlines_core

        index, eos = compiled
        return _OutlinesMatcher(outlines_core.Guide(index), index, eos)

    def fill_batch(self, rows: Sequence[tuple[Matcher, int]], words: np.ndarray) -> None:
        _fill_each(rows, words)


class _OutlinesMatcher:
    __slots__ = ("_eos", "_guide", "_index")

    def __init__(self, guide: Any, index: Any, eos: int) -> None:
        self._guide = guide
        self._index = index
        self._eos = eos

    def fill(self, words: np.ndarray) -> None:
        self._guide.write_mask_into(words.ctypes.data, words.size, 4)

    def consume(self, token: int) -> bool:
        try:
            self._guide.advance(token, False)
        except (ValueError, RuntimeError):
            return False
        return True

    def accepting(self) -> bool:
        return bool(self._index.is_final_state(self._guide.get_state()))

    def forced(self) -> list[int]:
        out: list[int] = []
        state = self._guide.get_state()
        index, eos = self._index, self._eos
        for _ in range(256):
            if index.is_final_state(state):
                break
            allowed = [t for t in (index.get_allowed_tokens(state) or ()) if t != eos]
            if len(allowed) != 1:
                break
            out.append(allowed[0])
            state = index.get_next_state(state, allowed[0])
            if state is None:  # pragma: no cover - index inconsistency
                break
        return out


ENGINES: dict[str, Engine] = {
    "llguidance": LLGuidanceEngine(),
    "xgrammar": XGrammarEngine(),
    "outlines": OutlinesCoreEngine(),
}


def get_engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown grammar engine {name!r}; choose one of {sorted(ENGINES)}") from None


def mask_words(n_vocab: int) -> np.ndarray:
    return np.zeros(words_for(n_vocab), dtype=np.int32)


def canonical_schema(schema: Any) -> str:
    return json.dumps(schema, sort_keys=False, separators=(",", ":"), ensure_ascii=False)


def spec_for(tools: Sequence[tuple[str, Any]], *, separators: tuple[str, str], close_objects: bool,
             lenient: bool = False) -> CallSpec:
    return CallSpec(tuple((n, canonical_schema(s)) for n, s in tools), separators, close_objects, lenient)


__all__ += ["canonical_schema", "mask_words", "spec_for"]
