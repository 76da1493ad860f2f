"""Type aliases shared across toolguard."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = ["JSON", "ChoiceMode", "JSONSchema", "Message", "ParsedToolChoice", "ToolChoice"]

JSON: TypeAlias = Any
JSONSchema: TypeAlias = Mapping[str, Any] | bool
Message: TypeAlias = dict[str, Any]
ToolChoice: TypeAlias = Literal["auto", "required", "none"] | str | dict[str, Any]
ChoiceMode: TypeAlias = Literal["auto", "required", "none"]


@dataclass(frozen=True, slots=True)
class ParsedToolChoice:
    """A request's ``tool_choice`` read once against its tools (``toolguard._choice.parse_tool_choice``).

    ``mode``: ``"auto"`` (text or calls), ``"required"`` (at least one call) or ``"none"`` (no call; also
    ``"auto"`` without tools). ``names``: the tools a call may use, in the tool set's order (empty for
    ``"none"``). ``named``: the one tool a named choice demands, else ``None``.
    """

    mode: ChoiceMode
    names: tuple[str, ...]
    named: str | None = None

    @property
    def required(self) -> bool:
        """A turn that ends without a call breaks this choice."""
        return self.mode == "required"
