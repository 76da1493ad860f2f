"""The Guard's state and what the doors may read of it (``toolguard._guard`` holds the rules).

Theory of operation
-------------------
``GuardState`` is the half of ``Guard`` that decides nothing: the slots one generation needs (calls in
arrival order, accepted content as a list of pieces, the detectors, the repair's bookkeeping, the sticky
verdict), the constructor that reads ``tools``/``tool_choice`` once, and the O(1) views the doors and the
release gate read between events (``content_length``, ``content_since``, ``content_undecided_chars``,
``message()``...). ``Guard`` subclasses it and adds ``feed``/``close`` and the rules; the split keeps each
module to one job (and within the size the architecture test allows). Nothing here feeds or judges.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ._choice import parse_tool_choice
from ._content_calls import ContentCallScan
from ._runaway import RunawayConfig, RunawayDetector
from ._tools import ToolCall, ToolSet
from ._verdict import DEFAULT_LIMITS, OK, GuardLimits, GuardVerdict

__all__ = ["GuardState"]

_DEFAULT_RUNAWAY_CONFIG = RunawayConfig()  # shared: building a config per detector costs a validation pass


def _default_detector() -> RunawayDetector:
    return RunawayDetector(config=_DEFAULT_RUNAWAY_CONFIG)


class _Call:
    """Bookkeeping for one tool call (internal)."""

    __slots__ = (
        "complete",
        "detector",
        "fragments",
        "id",
        "index",
        "length",
        "name",
        "resolved",
        "tool",
        "validator",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.id: str | None = None
        self.name = ""
        self.fragments: list[str] = []
        self.length = 0
        self.resolved = False  # the name was checked against the tool set
        self.complete = False  # the validator saw a whole JSON document
        self.tool: Any = None
        self.validator: Any = None
        self.detector: Any = None


class GuardState:
    """The state of one ``Guard`` and its read-only views (constructor arguments: see ``Guard``)."""

    __slots__ = (
        "_allowed",
        "_calls",
        "_content",
        "_content_detector",
        "_content_len",
        "_detector_factory",
        "_fabricated",
        "_finish_reason",
        "_limits",
        "_order",
        "_parsed_calls",
        "_parser",
        "_parser_base",
        "_repair",
        "_repair_chars",
        "_repair_text",
        "_repair_verdict",
        "_repair_xml",
        "_repaired",
        "_required",
        "_scan",
        "_token_detector",
        "_tools",
        "_validator_factory",
        "_verdict",
        "closed",
    )

    def __init__(
        self,
        tools: ToolSet | Iterable[Mapping[str, Any]] | None = None,
        *,
        tool_choice: Any = None,
        detector: Callable[[], RunawayDetector] | None = None,
        limits: GuardLimits = DEFAULT_LIMITS,
        format: str | None = None,
        repair: bool = False,
        call_format: str | None = None,
    ) -> None:
        from ._stream import StreamValidator

        if tools is None:
            toolset = ToolSet()
        elif isinstance(tools, ToolSet):
            toolset = tools
        else:
            toolset = ToolSet.from_openai(tools)
        self._tools = toolset
        self._allowed, self._required = _allowed_names(toolset, tool_choice)
        self._detector_factory: Callable[[], Any] = detector or _default_detector
        self._validator_factory: Callable[[Any], Any] = StreamValidator
        self._limits = limits
        self._calls: dict[int, _Call] = {}
        self._order: list[_Call] = []
        self._content: list[str] = []
        self._content_len = 0
        self._content_detector: Any = None
        self._token_detector: Any = None
        self._fabricated: list[str] = []
        self._scan = ContentCallScan(self._tools)
        self._finish_reason: str | None = None
        self._verdict: GuardVerdict = OK
        self._parser: Any = None
        self._parser_base = 0  # content length when the parser took over (repair starts mid-content)
        self._parsed_calls = 0
        self._repair: str | None = None
        if repair:
            from ._repair import repair_format

            self._repair = repair_format(call_format)
        self._repair_verdict: GuardVerdict | None = None  # the call_in_content verdict a repair stands in for
        self._repaired = False
        self._repair_xml: GuardVerdict | None = None  # the calls are XML parameters: read at the end
        self._repair_text: list[str] = []  # the text handed to the parser, given back if nothing parses
        self._repair_chars = 0  # its length
        if format is not None:
            from .formats import StreamingParser

            self._parser = StreamingParser(format)  # type: ignore[arg-type]
        self.closed = False

    # -------------------------------------------------------------------------------------------- inspection
    @property
    def verdict(self) -> GuardVerdict:
        """The current verdict (the final one once ``Finish`` was fed or ``close()`` called)."""
        return self._verdict

    @property
    def tools(self) -> ToolSet:
        return self._tools

    @property
    def content(self) -> str:
        """The content accepted so far (fabricated text excluded)."""
        return "".join(self._content)

    @property
    def fabricated(self) -> str:
        """Text cut after the tool calls (empty when none)."""
        return "".join(self._fabricated)

    @property
    def finish_reason(self) -> str | None:
        return self._finish_reason

    @property
    def repaired(self) -> bool:
        """Whether the tool calls were repaired from text written into the content (see ``repair``)."""
        return self._repaired

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The calls seen so far, in order of their index, with the argument text received (maybe partial)."""
        return [
            ToolCall(c.name, "".join(c.fragments), c.id) for c in sorted(self._order, key=lambda c: c.index)
        ]

    def content_undecided(self) -> bool:
        """Whether the content so far may still turn out to be a call written into it (a bare JSON call
        being read at the start, or a marker's first characters at the end). Front doors that hold back
        what a retry would have to take back hold content while this is true. O(1)."""
        return self.content_undecided_chars() > 0

    @property
    def content_length(self) -> int:
        """Characters of accepted content so far. O(1)."""
        return self._content_len

    @property
    def call_count(self) -> int:
        """Tool calls seen so far. O(1)."""
        return len(self._order)

    def content_since(self, start: int) -> str:
        """The accepted content from character ``start`` on; O(its length), whatever came before."""
        need = self._content_len - start
        if need <= 0:
            return ""
        parts: list[str] = []
        got = 0
        for piece in reversed(self._content):
            parts.append(piece)
            got += len(piece)
            if got >= need:
                break
        text = "".join(reversed(parts))
        return text[len(text) - need :]

    def content_undecided_chars(self) -> int:
        """How many characters at the end of the content may still turn out to be a call written into it
        (0 once a tool call came, or after a verdict; while a repair reads a call written into the text,
        every character from the call's start); what the release gate holds back. O(1)."""
        if self._repair_verdict is not None:  # the content from the call's start on is the call's text
            return self._repair_chars if self._verdict.kind == "ok" else 0
        if self._order or self._verdict.kind != "ok":
            return 0
        return self._scan.undecided_chars()

    def message(self) -> dict[str, Any]:
        """The assistant message as received (OpenAI shape): content and tool calls, fabricated text cut.
        A call without an id (repaired out of text, or from an upstream that sent none) gets a fresh
        ``call_`` id, the same on every read, so ids never repeat across an agent's turns."""
        content = self.content
        out: dict[str, Any] = {"role": "assistant", "content": content or None}
        calls = sorted(self._order, key=lambda c: c.index)
        for c in calls:
            if not c.id:  # a call repaired out of text, or an upstream that sent none: fresh, and kept
                c.id = f"call_{uuid.uuid4().hex[:24]}"
        if calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": "".join(c.fragments)},
                }
                for c in calls
            ]
        return out


def _allowed_names(tools: ToolSet, tool_choice: Any) -> tuple[frozenset[str], str | None]:
    """(names a call may use, message when a call is required or None), from the parsed ``tool_choice``."""
    choice = parse_tool_choice(tool_choice, tools)
    allowed = frozenset(choice.names)
    if not choice.required:
        return allowed, None
    if choice.named is not None:
        return allowed, f"a call of {choice.named!r} was required (tool_choice) but none was made"
    return allowed, "a tool call was required (tool_choice='required') but the model answered with text"
