"""Compile call grammars once, with a deadline, and keep them.

Grammar compilation can take from a millisecond (llguidance) to most of a minute (outlines-core indexing a
5-tool union over a 128k vocabulary), and no engine can be interrupted. ``compile_call_grammar`` runs the
compile in a daemon worker thread and waits at most ``timeout`` seconds; past the deadline it raises
``GrammarCompileTimeout`` and leaves the worker to finish in the background, where its result lands in the
cache so a later request with the same key gets it at once. Concurrent requests for the same key share one
compile. Every engine here releases the GIL while compiling, so the deadline is kept. llguidance, whose own
limits bound a compile well below the default deadline, compiles in the caller's thread instead
(``INLINE_COMPILE_BOUND``).

The cache is keyed by (engine, tokenizer fingerprint, vocabulary size, grammar spec) and holds up to
``DEFAULT_CACHE_SIZE`` compiled grammars, least recently used first out.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .._exceptions import GrammarCompileTimeout
from ._engines import CallSpec, Engine
from ._vocab import Vocab

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_COMPILE_TIMEOUT",
    "INLINE_COMPILE_BOUND",
    "CompileStats",
    "clear_cache",
    "compile_call_grammar",
]

#: Seconds a compile may take before ``GrammarCompileTimeout``. llguidance and xgrammar need milliseconds for
#: tool sets; outlines-core at a 128k vocabulary needs 40-56 s for a 5-tool union and hits this limit.
DEFAULT_COMPILE_TIMEOUT = 10.0
#: Engines whose own limits bound a compile (llguidance's ``LLParserLimits``: grammar size, lexer fuel; about
#: a second for "extremely complex grammars", its docs say) compile in the caller's thread when the deadline
#: is at least this many seconds: handing the work to a thread and back measured +2 ms p50, +9 ms p99 on the
#: real tool sets on a busy machine (benchmarks/grammar.py). Shorter deadlines get the thread.
INLINE_COMPILE_BOUND: dict[str, float] = {"llguidance": 2.0}
DEFAULT_CACHE_SIZE = 128


@dataclass(slots=True)
class CompileStats:
    hits: int = 0
    misses: int = 0
    timeouts: int = 0
    seconds: float = 0.0


STATS = CompileStats()
_CACHE: OrderedDict[tuple[str, str, int, str], Any] = OrderedDict()
_INFLIGHT: dict[tuple[str, str, int, str], _Job] = {}
_LOCK = threading.Lock()


class _Job:
    __slots__ = ("done", "error", "result", "seconds")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.seconds = 0.0


def clear_cache() -> None:
    """Forget every compiled grammar (tests and benchmarks use this to measure cold compiles)."""
    with _LOCK:
        _CACHE.clear()


def compile_call_grammar(
    engine: Engine,
    vocab: Vocab,
    spec: CallSpec,
    n_vocab: int,
    *,
    timeout: float | None = DEFAULT_COMPILE_TIMEOUT,
) -> Any:
    """The compiled grammar for ``spec``, from the cache or compiled now (see the module docstring).

    Raises ``GrammarCompileTimeout`` past ``timeout`` seconds (``None``: wait forever), and whatever the
    engine adapter raises (``UnsupportedKeyword``, ``GrammarError``).
    """
    key = (engine.name, vocab.fingerprint, n_vocab, spec.key)
    bound = INLINE_COMPILE_BOUND.get(engine.name)
    inline = bound is not None and (timeout is None or timeout >= bound)
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            STATS.hits += 1
            return _CACHE[key]
        job = _INFLIGHT.get(key)
        mine = job is None
        if mine:
            job = _INFLIGHT[key] = _Job()
            STATS.misses += 1
            if not inline:
                worker = threading.Thread(
                    target=_run, args=(job, key, engine, vocab, spec, n_vocab), name="toolguard-compile",
                    daemon=True,
                )
                worker.start()
    assert job is not None
    if mine and inline:  # no thread to hand the work to and back: on a busy machine that costs milliseconds
        _run(job, key, engine, vocab, spec, n_vocab)
    if not job.done.wait(timeout):
        with _LOCK:
            STATS.timeouts += 1
        raise GrammarCompileTimeout(
            f"compiling the {engine.name} grammar for {len(spec.tools)} tool(s) took more than {timeout:g} s;"
            " it goes on in the background and will be cached. Raise compile_timeout, or use the llguidance "
            "engine, which compiles tool sets in milliseconds."
        )
    if job.error is not None:
        raise job.error
    return job.result


def _run(job: _Job, key: tuple[str, str, int, str], engine: Engine, vocab: Vocab, spec: CallSpec,
         n_vocab: int) -> None:
    start = time.perf_counter()
    try:
        job.result = engine.compile(vocab, spec, n_vocab)
    except BaseException as exc:  # handed to the waiting caller
        job.error = exc
    job.seconds = time.perf_counter() - start
    with _LOCK:
        STATS.seconds += job.seconds
        if job.error is None:
            _CACHE[key] = job.result
            while len(_CACHE) > DEFAULT_CACHE_SIZE:
                _CACHE.popitem(last=False)
        _INFLIGHT.pop(key, None)
    job.done.set()
