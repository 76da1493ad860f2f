"""``ToolCallLogitsProcessor``: grammar-constrained tool calls inside ``model.generate()``.

The processor owns one ``TurnState`` per row of the batch. A step has a grammar half and an apply half:
feed every row the token ``generate()`` appended since the previous step, compute every row's mask (the rows
inside a call in one ``Engine.fill_batch`` call: llguidance's executor, on its threads, without the GIL), then
apply the masks to the logits (``_mask.MaskApplier``, cached plans). A new ``generate()`` call (the sequence
length did not grow by one) starts fresh states; rows that ended (an end-of-turn token) are left alone, so
``generate()`` can pad them.

With ``overlap`` (by default when the model runs on an accelerator) and ``stopping_criteria()`` passed to
``generate()``, the grammar half of step t+1 starts in
the stopping criterion of step t (which ``generate()`` calls once the sampled token is appended and before the
next forward pass): tokens are fed there and the engine's bitmasks are computed on a worker thread while the
model runs the forward pass (``_overlap``), so ``__call__`` only waits (usually not at all) and applies.

Jump-forward needs to append several tokens per model pass, which ``generate()`` cannot do: there, forced
tokens appear as single-token masks (counted in ``stats.forced``). ``LocalGenerator`` runs its own decoding
loop and skips those passes.

Construction compiles the call grammar (cached, with a deadline) and so raises early: ``UnsupportedKeyword``,
``RemoteRefRefused``, ``GrammarCompileTimeout``, ``GrammarError``, ``UsageError`` (an unknown tool name, a
tokenizer without an end-of-turn token).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._choice import parse_tool_choice
from .._exceptions import GrammarError, ToolguardError, UsageError
from .._tools import Tool, ToolSet
from ..engines._keywords import explain_unsatisfiable, prepare_schema
from ._compile import DEFAULT_COMPILE_TIMEOUT, compile_call_grammar
from ._engines import get_engine, spec_for
from ._mask import applier_for
from ._overlap import StepAhead
from ._turn import FORMATS, Mask, TurnGrammar, TurnState
from ._vocab import Vocab, end_token_ids, words_for

__all__ = ["DEFAULT_ENGINE", "DEFAULT_OVERLAP", "DEFAULT_SEPARATORS", "ProcessorStats",
           "ToolCallLogitsProcessor", "build_turn_grammar", "normalize_tool_choice"]

log = logging.getLogger("toolguard.local")

#: Chosen by measurement (benchmarks/RESULTS-grammar.md): llguidance compiles tool sets in about a
#: millisecond (xgrammar: tens of ms cold, outlines-core: seconds to a minute), has the widest JSONSchemaBench
#: coverage, refuses keywords it cannot enforce instead of dropping them, and its masks are fast enough.
DEFAULT_ENGINE = "llguidance"
#: ``"error"``: refuse a schema keyword the engine cannot enforce (``UnsupportedKeyword``). ``"check"``: drop
#: it from the grammar and validate each finished call against the full schema afterwards (LocalGenerator
#: reports failures under ``toolguard.invalid``); for schemas such as ``uniqueItems`` arrays.
Unenforced = Literal["error", "check"]
#: Compute step t+1's engine bitmasks on a worker beside the forward pass of step t+1 (see ``_overlap``):
#: ``None`` = when the model runs on an accelerator (the forward pass leaves the CPU cores idle). On a CPU
#: model torch's forward keeps every core busy: measured on 2 shared cores, llguidance's masks and the forward
#: pass each release the GIL, yet together take as long as one after the other, and the handoff adds to the
#: step (benchmarks/grammar.py, sections ``gil`` and ``decode``). True/False force it.
DEFAULT_OVERLAP: bool | None = None
#: The separators hermes/Qwen chat templates render (``tojson``); no other whitespace is allowed.
DEFAULT_SEPARATORS = (", ", ": ")


@dataclass(slots=True)
class ProcessorStats:
    """Counters over the processor's life: ``steps`` masked rows, ``forced`` rows with one allowed token,
    ``ahead`` rows whose engine bitmask was computed on the worker beside the forward pass; seconds:
    ``mask_seconds`` inside ``__call__`` (the step's critical path: waiting, any grammar work not done ahead,
    and applying), ``advance_seconds`` (feeding tokens: in ``__call__``, or in the stopping criterion with
    overlap), ``fill_seconds`` (the engine's bitmasks, wherever they ran, and the turn automaton's masks),
    ``apply_seconds``, ``wait_seconds`` (blocked on bitmasks started ahead)."""

    steps: int = 0
    forced: int = 0
    ahead: int = 0
    mask_seconds: float = 0.0
    advance_seconds: float = 0.0
    fill_seconds: float = 0.0
    apply_seconds: float = 0.0
    wait_seconds: float = 0.0


def normalize_tool_choice(tool_choice: Any, toolset: ToolSet) -> tuple[str, list[str]]:
    """``(mode, tool names)`` from a request's ``tool_choice`` as ``toolguard._choice.parse_tool_choice``
    reads it ("auto", "required"/"any", "none", a tool name, ``{"type": "function", "function": {...}}``);
    ``UsageError`` for a choice the tools cannot keep."""
    choice = parse_tool_choice(tool_choice, toolset)
    return choice.mode, list(choice.names)


_TOOLSETS: OrderedDict[str, ToolSet] = OrderedDict()
_TOOLS: OrderedDict[str, Tool] = OrderedDict()
#: Tools kept by their JSON entry (validating a schema against its metaschema is most of a first request).
TOOL_CACHE_SIZE = 1024
_GRAMMARS: OrderedDict[tuple[Any, ...], TurnGrammar] = OrderedDict()
#: Tool sets and turn grammars kept for repeated requests (a chat server sees the same tools again and again).
GRAMMAR_CACHE_SIZE = 64
_LOCK = threading.Lock()


def clear_caches() -> None:
    """Forget every cached tool, tool set and turn grammar (and compiled grammar): benchmarks use this to
    measure first requests."""
    from ._compile import clear_cache

    with _LOCK:
        _TOOLS.clear()
        _TOOLSETS.clear()
        _GRAMMARS.clear()
    clear_cache()


def _remember(cache: OrderedDict[Any, Any], key: Any, value: Any, size: int = GRAMMAR_CACHE_SIZE) -> Any:
    with _LOCK:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > size:
            cache.popitem(last=False)
    return value


def as_toolset(tools: Any) -> ToolSet:
    """A ``ToolSet`` from a ``ToolSet`` or an OpenAI tools list (built once per distinct list; each tool once
    per distinct entry, so a request that adds one tool to a known list validates only that one)."""
    if isinstance(tools, ToolSet):
        return tools
    if tools is None:
        return ToolSet()
    tools = list(tools)
    try:
        keys = [json.dumps(entry, sort_keys=True) for entry in tools]
    except (TypeError, ValueError):
        return ToolSet.from_openai(tools)
    key = "[" + ",".join(keys) + "]"
    hit = _TOOLSETS.get(key)
    if hit is not None:
        return hit
    built = []
    for entry_key, entry in zip(keys, tools, strict=True):
        tool = _TOOLS.get(entry_key)
        if tool is None:
            try:
                (tool,) = ToolSet.from_openai([entry])
            except ToolguardError:
                return ToolSet.from_openai(tools)  # raises again, with the entry's index in the message
            _remember(_TOOLS, entry_key, tool, TOOL_CACHE_SIZE)
        built.append(tool)
    toolset: ToolSet = _remember(_TOOLSETS, key, ToolSet(built))
    return toolset


def build_turn_grammar(
    tokenizer: Any,
    toolset: ToolSet | Iterable[Mapping[str, Any]] | None,
    tool_choice: Any = "auto",
    *,
    engine: str = DEFAULT_ENGINE,
    format: str = "hermes",
    parallel_tool_calls: bool = False,
    max_calls: int | None = None,
    end_ids: Sequence[int] = (),
    max_string_length: int | None = None,
    close_objects: bool = True,
    separators: tuple[str, str] = DEFAULT_SEPARATORS,
    compile_timeout: float | None = DEFAULT_COMPILE_TIMEOUT,
    unenforced: Unenforced = "error",
) -> TurnGrammar:
    """Prepare the schemas, compile the call grammar (cached) and return the shared ``TurnGrammar``.

    The result is cached by every argument, so a repeated request costs a dictionary lookup."""
    key: tuple[Any, ...] | None = None
    try:
        tools_key = (json.dumps(toolset.to_openai(), sort_keys=True) if isinstance(toolset, ToolSet)
                     else json.dumps(list(toolset or ()), sort_keys=True))
        choice_key = json.dumps(tool_choice, sort_keys=True, default=repr)
        key = (id(tokenizer), tools_key, choice_key, engine, format, parallel_tool_calls, max_calls,
               tuple(end_ids), max_string_length, close_objects, separators,
               unenforced)
    except (TypeError, ValueError):
        key = None
    if key is not None:
        hit = _GRAMMARS.get(key)
        if hit is not None and hit.vocab.tokenizer is tokenizer:
            return hit
    grammar = _build_turn_grammar(
        tokenizer, toolset, tool_choice, engine=engine, format=format,
        parallel_tool_calls=parallel_tool_calls, max_calls=max_calls, end_ids=end_ids,
        max_string_length=max_string_length, close_objects=close_objects, separators=separators,
        compile_timeout=compile_timeout, unenforced=unenforced,
    )
    return grammar if key is None else _remember(_GRAMMARS, key, grammar)


def _build_turn_grammar(
    tokenizer: Any,
    toolset: Any,
    tool_choice: Any,
    *,
    engine: str,
    format: str,
    parallel_tool_calls: bool,
    max_calls: int | None,
    end_ids: Sequence[int],
    max_string_length: int | None,
    close_objects: bool,
    separators: tuple[str, str],
    compile_timeout: float | None,
    unenforced: Unenforced,
) -> TurnGrammar:
    if format not in FORMATS:
        raise UsageError(f"format must be one of {sorted(FORMATS)}, not {format!r}")
    tools = as_toolset(toolset)
    mode, names = normalize_tool_choice(tool_choice, tools)
    vocab = Vocab.of(tokenizer)
    eng = get_engine(engine)
    if unenforced not in ("error", "check"):
        raise UsageError(f"unenforced must be 'error' or 'check', not {unenforced!r}")
    compiled = None
    dropped: dict[str, list[str]] = {}
    uncallable: dict[str, str] = {}
    if mode != "none":
        prepared = []
        for name in names:
            lost: list[str] | None = [] if unenforced == "check" else None
            prepared.append((name, prepare_schema(tools[name].parameters, engine=engine, tool=name,
                                                  max_string_length=max_string_length,
                                                  close_objects=close_objects, unenforced=lost,
                                                  strip_annotations=True)))
            if lost:
                dropped[name] = lost
        opts: dict[str, Any] = dict(separators=separators, close_objects=close_objects,
                                    lenient=unenforced == "check")
        try:
            compiled = compile_call_grammar(eng, vocab, spec_for(prepared, **opts), vocab.size,
                                            timeout=compile_timeout)
        except GrammarError as exc:
            if not _unsatisfiable(exc):
                raise
            uncallable = _uncallable(eng, vocab, tools, prepared, opts, compile_timeout, exc)
            prepared = [(name, schema) for name, schema in prepared if name not in uncallable]
            if not prepared and mode == "auto":
                mode = "none"  # free text only: no call could be valid
            elif not prepared:
                reasons = "; ".join(f"{n!r}: {why}" for n, why in uncallable.items())
                raise GrammarError(f"no tool can be called, no arguments satisfy their schemas: {reasons}"
                                   ) from exc
            else:
                compiled = compile_call_grammar(eng, vocab, spec_for(prepared, **opts), vocab.size,
                                                timeout=compile_timeout)
    ends = tuple(end_ids) or end_token_ids(tokenizer)
    if max_calls is not None and max_calls < 1:
        raise UsageError("max_calls must be at least 1")
    grammar = TurnGrammar(vocab, eng, compiled, mode, FORMATS[format], parallel_tool_calls,  # type: ignore[arg-type]
                          ends, vocab.size, max_calls)
    grammar.unenforced = dropped
    grammar.uncallable = uncallable
    grammar.toolset = tools
    return grammar


def _unsatisfiable(exc: GrammarError) -> bool:
    return "Unsatisfiable schema" in str(exc)


def _uncallable(eng: Any, vocab: Vocab, tools: ToolSet, prepared: list[tuple[str, Any]], opts: dict[str, Any],
                timeout: float | None, union_error: GrammarError) -> dict[str, str]:
    """The tools whose arguments no value satisfies (each compiled alone; only after the union failed), with
    the reason: ``explain_unsatisfiable`` on the tool's own schema, else the engine's message. A union of
    one tool is that tool's grammar: its error is reused, not compiled again."""
    out: dict[str, str] = {}
    for name, schema in prepared:
        try:
            if len(prepared) == 1:
                raise union_error
            compile_call_grammar(eng, vocab, spec_for([(name, schema)], **opts), vocab.size, timeout=timeout)
        except GrammarError as exc:
            if not _unsatisfiable(exc):
                raise
            why = explain_unsatisfiable(tools[name].parameters) or explain_unsatisfiable(schema)
            out[name] = why or str(exc).split("\n", 1)[0]
    if out:
        log.warning("tools left out of the grammar, no arguments satisfy their schemas: %s",
                    "; ".join(f"{n!r}: {why}" for n, why in out.items()))
    return out


