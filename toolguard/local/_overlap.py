"""Compute the next decode step's grammar masks beside the model's forward pass.

The mask of step t+1 depends only on the tokens up to step t, which are known before the forward pass of
step t+1 starts; only applying the mask needs that pass's logits. So a decoder can hand "advance the
grammar and compute the next masks" to a worker thread as soon as it has sampled a token, run the forward
pass, and then wait for the masks, leaving only the application on the step's critical path. The two run
at the same time because torch releases the GIL inside its kernels and llguidance computes masks without it
(measured in ``benchmarks/grammar.py``: the overlap section); the Python glue on both sides still takes
turns on the GIL, and on a machine with no idle core the threads only take turns.

``StepAhead`` is one daemon-like worker thread (a single-thread pool, created on first use) per decoder:
``submit(fn, *args)`` returns a ``Future``; ``wait(future)`` returns its result and the seconds the caller
spent blocked on it (what the overlap did not hide), re-raising the worker's exception. The worker never
touches a decoder's state while the decoder does: the decoder submits, runs its forward pass (which reads no
grammar state), then waits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["StepAhead"]


class StepAhead:
    """A one-thread worker for the next step's grammar work (see the module docstring)."""

    def __init__(self, name: str = "toolguard-mask") -> None:
        self._name = name
        self._pool: ThreadPoolExecutor | None = None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
        return self._pool.submit(fn, *args)

    @staticmethod
    def wait(future: Future[Any]) -> tuple[Any, float]:
        """``(result, seconds blocked)``; re-raises what ``fn`` raised."""
        if future.done():
            return future.result(), 0.0
        t0 = time.perf_counter()
        result = future.result()
        return result, time.perf_counter() - t0

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        pool = self._pool
        if pool is not None:
            pool.shutdown(wait=False)
