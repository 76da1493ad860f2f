"""``TurnEvents``: the turn automaton's bytes as Guard events, each byte decoded once.

Theory of operation
-------------------
``LocalGenerator`` decodes under the turn grammar, which knows exactly which bytes are free text and which
are a call (``TurnState.content_end``, ``call_spans``, ``open_call_start``). After every step ``step(state)``
turns the bytes added since the last step into the events every door feeds its ``Guard``: ``ContentDelta`` for
free text (bytes that may still start the call marker, ``marker_pending``, wait for the next step) and
``ToolCallDelta`` for calls (the name once the ``{"name": ..., "arguments": `` head is whole, then each new
fragment of the arguments; a closed call's last ``}`` is the call object's, not the arguments'). Each
stream of bytes has its own incremental UTF-8 decoder, so a character split across steps comes out whole. The
call ids come from ``ids`` in call order, so a seeded stream and a seeded completion name their calls alike.

Cost: O(new bytes) per step; the head of a call is parsed once, when it completes.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from typing import Any

from .._events import ContentDelta, ToolCallDelta

__all__ = ["TurnEvents", "call_prefix", "name_of"]


class _Call:
    __slots__ = ("decoder", "head", "id", "name", "read")

    def __init__(self, start: int, id: str) -> None:
        self.read = start  # bytes of the span turned into text so far
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        self.head = ""  # the call object's text until its name is known
        self.name: str | None = None
        self.id = id


class TurnEvents:
    """Events of one turn (see the module docstring). ``separators``: the grammar's ``(item, colon)``."""

    __slots__ = ("_calls", "_content", "_decoder", "_ids", "_separators")

    def __init__(self, separators: tuple[str, str], ids: Callable[[], str]) -> None:
        self._separators = separators
        self._ids = ids
        self._content = 0  # bytes of free text turned into events
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._calls: list[_Call] = []

    @property
    def call_ids(self) -> list[str]:
        return [c.id for c in self._calls]

    def open_call(self) -> tuple[str, str] | None:
        """``(name, arguments so far)`` of the last call if its name is known (for a truncated call)."""
        call = self._calls[-1] if self._calls else None
        if call is None or call.name is None:
            return None
        return call.name, call.head

    def step(self, state: Any, *, final: bool = False) -> list[Any]:
        """The events of the bytes ``state`` gained since the last step (``final``: the turn ended)."""
        out: list[Any] = []
        buf = state.buf
        if state.content_end is not None:
            end = state.content_end
        else:
            end = len(buf) if final else len(buf) - state.marker_pending
        last = final or state.content_end is not None  # no more free text: flush the decoder
        if end > self._content or last:
            data = bytes(buf[self._content : end]) if end > self._content else b""
            text = self._decoder.decode(data, final=last)
            self._content = max(self._content, end)
            if text:
                out.append(ContentDelta(text))
        spans = list(state.call_spans)
        if state.phase == "call":
            spans.append((state.open_call_start, -1))
        for index, (start, stop) in enumerate(spans):
            if index == len(self._calls):
                self._calls.append(_Call(start, self._ids()))
            call = self._calls[index]
            upto = len(buf) if stop < 0 else stop
            if upto <= call.read:
                continue
            text = call.decoder.decode(bytes(buf[call.read : upto]), final=stop >= 0)
            call.read = upto
            closed = stop >= 0
            if call.name is None:
                call.head += text
                name = name_of(call.head, self._separators)
                if name is None:
                    continue
                call.name = name
                args = call.head[len(call_prefix(name, self._separators)) :]
                call.head = ""
                text = args
                out.append(ToolCallDelta(index, call.id, name, ""))
            if closed and text.endswith("}"):
                text = text[:-1]  # the call object's own closing brace
            if text:
                call.head += text  # what the arguments hold so far (reported for a truncated call)
                out.append(ToolCallDelta(index, None, None, text))
        return out


def call_prefix(name: str, separators: tuple[str, str]) -> str:
    """The text of a call object in the grammar's layout up to its arguments."""
    item, colon = separators
    return "{" + '"name"' + colon + json.dumps(name, ensure_ascii=False) + item + '"arguments"' + colon


def name_of(text: str, separators: tuple[str, str]) -> str | None:
    """The tool name once ``text`` holds the whole ``{"name": ..., "arguments": `` head, else None."""
    item, colon = separators
    head = "{" + '"name"' + colon
    if not text.startswith(head):
        return None
    try:
        name, end = json.JSONDecoder().raw_decode(text, len(head))
    except ValueError:
        return None
    rest = item + '"arguments"' + colon
    if not isinstance(name, str) or not text.startswith(rest, end):
        return None
    return name