class ToolCallLogitsProcessor:
    """A transformers ``LogitsProcessor`` that constrains each row to one well-formed assistant turn.

    ``tool_choice``: ``"auto"`` (free text, or calls once the model opens one), ``"required"`` (calls only),
    ``"none"`` (text that never opens a call) or a tool name. ``format``: ``"hermes"``
    (``<tool_call>\\n{...}\\n</tool_call>``) or ``"json"`` (the bare call object; a list with
    ``parallel_tool_calls``, at most ``max_calls`` of them). End-of-turn ids: ``end_token_ids``, else every
    eos id declared by the tokenizer and by ``generation_config`` (a ``GenerationConfig``, config or model).
    ``max_string_length`` caps free strings;
    ``close_objects`` forbids properties a schema does not list (default on: models cannot invent arguments).
    ``unenforced``: ``"error"`` (default) or ``"check"`` (see ``Unenforced``).
    """

    #: The clock of ``stats`` (benchmarks set ``time.thread_time`` to count this thread's CPU time only).
    clock: Callable[[], float] = staticmethod(time.perf_counter)

    def __init__(
        self,
        tokenizer: Any,
        toolset: ToolSet | Iterable[Mapping[str, Any]] | None,
        tool_choice: Any = "auto",
        *,
        engine: str = DEFAULT_ENGINE,
        format: str = "hermes",
        parallel_tool_calls: bool = False,
        max_calls: int | None = None,
        end_token_ids: Sequence[int] | None = None,
        generation_config: Any = None,
        max_string_length: int | None = None,
        close_objects: bool = True,
        separators: tuple[str, str] = DEFAULT_SEPARATORS,
        compile_timeout: float | None = DEFAULT_COMPILE_TIMEOUT,
        unenforced: Unenforced = "error",
        overlap: bool | None = DEFAULT_OVERLAP,
    ) -> None:
        ends = tuple(end_token_ids) if end_token_ids else _end_ids(tokenizer, generation_config)
        self.grammar = build_turn_grammar(
            tokenizer, toolset, tool_choice, engine=engine, format=format,
            parallel_tool_calls=parallel_tool_calls, max_calls=max_calls, end_ids=ends,
            max_string_length=max_string_length, close_objects=close_objects, separators=separators,
            compile_timeout=compile_timeout, unenforced=unenforced,
        )
        self.overlap = overlap
        self.states: list[TurnState] = []
        self.stats = ProcessorStats()
        self.applier = applier_for(self.grammar.n_vocab)
        self._length = -1
        self._words = np.zeros((0, words_for(self.grammar.n_vocab)), dtype=np.int32)
        self._masks: list[Mask] = []
        self._ahead = StepAhead()
        self._pending: Future[frozenset[int]] | None = None
        self._ready: frozenset[int] = frozenset()

    @property
    def end_token_ids(self) -> tuple[int, ...]:
        return self.grammar.end_ids

    def reset(self) -> None:
        """Forget the per-row states (the next call starts a new turn)."""
        self._settle()
        self.states = []
        self._length = -1

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        clock = self.clock
        start = clock()
        batch, length = input_ids.shape
        filled = self._settle()
        if length != self._length or len(self.states) != batch:  # nothing prepared for this step
            self._advance(_last_tokens(input_ids), batch, length)
            filled = self._fill(self._engine_rows())
        t = clock()
        masks = self._masks = [st.mask(filled=i in filled) for i, st in enumerate(self.states)]
        t1 = clock()
        self.applier.apply_batch(scores, masks)
        end = clock()
        stats = self.stats
        stats.fill_seconds += t1 - t
        stats.apply_seconds += end - t1
        stats.steps += batch
        stats.forced += sum(m.kind == "single" for m in masks)
        stats.mask_seconds += end - start
        return scores

    # ---- the grammar's half of a step ----------------------------------------------------------------------
    def _advance(self, tokens: list[int], batch: int, length: int) -> None:
        """Feed each row the token appended since the last step, or start new rows (a new ``generate()``
        call: the sequence length did not grow by one)."""
        t0 = self.clock()
        states = self.states
        if len(states) != batch or length != self._length + 1:
            states = self.states = [self.grammar.new_state() for _ in range(batch)]
            self._words = np.zeros((batch, self._words.shape[1]), dtype=np.int32)
            for state, row in zip(states, self._words, strict=True):
                state.use_buffer(row)
        else:
            for state, token in zip(states, tokens, strict=True):
                if state.phase != "done":
                    state.advance(token)
        self._length = length
        self.stats.advance_seconds += self.clock() - t0

    def _engine_rows(self) -> list[tuple[Any, int]]:
        return [(m, i) for i, state in enumerate(self.states) if (m := state.engine_matcher) is not None]

    def _fill(self, rows: list[tuple[Any, int]]) -> frozenset[int]:
        """The engine's bitmasks of ``rows`` (one batch call) into the rows' buffers: the part of a step that
        runs without the GIL. Returns the rows filled."""
        if rows:
            t0 = self.clock()
            self.grammar.engine.fill_batch(rows, self._words)
            self.stats.fill_seconds += self.clock() - t0
        return frozenset(i for _, i in rows)

    def _step_ahead(self, tokens: list[int], batch: int, length: int) -> None:
        """Called once the sampled tokens are known: advance the rows here, and start the engine's bitmasks on
        the worker, where they compute while the model runs the next forward pass."""
        if length == self._length and len(self.states) == batch:
            return  # this step is already prepared (the criterion was called twice)
        self._settle()
        self._advance(tokens, batch, length)
        rows = self._engine_rows()
        if rows:  # free text and framing masks are table lookups: nothing worth a thread
            self._pending = self._ahead.submit(self._fill, rows)
            self.stats.ahead += len(rows)
        else:
            self._pending = None
            self._ready = frozenset()

    def _settle(self) -> frozenset[int]:
        """Wait for the bitmasks started ahead; the rows they filled."""
        pending, self._pending = self._pending, None
        if pending is None:
            ready, self._ready = self._ready, frozenset()
            return ready
        filled, blocked = self._ahead.wait(pending)
        self.stats.wait_seconds += blocked
        return filled  # type: ignore[no-any-return]

    def stopping_criteria(self) -> Any:
        """A ``StoppingCriteria`` that ends each row at its first end-of-turn token (for when the grammar's
        end ids are not all in ``generation_config.eos_token_id``) and, with ``overlap``, starts the grammar's
        work for the next step on a worker thread so that it runs beside the next forward pass (``generate()``
        calls stopping criteria after appending the sampled token and before the next forward pass)."""
        from transformers import StoppingCriteria

        ends = frozenset(self.grammar.end_ids)
        proc = self

        class _TurnOver(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                import torch

                last = _last_tokens(input_ids)
                if proc.overlap or (proc.overlap is None and input_ids.device.type != "cpu"):
                    proc._step_ahead(last, *input_ids.shape)
                return torch.tensor([t in ends for t in last], dtype=torch.bool, device=input_ids.device)

        return _TurnOver()


def _last_tokens(input_ids: Any) -> list[int]:
    last = input_ids[:, -1]
    return (last if last.device.type == "cpu" else last.cpu()).tolist()  # type: ignore[no-any-return]


def _end_ids(tokenizer: Any, generation_config: Any) -> tuple[int, ...]:
    if generation_config is None:
        return end_token_ids(tokenizer)
    return end_token_ids(tokenizer, generation_config)
