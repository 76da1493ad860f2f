"""The parser's state and the steps every mode shares (``_parser`` has the theory of operation)."""

from __future__ import annotations

import re
from functools import cache

from .._tools import ToolCall
from ._json import JsonScanner
from ._records import (
    ContentDelta,
    Event,
    FabricationStarted,
    Format,
    Parsed,
    Problem,
    ProblemFound,
    ProblemKind,
    ToolCallCompleted,
    ToolCallStarted,
)

__all__ = ["END_TOKENS", "ParserCore"]

HERMES_OPEN, HERMES_CLOSE = "<tool_call>", "</tool_call>"
MISTRAL_CALLS, MISTRAL_ARGS, MISTRAL_CALL_ID = "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"
PYTHON_TAG = "<|python_tag|>"
ACTION, ACTION_INPUT = "Action:", "Action Input:"
FENCE = "```"
END_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|endoftext|>", "<|end|>", "</s>")

_MARKERS: dict[Format, tuple[str, ...]] = {
    "openai": (),
    "hermes": (HERMES_OPEN,),
    "llama3": (PYTHON_TAG,),
    "mistral": (MISTRAL_CALLS,),
    "react": (ACTION,),
    "auto": (HERMES_OPEN, MISTRAL_CALLS, PYTHON_TAG, ACTION),
}
_JSON_FORMATS = frozenset({"openai", "llama3", "auto"})
_WS = " \t\r\n"
_NAME_STOP = re.compile(r"[\[\s]")
_LEAD = 24

_FAKE_RESULT = re.compile(
    r"<tool_response>|<tool_result>|<\|?ipython\|?>|Observation\s*:|\[TOOL_RESULTS\]|Function result|"
    r'"(?:result|results|output|response|observation)"\s*:',
    re.IGNORECASE,
)
_NEW_TURN = re.compile(
    r"<\|im_start\|>|<\|start_header_id\|>|\[INST\]|<start_of_turn>|^[^\S\n]*(?:user|human|assistant)\s*:",
    re.IGNORECASE | re.MULTILINE,
)


def _trigger_regex(fmt: Format) -> re.Pattern[str]:
    literals = sorted({*_MARKERS[fmt], *END_TOKENS}, key=len, reverse=True)
    pattern = "|".join(re.escape(m) for m in literals)
    if fmt in _JSON_FORMATS:
        pattern += r"|[{\[]"
    return re.compile(pattern)


@cache  # a handful of marker sets, asked for on every chunk: O(1) per call after the first
def _prefixes(markers: tuple[str, ...]) -> frozenset[str]:
    return frozenset(m[:k] for m in markers for k in range(1, len(m)))


@cache
def _longest(prefixes: frozenset[str]) -> int:
    return max((len(p) for p in prefixes), default=0)


