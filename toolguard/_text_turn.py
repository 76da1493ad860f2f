"""``TextTurn``: one generation of raw model text in a call format, and what may be released from it.

Theory of operation
-------------------
An engine that writes tool calls as text (``<tool_call>{...}</tool_call>``) and a door that must hand the
client structured ``tool_calls`` need the same three answers as every other door: which prose may be shown,
which calls are valid, and how the turn ended. ``TextTurn`` gets the verdicts from one ``Guard(format=...)``
(the format parser, a ``StreamValidator`` per call, the runaway detector and the termination rules live
there) and what to show from the release gate every door shares (``toolguard._release``, its raw-text rule);
it adds only where a loop found in the raw text ends the turn:

- prose is released as soon as the format parser vouches for it (a marker's first characters are held by
  the parser until they turn out not to open a call);
- a call is released whole, once it closed and validated against its tool's schema; a call is never shown
  in part, so an invalid, unknown-tool or truncated call is never seen as a call;
- text after the calls is cut (``"fabricated"``); a call left open at the end is ``"truncated"`` (never a
  call, whatever the finish reason: an engine ends inside a call only at its token limit, a stop string or
  an abort);
- a repetition loop in the raw text ends the turn: the prose up to the point where the loop was recognised
  is released (the detector's checkpoints depend only on the text, so that point is the same however the
  text was chunked: a streamed and a non-streamed answer end at the same character), calls not yet released
  are withheld.

``feed(text)`` returns the ``Release`` due now; ``close()`` the last one; ``verdict`` says how the turn
stands (``verdict.failed`` means the door must refuse the turn: an invalid or unknown-tool call, a malformed
call, a call written in another syntax, or a missing required call). Sans-IO; O(1) amortised work per
character beyond the Guard's, plus one parse of the text when a loop ends the turn. The raw text is kept
(the engine keeps it too) for that parse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ._events import TokenDelta
from ._guard import Guard
from ._release import CallStart, ReleaseGate, Text
from ._tools import ToolCall, ToolSet
from ._verdict import GuardVerdict

__all__ = ["Release", "TextTurn"]


@dataclass(frozen=True, slots=True)
class Release:
    """What a door may show now: more prose, and calls that closed and validated (in order)."""

    content: str = ""
    calls: tuple[ToolCall, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.content or self.calls)


_NOTHING = Release()


class TextTurn:
    """Raw text of one generation in ``format`` (``"hermes"``...), judged by a ``Guard`` over ``tools`` and
    ``tool_choice`` (the request's). See the module docstring."""

    __slots__ = ("_calls_out", "_closed", "_format", "_gate", "_guard", "_raw", "_stopped")

    def __init__(
        self,
        tools: ToolSet | Iterable[Mapping[str, Any]],
        *,
        tool_choice: Any = "auto",
        format: str = "hermes",
    ) -> None:
        self._guard = Guard(tools, tool_choice=tool_choice, format=format)
        self._gate = ReleaseGate("pass")  # a call goes out whole once it validated: nothing to hold back
        self._gate.begin(self._guard)
        self._format = format
        self._raw: list[str] = []
        self._calls_out = 0  # calls released
        self._stopped: GuardVerdict | None = None  # the runaway that ended the turn
        self._closed = False

    @property
    def verdict(self) -> GuardVerdict:
        """The Guard's verdict so far (final after ``close()``)."""
        return self._guard.verdict

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The calls released so far."""
        return self._guard.tool_calls[: self._calls_out]

    def feed(self, text: str) -> Release:
        """Consume the next piece of raw text; return what may be released now."""
        if self._closed or self._stopped is not None or not text:
            return _NOTHING
        self._raw.append(text)
        # Text without token ids: the detector's id-based rule stays off, so every chunking agrees.
        verdict = self._guard.feed(TokenDelta(None, text))
        if verdict.kind == "runaway" and verdict.where == "tokens":
            return self._stop(verdict)
        return self._release(verdict)

    def close(self) -> Release:
        """End the turn; return the last release. Idempotent."""
        if self._closed:
            return _NOTHING
        self._closed = True
        if self._stopped is not None:
            return _NOTHING
        return self._release(self._guard.close())

    def _release(self, verdict: GuardVerdict) -> Release:
        pieces = self._gate.parsed(verdict)
        if not pieces:
            return _NOTHING
        fresh = "".join(p.text for p in pieces if type(p) is Text)
        calls = tuple(ToolCall(p.name, p.arguments, p.id) for p in pieces if type(p) is CallStart)
        self._calls_out += len(calls)
        return Release(fresh, calls)

    def _stop(self, verdict: GuardVerdict) -> Release:
        """A loop in the raw text ends the turn at the character where it was recognised."""
        from .formats import parse

        self._stopped = verdict
        runaway = verdict.runaway
        end = runaway.detected_at if runaway is not None else sum(map(len, self._raw))
        prose = parse("".join(self._raw)[:end], format=self._format).content  # type: ignore[arg-type]
        shown = self._gate.shown_text
        fresh = prose[len(shown) :] if prose.startswith(shown) else ""
        return Release(fresh) if fresh else _NOTHING

    @property
    def stopped(self) -> GuardVerdict | None:
        """The runaway verdict that ended the turn early, if one did."""
        return self._stopped
