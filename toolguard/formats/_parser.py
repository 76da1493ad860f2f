"""The tool-call wire formats, parsed as a stream: one state machine for every format and for ``parse``.

Theory of operation
-------------------
An assistant turn is prose, then calls in one wire format, then (if the model misbehaves) text that must not
be trusted. ``StreamingParser`` walks it once, left to right, in *modes*::

    content ──marker/JSON──▶ call modes (hermes_open, json, seek, mistral_name, react_name, ...) ──▶ after
       │                                                                                           │
       └─end-of-turn token──▶ after ◀──────────── another call of the same format ─────────────────┘
                                │ anything else
                                ▼
                              tail  (cut: ``Parsed.fabricated``)

``content`` searches for the triggers of the format (``<tool_call>``, ``[TOOL_CALLS]``, ``<|python_tag|>``, an
``Action:`` line, a ``{``/``[`` that may open a JSON call, end-of-turn tokens) with one regex search. A ``{``
in prose starts a *speculative* JSON scan (``JsonScanner``): if the value closes and is call-shaped it is a
call (reported as ``embedded`` when prose came first), otherwise its text is content and the search resumes at
the first character that broke it, never earlier. In the pythonic formats a ``[name(`` starts the same kind of
speculative scan for a Python call list (``PythonScanner``, bounded by ``_PY_SPECULATION`` characters).
A wrapper at the start of the turn (a ```` ```json ```` fence, ``<tools>``) is held back until it is known to
wrap a call (dropped) or prose (content). After a call, ``after`` accepts only another call of the
same format (JSON calls back to back are accepted and reported as ``concatenated``); anything else starts the
``tail``, which is cut and reported. A call that never closes is reported ``unterminated``, sets
``complete=False`` and is not a tool call.

Chunk independence: a decision is taken only when the text that decides it is present; otherwise the mode
waits (keeping at most a marker's length of undecided text) until more arrives or ``close()`` says there is
none. Fed whole or in any split, the parser ends in the same ``Parsed``. Cost: O(n) for n characters; each
character is consumed once (JSON bodies are kept as slices and decoded once when they close; a call's
``arguments`` stay that slice's text, see ``_calls``). No I/O, no
clock. Layout: ``_core`` holds the state and shared steps, ``_modes`` the marker formats' modes, this module
the content/JSON/after modes and the public API.
"""

from __future__ import annotations

from collections.abc import Callable

from .._exceptions import UsageError
from .._tools import ToolCall
from ._calls import call_like_prefix, calls_from_json
from ._core import (
    _CLOSERS,
    _JSON_FORMATS,
    _MARKERS,
    _PY_HEAD,
    ACTION,
    END_TOKENS,
    _describe_tail,
    _holdback,
    _is_prefix_of_any,
    _json_flavour,
)
from ._json import DEFAULT_MAX_DEPTH
from ._modes import MarkerModes
from ._records import FORMATS, Event, Format, Parsed

__all__ = ["END_TOKENS", "StreamingParser", "parse"]


