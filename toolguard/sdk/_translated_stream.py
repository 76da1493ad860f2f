"""A guarded ``create(stream=True)`` / ``.stream()`` for an SDK endpoint of another protocol (Anthropic
Messages, OpenAI Responses): the SDK's own stream events, judged on their chat view.

Theory of operation. The one re-ask flow (``RetryFlow``) runs on the chat request of the caller's request,
as for a non-stream call (``sdk._translated``); each attempt is sent in the protocol's own terms
(``to_protocol``) with ``stream=True``. ``_Session`` is the sans-IO middle of one request: the protocol's
reader (``_messages_back.MessagesReader``, ``_responses_back.ResponsesReader``) turns each upstream event
into the chat chunks the attempt's Guard reads, the ``ChunkPump`` (``sdk._pump``: the Guard and the
request's one ``ReleaseGate``, hold or pass) says which chunks the caller may see, and the protocol's own
stream writer (``_messages.MessagesStream``, ``_responses.ResponsesStream``, the proxy's too) turns those
into the protocol's events, built as the SDK's own event objects. Nothing is decided here. As in the proxy
(``proxy._relay``), a retry the gate says could not be invisible (``retry_visible``), or an upstream that
broke after something was shown, ends the stream instead, in the protocol's own way: Anthropic raises the
SDK's ``APIStatusError`` with an ``error`` body (what its ``Stream`` raises on an ``error`` event);
Responses sends ``response.failed`` and nothing after it. A failure before anything was shown raises as the
non-stream call does (``ToolCallRejected``..., the SDK's error). ``GuardedEventStream`` and its async twin
are what ``create(stream=True)`` returns (iterable, ``close()``, ``response``, a context manager, the
``GuardReport`` once done); ``.stream()`` hands them to the SDK's own ``MessageStreamManager`` /
``ResponseStreamManager``, so ``text_stream``, ``get_final_message()``, ``get_final_response()`` are the
SDK's. Per event: O(1) beyond the Guard's work and the bytes carried.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

from .. import _messages, _messages_back, _responses, _responses_back
from .._drive import drive_iter
from .._exceptions import GuardError, UpstreamError, UpstreamProtocolError
from .._guard import GuardVerdict
from .._openai import error_body
from .._reask import Attempt, Backoff, FlowResult, Outcome, RetryFlow, UpstreamFailure
from ._drivers import GuardReport
from ._pump import ChunkPump, new_gate

__all__ = ["AsyncGuardedEventStream", "GuardedEventStream", "event_adapter"]

_ADAPTERS: dict[str, Any] = {}


def event_adapter(protocol: str) -> Any:
    """The pydantic ``TypeAdapter`` of the SDK's stream event union (made once)."""
    adapter = _ADAPTERS.get(protocol)
    if adapter is None:
        from pydantic import TypeAdapter

        if protocol == "Messages":
            from anthropic.types import RawMessageStreamEvent as union
        else:
            from openai.types.responses import ResponseStreamEvent as union
        adapter = _ADAPTERS[protocol] = TypeAdapter(union)
    return adapter


class _Terminal(Exception):
    """The stream ends itself: a retry could not be invisible to the caller (see the module docstring)."""

    def __init__(self, verdict: GuardVerdict | None = None, error: BaseException | None = None) -> None:
        super().__init__(verdict.message if verdict is not None else str(error))
        self.verdict = verdict
        self.error = error


