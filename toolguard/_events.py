"""The events a ``Guard`` consumes: values describing one generation as it arrives.

Front doors translate their wire format into these (an OpenAI ``ChatCompletionChunk`` delta, a proxy's SSE
event, a local model's sampled token) and feed them to ``Guard.feed``. They are frozen, slotted dataclasses
compared by value (h11's ``_events.py``), so tests assert on plain lists of events. Reading them off the
OpenAI wire (chunks, whole messages) is ``toolguard._openai``'s job.

- ``ContentDelta(text)``: assistant text.
- ``ToolCallDelta(index, id=None, name=None, arguments="")``: a fragment of tool call ``index``; ``name`` and
  ``id`` arrive with the first fragment in OpenAI streams (a name split over several deltas is concatenated).
- ``TokenDelta(token_id, text)``: one sampled token of a local model, before any tool-call format is parsed
  (the Guard treats its text as content unless it was built with a ``format`` to parse).
- ``Finish(reason)``: the end of the generation, with the upstream's ``finish_reason`` (``"stop"``,
  ``"tool_calls"``, ``"length"``, ...; ``None`` when unknown).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["ContentDelta", "Finish", "GuardEvent", "TokenDelta", "ToolCallDelta"]


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """A fragment of assistant text."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of tool call number ``index`` (OpenAI's ``delta.tool_calls[i]``)."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class TokenDelta:
    """One token sampled by a local model: its id (``None`` where the text is not one token's: a step that
    decoded several, or a door feeding raw text) and its decoded text."""

    token_id: int | None
    text: str


@dataclass(frozen=True, slots=True)
class Finish:
    """The generation ended; ``reason`` is the upstream ``finish_reason``."""

    reason: str | None = None


GuardEvent: TypeAlias = ContentDelta | ToolCallDelta | TokenDelta | Finish

