"""Executor and AsyncExecutor: turn proposals into execution records, safely.

Theory of operation
-------------------
``execute(call)`` answers every proposal with an ``ExecutionRecord`` and never raises for model mistakes or
tool failures:

1. **Check before running.** Unknown tool, malformed JSON, arguments outside the schema, values pydantic
   refuses: status ``"invalid"``, a message the model can act on, and the tool is not called.
2. **Run with a deadline.** The sync executor runs the tool in a daemon worker thread and stops *waiting* at
the
   timeout. A Python thread cannot be killed: the tool may still finish (or act) later, which is exactly why a
   timeout is reported as ``"timeout"`` (outcome unknown) and not as a failure that is safe to repeat. The
   async executor awaits coroutine tools with ``asyncio.wait_for`` (a real cancellation) and runs sync tools
   in a daemon thread it stops waiting for.
3. **Retry only what is safe** (``RetryPolicy``): an ambiguous failure (timeout, dropped connection) is
retried
   only for tools marked ``idempotent``; a failure proving nothing happened (connection refused) is retried
   for any tool; other exceptions are reported at once.
4. **Say only what is safe.** Exception text is sanitised (no tracebacks, secrets redacted, bounded) before it
   becomes ``record.error``; results are serialised and bounded into ``record.content``.
5. **Once per call id.** A proposal whose ``id`` was already executed returns the first record (concurrent
   duplicates wait for it); the same id with different content is refused as invalid.

The attempt/retry decisions are written once, as a generator (``_flow``) that yields ``_Run`` and ``_Sleep``
requests; ``Executor`` and ``AsyncExecutor`` only perform them.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import datetime
import enum
import inspect
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ._arguments import ArgumentChecker
from ._drive import adrive, drive
from ._exceptions import ToolError
from ._records import ExecutionRecord, ExecutionStatus
from ._retry import RetryPolicy
from ._sanitize import DEFAULT_MAX_ERROR_CHARS, describe_exception
from ._tools import Tool, ToolCall, ToolSet

if TYPE_CHECKING:
    import asyncio

# Public names; the DEFAULT_* caps stay importable from here.
__all__ = ["AsyncExecutor", "ExecutionRecord", "Executor", "RetryPolicy"]

DEFAULT_TOOL_TIMEOUT = 30.0  # seconds; a tool's own ``timeout`` wins
DEFAULT_MAX_RESULT_CHARS = 20_000  # characters of a result that reach the model
DEFAULT_MAX_REMEMBERED_CALLS = 4096  # call ids remembered for once-only execution


# the flow's requests and the drivers' answers ------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Run:
    tool: Tool
    kwargs: dict[str, Any]
    timeout: float | None


@dataclass(frozen=True, slots=True)
class _Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class _Outcome:
    kind: Literal["ok", "raised", "timeout"]
    value: Any = None
    exception: BaseException | None = None


_Flow = Generator["_Run | _Sleep", "_Outcome | None", ExecutionRecord]


class _BaseExecutor:
    """Everything that does no I/O: checks, retry decisions, messages, the once-per-id memory."""

    def __init__(
        self,
        toolset: ToolSet | Iterable[Tool | Callable[..., Any]],
        *,
        retry: RetryPolicy | None = None,
        timeout: float | None = DEFAULT_TOOL_TIMEOUT,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
        max_error_chars: int = DEFAULT_MAX_ERROR_CHARS,
    ) -> None:
        self.toolset = toolset if isinstance(toolset, ToolSet) else ToolSet(toolset)
        missing = [t.name for t in self.toolset if t.fn is None]
        if missing:
            raise ToolError(
                f"tools without an implementation cannot be executed: {', '.join(missing)}; "
                "give them one with ToolSet.bind({name: function})"
            )
        if timeout is not None and not timeout > 0:
            raise ToolError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
        self.retry = retry if retry is not None else RetryPolicy()
        self.timeout = timeout
        self.max_result_chars = max_result_chars
        self.max_error_chars = max_error_chars
        self._checker = ArgumentChecker(self.toolset)
        self._records: OrderedDict[str, ExecutionRecord] = OrderedDict()

    # once per call id --------------------------------------------------------------------------------
    def _remembered(self, call: ToolCall) -> ExecutionRecord | None:
        if call.id is None:
            return None
        record = self._records.get(call.id)
        if record is None or (record.call.name, record.call.arguments) == (call.name, call.arguments):
            return record
        return self._invalid(
            call,
            f"the call id {call.id!r} was already used for a different call ({record.call.name}); "
            "every call needs its own id",
        )

    def _remember(self, record: ExecutionRecord) -> None:
        if record.call.id is None:
            return
        self._records[record.call.id] = record
        while len(self._records) > DEFAULT_MAX_REMEMBERED_CALLS:
            self._records.popitem(last=False)

    # the flow -----------------------------------------------------------------------------------------------
    def _flow(self, call: ToolCall) -> _Flow:
        tool = self.toolset.get(call.name)
        if tool is None:
            known = ", ".join(self.toolset.names) or "(none)"
            return self._invalid(
                call, f"there is no tool named {call.name!r}; the available tools are: {known}"
            )
        kwargs, problem = self._checker.check(tool, call.arguments)
        if kwargs is None:
            return self._invalid(call, f"{problem}. The tool was not run; correct the call and try again")
        timeout = tool.timeout if tool.timeout is not None else self.timeout
        attempt = 0
        while True:
            attempt += 1
            outcome = yield _Run(tool, kwargs, timeout)
            assert outcome is not None
            if outcome.kind == "ok":
                return self._record(call, "ok", attempt, result=outcome.value)
            exc = outcome.exception
            timed_out = outcome.kind == "timeout" or isinstance(exc, TimeoutError)
            if self.retry.should_retry(
                None if outcome.kind == "timeout" else exc, idempotent=tool.idempotent, attempt=attempt
            ):
                yield _Sleep(self.retry.delay(attempt))
                continue
            if timed_out:
                return self._record(
                    call, "timeout", attempt, error=self._timeout_message(tool, timeout, exc), exception=exc
                )
            return self._record(
                call, "error", attempt, error=self._error_message(tool, exc, attempt), exception=exc
            )

    def _timeout_message(self, tool: Tool, timeout: float | None, exc: BaseException | None) -> str:
        if exc is None or not str(exc):
            what = f"no result within {timeout:g} s" if timeout is not None else "the tool timed out"
        else:
            what = describe_exception(exc, max_chars=200)
        tail = (
            "it was not retried because the tool is not marked idempotent"
            if not tool.idempotent
            else "retries were used up"
        )
        return f"{what}; the outcome is unknown (the action may or may not have happened), and {tail}"

    def _error_message(self, tool: Tool, exc: BaseException | None, attempt: int) -> str:
        assert exc is not None
        message = describe_exception(exc, max_chars=self.max_error_chars)
        if attempt > 1:
            message += f" (after {attempt} attempts)"
        elif self.retry.is_transient(exc) and not tool.idempotent and self.retry.attempts > 1:
            message += " (not retried: the tool is not marked idempotent and the outcome is unknown)"
        return message

    # records ------------------------------------------------------------------------------------------------
    def _invalid(self, call: ToolCall, message: str) -> ExecutionRecord:
        error = (
            message if len(message) <= 2 * self.max_error_chars else message[: 2 * self.max_error_chars] + "…"
        )
        return ExecutionRecord(
            call=call, status="invalid", error=error, content=f"Invalid call to {call.name!r}: {error}"
        )

    def _record(
        self,
        call: ToolCall,
        status: ExecutionStatus,
        attempts: int,
        *,
        result: Any = None,
        error: str | None = None,
        exception: BaseException | None = None,
    ) -> ExecutionRecord:
        if status == "ok":
            content = _serialise(result, self.max_result_chars)
        elif status == "timeout":
            content = f"Tool {call.name!r} timed out: {error}"
        else:
            content = f"Tool {call.name!r} failed: {error}"
        return ExecutionRecord(
            call=call,
            status=status,
            result=result,
            error=error,
            attempts=attempts,
            content=content,
            exception=exception,
        )


class Executor(_BaseExecutor):
    """Run proposals against a ``ToolSet``, synchronously. See the module docstring.

    ``Executor(toolset, *, retry=RetryPolicy(), timeout=30.0)``; ``timeout=None`` waits forever (and then runs
    sync tools in the calling thread). Raises ``ToolError`` at construction if a tool has no implementation.
    """

    def __init__(self, toolset: ToolSet | Iterable[Tool | Callable[..., Any]], **options: Any) -> None:
        super().__init__(toolset, **options)
        self._lock = threading.Lock()
        self._in_flight: dict[str, threading.Event] = {}

    def execute(self, call: ToolCall) -> ExecutionRecord:
        """Check, run (with retries) and record one proposal. Never raises for model or tool misbehaviour."""
        if call.id is not None:
            while True:
                with self._lock:
                    remembered = self._remembered(call)
                    if remembered is not None:
                        return remembered
                    event = self._in_flight.get(call.id)
                    if event is None:
                        self._in_flight[call.id] = threading.Event()
                        break
                event.wait()
        try:
            record = self._drive(call)
            with self._lock:
                self._remember(record)
            return record
        finally:
            if call.id is not None:
                with self._lock:
                    self._in_flight.pop(call.id).set()

    def execute_all(self, calls: Iterable[ToolCall]) -> list[ExecutionRecord]:
        """Execute proposals one after another, in order."""
        return [self.execute(call) for call in calls]

    def _drive(self, call: ToolCall) -> ExecutionRecord:
        start = time.perf_counter()

        def perform(request: _Run | _Sleep) -> _Outcome | None:
            if isinstance(request, _Sleep):
                (self.retry.sleep or time.sleep)(request.seconds)
                return None
            return self._run(request)

        record: ExecutionRecord = drive(self._flow(call), perform)
        return dataclasses.replace(record, duration=time.perf_counter() - start)

    @staticmethod
    def _run(request: _Run) -> _Outcome:
        fn, kwargs, timeout = request.tool.fn, request.kwargs, request.timeout
        assert fn is not None
        if request.tool.is_async:
            import asyncio

            def target() -> Any:
                coro = fn(**kwargs)
                return asyncio.run(asyncio.wait_for(coro, timeout) if timeout is not None else coro)

        else:

            def target() -> Any:
                return fn(**kwargs)

        if timeout is None and not request.tool.is_async:
            try:
                return _Outcome("ok", target())
            except Exception as exc:
                return _Outcome("raised", exception=exc)
        box: list[_Outcome] = []
        done = threading.Event()
        context = contextvars.copy_context()

        def worker() -> None:
            try:
                box.append(_Outcome("ok", context.run(target)))
            except BaseException as exc:  # reported to the waiting thread, never lost in a daemon thread
                box.append(_Outcome("raised", exception=exc))
            finally:
                done.set()

        thread = threading.Thread(target=worker, name=f"toolguard-{request.tool.name}", daemon=True)
        thread.start()
        # The thread cannot be killed: after the timeout we stop waiting and report "outcome unknown".
        if not done.wait(timeout):
            return _Outcome("timeout")
        outcome = box[0]
        if outcome.exception is not None and not isinstance(outcome.exception, Exception):
            raise outcome.exception  # KeyboardInterrupt, SystemExit: not a tool failure
        return outcome


class AsyncExecutor(_BaseExecutor):
    """The asyncio twin of ``Executor``: ``await execute(call)``; ``await execute_all(calls)`` runs them
    concurrently."""

    def __init__(self, toolset: ToolSet | Iterable[Tool | Callable[..., Any]], **options: Any) -> None:
        super().__init__(toolset, **options)
        self._in_flight: dict[str, asyncio.Future[ExecutionRecord]] = {}

    async def execute(self, call: ToolCall) -> ExecutionRecord:
        """Check, run (with retries) and record one proposal. Never raises for model or tool misbehaviour."""
        import asyncio

        if call.id is None:
            return await self._drive(call)
        remembered = self._remembered(call)
        if remembered is not None:
            return remembered
        pending = self._in_flight.get(call.id)
        if pending is not None:
            record = await asyncio.shield(pending)
            return self._remembered(call) or record
        future: asyncio.Future[ExecutionRecord] = asyncio.get_running_loop().create_future()
        self._in_flight[call.id] = future
        try:
            record = await self._drive(call)
            self._remember(record)
            future.set_result(record)
            return record
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters re-raise it, nobody else needs to
            raise
        finally:
            del self._in_flight[call.id]

    async def execute_all(self, calls: Iterable[ToolCall]) -> list[ExecutionRecord]:
        """Execute proposals concurrently; records come back in the order of ``calls``."""
        import asyncio

        return list(await asyncio.gather(*(self.execute(call) for call in calls)))

    async def _drive(self, call: ToolCall) -> ExecutionRecord:
        import asyncio

        start = time.perf_counter()

        async def aperform(request: _Run | _Sleep) -> _Outcome | None:
            if isinstance(request, _Sleep):
                slept = (self.retry.sleep or asyncio.sleep)(request.seconds)
                if inspect.isawaitable(slept):
                    await slept
                return None
            return await self._run(request)

        record: ExecutionRecord = await adrive(self._flow(call), aperform)
        return dataclasses.replace(record, duration=time.perf_counter() - start)

    @staticmethod
    async def _run(request: _Run) -> _Outcome:
        import asyncio

        fn, kwargs, timeout = request.tool.fn, request.kwargs, request.timeout
        assert fn is not None
        try:
            if request.tool.is_async:
                value = await asyncio.wait_for(fn(**kwargs), timeout)
            else:
                value = await asyncio.wait_for(_in_thread(fn, kwargs, request.tool.name), timeout)
        except TimeoutError as exc:
            # wait_for's own timeout carries no message; a tool's TimeoutError keeps its text
            return _Outcome("timeout") if not str(exc) else _Outcome("raised", exception=exc)
        except Exception as exc:
            return _Outcome("raised", exception=exc)
        return _Outcome("ok", value)


async def _in_thread(fn: Callable[..., Any], kwargs: dict[str, Any], name: str) -> Any:
    """Run a sync tool in a daemon thread; unlike ``asyncio.to_thread``, a stuck one cannot block shutdown."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, exc: BaseException | None) -> None:
        if future.done():  # the waiter timed out or was cancelled
            return
        if exc is None:
            future.set_result(value)
        else:
            future.set_exception(exc)

    def worker() -> None:
        try:
            value, exc = context.run(fn, **kwargs), None
        except BaseException as error:
            value, exc = None, error
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(settle, value, exc)

    threading.Thread(target=worker, name=f"toolguard-{name}", daemon=True).start()
    return await future


def _json_default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _serialise(result: Any, limit: int) -> str:
    """The text of a result: strings as they are, anything else as JSON; cut to ``limit`` characters."""
    if isinstance(result, str):
        text = result
    else:
        try:
            text = json.dumps(result, ensure_ascii=False, default=_json_default)
        except (TypeError, ValueError):  # circular structures and the like
            text = str(result)
    if len(text) > limit:
        text = text[:limit] + f"… [truncated: {len(text) - limit} more characters]"
    return text
