"""One driver pair for every sans-IO generator flow: ``drive(flow, perform)`` and ``adrive(flow, aperform)``.

Theory of operation. toolguard's decisions are written once, as generators that yield what must be done
(an upstream attempt, a backoff, a tool run, a model request) and receive what came of it (httpx's
``Auth.auth_flow`` shape): ``RetryFlow.run``, the executor's retry flow, the agent loop. A door only does the
I/O: ``perform(action)`` (or ``await aperform(action)``) turns one action into its outcome, and these two
functions are the only loops that pass outcomes back, so sync and async twins differ in their ``perform``
alone. The flow's return value is returned; an exception from ``perform`` propagates after the flow is
closed (its ``finally`` blocks run, an open trace span ends). O(1) per step beyond ``perform``.

Streams that hand items to their caller while the flow runs (``GuardedStream``) cannot use a callback: a sync
one delegates with ``drive_iter`` (``perform`` is itself a generator of items that returns the outcome); an
async generator has no ``yield from``, so ``AsyncGuardedStream`` keeps its own loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

__all__ = ["adrive", "drive", "drive_iter"]

A = TypeVar("A")
O = TypeVar("O")  # noqa: E741
R = TypeVar("R")
Y = TypeVar("Y")


def drive(flow: Generator[A, O | None, R], perform: Callable[[A], O]) -> R:
    """Run ``flow`` to its end, answering each action with ``perform(action)``; return its value."""
    try:
        action = next(flow)
        while True:
            action = flow.send(perform(action))
    except StopIteration as stop:
        result: R = stop.value
        return result
    finally:
        flow.close()


async def adrive(flow: Generator[A, O | None, R], aperform: Callable[[A], Awaitable[O]]) -> R:
    """The async twin of ``drive``: each action is answered with ``await aperform(action)``."""
    try:
        action = next(flow)
        while True:
            action = flow.send(await aperform(action))
    except StopIteration as stop:
        result: R = stop.value
        return result
    finally:
        flow.close()


def drive_iter(
    flow: Generator[A, O | None, R], perform: Callable[[A], Generator[Y, Any, O]]
) -> Generator[Y, Any, R]:
    """``drive`` for a stream: ``perform(action)`` yields items for the caller and returns the outcome."""
    try:
        action = next(flow)
        while True:
            outcome = yield from perform(action)
            action = flow.send(outcome)
    except StopIteration as stop:
        result: R = stop.value
        return result
    finally:
        flow.close()