class StreamingParser(MarkerModes):
    """Parse an assistant turn fed in chunks: ``feed(chunk) -> [events]``, then ``close() -> Parsed``.

    ``format`` is one of ``"auto"``, ``"openai"``, ``"hermes"``, ``"llama3"``, ``"mistral"``, ``"react"``.
    Events: ``ContentDelta`` (safe prose), ``ToolCallStarted`` (a call marker), ``ToolCallCompleted`` (a
    parsed call), ``ProblemFound`` and ``FabricationStarted`` (stop generating: what follows is cut).
    ``close()`` equals ``parse`` of the whole text, whatever the chunking. Feeding after ``close()`` raises
    ``UsageError``.
    """

    def __init__(self, format: Format = "auto", *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        if format not in FORMATS:
            raise UsageError(f"unknown tool-call format {format!r}; choose one of {', '.join(FORMATS)}")
        super().__init__(format, max_depth)
        self._handlers: dict[str, Callable[[bool], bool]] = {
            "content": self._on_content,
            "json": self._on_json,
            "python": self._on_python,
            "seek": self._on_seek,
            "after": self._on_after,
            "tail": self._on_tail,
            "hermes_open": self._on_hermes_open,
            "hermes_close": self._on_hermes_close,
            "function_name": self._on_function_name,
            "function_args": self._on_function_args,
            "function_close": self._on_function_close,
            "mistral_open": self._on_mistral_open,
            "mistral_name": self._on_mistral_name,
            "mistral_args": self._on_mistral_args,
            "pytag_open": self._on_pytag_open,
            "pytag_sep": self._on_pytag_sep,
            "react_name": self._on_react_name,
            "react_label": self._on_react_label,
            "react_input": self._on_react_input,
            "react_fence": self._on_react_fence,
        }

    # public API -------------------------------------------------------------------------------------------
    def feed(self, chunk: str) -> list[Event]:
        """Consume a chunk; return the events it completed (possibly none)."""
        if self._closed is not None:
            raise UsageError("feed() after close(): create a new StreamingParser for a new turn")
        if self._i:
            self._prev = self._text[self._i - 1]
            self._base += self._i
            self._text = self._text[self._i :]
            self._i = 0
        self._text += chunk
        self._run(final=False)
        events, self._events = self._events, []
        return events

    def close(self) -> Parsed:
        """End of the turn: decide what waited for more text and return the result (idempotent)."""
        if self._closed is None:
            self._run(final=True)
            self._finish()
            self._events.clear()
            self._closed = Parsed(
                tool_calls=list(self._calls),
                content="".join(self._content),
                fabricated="".join(self._tail),
                complete=not self._truncated and not any(p.kind == "unterminated" for p in self._problems),
                problems=list(self._problems),
                truncated=self._truncated,
                format=self._detected,
            )
        return self._closed

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The calls completed so far."""
        return list(self._calls)

    # driving ----------------------------------------------------------------------------------------------
    def _run(self, final: bool) -> None:
        while self._handlers[self._mode](final):
            pass

    # content ----------------------------------------------------------------------------------------------
    def _on_content(self, final: bool) -> bool:
        text, i, n = self._text, self._i, len(self._text)
        if i >= n:
            return False
        m = self._trigger.search(text, i)
        if m is None:
            hold = 0 if final else _holdback(text, i, self._content_prefixes)
            self._emit_content(text[i : n - hold])
            self._i = n - hold
            return False
        j, token = m.start(), m.group()
        if token in ("{", "[") and not final and _is_prefix_of_any(text, j, self._content_prefixes):
            self._emit_content(text[i:j])  # "[TOOL_CA" could still be a marker
            self._i = j
            return False
        if token == ACTION and (text[j - 1] if j > 0 else self._prev) != "\n":
            self._emit_content(text[i : j + len(token)])  # "Action:" inside a line is prose
            self._i = j + len(token)
            return True
        self._emit_content(text[i:j])
        self._i = j
        if token in END_TOKENS:
            self._i = j + len(token)
            self._ended = True
            self._mode = "after"
        elif token == "[" and self._pythonic:
            head = _PY_HEAD.match(text, j, partial=True)
            if head is not None and head.partial and not final:
                return False  # "[get_wea" could still open a pythonic call list
            if head is not None and not head.partial:
                self._begin_python("content")
            else:
                self._begin_json("content")
        elif token in ("{", "["):
            self._begin_json("content")
        else:
            self._dispatch_marker(token, j)
        return True

    # JSON bodies ------------------------------------------------------------------------------------------
    def _on_json(self, final: bool) -> bool:
        text, i = self._text, self._i
        if i >= len(text):
            return False
        assert self._scanner is not None
        status, j = self._scanner.scan(text, i)
        self._raw.append(text[i:j])
        self._i = j
        if status == "more":
            return False
        raw = "".join(self._raw)
        if status == "done":
            self._json_done(raw)
        else:
            self._json_error(raw)
        return True

    def _json_done(self, raw: str) -> None:
        ctx = self._ctx
        if ctx == "content":
            at_start = not self._content_started
            calls = calls_from_json(raw, strict=not at_start)
            if calls is None:
                self._emit_content(raw)
                self._mode = "content"
                return
            if not at_start:
                self._problem(
                    "embedded",
                    self._call_offset,
                    "a JSON tool call was written inside prose; the prose before it is content and the text "
                    "after it is cut",
                    raw,
                )
            self._add_calls(calls, _json_flavour(raw, self._format))
            self._mode = "after"
        elif ctx == "after":
            calls = calls_from_json(raw, strict=True)
            if calls is None:
                self._start_tail(self._call_offset, self._sep + raw)
                return
            if not self._sep:
                self._problem(
                    "concatenated",
                    self._call_offset,
                    "JSON tool calls were written back to back instead of as one array; "
                    "each was kept as a call",
                    raw,
                )
            self._sep = ""
            self._add_calls(calls, _json_flavour(raw, self._format))
            self._mode = "after"
        elif ctx == "hermes":
            found = calls_from_json(raw, strict=False, keyed=False)
            if self._pending_started:  # a second call after a comma inside the same <tool_call>
                self._pending = None if self._pending is None or found is None else self._pending + found
            else:
                self._pending = found
            self._pending_started = True
            self._mode = "hermes_close"
        elif ctx == "function":
            name = "".join(self._name).strip()
            self._add_calls([ToolCall(name, raw)], "hermes")  # _on_function_args saw "{"
            self._mode = "function_close"
        elif ctx == "mistral_args":
            name, call_id = "".join(self._name).strip(), "".join(self._call_id).strip() or None
            self._add_calls([ToolCall(name, raw, call_id)], "mistral")  # _on_mistral_args saw "{"
            self._mode = "after"
        elif ctx == "react":
            self._add_calls([ToolCall("".join(self._name).strip(), raw)], "react")
            self._mode = "after"
        else:  # mistral, pytag: the body itself is the call (or a list of calls)
            calls = calls_from_json(raw, strict=False, keyed=False)
            if calls is None:
                self._malformed(
                    raw, "the JSON after the call marker is not a call (it needs a string 'name')"
                )
            else:
                self._add_calls(calls, "mistral" if ctx == "mistral" else "llama3")
            self._mode = "pytag_sep" if ctx == "pytag" else "after"

    def _json_error(self, raw: str) -> None:
        ctx = self._ctx
        if ctx == "content":
            self._emit_content(raw)  # not JSON after all: prose; resume at the character that broke it
            self._mode = "content"
        elif ctx == "after":
            self._start_tail(self._call_offset, self._sep + raw)
        elif ctx == "pytag" and raw.lstrip().startswith("["):
            self._begin_python("python", raw)  # <|python_tag|>[f(a=1), ...]: a list of Python calls
        else:
            self._mode = "seek"  # the call is broken: find where it ends

    def _json_eof(self) -> None:
        raw = "".join(self._raw)
        if self._ctx in ("content", "after"):
            if call_like_prefix(raw):
                self._unterminated(raw)
            elif self._ctx == "content":
                self._emit_content(raw)
            else:
                self._start_tail(self._call_offset, self._sep + raw)
        else:
            self._unterminated(raw)

    # after a call -----------------------------------------------------------------------------------------
    def _continuations(self) -> tuple[str, ...]:
        fmt = self._detected or self._format
        return _MARKERS["auto" if fmt == "auto" else fmt]

    def _on_after(self, final: bool) -> bool:
        if not self._skip_ws():
            return False
        text, i = self._text, self._i
        for token in END_TOKENS:
            if text.startswith(token, i):
                self._i = i + len(token)
                self._ended = True
                return True
        if self._ended:
            if self._waiting_for(END_TOKENS, final):
                return False
            self._start_tail(self._abs(), "")
            return True
        for closer in _CLOSERS:
            if text.startswith(closer, i):
                self._i = i + len(closer)  # the closing fence of a ```json block, <|python_end|>
                return True
        markers = self._continuations()
        for marker in markers:
            if text.startswith(marker, i):
                self._dispatch_marker(marker, i)
                return True
        if self._waiting_for((*markers, *END_TOKENS, *_CLOSERS), final):
            return False
        c = text[i]
        flavour = self._detected or self._format
        if c in "{[" and flavour in _JSON_FORMATS:
            self._begin_json("after")
            return True
        if c == ";" and flavour in ("llama3", "auto") and not self._sep:
            self._sep = ";"
            self._i = i + 1
            return True
        self._start_tail(self._abs(), self._sep)
        return True

    def _on_tail(self, final: bool) -> bool:
        if self._i < len(self._text):
            self._tail.append(self._text[self._i :])
            self._i = len(self._text)
        return False

    def _finish(self) -> None:
        mode = self._mode
        if mode == "json":
            self._json_eof()
        elif mode == "python":
            raw = "".join(self._raw)
            if self._ctx != "content":
                self._python_calls(raw, eof=True)
            elif _PY_HEAD.match(raw):
                self._unterminated(raw)
            else:
                self._emit_content(raw)
        elif mode == "seek":
            raw = "".join(self._raw)
            if self._ctx == "hermes":
                self._unterminated(raw, "the output ended inside a <tool_call> that was never closed")
            else:
                self._seek_end(raw, eof=True)
        elif mode == "hermes_close":
            self._finish_hermes(closed=False)
        elif mode == "function_close":
            pass  # the call closed; only its </function> is missing
        elif mode in (
            "hermes_open",
            "mistral_open",
            "mistral_name",
            "mistral_args",
            "pytag_open",
            "function_name",
            "function_args",
        ):
            self._unterminated("".join(self._name))
        elif mode in ("react_name", "react_label", "react_input", "react_fence"):
            self._unterminated("Action: " + "".join(self._name).strip())
        self._release_hold()
        self._mode = "tail" if self._tail_offset >= 0 else "after"
        if self._tail_offset >= 0:
            tail = "".join(self._tail)
            self._problem("fabricated", self._tail_offset, _describe_tail(tail, ended=self._ended), tail)


def parse(text: str, *, format: Format = "auto") -> Parsed:
    """Parse one assistant turn: its tool calls, the prose before them, and what was cut after them.

    Same result as feeding ``text`` to ``StreamingParser(format)`` in any chunks and calling ``close()``.
    """
    parser = StreamingParser(format)
    parser.feed(text)
    return parser.close()
