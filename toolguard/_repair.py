"""Repair what a server got wrong about tool calls, so a valid call costs no second generation.

Theory of operation
-------------------
Two faults of real endpoints are repaired here, for every front door (the ``Guard`` calls in; nothing here
does I/O):

- **A call written as text.** ``transformers serve``, Ollama, ``llama-server`` without ``--jinja`` and vLLM
  without a tool parser (or when its parser misses) return ``<tool_call>{...}</tool_call>`` as ``content``.
  The Guard's ``ContentCallScan`` notices the call; with repair on, the Guard hands the text from there to a
  ``toolguard.formats.StreamingParser`` in the format ``repair_format`` names (``"auto"``: detected from the
  marker) and checks the parsed calls like any others. ``call_format_for`` picks the format configured for a
  model name (``fnmatch`` patterns, first match wins).
- **A fabricated result beside the calls.** A non-streamed message with ``tool_calls`` whose ``content`` holds
  a tool-result or next-turn marker (``<tool_response>``, ``Observation:``, ``<|im_start|>``, a role header,
  an end-of-turn token) carries text the model made up after its call. ``fabricated_split`` moves the content
  from that marker on after the calls, where the Guard's own rule cuts it exactly as it cuts it in a stream.

Cost: one regex search over the content per message; the parser is linear in the text it reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any

from ._events import ContentDelta, GuardEvent, ToolCallDelta
from ._exceptions import ConfigError
from .formats import END_TOKENS, FORMATS

__all__ = ["FABRICATION_MARKERS", "call_format_for", "fabricated_split", "repair_format"]

#: What starts text a model made up beside its calls: a tool's result, another turn, the end of the turn.
FABRICATION_MARKERS = re.compile(
    r"<tool_response>|<tool_result>|<\|?ipython\|?>|Observation\s*:|\[TOOL_RESULTS\]|"
    r"<\|im_start\|>|<\|start_header_id\|>|\[INST\]|<start_of_turn>|"
    r"^[^\S\n]*(?:user|human|tool|assistant)\s*:|" + "|".join(re.escape(t) for t in END_TOKENS),
    re.IGNORECASE | re.MULTILINE,
)


def repair_format(call_format: str | None) -> str:
    """The ``toolguard.formats`` format repairs parse (``None``: ``"auto"``); raises ``ConfigError``."""
    fmt = call_format or "auto"
    if fmt not in FORMATS:
        raise ConfigError(f"unknown call format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return fmt


def call_format_for(model: Any, formats: Mapping[str, str] | Iterable[tuple[str, str]]) -> str | None:
    """The call format configured for ``model`` (``{pattern: format}``, shell patterns, case-sensitive, first
    match wins), or ``None``."""
    if not isinstance(model, str):
        return None
    items = formats.items() if isinstance(formats, Mapping) else formats
    for pattern, fmt in items:
        if fnmatchcase(model, pattern):
            return fmt
    return None


def fabricated_split(events: list[GuardEvent]) -> list[GuardEvent]:
    """``[ContentDelta, ToolCallDelta..., Finish]`` of a whole message, with the content from its first
    fabrication marker on moved after the calls (where the Guard cuts it); unchanged when there is none."""
    first = events[0]
    assert isinstance(first, ContentDelta)
    match = FABRICATION_MARKERS.search(first.text)
    if match is None:
        return events
    kept, cut = first.text[: match.start()], first.text[match.start() :]
    calls = [e for e in events[1:-1] if isinstance(e, ToolCallDelta)]
    if len(calls) != len(events) - 2:
        return events
    head: list[GuardEvent] = [ContentDelta(kept)] if kept.strip() else []
    return [*head, *calls, ContentDelta(cut), events[-1]]
