"""Values the format parsers return: ``Parsed``, ``Problem`` and the streaming events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from .._tools import ToolCall

__all__ = [
    "FORMATS",
    "ContentDelta",
    "Event",
    "FabricationStarted",
    "Format",
    "Parsed",
    "Problem",
    "ProblemFound",
    "ProblemKind",
    "ToolCallCompleted",
    "ToolCallStarted",
]

Format: TypeAlias = Literal["auto", "openai", "hermes", "llama3", "mistral", "react"]
FORMATS: tuple[Format, ...] = ("auto", "openai", "hermes", "llama3", "mistral", "react")

ProblemKind: TypeAlias = Literal[
    "fabricated",  # text after a closed call (or after the end of the turn) was cut
    "concatenated",  # JSON calls written back to back, not in an array
    "embedded",  # a JSON call found in the middle of prose
    "unterminated",  # a call that opened and never closed: not a tool call, complete=False
    "malformed",  # a closed call that is not a valid call (bad JSON, no name): not a tool call
    "missing_close_tag",  # a complete <tool_call> JSON without </tool_call>, accepted
    "arguments_not_json",  # a ReAct Action Input that is not JSON, passed on as a JSON string
    "arguments_not_object",  # arguments that are JSON but not an object ("hello", [1]): left to the validator
]


@dataclass(frozen=True, slots=True)
class Problem:
    """Something the parser noticed and did not silently fix. ``offset`` indexes the whole text."""

    kind: ProblemKind
    offset: int
    message: str
    text: str = ""


@dataclass(frozen=True, slots=True)
class Parsed:
    """The result of parsing one assistant turn.

    ``tool_calls`` are proposals in the order written; ``content`` is the prose before them; ``fabricated`` is
    the text cut after the last closed call (or after the end of the turn), which must never be treated as a
    tool's answer; ``complete`` is False when a call was left unterminated (its text is in ``truncated`` and
    it is *not* among ``tool_calls``). ``format`` is the wire format the calls used (``None`` when no call was
    seen under ``format="auto"``).
    """

    tool_calls: list[ToolCall] = field(default_factory=list)
    content: str = ""
    fabricated: str = ""
    complete: bool = True
    problems: list[Problem] = field(default_factory=list)
    truncated: str = ""
    format: Format | None = None

    @property
    def notes(self) -> list[str]:
        """The problems as short human-readable lines."""
        return [f"{p.kind} at {p.offset}: {p.message}" for p in self.problems]


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """Prose that is certainly content (not the start of a call or a marker)."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A call marker was read at ``offset``: what follows is a call, not prose."""

    index: int
    offset: int


@dataclass(frozen=True, slots=True)
class ToolCallCompleted:
    """Call number ``index`` closed and parsed."""

    index: int
    call: ToolCall


@dataclass(frozen=True, slots=True)
class ProblemFound:
    problem: Problem


@dataclass(frozen=True, slots=True)
class FabricationStarted:
    """From ``offset`` on, the text is cut (it follows a closed call or the end of the turn): stop here."""

    offset: int


Event: TypeAlias = ContentDelta | ToolCallStarted | ToolCallCompleted | ProblemFound | FabricationStarted