class ParserCore:
    """The buffer, what was found so far, and the small steps the modes share. Modes return False when they
    need more text."""

    def __init__(self, format: Format, max_depth: int) -> None:
        self._format: Format = format
        self._detected: Format | None = None if format == "auto" else format
        self._max_depth = max_depth
        self._trigger = _trigger_regex(format)
        self._content_prefixes = _prefixes((*_MARKERS[format], *END_TOKENS))
        self._text = ""
        self._i = 0
        self._base = 0  # absolute offset of self._text[0]
        self._prev = "\n"  # the character before self._text[0]; the stream starts on a new line
        self._mode = "content"
        self._events: list[Event] = []
        self._content: list[str] = []
        self._lead = ""  # the first characters of content, to tell "nothing but a ```json fence" from prose
        self._calls: list[ToolCall] = []
        self._problems: list[Problem] = []
        self._tail: list[str] = []
        self._tail_offset = -1
        self._truncated = ""
        self._ended = False  # an end-of-turn token was read
        self._sep = ""  # a ';' read between llama3 JSON calls
        self._closed: Parsed | None = None
        # the call being read
        self._call_offset = 0
        self._scanner: JsonScanner | None = None
        self._ctx = ""
        self._raw: list[str] = []
        self._name: list[str] = []
        self._call_id: list[str] = []
        self._in_id = False
        self._pending: list[ToolCall] | None = None

    def _skip_ws(self) -> bool:
        """Consume whitespace; True when a non-whitespace character is next."""
        text, i, n = self._text, self._i, len(self._text)
        while i < n and text[i] in _WS:
            i += 1
        self._i = i
        return i < n

    def _waiting_for(self, candidates: tuple[str, ...], final: bool) -> bool:
        """Is the rest of the text a proper prefix of a candidate (so more text could complete it)?"""
        if final:
            return False
        rest = self._text[self._i : self._i + 32]
        return any(len(rest) < len(c) and c.startswith(rest) for c in candidates)

    def _abs(self, i: int | None = None) -> int:
        return self._base + (self._i if i is None else i)

    def _problem(self, kind: ProblemKind, offset: int, message: str, text: str = "") -> None:
        problem = Problem(kind=kind, offset=offset, message=message, text=text)
        self._problems.append(problem)
        self._events.append(ProblemFound(problem))

    def _emit_content(self, text: str) -> None:
        if text:
            self._content.append(text)
            self._events.append(ContentDelta(text))
            if len(self._lead) <= _LEAD:
                self._lead += (text if self._lead else text.lstrip())[: _LEAD + 1]

    @property
    def _content_started(self) -> bool:
        """Has prose been written (whitespace and a ```json fence line aside)?"""
        return bool(self._lead) and (len(self._lead) > _LEAD or not _is_fence_opener(self._lead))

    def _add_calls(self, calls: list[ToolCall], fmt: Format) -> None:
        if self._detected is None:
            self._detected = fmt
        for call in calls:
            self._calls.append(call)
            self._events.append(ToolCallCompleted(len(self._calls) - 1, call))

    def _start_call(self, marker_at: int, consumed: int, mode: str) -> None:
        """A call marker was read at ``marker_at`` (index into the current text)."""
        self._call_offset = self._abs(marker_at)
        self._events.append(ToolCallStarted(len(self._calls), self._call_offset))
        self._i = marker_at + consumed
        self._mode = mode
        self._raw, self._name, self._call_id, self._in_id = [], [], [], False

    def _begin_json(self, ctx: str) -> None:
        self._scanner = JsonScanner(max_depth=self._max_depth)
        self._ctx = ctx
        self._raw = []
        if ctx in ("content", "after"):
            self._call_offset = self._abs()
        self._mode = "json"

    def _dispatch_marker(self, marker: str, at: int) -> None:
        if marker == HERMES_OPEN:
            self._start_call(at, len(marker), "hermes_open")
        elif marker == MISTRAL_CALLS:
            self._start_call(at, len(marker), "mistral_open")
        elif marker == PYTHON_TAG:
            self._start_call(at, len(marker), "pytag_open")
        else:  # ACTION
            self._start_call(at, len(marker), "react_name")

    def _start_tail(self, offset: int, prefix: str) -> None:
        self._tail_offset = offset
        if prefix:
            self._tail.append(prefix)
        self._events.append(FabricationStarted(offset))
        self._mode = "tail"

    def _malformed(self, raw: str, message: str) -> None:
        self._problem("malformed", self._call_offset, message + "; it is not a tool call", raw)

    def _unterminated(self, raw: str, message: str = "") -> None:
        self._truncated = raw
        self._problem(
            "unterminated",
            self._call_offset,
            message or "the output ended inside a tool call; it is not a tool call",
            raw,
        )


# helpers ----------------------------------------------------------------------------------------------------
def _holdback(text: str, i: int, prefixes: frozenset[str]) -> int:
    """Length of the longest suffix of ``text[i:]`` that may be the start of a marker."""
    longest = min(len(text) - i, _longest(prefixes))
    for k in range(longest, 0, -1):
        if text[len(text) - k :] in prefixes:
            return k
    return 0


def _is_prefix_of_any(text: str, j: int, prefixes: frozenset[str]) -> bool:
    """Is ``text[j:]`` a proper prefix of a marker? Looks at no more than a marker's length of the text."""
    rest = text[j : j + 33]
    return len(rest) <= 32 and rest in prefixes


def _is_fence_opener(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith(FENCE) and "\n" not in stripped and len(stripped) <= 12


def _json_flavour(raw: str, fmt: Format) -> Format:
    if fmt != "auto":
        return fmt
    return "llama3" if '"parameters"' in raw and '"arguments"' not in raw else "openai"


def _describe_tail(tail: str, *, ended: bool) -> str:
    size = f"{len(tail)} characters"
    if m := _FAKE_RESULT.search(tail):
        what = f"they contain a fabricated tool result ({m.group().strip()!r})"
    elif m := _NEW_TURN.search(tail):
        what = f"they start another turn ({m.group().strip()!r})"
    elif ended:
        what = "they follow the end of the turn"
    else:
        what = "they follow the last tool call, whose result the model cannot know yet"
    return f"cut {size}: {what}"
