"""Where does this JSON object or array end, and is it still JSON? The formats' view of ``_stream``'s parser.

The format parsers need to know, chunk by chunk, when a JSON value that opened with ``{`` or ``[`` closes, and
the first character that makes it not JSON (prose that merely contains a brace, a tag inside a broken call).
There is one incremental JSON syntax layer in toolguard, ``toolguard._stream._parser.JsonPushParser`` (the
validator's); ``JsonScanner`` drives it with a handler that ignores every event except the close of the
top-level value, and translates its answers into indexes of the text the caller holds:
``scan(text, i)`` feeds ``text[i:]`` and returns where the value ended, where it broke, or that it is still
open. The parser keeps all state between calls, so chunk boundaries may fall anywhere; the caller decodes the
closed slice once (``_calls.calls_from_json``, which keeps the arguments' text).

One depth cap: a call's arguments may nest as deep as the validator allows (``ValidationLimits.max_depth``),
and the call around them adds at most ``CALL_WRAPPING`` levels (an array of calls, the call, its
``function`` object), so ``DEFAULT_MAX_DEPTH`` is the sum. Past it the scan reports an error, never
recursion. Cost: each character is consumed once by the push parser (strings by one regex match per run).
"""

from __future__ import annotations

from typing import Literal

from .._schema._limits import DEFAULT_LIMITS
from .._stream._parser import JsonHandlerBase, JsonParseError, JsonPushParser

__all__ = ["CALL_WRAPPING", "DEFAULT_MAX_DEPTH", "JsonScanner", "ScanStatus"]

CALL_WRAPPING = 3
"""Levels a call adds around its arguments: ``[{"function": {"arguments": {...}}}]``."""
DEFAULT_MAX_DEPTH = DEFAULT_LIMITS.max_depth + CALL_WRAPPING

ScanStatus = Literal["more", "done", "error"]


class _Closed(Exception):
    """The top-level value closed at ``offset`` (the closing bracket)."""

    def __init__(self, offset: int) -> None:
        self.offset = offset


class _BoundaryHandler(JsonHandlerBase):
    """Receives the push parser's events and ignores all but the top-level close."""

    __slots__ = ("parser",)

    def __init__(self) -> None:
        self.parser: JsonPushParser | None = None

    def value_start(self, kind: str, offset: int) -> None:
        pass

    def string_part(self, text: str, offset: int) -> None:
        pass

    def string_end(self, offset: int) -> None:
        pass

    def key_start(self, offset: int) -> None:
        pass

    def key_part(self, text: str, offset: int) -> None:
        pass

    def key_end(self, offset: int) -> None:
        pass

    def number_part(self, text: str, start: int) -> None:
        pass

    def number_end(self, text: str, start: int, end: int) -> None:
        pass

    def literal_end(self, offset: int) -> None:
        pass

    def comma(self, offset: int) -> None:
        pass

    def string_full(self, text: str, start: int, end: int) -> None:
        pass

    def key_full(self, text: str, start: int, end: int) -> None:
        pass

    def number_full(self, text: str, start: int, end: int) -> None:
        pass

    def object_end(self, offset: int) -> None:
        assert self.parser is not None
        if self.parser.depth == 0:
            raise _Closed(offset)

    array_end = object_end


class JsonScanner:
    """Scan one top-level JSON object or array incrementally. See the module docstring."""

    __slots__ = ("_parser", "_state")

    def __init__(self, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        handler = _BoundaryHandler()
        # Numbers are only scanned here, never converted, so their length is bounded by the document cap
        # alone; the validator applies its own number cap to the arguments.
        self._parser = JsonPushParser(
            handler, max_depth=max_depth, max_number_length=DEFAULT_LIMITS.max_document_size
        )
        handler.parser = self._parser
        self._state: ScanStatus = "more"

    @property
    def started(self) -> bool:
        """True once the opening bracket has been read."""
        return self._parser.offset > 0

    def scan(self, text: str, i: int = 0) -> tuple[ScanStatus, int]:
        """Consume ``text[i:]``; ``text[i]`` (on the first call) must be ``{`` or ``[``.

        Returns ``("done", j)`` when the value closed, ``j`` being the index just past its last character;
        ``("error", j)`` when ``text[j]`` cannot continue a JSON value (the state is then sticky); or
        ``("more", len(text))`` when everything was consumed and the value is still open.
        """
        if self._state != "more":
            return self._state, i
        parser = self._parser
        base = parser.offset - i  # stream offset of text[0]
        if parser.offset == 0 and i < len(text) and text[i] not in "{[":
            self._state = "error"
            return "error", i
        try:
            parser.feed(text[i:] if i else text)
        except _Closed as closed:
            self._state = "done"
            return "done", closed.offset - base + 1
        except JsonParseError as exc:
            self._state = "error"
            return "error", exc.offset - base
        return "more", len(text)
