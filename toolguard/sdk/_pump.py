"""The sans-IO part of the SDK wrapper: chunks to Guard events, release decisions, upstream errors.

``ChunkPump`` sits between one attempt's upstream stream and the caller. ``on_chunk(chunk)`` feeds the
chunk's deltas to the attempt's ``Guard`` and returns the chunks the caller may see now (possibly none:
held, or the attempt failed); ``stop`` turns true when the driver must close the upstream stream (a failing
verdict, or text cut after the calls); ``flush()`` returns what is still held once the flow accepted the
attempt. In ``"hold"`` mode tool-call chunks are held until the ``Finish`` verdict is usable; content chunks
are released as they arrive, except while they may still turn out to be a call written into the content
(``Guard.content_undecided``). In ``"pass"`` mode every chunk the Guard accepted is released at once.

``upstream_failure(exc)`` maps the openai SDK's exceptions (and a malformed SSE payload) to the flow's
``UpstreamFailure``; anything else is not an upstream failure and returns ``None`` (the driver re-raises).
Per chunk the pump does O(deltas) work plus the Guard's.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

from .._events import ContentDelta, Finish, ToolCallDelta
from .._exceptions import UpstreamProtocolError
from .._guard import Guard, GuardVerdict
from .._policy import StreamMode
from .._reask import Completed, UpstreamFailure

__all__ = ["ChunkPump", "upstream_failure"]


class ChunkPump:
    """Per-attempt chunk handling (see the module docstring)."""

    __slots__ = (
        "chunks",
        "finished",
        "guard",
        "held",
        "last",
        "mode",
        "released",
        "saw_calls",
        "stop",
        "usage",
    )

    def __init__(self, guard: Guard, mode: StreamMode) -> None:
        self.guard = guard
        self.mode = mode
        self.held: list[Any] = []
        self.stop = False
        self.saw_calls = False
        self.finished = False
        self.released = 0
        self.chunks = 0
        self.usage: Any = None
        self.last: Any = None

    def on_chunk(self, chunk: Any) -> list[Any]:
        """Feed one ``ChatCompletionChunk`` (or its dict form); return the chunks to release now."""
        if type(chunk) is dict:
            return self._on_dict(chunk)
        choices = chunk.choices
        if not choices:  # the usage chunk (stream_options.include_usage) or a keep-alive
            if chunk.usage is not None:
                self.usage = chunk.usage
            return self._release([chunk]) if not self.held else []
        self.chunks += 1
        self.last = chunk
        guard = self.guard
        choice = choices[0]
        delta = choice.delta
        verdict: GuardVerdict | None = None
        content = delta.content
        if content:
            verdict = guard.feed(ContentDelta(content))
        calls = delta.tool_calls
        if calls and (verdict is None or verdict.ok):
            for tc in calls:
                fn = tc.function
                if fn is None:
                    event = ToolCallDelta(tc.index, tc.id)
                else:
                    event = ToolCallDelta(tc.index, tc.id, fn.name, fn.arguments or "")
                verdict = guard.feed(event)
                if not verdict.ok:
                    break
        return self._decide(chunk, verdict, content, bool(calls), choice.finish_reason)

    def _on_dict(self, chunk: dict[str, Any]) -> list[Any]:
        """The dict twin of ``on_chunk`` (``LocalGenerator`` streams ``chat.completion.chunk`` dicts)."""
        choices = chunk.get("choices")
        if not choices:
            if chunk.get("usage") is not None:
                self.usage = chunk["usage"]
            return self._release([chunk]) if not self.held else []
        self.chunks += 1
        self.last = chunk
        guard = self.guard
        choice = choices[0]
        delta = choice.get("delta") or {}
        verdict: GuardVerdict | None = None
        content = delta.get("content")
        if content:
            verdict = guard.feed(ContentDelta(content))
        calls = delta.get("tool_calls")
        if calls and (verdict is None or verdict.ok):
            for tc in calls:
                fn = tc.get("function") or {}
                verdict = guard.feed(
                    ToolCallDelta(tc.get("index", 0), tc.get("id"), fn.get("name"), fn.get("arguments") or "")
                )
                if not verdict.ok:
                    break
        return self._decide(chunk, verdict, content, bool(calls), choice.get("finish_reason"))

    def _decide(
        self, chunk: Any, verdict: GuardVerdict | None, content: str | None, calls: bool, finish: str | None
    ) -> list[Any]:
        guard = self.guard
        if finish is not None and (verdict is None or verdict.ok):
            verdict = guard.feed(Finish(finish))
            self.finished = True
        if verdict is None or verdict.ok:
            if self.finished:
                out = [*self.held, chunk]
                self.held = []
                return self._release(out)
            if self.mode == "hold":
                if calls:
                    self.saw_calls = True
                if self.saw_calls or guard.content_undecided() or (self.held and not content):
                    self.held.append(chunk)
                    return []
                if self.held:  # the content turned out to be prose: release what waited, in order
                    out = [*self.held, chunk]
                    self.held = []
                    return self._release(out)
            return self._release([chunk])
        self.stop = True  # failed, or fabricated text: the upstream stream is closed now
        return []

    def flush(self) -> list[Any]:
        """What is still held once the attempt was accepted, with a closing chunk when the upstream's own
        finish chunk never came (the stream was cut after the calls)."""
        out = self.held
        self.held = []
        if not self.finished and self.last is not None:
            out.append(closing_chunk(self.last, "tool_calls" if self.guard.tool_calls else "stop"))
            self.finished = True
        return self._release(out)

    def _release(self, chunks: list[Any]) -> list[Any]:
        self.released += len(chunks)
        return chunks

    def completed(self) -> Completed:
        usage = self.usage
        tokens = (
            usage.get("completion_tokens")
            if isinstance(usage, dict)
            else getattr(usage, "completion_tokens", None)
        )
        return Completed(None, tokens if isinstance(tokens, int) else self.chunks)


def closing_chunk(template: Any, finish_reason: Any) -> Any:
    """A copy of ``template`` (a ``ChatCompletionChunk`` or a dict): empty delta, ``finish_reason``."""
    if isinstance(template, dict):
        choice = {"index": 0, "delta": {}, "finish_reason": finish_reason, "logprobs": None}
        return {**template, "choices": [choice]}
    from openai.types.chat.chat_completion_chunk import Choice, ChoiceDelta

    return template.model_copy(
        update={"choices": [Choice(index=0, delta=ChoiceDelta(), finish_reason=finish_reason)], "usage": None}
    )


def upstream_failure(exc: BaseException) -> UpstreamFailure | None:
    """The flow's ``UpstreamFailure`` for an exception raised while talking to the upstream, else ``None``."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        return UpstreamFailure(exc, exc.status_code, retry_after(exc.response.headers))
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError and a dropped connection
        return UpstreamFailure(exc)
    if isinstance(exc, openai.APIError):  # an error event inside the stream
        return UpstreamFailure(exc)
    if isinstance(exc, ValueError) and not isinstance(exc, UpstreamProtocolError):  # malformed SSE JSON
        error = UpstreamProtocolError(f"the upstream sent a malformed stream event: {exc}")
        error.__cause__ = exc
        return UpstreamFailure(error)
    return None


def retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date); ``None`` if absent."""
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
    except (AttributeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
