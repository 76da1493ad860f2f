"""``ContentCallScan``: notice a tool call written into the message content, as it streams.

A server whose tool parser did not run (or a model that ignored the tools interface) puts the call in the
text: ``<tool_call>{...}</tool_call>``, ``[TOOL_CALLS][...]``, ``<|python_tag|>{...}``, ``<function=...>``, or
a bare JSON object ``{"name": "get_weather", "arguments": {...}}``. Markers count anywhere in the content
(a tail of ``len(marker) - 1`` characters carries a marker split across deltas); a bare JSON call only at the
start of the content and only when its ``"name"`` is one of the offered tools (prose JSON like
``{"name": "Alice"}`` is left alone). The start is matched with the ``regex`` package's partial matching, so
the scan waits while the head can still become a call and stops looking after ``BARE_CALL_HEAD_CHARS``.

Cost per delta: O(len(delta)) for the marker search (plus a fixed tail); the head match runs only while the
head is undecided (at most ``BARE_CALL_HEAD_CHARS`` characters in all).
"""

from __future__ import annotations

import json
from collections.abc import Container

import regex

from ._verdict import GuardVerdict

__all__ = ["BARE_CALL_HEAD_CHARS", "CALL_MARKERS", "ContentCallScan"]

#: Markers of a tool call written into the content by a server whose tool parser did not run.
CALL_MARKERS: tuple[str, ...] = ("<tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "<function=")
_MARKER_TAIL = max(len(m) for m in CALL_MARKERS) - 1
#: How much leading content is examined for a bare JSON call (``{"name": "get_weather", ...``).
BARE_CALL_HEAD_CHARS = 256
_BARE_CALL = regex.compile(
    r'\s*(?:```(?:json)?\s*)?\[?\s*\{\s*(?:"type"\s*:\s*"function"\s*,\s*)?(?:"function"\s*:\s*\{\s*)?'
    r'"(?:name|tool|tool_name)"\s*:\s*"([^"\\]{1,128})"'
)


class ContentCallScan:
    """Scan content deltas for a call written into them; ``tools`` holds the offered tool names."""

    __slots__ = ("_head", "_head_open", "_tail", "_tools")

    def __init__(self, tools: Container[str]) -> None:
        self._tools = tools
        self._head = ""
        self._head_open = True  # still deciding whether the content opens with a bare JSON call
        self._tail = ""

    def scan(self, text: str, offset: int) -> GuardVerdict | None:
        """Look at the delta ``text`` found at ``offset`` in the content; a failing verdict, or None."""
        window = self._tail + text
        for marker in CALL_MARKERS:
            if marker in window:
                at = offset - len(self._tail) + window.index(marker)
                return GuardVerdict(
                    "call_in_content",
                    True,
                    f"a tool call was written into the message text ({marker!r}) instead of tool_calls",
                    "content",
                    offset=at,
                    text=marker,
                )
        self._tail = window[-_MARKER_TAIL:]
        return self._scan_head(text) if self._head_open else None

    def _scan_head(self, text: str) -> GuardVerdict | None:
        head = self._head + text
        match = _BARE_CALL.match(head, partial=True)
        if match is None or len(head) > BARE_CALL_HEAD_CHARS:
            self._head_open = False
            self._head = ""
            return None
        self._head = head
        if match.partial:
            return None
        self._head_open = False
        self._head = ""
        name = match.group(1)
        if name not in self._tools:
            return None
        return GuardVerdict(
            "call_in_content",
            True,
            f"a call of {name!r} was written into the message text as JSON instead of tool_calls",
            "content",
            tool=name,
            offset=match.start(1),
            text=head,
        )

    def undecided(self) -> bool:
        """Whether the content so far may still turn out to be a call (a bare JSON call being read at the
        start, or a marker's first characters at the end). O(1)."""
        return self.undecided_chars() > 0

    def undecided_chars(self) -> int:
        """How many characters at the end of the content may still turn out to be a call: the whole head
        while a bare JSON call may be being read, else a marker's first characters at the end, else 0.
        O(1)."""
        if self._head_open and self._head:
            return len(self._head)
        tail = self._tail  # markers hold no inner "<" or "[": only the last one can open a marker prefix
        start = max(tail.rfind("<"), tail.rfind("["))
        if start < 0:
            return 0
        suffix = tail[start:]
        if any(len(suffix) < len(m) and m.startswith(suffix) for m in CALL_MARKERS):
            return len(suffix)
        return 0

    def at_end(self, content: str) -> GuardVerdict | None:
        """At the end of the generation: is the whole (undecided) content one JSON call of a known tool?"""
        if not (self._head_open and self._head.strip()):
            return None
        text = content.strip().strip("`")
        text = text[4:] if text.startswith("json") else text
        try:
            value = json.loads(text)
        except ValueError:
            return None
        if isinstance(value, dict) and isinstance(value.get("name"), str) and value["name"] in self._tools:
            return GuardVerdict(
                "call_in_content",
                True,
                f"a call of {value['name']!r} was written into the message text as JSON, not tool_calls",
                "content",
                tool=value["name"],
                offset=0,
                text=text,
            )
        return None