class _Session:
    """One request's sans-IO state across its attempts: reader -> pump -> the protocol's writer."""

    def __init__(self, flow: RetryFlow, protocol: str, original: dict[str, Any]) -> None:
        self.flow = flow
        self.protocol = protocol
        self.original = original
        self.gate = new_gate(flow)
        self.pump: ChunkPump | None = None
        self.reader: Any = None
        self.writer: Any = None
        self.response: Any = None  # the last attempt's HTTP response
        self.adapter = event_adapter(protocol)
        self._fast: Any = None

    @property
    def shown(self) -> bool:
        """Whether the caller has seen any event of this request."""
        return self.writer is not None

    def begin(self, action: Attempt) -> None:
        self.pump = ChunkPump(action.guard, self.gate)
        messages = self.protocol == "Messages"
        self.reader = _messages_back.MessagesReader() if messages else _responses_back.ResponsesReader()

    def feed(self, event: Any) -> list[Any]:
        """The SDK events to yield for one upstream event (raises the reader's ``UpstreamError``)."""
        pump = self.pump
        assert pump is not None
        out: list[Any] = []
        for chunk in self.reader.feed(event):
            released = pump.on_chunk(chunk)
            if released:
                out.extend(self._write(released))
            if pump.stop:
                break
        return out

    @property
    def stopped(self) -> bool:
        return self.pump is not None and self.pump.stop

    def end(self, action: Attempt) -> Outcome:
        """The attempt's outcome once its upstream stream ended (raises ``_Terminal``)."""
        assert self.pump is not None
        if not self.pump.stop and not self.reader.done and not action.guard.verdict.done:
            return self.failed(UpstreamProtocolError("the upstream closed the stream before it finished"))
        verdict = action.guard.close()
        if verdict.failed and self.gate.retry_visible(verdict):
            raise _Terminal(verdict)
        return self.pump.completed()

    def failed(self, exc: BaseException, failure: UpstreamFailure | None = None) -> UpstreamFailure:
        """The outcome of an attempt whose upstream failed (``_Terminal`` once something of it was shown)."""
        failure = failure or UpstreamFailure(exc)
        if self.gate.attempt_visible:
            raise _Terminal(error=exc)
        return failure

    def finish(self) -> list[Any]:
        """What the gate still held, then the protocol's closing events (the flow accepted the attempt)."""
        assert self.pump is not None
        out = self._write(self.pump.flush())
        if self.writer is None:
            self._writer()
        return out + self._objects(self.writer.close())

    def terminal(self, term: _Terminal, *, gave_up: bool = False) -> list[Any]:
        """The protocol's end for a failure after something was shown: the Responses ``response.failed``
        event (returned), or the anthropic ``APIStatusError`` an ``error`` event raises (raised).
        ``gave_up``: the flow itself gave up (its budget spent), so it recorded that already."""
        flow = self.flow
        if term.verdict is not None:
            if not gave_up:
                flow.give_up(term.verdict)
            attempts = len(flow.attempts) + (not gave_up)
            message = f"toolguard: {term.verdict.message} (after {attempts} attempt{'s' * (attempts != 1)})"
            body = error_body(message, status=422, code=term.verdict.kind)
            body["error"]["toolguard"] = term.verdict.to_dict()
        else:
            if not gave_up:
                flow.give_up(status=getattr(term.error, "status_code", None))
            body = error_body(f"the upstream failed: {term.error}", status=502, code="upstream_error")
        if self.protocol == "Responses":
            if self.writer is None:
                self._writer()
            body["error"]["code"] = None  # the SDK's ResponseError codes are OpenAI's own: server_error
            return self._objects(self.writer.error(body))
        if term.verdict is None and term.error is not None and gave_up:
            raise term.error  # the SDK's own error already
        import anthropic

        error = _messages.error_body(422 if term.verdict is not None else 502, body)
        raise anthropic.APIStatusError(str(error), response=self.response, body=error) from term.error

    def report(self, result: FlowResult | None = None) -> GuardReport:
        if result is not None:
            return GuardReport.of(result)
        flow = self.flow
        last = flow.attempts[-1].verdict if flow.attempts else None
        verdict = last if last is not None else self.pump.guard.verdict  # type: ignore[union-attr]
        return GuardReport(verdict, tuple(flow.attempts), tuple(flow.events))

    # ---------------------------------------------------------------------------------------- writing
    def _writer(self) -> None:
        if self.protocol == "Messages":
            self.writer = _messages.MessagesStream(model=str(self.original.get("model") or ""))
        else:
            rid = self.reader.response_id if self.reader is not None else None
            self.writer = _responses.ResponsesStream(self.original, response_id=rid)

    def _write(self, chunks: list[Any]) -> list[Any]:
        if not chunks:
            return []
        if self.writer is None:
            self._writer()
        feed = self.writer.feed
        out: list[Any] = []
        for chunk in chunks:
            out.extend(self._objects(feed(chunk)))
        return out

    def _objects(self, events: list[Any]) -> list[Any]:
        """The SDK's own event objects for the writer's events (deltas built directly: the hot path)."""
        if self.protocol == "Messages":
            return [self._message_event(data) for _, data in events]
        return [self._response_event(data) for data in events]

    def _message_event(self, data: dict[str, Any]) -> Any:
        if data["type"] == "content_block_delta":
            fast = self._fast
            if fast is None:
                from anthropic.types import InputJSONDelta, RawContentBlockDeltaEvent, TextDelta

                fast = self._fast = (RawContentBlockDeltaEvent, TextDelta, InputJSONDelta)
            delta = data["delta"]
            if delta["type"] == "text_delta":
                d = fast[1].model_construct(type="text_delta", text=delta["text"])
            elif delta["type"] == "input_json_delta":
                d = fast[2].model_construct(type="input_json_delta", partial_json=delta["partial_json"])
            else:
                return self.adapter.validate_python(data)
            return fast[0].model_construct(type="content_block_delta", index=data["index"], delta=d)
        return self.adapter.validate_python(data)

    def _response_event(self, data: dict[str, Any]) -> Any:
        kind = data["type"]
        if kind in ("response.output_text.delta", "response.function_call_arguments.delta"):
            fast = self._fast
            if fast is None:
                from openai.types.responses import (
                    ResponseFunctionCallArgumentsDeltaEvent,
                    ResponseTextDeltaEvent,
                )

                fast = self._fast = (ResponseTextDeltaEvent, ResponseFunctionCallArgumentsDeltaEvent)
            return (fast[0] if kind == "response.output_text.delta" else fast[1]).model_construct(**data)
        return self.adapter.validate_python(data)


