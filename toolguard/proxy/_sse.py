"""Server-sent events: an incremental decoder for the upstream and an encoder for the client.

Theory of operation. ``SSEDecoder.feed(data)`` appends bytes and returns the events completed by them; it
keeps the unfinished line and the event being assembled between calls, so every byte is scanned once: O(n) in
the bytes fed, whatever the chunking (a test feeds a stream whole and one byte at a time and compares). Lines
end in ``\\n``, ``\\r\\n`` or ``\\r`` (a ``\\r`` at the end of a chunk is held until the next byte decides). A
blank line dispatches the event; ``data:`` lines are joined with ``\\n``; comments (``:``) and unknown fields
are ignored; ``event:`` is kept. The decoder is sans-IO: no clock, no sockets.

Malformed framing raises ``UpstreamProtocolError``: a line longer than ``max_line_bytes`` (an upstream that
never sends a newline would otherwise grow the buffer without bound), an event longer than
``max_event_bytes``, or bytes that are not UTF-8. ``close()`` returns a final event when the stream ended
without its blank line.

The encoder writes ``data: <compact JSON>\\n\\n`` (one line: JSON text never contains a raw newline) and the
terminal ``data: [DONE]\\n\\n``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .._exceptions import UpstreamProtocolError

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

    __slots__ = ("_buffer", "_data", "_event", "_event_bytes", "_max_event", "_max_line", "_pending_cr")

    def __init__(
        self, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    ) -> None:
        self._max_line = max_line_bytes
        self._max_event = max_event_bytes
        self._buffer = b""
        self._pending_cr = False
        self._data: list[str] = []
        self._event: str | None = None
        self._event_bytes = 0

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Append ``data``; return the events it completed (maybe none). Raises ``UpstreamProtocolError``."""
        if not data:
            return []
        if (
            not self._buffer
            and not self._data
            and self._event is None
            and not self._pending_cr
            and data[:6] == b"data: "
            and data[-2:] == b"\n\n"
            and data.count(b"\n") == 2
            and b"\r" not in data
            and len(data) <= self._max_line
        ):  # the common case: exactly one single-line event per read
            try:
                return [SSEEvent(data[6:-2].decode("utf-8"))]
            except UnicodeDecodeError as exc:
                raise UpstreamProtocolError(f"upstream SSE stream is not UTF-8: {exc}") from exc
        if self._pending_cr:
            self._pending_cr = False
            if data[:1] == b"\n":
                data = data[1:]
        buf = self._buffer + data if self._buffer else data
        if b"\r" in buf:
            if buf.endswith(b"\r"):
                self._pending_cr = True
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, rest = buf.split(b"\n")
        if len(rest) > self._max_line:
            raise UpstreamProtocolError(
                f"upstream SSE line exceeds {self._max_line} bytes without a line break (malformed framing)"
            )
        self._buffer = rest
        out: list[SSEEvent] = []
        for raw in lines:
            if len(raw) > self._max_line:
                raise UpstreamProtocolError(f"upstream SSE line exceeds {self._max_line} bytes")
            self._line(raw, out)
        return out

    def close(self) -> list[SSEEvent]:
        """End of stream: return the event left without its terminating blank line, if any."""
        out: list[SSEEvent] = []
        if self._buffer:
            raw, self._buffer = self._buffer, b""
            self._line(raw, out)
        self._line(b"", out)
        return out

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
            raise UpstreamProtocolError(f"upstream SSE stream is not UTF-8: {exc}") from exc
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


def encode_data(payload: Any) -> bytes:
    """``data: <compact JSON>\\n\\n``."""
    return b"data: " + _dumps(payload).encode("utf-8") + b"\n\n"


def encode_error(message: str, *, type: str, code: str | None = None, param: str | None = None) -> bytes:
    """The OpenAI-format error event: ``data: {"error": {...}}``.

    openai-python's ``Stream.__stream__`` raises ``APIError(message, body=data["error"])`` for any ``data``
    event (with no ``event:`` name) whose JSON has a truthy ``error`` key (src/openai/_streaming.py).
    """
    return encode_data({"error": {"message": message, "type": type, "param": param, "code": code}})
