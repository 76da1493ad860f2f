"""The streamed chat completion: one client SSE response across every upstream attempt.

Theory of operation. ``StreamRelay`` is the re-ask flow's driver for ``stream: true``. Each attempt reads the
upstream SSE stream, decodes it (``SSEDecoder``), translates each chunk into Guard events (``read_chunk``),
feeds the attempt's ``Guard`` and asks the request's ``ReleaseGate`` (``toolguard._release``: hold / pass,
marker prefixes, text of retries) what the client may see; what one network read released is encoded into one
buffer, written to the client in one ASGI message. A failing verdict stops the read and closes the upstream
response at once. The proxy cannot tell its client about a retry, so where the gate says a retry could not be
invisible (``retry_visible``), or the upstream broke after something was shown, ``_Terminal`` ends the
response instead. The last write carries what the gate held (``accept()``), a truthful ``finish_reason``, the
usage chunk when asked (summed over attempts) and ``[DONE]``; the finishing chunk's delta carries
``toolguard``, the final decision's summary (verdict, action, retries, attempts: ``Decision.summary``). A
violation ends with an OpenAI-format error event. Work: O(bytes read) per attempt plus the Guard's own
linear work.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from .._events import Finish
from .._exceptions import GuardError, UpstreamError, UpstreamProtocolError
from .._guard import GuardVerdict
from .._openai import ChunkWriter, read_chunk, sum_usage
from .._reask import Attempt, Completed, RetryFlow, UpstreamFailure
from .._release import ReleaseGate, coalesce
from .._runaway import FINISH_REASON_REPETITION
from ._engine import constraint_header, count_first_attempt
from ._exchange import Exchange, upstream_error_body, violation_body
from ._respond import SSE_HEADERS, send_json
from ._sse import DONE, SSEDecoder, encode_data
from ._upstream import translate

if TYPE_CHECKING:
    from ._respond import Send

__all__ = ["DRAIN_LIMIT", "StreamRelay"]

#: Bytes read after ``[DONE]`` so a keep-alive connection is reused rather than closed.
DRAIN_LIMIT = 64 * 1024


class _Terminal(Exception):
    """The driver ends the response itself: a retry could not be invisible to the client."""

    def __init__(self, verdict: GuardVerdict | None = None, error: UpstreamError | None = None) -> None:
        self.verdict = verdict
        self.error = error
        super().__init__(verdict.message if verdict else str(error))


class StreamRelay:
    """One streamed request: the client-facing SSE response across every attempt."""

    def __init__(self, ex: Exchange, body: dict[str, Any], *, call_required: bool = False) -> None:
        self.ex = ex
        self.config = ex.config
        self.mode = self.config.mode
        options = body.get("stream_options")
        self.include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        # A call is required (the parsed tool_choice): any text is a prelude to a violation, so hold it too.
        self.gate = ReleaseGate(self.mode, hold_content=call_required)
        self.writer: ChunkWriter | None = None
        self.started = False  # the response's headers went out
        self._prefix: list[bytes] = []  # queued for the last write (a role chunk made at the end)
        self.send: Send | None = None
        self.usage: dict[str, Any] | None = None

    # output -------------------------------------------------------------------------------------------
    def _writer(self, meta: dict[str, Any] | None, out: list[bytes]) -> ChunkWriter:
        """The response's writer, made from the first upstream chunk; queues the role chunk."""
        meta = meta or {}
        created = meta.get("created")
        fingerprint = meta.get("system_fingerprint")
        self.writer = ChunkWriter(
            id=str(meta.get("id") or f"chatcmpl-{uuid.uuid4().hex[:24]}"),
            created=created if isinstance(created, int) else int(time.time()),
            model=str(meta.get("model") or ""),
            system_fingerprint=fingerprint if isinstance(fingerprint, str) else None,
        )
        out.append(self.writer.role())
        return self.writer

    def _final_writer(self) -> ChunkWriter:
        """The writer for the last write; made now (its role chunk queued in ``_prefix``) if none came yet."""
        if self.writer is None:
            self._writer(None, self._prefix)
        assert self.writer is not None
        return self.writer

    def _headers(self) -> list[tuple[bytes, bytes]]:
        return [*SSE_HEADERS, (b"x-toolguard-mode", self.mode.encode()), *constraint_header(self.ex)]

    async def _end(self, tail: bytes) -> None:
        """The last write: ``tail`` (finish chunk or error event), the usage chunk when asked, ``[DONE]``."""
        assert self.send is not None
        writer = self._final_writer()
        out, self._prefix = [*self._prefix, tail], []
        if self.include_usage and self.usage is not None:
            out.append(writer.usage(self.usage))
        out.append(DONE)
        if not self.started:
            self.started = True
            self.ex.metrics.streams_open += 1
            await self.send({"type": "http.response.start", "status": 200, "headers": self._headers()})
        await self.send({"type": "http.response.body", "body": b"".join(out), "more_body": False})

    # the flow -----------------------------------------------------------------------------------------
    async def run(self, flow: RetryFlow, send: Send) -> None:
        self.send = send
        try:
            await self._run(flow)
            count_first_attempt(self.ex, flow.attempts)
        finally:
            if self.started:
                self.ex.metrics.streams_open -= 1

    async def _run(self, flow: RetryFlow) -> None:
        try:
            result = await self.ex.drive(flow, self._attempt)
        except _Terminal as term:
            if term.verdict is not None:
                self.ex.metrics.verdict(term.verdict.kind)
                flow.give_up(term.verdict)
                await self._violation(term.verdict, len(flow.attempts) + 1, flow)
            else:
                assert term.error is not None
                flow.give_up(status=getattr(term.error, "status_code", None))
                await self._upstream_error(term.error)
            return
        except GuardError as exc:
            await self._violation(exc.violation, len(exc.attempts), flow)
            return
        except UpstreamError as exc:
            await self._upstream_error(exc)
            return
        writer = self._final_writer()
        tail: list[bytes] = writer.pieces(coalesce(self.gate.accept()))
        tail.append(writer.finish(self.gate.finish_reason(result.guard), _summary(flow)))
        await self._end(b"".join(tail))

    async def _violation(self, verdict: GuardVerdict, attempts: int, flow: RetryFlow) -> None:
        writer = self._final_writer()
        if verdict.kind == "truncated":
            await self._end(writer.finish("length", _summary(flow)))
        elif verdict.kind == "runaway" and self.config.runaway_action != "error":
            await self._end(writer.finish(FINISH_REASON_REPETITION, _summary(flow)))
        else:
            await self._end(encode_data(violation_body(verdict, attempts=attempts)))

    async def _upstream_error(self, exc: UpstreamError) -> None:
        status, body, headers = upstream_error_body(exc)
        if not self.started:  # nothing sent yet: a plain HTTP error, as the upstream gave it
            assert self.send is not None
            await send_json(self.send, status, body, headers=headers)
            return
        await self._end(encode_data(body))

    async def _attempt(self, action: Attempt) -> Completed | UpstreamFailure:
        gate = self.gate
        gate.begin(action.guard)
        try:
            response = await self.ex.open(action.body)
        except UpstreamError as exc:
            return UpstreamFailure(exc)
        state = _AttemptState()
        try:
            if response.status_code != 200:
                return await self.ex.status_failure(response)
            try:
                await self._relay(action, response, state)
            except (httpx.HTTPError, UpstreamError) as exc:
                err = translate(exc)
                if gate.attempt_visible:
                    raise _Terminal(error=err) from exc
                return UpstreamFailure(err)
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
        if state.usage is not None:
            self.usage = sum_usage(self.usage, state.usage)
        verdict = action.guard.close()
        if verdict.failed and gate.retry_visible(verdict):
            raise _Terminal(verdict)
        tokens = (state.usage or {}).get("completion_tokens")
        return Completed(None, tokens if isinstance(tokens, int) else None)

    async def _relay(self, action: Attempt, response: httpx.Response, state: _AttemptState) -> None:
        """Feed the upstream stream into the Guard, forwarding what the mode allows; stop at the verdict.

        What one network read of the upstream yields is sent to the client as one write (fewer syscalls than a
        write per event, and never later than the read that carried it)."""
        decoder = SSEDecoder()
        encoding = response.headers.get("content-encoding", "identity").lower()
        # Identity-encoded (we ask for it): read the transport's stream itself, without httpx's per-chunk
        # bookkeeping (decoders, chunker, download counters); its errors are httpx errors all the same.
        chunks = aiter(response.stream) if encoding in ("", "identity") else response.aiter_bytes()  # type: ignore[arg-type]
        async for raw in chunks:
            out: list[bytes] = []
            try:
                stop = self._consume(decoder.feed(raw), action, state, out)
            finally:
                if out:
                    await self._flush(out)
            if stop is _DONE:
                await _drain(chunks)
                return
            if stop is _STOP:
                return
            if decoder.error is not None:  # a bad line after this read's events: fail now, not next read
                raise UpstreamProtocolError(decoder.error)
        for event in decoder.close():
            if event.data == "[DONE]":
                state.done = True
        if not state.done and not action.guard.verdict.done:
            raise UpstreamProtocolError("the upstream closed the stream before it finished")

    async def _flush(self, out: list[bytes]) -> None:
        assert self.send is not None
        if not self.started:
            self.started = True
            self.ex.metrics.streams_open += 1
            await self.send({"type": "http.response.start", "status": 200, "headers": self._headers()})
        await self.send({"type": "http.response.body", "body": b"".join(out), "more_body": True})

    def _consume(self, events: list[Any], action: Attempt, state: _AttemptState, out: list[bytes]) -> object:
        """Judge the SSE events of one read; append what may go out. Returns ``_DONE``, ``_STOP`` or None."""
        feed = action.guard.feed
        gate = self.gate
        release = gate.feed
        for event in events:
            data = event.data
            if data == "[DONE]":
                state.done = True
                return _DONE
            if not data:
                continue
            try:
                chunk = read_chunk(json.loads(data))
            except ValueError as exc:
                raise UpstreamProtocolError(
                    "the upstream sent an SSE event that is not a JSON chunk"
                ) from exc
            if chunk.error is not None:
                message = chunk.error.get("message") if isinstance(chunk.error, dict) else str(chunk.error)
                raise UpstreamError(f"the upstream reported an error mid-stream: {message}")
            if chunk.usage is not None:
                state.usage = chunk.usage
            if state.done:
                continue  # after finish_reason only the usage chunk matters
            writer = self.writer or self._writer(chunk.meta, out)
            if chunk.extra and not gate.holding_text:
                out.append(writer.delta(chunk.extra))
            for ev in chunk.events:
                verdict = feed(ev)
                pieces = release(ev, verdict)
                if pieces:
                    out.extend(writer.pieces(pieces))
                if verdict.kind != "ok":
                    return _STOP  # failed, or text after the calls (cut): close the upstream now
                if type(ev) is Finish:
                    state.done = True  # read on to [DONE] (usage, and the connection goes back to the pool)
        return None


def _summary(flow: RetryFlow) -> dict[str, Any] | None:
    """The final decision for the last chunk (``toolguard``: verdict, action, retries; no argument values)."""
    decision = flow.last_decision
    return None if decision is None else decision.summary()


async def _drain(chunks: Any) -> None:
    """Read what follows ``[DONE]`` (the chunked terminator) so the connection can go back to the pool."""
    left = DRAIN_LIMIT
    async for raw in chunks:
        left -= len(raw)
        if left < 0:
            return  # an upstream still talking after [DONE]: let the close drop the connection


_DONE = object()  # [DONE] seen
_STOP = object()  # the Guard stopped the attempt


class _AttemptState:
    __slots__ = ("done", "usage")

    def __init__(self) -> None:
        self.done = False
        self.usage: dict[str, Any] | None = None