class _Handle:
    """The stream's ``response``: closing it closes the guarded stream (the SDK's stream helpers close the
    ``response`` they were given); anything else is the last upstream attempt's HTTP response."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner

    def close(self) -> None:
        self._owner.close()

    async def aclose(self) -> None:
        await self._owner.close()

    def __getattr__(self, name: str) -> Any:
        response = self._owner._session.response
        if response is None:
            raise AttributeError(f"{name}: no upstream response yet")
        return getattr(response, name)


class _Base:
    def __init__(
        self,
        create: Callable[..., Any],
        request: Callable[[Attempt], dict[str, Any]],
        failure: Callable[[BaseException], UpstreamFailure | None],
        session: _Session,
    ) -> None:
        self._create = create
        self._request = request
        self._failure = failure
        self._session = session
        self.report: GuardReport | None = None
        self.response = _Handle(self)

    @property
    def _toolguard_report(self) -> GuardReport | None:  # what ``guard_report(stream)`` reads
        return self.report

    def _outcome(self, exc: Exception) -> UpstreamFailure:
        """An exception while reading the upstream: its failure (re-raised when it is none)."""
        failure = self._failure(exc)
        if failure is None:
            if not isinstance(exc, UpstreamError):
                raise exc
            failure = UpstreamFailure(exc)
        return self._session.failed(exc, failure)

    def _send(self, action: Attempt) -> dict[str, Any]:
        return {**self._request(action), "stream": True}


class GuardedEventStream(_Base):
    """What a guarded ``create(stream=True)`` returns: the SDK's own stream events, guarded."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._iterator = self._run()

    def __iter__(self) -> GuardedEventStream:
        return self

    def __next__(self) -> Any:
        return next(self._iterator)

    def __enter__(self) -> GuardedEventStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._iterator.close()

    def _run(self) -> Generator[Any, None, None]:
        session = self._session
        flow = session.flow

        def perform(action: Attempt | Backoff) -> Generator[Any, None, Outcome]:
            if isinstance(action, Backoff):
                time.sleep(action.seconds)
                return None
            session.begin(action)
            body = self._send(action)
            try:
                upstream = self._create(**body)
            except Exception as exc:
                failure = self._failure(exc)
                if failure is None:
                    raise
                return failure
            session.response = getattr(upstream, "response", None)
            try:
                for event in upstream:
                    yield from session.feed(event)
                    if session.stopped:
                        break
            except Exception as exc:
                return self._outcome(exc)
            finally:
                upstream.close()
            return session.end(action)

        try:
            result = yield from drive_iter(flow.run(), perform)
        except _Terminal as term:
            self.report = session.report()
            yield from session.terminal(term)
            return
        except Exception as exc:
            self.report = session.report()
            if not session.shown:
                raise
            yield from session.terminal(_ended(exc), gave_up=True)
            return
        self.report = session.report(result)
        yield from session.finish()


class AsyncGuardedEventStream(_Base):
    """The async twin (``async for``, ``await close()``, ``async with``)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._iterator = self._run()

    def __aiter__(self) -> AsyncGuardedEventStream:
        return self

    async def __anext__(self) -> Any:
        return await self._iterator.__anext__()

    async def __aenter__(self) -> AsyncGuardedEventStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._iterator.aclose()

    async def _run(self) -> AsyncGenerator[Any, None]:
        import anyio

        session = self._session
        flow = session.flow
        gen = flow.run()
        try:
            action = next(gen)
            while True:
                outcome: Outcome = None
                if isinstance(action, Backoff):
                    await anyio.sleep(action.seconds)
                else:
                    session.begin(action)
                    body = self._send(action)
                    try:
                        upstream = await self._create(**body)
                    except Exception as exc:
                        outcome = self._failure(exc)
                        if outcome is None:
                            raise
                    else:
                        session.response = getattr(upstream, "response", None)
                        try:
                            async for event in upstream:
                                for out in session.feed(event):
                                    yield out
                                if session.stopped:
                                    break
                        except _Terminal:
                            raise
                        except Exception as exc:
                            outcome = self._outcome(exc)
                        finally:
                            await upstream.close()
                        if outcome is None:
                            outcome = session.end(action)
                try:
                    action = gen.send(outcome)
                except StopIteration as stop:
                    result = stop.value
                    break
        except _Terminal as term:
            self.report = session.report()
            for out in session.terminal(term):
                yield out
            return
        except Exception as exc:
            self.report = session.report()
            if not session.shown:
                raise
            for out in session.terminal(_ended(exc), gave_up=True):
                yield out
            return
        finally:
            gen.close()
        self.report = session.report(result)
        for out in session.finish():
            yield out


def _ended(exc: Exception) -> _Terminal:
    """The ``_Terminal`` of a flow that gave up after something was shown (its budget spent)."""
    if isinstance(exc, GuardError) and isinstance(exc.violation, GuardVerdict):
        return _Terminal(exc.violation)
    return _Terminal(error=exc)
