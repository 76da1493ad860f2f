"""The sync and async drivers of the re-ask flow for OpenAI-compatible clients.

Each driver does only I/O: it runs ``RetryFlow.run()`` (``toolguard._reask``), sends each ``Attempt`` with the
raw client, feeds what comes back into the attempt's Guard (non-stream: the whole message; stream: through a
``ChunkPump``), sleeps on ``Backoff`` and hands the outcome back through ``toolguard._drive`` (``drive``,
``adrive``, ``drive_iter``), so the sync and async twins differ only in their ``perform``; all decisions live
in the flow and the pump. ``AsyncGuardedStream`` keeps its own loop: an async generator cannot delegate with
``yield from``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, Callable, Generator
from dataclasses import dataclass
from typing import Any

from .._drive import adrive, drive, drive_iter
from .._guard import GuardVerdict
from .._openai import completion_tokens, first_choice
from .._reask import Attempt, Backoff, Completed, FlowEvent, FlowResult, Outcome, RetryFlow
from ._delivered import delivered
from ._pump import ChunkPump, new_gate, upstream_failure

__all__ = ["AsyncGuardedStream", "GuardReport", "GuardedStream", "guard_report"]

REPORT_ATTRIBUTE = "_toolguard_report"


@dataclass(frozen=True, slots=True)
class GuardReport:
    """What happened to one request: every attempt, every flow event, the final verdict."""

    verdict: GuardVerdict
    attempts: tuple[Any, ...]
    events: tuple[FlowEvent, ...]

    @classmethod
    def of(cls, result: FlowResult) -> GuardReport:
        return cls(result.guard.verdict, result.attempts, result.events)


def guard_report(obj: Any) -> GuardReport | None:
    """The ``GuardReport`` of a result returned by a wrapped client (``ChatCompletion`` or a stream)."""
    report = getattr(obj, REPORT_ATTRIBUTE, None)
    if report is None and isinstance(obj, GuardedStream | AsyncGuardedStream):
        report = obj.report
    if report is None and hasattr(obj, "_raw_stream"):  # the SDK's stream helper around a guarded stream
        report = getattr(obj._raw_stream, REPORT_ATTRIBUTE, None)
    return report


def _attach(obj: Any, report: GuardReport) -> None:
    # A dict or a slotted object cannot carry it: the report then stays with on_event.
    with contextlib.suppress(AttributeError, TypeError):
        object.__setattr__(obj, REPORT_ATTRIBUTE, report)


def _feed_completion(attempt: Attempt, completion: Any) -> Completed:
    message, finish_reason = first_choice(completion)
    attempt.guard.feed_message(message, finish_reason)
    usage = completion.get("usage") if isinstance(completion, dict) else completion.usage
    return Completed(completion, completion_tokens(usage))


# ------------------------------------------------------------------------------------------------ sync
def create_sync(create: Callable[..., Any], flow: RetryFlow) -> Any:
    """Run the flow for a non-stream request with ``create(**body)``; return the accepted response."""

    def perform(action: Attempt | Backoff) -> Outcome:
        if isinstance(action, Backoff):
            time.sleep(action.seconds)
            return None
        try:
            completion = create(**action.body)
        except Exception as exc:
            failure = upstream_failure(exc)
            if failure is None:
                raise
            return failure
        return _feed_completion(action, completion)

    return _delivered(drive(flow.run(), perform))


class GuardedStream:
    """A guarded stream of ``ChatCompletionChunk``: iterate it like the SDK's ``Stream``.

    ``close()`` (or leaving a ``with`` block) closes the upstream stream. ``report`` is the ``GuardReport``
    once the stream ended; ``events`` lists the flow's events so far.
    """

    def __init__(self, create: Callable[..., Any], flow: RetryFlow) -> None:
        self._create = create
        self._flow = flow
        self.report: GuardReport | None = None
        self._iterator = self._run()

    @property
    def events(self) -> list[FlowEvent]:
        return self._flow.events

    def __iter__(self) -> GuardedStream:
        return self

    def __next__(self) -> Any:
        return next(self._iterator)

    def __enter__(self) -> GuardedStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._iterator.close()

    def _run(self) -> Generator[Any, None, None]:
        flow = self._flow
        gate = new_gate(flow)
        pump: ChunkPump | None = None

        def perform(action: Attempt | Backoff) -> Generator[Any, None, Outcome]:
            nonlocal pump
            if isinstance(action, Backoff):
                time.sleep(action.seconds)
                return None
            pump = ChunkPump(action.guard, gate)
            try:
                upstream = self._create(**action.body)
            except Exception as exc:
                failure = upstream_failure(exc)
                if failure is None:
                    raise
                return failure
            try:
                for chunk in upstream:
                    yield from pump.on_chunk(chunk)
                    if pump.stop:
                        break
            except Exception as exc:
                failure = upstream_failure(exc)
                if failure is None:
                    raise
                return failure
            finally:
                upstream.close()
            return pump.completed()

        result: FlowResult = yield from drive_iter(flow.run(), perform)
        self.report = GuardReport.of(result)
        if pump is not None:
            yield from pump.flush()


# ------------------------------------------------------------------------------------------------ async
async def create_async(create: Callable[..., Any], flow: RetryFlow) -> Any:
    """The async twin of ``create_sync``: only ``aperform`` differs."""
    import anyio

    async def aperform(action: Attempt | Backoff) -> Outcome:
        if isinstance(action, Backoff):
            await anyio.sleep(action.seconds)
            return None
        try:
            completion = await create(**action.body)
        except Exception as exc:
            failure = upstream_failure(exc)
            if failure is None:
                raise
            return failure
        return _feed_completion(action, completion)

    return _delivered(await adrive(flow.run(), aperform))


def _delivered(result: FlowResult) -> Any:
    """The accepted response as the caller gets it, with its ``GuardReport`` attached."""
    response = delivered(result.response, result.guard)
    _attach(response, GuardReport.of(result))
    return response


class AsyncGuardedStream:
    """The async twin of ``GuardedStream`` (``async for``, ``await close()``, ``async with``)."""

    def __init__(self, create: Callable[..., Any], flow: RetryFlow) -> None:
        self._create = create
        self._flow = flow
        self.report: GuardReport | None = None
        self._iterator = self._run()

    @property
    def events(self) -> list[FlowEvent]:
        return self._flow.events

    def __aiter__(self) -> AsyncGuardedStream:
        return self

    async def __anext__(self) -> Any:
        return await self._iterator.__anext__()

    async def __aenter__(self) -> AsyncGuardedStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._iterator.aclose()

    async def aclose(self) -> None:
        await self.close()

    async def _run(self) -> AsyncGenerator[Any, None]:
        import anyio

        flow = self._flow
        gen = flow.run()
        action = next(gen)
        pump: ChunkPump | None = None
        gate = new_gate(flow)
        while True:
            outcome: Outcome = None
            if isinstance(action, Backoff):
                await anyio.sleep(action.seconds)
            else:
                pump = ChunkPump(action.guard, gate)
                try:
                    upstream = await self._create(**action.body)
                except Exception as exc:
                    outcome = upstream_failure(exc)
                    if outcome is None:
                        raise
                else:
                    try:
                        async for chunk in upstream:
                            for out in pump.on_chunk(chunk):
                                yield out
                            if pump.stop:
                                break
                    except Exception as exc:
                        outcome = upstream_failure(exc)
                        if outcome is None:
                            raise
                    finally:
                        await upstream.close()
                    if outcome is None:
                        outcome = pump.completed()
            try:
                action = gen.send(outcome)
            except StopIteration as stop:
                self.report = GuardReport.of(stop.value)
                if pump is not None:
                    for out in pump.flush():
                        yield out
                return
