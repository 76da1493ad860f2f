"""``ReleaseGate``: what a client may see of a guarded generation, and when. One gate for every door.

Theory of operation
-------------------
The ``Guard`` judges a generation; the gate decides what of it is *shown*. A door makes one gate per request
(it spans every attempt of the re-ask flow), calls ``begin(guard)`` when an attempt starts, and after each
``verdict = guard.feed(event)`` hands both to ``gate.feed(event, verdict)``, which returns the pieces the
client may see now: ``Text``, ``CallStart`` (a call's id and name with its first argument fragment) and
``CallArguments`` (a later fragment). When the flow accepts the attempt the door calls ``accept()`` for what
was held. The door only encodes pieces in its wire format (SSE chunks, SDK chunk objects, dicts); it holds no
release rule of its own. The rules, each living only here:

- **Nothing of a failing event is shown.** An event whose verdict is not ``"ok"`` releases nothing (a
  rejected fragment, an unknown name, text that opens a call, fabricated text after the calls).
- **A marker prefix waits.** Text that may still turn out to be a call written into the content (a marker's
  first characters such as ``"<tool_"``, a bare JSON call being read at the start; the Guard's
  ``content_undecided_chars``) is held until it is known not to be one: the next text decides, a tool call
  decides (the text was prose), or the end of an accepted attempt does. The prose before it goes out at once.
- **hold** keeps every call fragment until the attempt is accepted, then releases them in order (a failed
  attempt's call is never seen); **pass** releases each fragment the Guard accepted at once, the call's id
  and name once, with its first argument fragment. Client-side call indices are the gate's: counted over the
  whole response, so a retry's call never continues a call an earlier attempt showed (pass mode: the failed
  call just ends; the retry's call starts at the next index).
- **Text already shown is never shown twice.** In hold mode, once some text went out, a later attempt's text
  is held to its end; an accepted attempt that answers in text alone releases it (minus what was already
  shown, when the retry repeats it word for word), one whose answer is a call drops it (the client already
  read a preamble). With ``hold_content`` (a call is required, so any text is the prelude of a violation)
  text is held to the end of the attempt as well.
- **Repaired calls.** While the Guard repairs a call written into the text, the text from the call's start is
  held (it is the call's); when the attempt is accepted the prose not shown yet goes out, then the calls the
  Guard parsed from it, as held calls.
- **Raw text in a call format** (a ``Guard(format=...)`` fed ``TokenDelta``s, as the vLLM plugin's text
  turns are): the prose its parser vouched for goes out as it comes (the parser holds a marker's first
  characters), each call whole once it closed and validated (``parsed``).
- **What a retry would show.** ``retry_visible(verdict)`` says whether retrying the attempt could not be
  invisible to the client: a call fragment went out, text went out in pass mode, or the loop being retried
  is in text already shown. A door that cannot announce a retry (the proxy) ends the response instead.

``finish_reason(guard)`` is the truthful reason for an accepted attempt: ``"tool_calls"`` when calls stand.
Sans-IO; O(1) amortised work per character (held text is joined only when it is released).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from ._events import ContentDelta, TokenDelta, ToolCallDelta

if TYPE_CHECKING:
    from ._guard import Guard, GuardVerdict
    from ._policy import StreamMode

__all__ = ["CallArguments", "CallStart", "Piece", "ReleaseGate", "Text", "coalesce"]


@dataclass(frozen=True, slots=True)
class Text:
    """Assistant text the client may see."""

    text: str


@dataclass(frozen=True, slots=True)
class CallStart:
    """The start of tool call ``index`` (the client's numbering): its id (``None``: the door makes one), its
    name, and the first argument fragment."""

    index: int
    id: str | None
    name: str
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class CallArguments:
    """A further argument fragment of tool call ``index``."""

    index: int
    arguments: str


Piece: TypeAlias = Text | CallStart | CallArguments


class _CallOut:
    __slots__ = ("id", "index", "name")

    def __init__(self) -> None:
        self.index: int | None = None  # the client's index, once the call started
        self.id: str | None = None
        self.name = ""


class ReleaseGate:
    """One request's release decisions, across its attempts (see the module docstring).

    ``mode``: ``"hold"`` or ``"pass"``. ``hold_content``: hold text to the end of each attempt too (hold
    mode only; doors set it when ``tool_choice`` requires a call)."""

    __slots__ = (
        "_attempt_chars",
        "_calls",
        "_calls_out",
        "_guard",
        "_has_calls",
        "_held",
        "_parsed_calls",
        "_pending",
        "_pending_len",
        "_retry_hold",
        "_shown",
        "_shown_len",
        "_started",
        "_text_out",
        "hold_content",
        "mode",
        "next_index",
    )

    def __init__(self, mode: StreamMode = "hold", *, hold_content: bool = False) -> None:
        self.mode = mode
        self.hold_content = hold_content and mode == "hold"
        self._shown: list[str] = []  # text released, every attempt
        self._shown_len = 0
        self._started = 0  # calls started on the client's side, every attempt
        self.next_index = 0
        self._guard: Guard | None = None
        self._reset()

    def _reset(self) -> None:
        self._pending: list[str] = []
        self._pending_len = 0
        self._text_out = False
        self._attempt_chars = 0  # text of this attempt released
        self._calls_out = False
        self._has_calls = False
        self._held: list[Piece] = []
        self._calls: dict[int, _CallOut] = {}
        self._parsed_calls = 0  # calls of a raw-text Guard handed out (``parsed``)
        self._retry_hold = False

    # ----------------------------------------------------------------------------------------- inspection
    @property
    def shown_text(self) -> str:
        """All text released so far, every attempt."""
        return "".join(self._shown)

    @property
    def began(self) -> bool:
        """Whether an attempt was begun."""
        return self._guard is not None

    @property
    def attempt_visible(self) -> bool:
        """Whether the current attempt released anything (text or a call fragment)."""
        return self._text_out or self._calls_out

    @property
    def holding_text(self) -> bool:
        """The current attempt follows text already shown: its text waits for the end (hold mode)."""
        return self._retry_hold

    def retry_visible(self, verdict: GuardVerdict) -> bool:
        """Whether a retry of the current attempt, failed with ``verdict``, could not be invisible."""
        return (
            self._calls_out
            or (self.mode == "pass" and self._text_out)
            or (verdict.kind == "runaway" and verdict.where == "content" and self._text_out)
        )

    @staticmethod
    def finish_reason(guard: Guard) -> str:
        """The truthful ``finish_reason`` of an accepted attempt."""
        return "tool_calls" if guard.tool_calls else (guard.finish_reason or "stop")

    # ------------------------------------------------------------------------------------------- feeding
    def begin(self, guard: Guard) -> None:
        """A new attempt starts, judged by ``guard``."""
        self._guard = guard
        self._reset()
        self.next_index = self._started
        self._retry_hold = self.mode == "hold" and self._shown_len > 0

    def feed(self, event: object, verdict: GuardVerdict) -> list[Piece]:
        """What the client may see now of ``event``, which the attempt's Guard answered with ``verdict``."""
        if verdict.kind != "ok":
            return []
        kind = type(event)
        if kind is ContentDelta:
            return self._text(event.text)  # type: ignore[attr-defined]
        if kind is ToolCallDelta:
            return self._call(event)  # type: ignore[arg-type]
        if kind is TokenDelta:
            return self.parsed(verdict)
        return []

    def parsed(self, verdict: GuardVerdict) -> list[Piece]:
        """For a Guard reading raw text in a call format (``TokenDelta``s, ``Guard(format=...)``): the prose
        and the calls its parser settled since the last call, ``verdict`` being the Guard's latest (after
        ``close()``, its final one). The parser holds a marker's first characters itself; prose goes out
        unless the generation failed (a loop ends it, the prose before stands); a call goes out whole, once
        closed and validated (hold: when the attempt is accepted)."""
        guard = self._guard
        assert guard is not None
        out: list[Piece] = []
        if verdict.usable or verdict.kind == "runaway":
            fresh = guard.content_since(self._attempt_chars)
            if fresh:
                self._show(fresh)
                out.append(Text(fresh))
        if verdict.usable and guard.call_count > self._parsed_calls:
            self._has_calls = True
            for call in guard.tool_calls[self._parsed_calls :]:
                piece = CallStart(self.next_index, call.id, call.name, call.arguments)
                self.next_index += 1
                if self.mode == "pass":
                    out.append(piece)
                    self._calls_out = True
                    self._started = self.next_index
                else:
                    self._held.append(piece)
            self._parsed_calls = guard.call_count
        return out

    def accept(self) -> list[Piece]:
        """The flow accepted the attempt: what was held, in order (text first, then the calls)."""
        out: list[Piece] = []
        guard = self._guard
        if guard is not None and guard.repaired and not self._has_calls:
            self._repaired(guard)
        if self.hold_content or self._retry_hold:
            if self._pending and (self.hold_content or not self._has_calls):
                text = "".join(self._pending)
                if self._retry_hold:
                    shown = self.shown_text
                    if shown and text.startswith(shown):
                        text = text[len(shown) :]
                if text:
                    self._show(text)
                    out.append(Text(text))
            self._pending, self._pending_len = [], 0
        elif self._pending:
            out.extend(self._release_text(0))
        if self._held:
            out.extend(self._held)
            self._held = []
            self._calls_out = True
            self._started = self.next_index
        return out

    # ---------------------------------------------------------------------------------------------- rules
    def _repaired(self, guard: Guard) -> None:
        """The Guard repaired calls written into the text: the text held from the call's start was the
        calls'; what is left to show is the prose not shown yet, then the calls, held like any others."""
        prose = guard.content[self._attempt_chars :]
        self._pending = [prose] if prose else []
        self._pending_len = len(prose)
        self._has_calls = True
        for call in guard.tool_calls:
            self._held.append(CallStart(self.next_index, call.id, call.name, call.arguments))
            self.next_index += 1

    def _waiting(self) -> bool:
        return self.hold_content or self._retry_hold

    def _show(self, text: str) -> None:
        self._shown.append(text)
        self._shown_len += len(text)
        self._attempt_chars += len(text)
        self._text_out = True

    def _text(self, text: str) -> list[Piece]:
        if not text or self._has_calls:  # whitespace after the calls: the Guard ignores it too
            return []
        self._pending.append(text)
        self._pending_len += len(text)
        if self._waiting():
            return []
        assert self._guard is not None
        return self._release_text(self._guard.content_undecided_chars())

    def _release_text(self, keep: int) -> list[Piece]:
        """Release the pending text but its last ``keep`` characters."""
        if self._pending_len <= keep:
            return []
        text = self._pending[0] if len(self._pending) == 1 else "".join(self._pending)
        cut = len(text) - keep
        out, rest = text[:cut], text[cut:]
        self._pending = [rest] if rest else []
        self._pending_len = len(rest)
        self._show(out)
        return [Text(out)]

    def _call(self, event: ToolCallDelta) -> list[Piece]:
        out: list[Piece] = []
        if not self._has_calls:
            self._has_calls = True
            if self._pending and not self._waiting():
                out = self._release_text(0)  # the text before a call was prose after all
        call = self._calls.get(event.index)
        if call is None:
            call = self._calls[event.index] = _CallOut()
        if event.id and not call.id:
            call.id = event.id
        if event.name and call.index is None:
            call.name += event.name
        if not event.arguments:
            return out
        piece: Piece
        if call.index is None:  # the name is whole once arguments start: id, type and name go out once
            call.index = self.next_index
            self.next_index += 1
            piece = CallStart(call.index, call.id, call.name, event.arguments)
        else:
            piece = CallArguments(call.index, event.arguments)
        if self.mode == "pass":
            out.append(piece)
            self._calls_out = True
            self._started = self.next_index
        else:
            self._held.append(piece)
        return out


def coalesce(pieces: list[Piece]) -> list[Piece]:
    """``pieces`` with each call's fragments that follow one another joined into one piece (a door that
    writes a held call at once sends one chunk per call). O(total size)."""
    groups: list[tuple[Piece, list[str]]] = []
    for piece in pieces:
        if type(piece) is CallArguments and groups:
            head, parts = groups[-1]
            if type(head) is not Text and head.index == piece.index:  # type: ignore[union-attr]
                parts.append(piece.arguments)
                continue
        groups.append((piece, [piece.arguments] if type(piece) is not Text else []))  # type: ignore[union-attr]
    out: list[Piece] = []
    for head, parts in groups:
        if len(parts) <= 1:
            out.append(head)
        elif type(head) is CallStart:
            out.append(CallStart(head.index, head.id, head.name, "".join(parts)))
        else:
            out.append(CallArguments(head.index, "".join(parts)))  # type: ignore[union-attr]
    return out
