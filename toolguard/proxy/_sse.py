"""Server-sent events: an incremental decoder for the upstream and an encoder for the client.

Theory of operation. ``SSEDecoder.feed(data)`` appends bytes and returns the events completed by them; it
keeps the unfinished line (as a list of pieces) and the event being assembled between calls, so every byte is
scanned a constant number of times: O(n) in the bytes fed, whatever the chunking. Lines end in ``\\n``,
``\\r\\n`` or ``\\r`` (a ``\\r`` ending a chunk is remembered, so a ``\\n`` opening the next one is not a
second line end). A blank line dispatches the event; ``data:`` lines are joined with ``\\n``; comments
(``:``) and unknown fields are ignored; ``event:`` is kept. Each line is decoded from UTF-8 only once it is
whole, so a character split across chunks decodes as it would fed whole. The decoder is sans-IO: no clock, no
sockets.

Malformed framing is an ``UpstreamProtocolError``: a line longer than ``max_line_bytes`` (an upstream that
never sends a newline would otherwise grow the buffer without bound), an event longer than
``max_event_bytes``, or a line (other than a comment) that is not UTF-8. The output does not depend on how
the stream is split: the events completed before the first malformed line are always delivered, the error
follows them, and nothing after it is decoded. So when one ``feed`` completes events and then meets a bad
line, it returns those events and keeps the error (``error``), raised by the next ``feed`` or ``close``; a
``feed`` with nothing to return raises at once. Once failed, every later call raises the same error.
``close()`` returns a final event when the stream ended without its blank line.

The encoder writes ``data: <compact JSON>\\n\\n`` (one line: JSON text never contains a raw newline) and the
terminal ``data: [DONE]\\n\\n``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .._exceptions import UpstreamProtocolError
from .._openai import error_body

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_LINE_BYTES",
    "DONE",
    "SSEDecoder",
    "SSEEvent",
    "encode_data",
    "encode_error",
]

DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_EVENT_BYTES = 8 * 1024 * 1024

DONE = b"data: [DONE]\n\n"

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its ``data`` (lines joined with ``\\n``) and its ``event`` name, if any."""

    data: str
    event: str | None = None


class SSEDecoder:
    """Incremental SSE decoder: ``feed(bytes) -> list[SSEEvent]``, then ``close() -> list[SSEEvent]``."""

    __slots__ = (
        "_data",
        "_error",
        "_event",
        "_event_bytes",
        "_fast_max",
        "_max_event",
        "_max_line",
        "_partial",
        "_parts",
        "_pending_cr",
    )

    def __init__(
        self, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    ) -> None:
        self._max_line = max_line_bytes
        self._max_event = max_event_bytes
        self._fast_max = min(max_line_bytes, max_event_bytes)  # a one-line event that fits both caps
        self._parts: list[bytes] = []  # the unfinished line, in pieces (joined once, when it ends)
        self._partial = 0  # bytes in _parts
        self._pending_cr = False
        self._data: list[str] = []
        self._event: str | None = None
        self._event_bytes = 0
        self._error: str | None = None

    @property
    def error(self) -> str | None:
        """The malformed-stream message once the decoder failed (the next ``feed``/``close`` raises it)."""
        return self._error

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Append ``data``; return the events it completed (maybe none).

        Raises ``UpstreamProtocolError`` when the stream is malformed and no event came before the bad line
        in ``data`` (else those events are returned and the error is raised by the next call)."""
        if self._error is not None:
            raise UpstreamProtocolError(self._error)
        if not data:
            return []
        if (
            not self._parts
            and not self._data
            and self._event is None
            and not self._pending_cr
            and data[:6] == b"data: "
            and data[-2:] == b"\n\n"
            and data.count(b"\n") == 2
            and b"\r" not in data
            and len(data) - 2 <= self._fast_max
        ):  # the common case: exactly one single-line event per read
            try:
                return [SSEEvent(data[6:-2].decode("utf-8"))]
            except UnicodeDecodeError as exc:
                raise self._fail(_not_utf8(exc)) from exc
        if self._pending_cr:
            self._pending_cr = False
            if data[:1] == b"\n":
                data = data[1:]
        if b"\r" in data:
            self._pending_cr = data.endswith(b"\r")
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, rest = data.split(b"\n")
        out: list[SSEEvent] = []
        try:
            if lines:
                if self._parts:
                    lines[0] = b"".join((*self._parts, lines[0]))
                    self._parts = []
                    self._partial = 0
                for raw in lines:
                    if len(raw) > self._max_line:
                        raise self._too_long()
                    self._line(raw, out)
            if rest:
                self._partial += len(rest)
                if self._partial > self._max_line:
                    raise self._too_long()
                self._parts.append(rest)
        except UpstreamProtocolError as exc:
            self._fail(exc)
            if not out:
                raise
        return out

    def close(self) -> list[SSEEvent]:
        """End of stream: return the event left without its terminating blank line, if any.

        Raises ``UpstreamProtocolError`` if the decoder failed, or if the unfinished last line is bad."""
        if self._error is not None:
            raise UpstreamProtocolError(self._error)
        out: list[SSEEvent] = []
        self._pending_cr = False
        try:
            if self._parts:
                raw = b"".join(self._parts)
                self._parts = []
                self._partial = 0
                self._line(raw, out)
            self._line(b"", out)
        except UpstreamProtocolError as exc:
            self._fail(exc)
            raise  # the bad line comes before any event here: nothing to return first
        return out

    def _fail(self, exc: UpstreamProtocolError) -> UpstreamProtocolError:
        """Enter the failed state (sticky): keep the message, drop what was buffered."""
        self._error = str(exc)
        self._parts = []
        self._partial = 0
        self._data = []
        self._event = None
        return exc

    def _too_long(self) -> UpstreamProtocolError:
        return UpstreamProtocolError(
            f"upstream SSE line exceeds {self._max_line} bytes without a line break (malformed framing)"
        )

    def _line(self, raw: bytes, out: list[SSEEvent]) -> None:
        if not raw:
            if self._data or self._event is not None:
                out.append(SSEEvent("\n".join(self._data), self._event))
            self._data = []
            self._event = None
            self._event_bytes = 0
            return
        if raw[:1] == b":":
            return
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(exc) from exc
        field, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if field == "data":
            self._event_bytes += len(raw)
            if self._event_bytes > self._max_event:
                raise UpstreamProtocolError(f"upstream SSE event exceeds {self._max_event} bytes")
            self._data.append(value)
        elif field == "event":
            self._event = value


def _not_utf8(exc: UnicodeDecodeError) -> UpstreamProtocolError:
    return UpstreamProtocolError(f"upstream SSE stream is not UTF-8: {exc}")


def encode_data(payload: Any) -> bytes:
    """``data: <compact JSON>\\n\\n``."""
    return b"data: " + _dumps(payload).encode("utf-8") + b"\n\n"


def encode_error(message: str, *, type: str, code: str | None = None, param: str | None = None) -> bytes:
    """The OpenAI-format error event: ``data: {"error": {...}}``.

    openai-python's ``Stream.__stream__`` raises ``APIError(message, body=data["error"])`` for any ``data``
    event (with no ``event:`` name) whose JSON has a truthy ``error`` key (src/openai/_streaming.py).
    """
    return encode_data(error_body(message, type=type, code=code, param=param))
