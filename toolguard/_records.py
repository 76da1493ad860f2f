"""ExecutionRecord: what running (or refusing to run) one proposed tool call produced.

Proposals (``ToolCall``) and records stay apart: only a record produces a tool-result message, so nothing a
model wrote can pose as a tool's answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ._tools import ToolCall

__all__ = ["ExecutionRecord", "ExecutionStatus"]

ExecutionStatus: TypeAlias = Literal["ok", "invalid", "error", "timeout"]


@dataclass(frozen=True, slots=True)
class ExecutionRecord:
    """The outcome of one proposal.

    ``status``: ``"ok"`` (``result`` holds the return value), ``"invalid"`` (the proposal was refused before
    anything ran: unknown tool, malformed JSON, arguments that do not match the schema), ``"error"`` (the tool
    raised) or ``"timeout"`` (no answer in time: the outcome is unknown). ``error`` is a sanitised message
    meant for the model; ``content`` is the text of the tool-result message; ``attempts`` counts runs (0 when
    invalid); ``duration`` is wall time in seconds. ``exception`` keeps the original exception for the
    developer; it never reaches the model and takes no part in equality.
    """

    call: ToolCall
    status: ExecutionStatus
    result: Any = None
    error: str | None = None
    attempts: int = 0
    duration: float = 0.0
    content: str = ""
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_message(self) -> dict[str, Any]:
        """The tool-role message answering the proposal: ``{"role": "tool", "tool_call_id", "content"}``."""
        return {"role": "tool", "tool_call_id": self.call.id or "", "content": self.content}
