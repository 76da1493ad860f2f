"""The sans-IO part of the SDK wrapper: chunks to Guard events, released pieces back to chunks, upstream
errors.

``ChunkPump`` sits between one attempt's upstream stream and the caller. ``on_chunk(chunk)`` feeds the
chunk's deltas to the attempt's ``Guard`` and asks the request's ``ReleaseGate`` (``toolguard._release``,
the one set of release rules every door shares: hold / pass, marker prefixes, text of retries) what the
caller may see; it returns that as chunks (possibly none). ``stop`` turns true when the driver must close the
upstream stream (a failing verdict, or text cut after the calls); ``flush()`` returns what the gate still held
once the flow accepted the attempt. The pump only encodes: a chunk whose deltas the gate released as they
came is returned as it is (the SDK's own object, every field kept); otherwise a copy of it carries the
released pieces, and held chunks released at the end unchanged come back as themselves. One gate spans every
attempt of a request (``new_gate``); a pump made with a mode string gets a gate of its own. Reading a chunk
and writing one are ``toolguard._openai``'s (``choice_events``, ``pieces_chunk``, ``closing_chunk``).

``upstream_failure(exc)`` maps the openai SDK's exceptions (and a malformed SSE payload) to the flow's
``UpstreamFailure``; anything else is not an upstream failure and returns ``None`` (the driver re-raises).
Per chunk the pump does O(deltas) work plus the Guard's.
"""

from __future__ import annotations

from typing import Any

from .._events import ContentDelta, Finish
from .._exceptions import UpstreamProtocolError
from .._guard import Guard, GuardVerdict
from .._openai import choice_events, closing_chunk, completion_tokens, parse_retry_after, pieces_chunk
from .._policy import StreamMode
from .._reask import Completed, RetryFlow, UpstreamFailure
from .._release import CallArguments, CallStart, Piece, ReleaseGate, Text

__all__ = ["ChunkPump", "new_gate", "upstream_failure"]


def new_gate(flow: RetryFlow) -> ReleaseGate:
    """The release gate of one request driven by ``flow`` (text is held too when a call is required)."""
    return ReleaseGate(flow.policy.stream, hold_content=flow.choice.required)


class ChunkPump:
    """Per-attempt chunk handling (see the module docstring)."""

    __slots__ = ("chunks", "finished", "gate", "guard", "last", "replay", "stop", "tail", "usage")

    def __init__(self, guard: Guard, gate: ReleaseGate | StreamMode) -> None:
        self.guard = guard
        if not isinstance(gate, ReleaseGate):
            gate = ReleaseGate(gate)
        gate.begin(guard)
        self.gate = gate
        self.stop = False
        self.finished = False
        self.chunks = 0
        self.usage: Any = None
        self.last: Any = None
        self.replay: list[tuple[Any, list[Piece]]] = []  # chunks held whole, with the pieces they carry
        self.tail: list[Any] = []  # usage chunks that came before the end

    def on_chunk(self, chunk: Any) -> list[Any]:
        """Feed one ``ChatCompletionChunk`` (or its dict form); return the chunks to release now."""
        is_dict = type(chunk) is dict
        choices = chunk.get("choices") if is_dict else chunk.choices
        if not choices:  # the usage chunk (stream_options.include_usage) or a keep-alive
            usage = chunk.get("usage") if is_dict else chunk.usage
            if usage is not None:
                self.usage = usage
            if self.finished:
                return [chunk]
            self.tail.append(chunk)
            return []
        self.chunks += 1
        self.last = chunk
        events, finish = choice_events(choices[0])
        guard = self.guard
        release = self.gate.feed
        verdict: GuardVerdict | None = None
        live: list[Piece] = []
        for event in events:
            verdict = guard.feed(event)
            pieces = release(event, verdict)
            if pieces:
                live.extend(pieces)
            if verdict.kind != "ok":
                break
        if finish is not None and (verdict is None or verdict.kind == "ok"):
            verdict = guard.feed(Finish(finish))
            self.finished = verdict.kind == "ok"
        if verdict is not None and verdict.kind != "ok":
            self.stop = True  # failed, or fabricated text: the upstream stream is closed now
            return [pieces_chunk(chunk, live)] if live else []
        natural = _natural(events)
        if not self.finished:
            if live == natural:
                return [chunk]
            if not live and self.gate.mode == "hold":
                self.replay.append((chunk, natural))
                return []
            return [pieces_chunk(chunk, live)] if live else []
        accepted = self._accepted(chunk)
        reason = self.gate.finish_reason(guard)
        if live == natural and not accepted and reason == finish:
            return [chunk]
        out = [pieces_chunk(chunk, live)] if live else []
        out.extend(accepted)
        out.append(chunk if not natural and reason == finish else closing_chunk(chunk, reason))
        return out

    def _accepted(self, template: Any) -> list[Any]:
        """The gate's held pieces as chunks: the held chunks themselves when they carry exactly those."""
        pieces = self.gate.accept()
        replay, self.replay = self.replay, []
        if not pieces:
            return []
        if replay and [p for _, carried in replay for p in carried] == pieces:
            return [c for c, _ in replay]
        return [pieces_chunk(template, [p]) for p in pieces]

    def flush(self) -> list[Any]:
        """What is still held once the attempt was accepted, with a closing chunk when the upstream's own
        finish chunk never came (the stream was cut after the calls)."""
        out: list[Any] = []
        if not self.finished and self.last is not None:
            out = self._accepted(self.last)
            out.append(closing_chunk(self.last, self.gate.finish_reason(self.guard)))
            self.finished = True
        out.extend(self.tail)
        self.tail = []
        return out

    def completed(self) -> Completed:
        tokens = completion_tokens(self.usage)
        return Completed(None, self.chunks if tokens is None else tokens)


def _natural(events: list[Any]) -> list[Piece]:
    """The pieces a chunk carries as it is (what the gate releases when it lets the chunk through)."""
    out: list[Piece] = []
    for event in events:
        if type(event) is ContentDelta:
            out.append(Text(event.text))
        elif event.arguments:
            if event.name:
                out.append(CallStart(event.index, event.id, event.name, event.arguments))
            else:
                out.append(CallArguments(event.index, event.arguments))
        else:
            out.append(CallStart(event.index, event.id, event.name or "", ""))  # never released as it is
    return out


def upstream_failure(exc: BaseException) -> UpstreamFailure | None:
    """The flow's ``UpstreamFailure`` for an exception raised while talking to the upstream, else ``None``."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        return UpstreamFailure(exc, exc.status_code, parse_retry_after(exc.response.headers))
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError and a dropped connection
        return UpstreamFailure(exc)
    if isinstance(exc, openai.APIError):  # an error event inside the stream
        return UpstreamFailure(exc)
    if isinstance(exc, ValueError) and not isinstance(exc, UpstreamProtocolError):  # malformed SSE JSON
        error = UpstreamProtocolError(f"the upstream sent a malformed stream event: {exc}")
        error.__cause__ = exc
        return UpstreamFailure(error)
    return None
