"""The parser's state and the steps every mode shares (``_parser`` has the theory of operation)."""

from __future__ import annotations

import re
from functools import cache

import regex

from .._tools import ToolCall
from ._calls import is_json_object
from ._json import JsonScanner
from ._pycall import PythonScanner
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
FUNCTION_OPEN, FUNCTION_CLOSE = "<function=", "</function>"  # <function=name>{...}</function> (Functionary)
MISTRAL_CALLS, MISTRAL_ARGS, MISTRAL_CALL_ID = "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"
PYTHON_TAG = "<|python_tag|>"
PYTHON_START, PYTHON_END = "<|python_start|>", "<|python_end|>"  # Llama 4's pythonic calls
ACTION, ACTION_INPUT = "Action:", "Action Input:"
FENCE = "```"
END_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|endoftext|>", "<|end|>", "</s>")

_MARKERS: dict[Format, tuple[str, ...]] = {
    "openai": (),
    "hermes": (HERMES_OPEN, FUNCTION_OPEN),
    "llama3": (PYTHON_TAG, PYTHON_START),
    "mistral": (MISTRAL_CALLS,),
    "react": (ACTION,),
    "auto": (HERMES_OPEN, FUNCTION_OPEN, MISTRAL_CALLS, PYTHON_TAG, PYTHON_START, ACTION),
}
# Formats whose calls may be bare JSON in the content (Qwen 2.5 drops its <tool_call> tags at times).
_JSON_FORMATS = frozenset({"openai", "hermes", "llama3", "auto"})
# Formats whose calls may be a bare Python list ([f(a=1)], Llama 3.2's pythonic form).
_PYTHONIC_FORMATS = frozenset({"llama3", "auto"})
# Wrappers models put around a call at the start of a turn (a ```json fence, <tools>, <response>...): held
# back while nothing else has been written, dropped when a call follows (llama.cpp's Hermes 2 Pro parser
# reads the same ones), and their closing tokens, consumed after a call, with Llama 4's <|python_end|>.
_WRAPPER_TAGS = ("tool", "tools", "response", "json", "xml", "function_call")
_CLOSERS = (
    FENCE,
    PYTHON_END,
    *(f"</{t}>" for t in _WRAPPER_TAGS),
    *(f"</{t.upper()}>" for t in _WRAPPER_TAGS),
)
_WS = " \t\r\n"
_NAME_STOP = re.compile(r"[\[\s{]")
# The opening of a pythonic list in the content ("[get_weather(" ...), matched partially while it streams.
_PY_HEAD = regex.compile(r"\[[ \t\r\n]{0,8}[A-Za-z_]\w{0,63}(?:\.[A-Za-z_]\w{0,63}){0,3}[ \t]{0,4}\(")
# One or two wrapper openers at the start of a turn (``` and an info string, <tools>...), each ending its
# line; matched partially, so a prefix ("<too", "``") is held too.
_WRAPPER_OPEN = regex.compile(
    r"(?:(?:```[\w+.#-]{0,16}|<(?i:" + "|".join(_WRAPPER_TAGS) + r")>)[ \t]*(?:\r?\n[ \t\r\n]*)?){1,2}"
)
_PY_SPECULATION = 8192
"""Characters a pythonic list speculatively read in the content may span before it counts as prose."""

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
        self._prose = False  # content other than whitespace was emitted
        self._hold = ""  # a wrapper (```json, <tools>) at the start of the turn, held until a call or prose
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
        self._py: PythonScanner | None = None
        self._ctx = ""
        self._raw: list[str] = []
        self._name: list[str] = []
        self._call_id: list[str] = []
        self._in_id = False
        self._pending: list[ToolCall] | None = None
        self._pending_started = False
        self._pythonic = format in _PYTHONIC_FORMATS

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
        if not text:
            return
        if not self._prose:
            if self._hold or text.lstrip()[:1] in ("`", "<"):
                lead = "" if self._hold else text[: len(text) - len(text.lstrip())]
                held = self._hold + text[len(lead) :]
                self._flush(lead)
                if _WRAPPER_OPEN.fullmatch(held, partial=True):  # nothing but a wrapper yet: wait
                    self._hold = held
                    return
                self._hold = ""
                text = held
            self._prose = not text.isspace()
        self._flush(text)

    def _flush(self, text: str) -> None:
        if text:
            self._content.append(text)
            self._events.append(ContentDelta(text))

    def _release_hold(self) -> None:
        """What follows the held fence is not a call: the fence is content after all."""
        if self._hold:
            held, self._hold = self._hold, ""
            self._prose = True
            self._flush(held)

    @property
    def _content_started(self) -> bool:
        """Has prose been written (whitespace and a held ```json fence line aside)?"""
        return self._prose

    def _add_calls(self, calls: list[ToolCall], fmt: Format) -> None:
        if self._detected is None:
            self._detected = fmt
        self._hold = ""  # a fence around the call is the call's wrapping, not content
        for call in calls:
            if fmt != "react" and not is_json_object(call.arguments):
                self._problem(
                    "arguments_not_object",
                    self._call_offset,
                    f"the arguments of {call.name!r} are not a JSON object ({call.arguments[:40]!r}); the "
                    "call is passed on for validation, which rejects it",
                    call.arguments,
                )
            self._calls.append(call)
            self._events.append(ToolCallCompleted(len(self._calls) - 1, call))

    def _start_call(self, marker_at: int, consumed: int, mode: str) -> None:
        """A call marker was read at ``marker_at`` (index into the current text)."""
        self._call_offset = self._abs(marker_at)
        self._events.append(ToolCallStarted(len(self._calls), self._call_offset))
        self._i = marker_at + consumed
        self._mode = mode
        self._raw, self._name, self._call_id, self._in_id = [], [], [], False
        self._pending, self._pending_started = None, False

    def _begin_json(self, ctx: str) -> None:
        self._scanner = JsonScanner(max_depth=self._max_depth)
        self._ctx = ctx
        self._raw = []
        if ctx in ("content", "after"):
            self._call_offset = self._abs()
        self._mode = "json"

    def _begin_python(self, ctx: str, prefix: str = "") -> None:
        """Read a call written in Python syntax; ``prefix`` is text already consumed (a JSON scan's)."""
        self._py = PythonScanner()
        self._ctx = ctx
        self._raw = [prefix] if prefix else []
        if ctx == "content":
            self._call_offset = self._abs() - len(prefix)
        self._mode = "python"
        if prefix:
            status, j = self._py.scan(prefix)
            if status != "more" or j != len(prefix):  # cannot happen for a prefix a JSON scan accepted
                self._mode = "seek"

    def _dispatch_marker(self, marker: str, at: int) -> None:
        if marker == HERMES_OPEN:
            self._start_call(at, len(marker), "hermes_open")
        elif marker == MISTRAL_CALLS:
            self._start_call(at, len(marker), "mistral_open")
        elif marker == FUNCTION_OPEN:
            self._start_call(at, len(marker), "function_name")
        elif marker in (PYTHON_TAG, PYTHON_START):
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
