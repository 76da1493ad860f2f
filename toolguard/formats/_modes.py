"""The modes of the formats with call markers (hermes, mistral, llama3 ``<|python_tag|>``, ReAct) and of
broken calls; ``_parser`` has the theory of operation."""

from __future__ import annotations

import json

from .._tools import ToolCall
from ._core import (
    _NAME_STOP,
    _PY_SPECULATION,
    ACTION_INPUT,
    END_TOKENS,
    FENCE,
    FUNCTION_CLOSE,
    HERMES_CLOSE,
    MISTRAL_ARGS,
    MISTRAL_CALL_ID,
    MISTRAL_CALLS,
    ParserCore,
    _holdback,
    _prefixes,
)
from ._pycall import PYTHON_LIST_HEAD, pythonic_calls

__all__ = ["MarkerModes"]


class MarkerModes(ParserCore):
    """Handlers for the call modes entered at a marker, and for finding the end of a broken call."""

    # broken calls: find their end -------------------------------------------------------------------------
    def _seek_stops(self) -> tuple[str, ...]:
        if self._ctx == "hermes":
            return (HERMES_CLOSE, *END_TOKENS)
        if self._ctx == "function":
            return (FUNCTION_CLOSE, *END_TOKENS)
        if self._ctx == "react":
            return ("\n",)
        if self._ctx in ("mistral", "mistral_args"):
            return (MISTRAL_CALLS, *END_TOKENS)
        return END_TOKENS

    def _on_seek(self, final: bool) -> bool:
        text, i, n = self._text, self._i, len(self._text)
        if i >= n:
            return False
        stops = self._seek_stops()
        hits = [(p, s) for s in stops if (p := text.find(s, i)) >= 0]
        if not hits:
            hold = 0 if final else _holdback(text, i, _prefixes(stops))
            self._raw.append(text[i : n - hold])
            self._i = n - hold
            return False
        j, stop = min(hits)
        self._raw.append(text[i:j])
        self._i = j
        raw = "".join(self._raw)
        if self._ctx == "hermes" and stop == HERMES_CLOSE:
            self._i = j + len(stop)
            self._malformed(raw, "the text inside <tool_call>…</tool_call> is not valid JSON")
        elif self._ctx == "function" and stop == FUNCTION_CLOSE:
            self._i = j + len(stop)
            self._malformed(raw, "the arguments inside <function=…>…</function> are not a JSON object")
        elif self._ctx == "hermes":
            self._unterminated(raw, "the turn ended inside a <tool_call> that was never closed")
        else:
            self._seek_end(raw, eof=False)
        self._mode = "after"
        return True

    def _seek_end(self, raw: str, *, eof: bool) -> None:
        if self._ctx == "react":
            text = raw.strip()
            self._add_calls(
                [ToolCall("".join(self._name).strip(), json.dumps(text, ensure_ascii=False))], "react"
            )
            self._problem(
                "arguments_not_json",
                self._call_offset,
                "the Action Input is not JSON; it was passed on as a JSON string, which the tool's schema "
                "(an object) rejects",
                text,
            )
        elif self._ctx == "python":
            self._python_calls(raw, eof=eof)
        else:
            self._malformed(raw, "the tool call is not valid JSON")

    # Python-syntax calls ----------------------------------------------------------------------------------
    def _on_python(self, final: bool) -> bool:
        text, i = self._text, self._i
        if i >= len(text):
            return False
        assert self._py is not None
        status, j = self._py.scan(text, i)
        self._raw.append(text[i:j])
        self._i = j
        raw = "".join(self._raw) if status != "more" else ""
        if status == "more":
            if self._ctx == "content" and sum(map(len, self._raw)) > _PY_SPECULATION:
                self._emit_content("".join(self._raw))  # too long for a call: prose with brackets
                self._mode = "content"
                return True
            return False
        if status == "done":
            if self._ctx == "content":
                self._python_in_content(raw)
            else:
                self._python_calls(raw, eof=False)
                self._mode = "pytag_sep"
        elif self._ctx == "content":
            self._emit_content(raw)  # a bracket that closes nothing: prose; resume at it
            self._mode = "content"
        else:
            self._mode = "seek"  # the call is broken: find where it ends
            self._ctx = "python"
        return True

    def _python_in_content(self, raw: str) -> None:
        """A closed ``[...]`` read speculatively in the content: calls if it spells them, else prose."""
        try:
            found = pythonic_calls(raw)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            found = None
        if found is None:
            self._emit_content(raw)
            self._mode = "content"
            return
        if self._content_started:
            self._problem(
                "embedded",
                self._call_offset,
                "a tool call was written inside prose; the prose before it is content and the text after it "
                "is cut",
                raw,
            )
        self._python_found(raw, found)
        self._mode = "after"

    def _python_calls(self, raw: str, *, eof: bool) -> None:
        """The Python expression after ``<|python_tag|>`` / ``<|python_start|>``, closed or at the end."""
        try:
            found = pythonic_calls(raw)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            if eof and (PYTHON_LIST_HEAD.match(raw.strip()) or "(" in raw):
                self._unterminated(raw)
            else:
                self._malformed(raw, "the text after <|python_tag|> is neither JSON nor a Python call")
            return
        if found is None:
            self._malformed(raw, "the Python call after <|python_tag|> must use literal keyword arguments")
        else:
            self._python_found(raw, found)

    def _python_found(self, raw: str, found: tuple[list[ToolCall], list[str]]) -> None:
        calls, bad = found
        for item in bad:
            self._malformed(
                item,
                f"the Python call {item[:60]!r} must use literal keyword arguments JSON can hold; its "
                "sibling calls were kept",
            )
        self._add_calls(calls, "llama3")

    # hermes -----------------------------------------------------------------------------------------------
    def _on_hermes_open(self, final: bool) -> bool:
        if not self._skip_ws():
            return False
        if self._text[self._i] in "{[":
            self._begin_json("hermes")
        else:
            self._ctx, self._raw, self._mode = "hermes", [], "seek"
        return True

    def _on_hermes_close(self, final: bool) -> bool:
        if not self._skip_ws():
            return False
        if self._text.startswith(HERMES_CLOSE, self._i):
            self._i += len(HERMES_CLOSE)
            self._finish_hermes(closed=True)
            return True
        if self._text[self._i] == "," and self._pending is not None:
            # {call}, {call} inside one <tool_call> (seen from Qwen-style models): both are calls
            self._i += 1
            self._problem(
                "concatenated",
                self._abs(),
                "two calls were written inside one <tool_call>, separated by a comma; each was kept",
            )
            self._mode = "hermes_open"
            return True
        if self._waiting_for((HERMES_CLOSE,), final):
            return False
        self._finish_hermes(closed=False)
        return True

    def _finish_hermes(self, *, closed: bool) -> None:
        raw = "".join(self._raw)
        if self._pending is None:
            self._malformed(raw, "the JSON inside <tool_call> is not a call (it needs a string 'name')")
        else:
            if not closed:
                self._problem(
                    "missing_close_tag",
                    self._call_offset,
                    "a complete call was not followed by </tool_call>; it was accepted",
                    raw,
                )
            self._add_calls(self._pending, "hermes")
        self._pending, self._pending_started = None, False
        self._mode = "after"

    # <function=name>{...}</function> ----------------------------------------------------------------------
    def _on_function_name(self, final: bool) -> bool:
        text, i, n = self._text, self._i, len(self._text)
        if i >= n:
            return False
        j = text.find(">", i, i + 129)
        if j < 0:
            if n - i < 129 and not final:
                self._name.append(text[i:n])
                self._i = n
                return False
            self._ctx, self._raw, self._mode = "function", ["".join(self._name)], "seek"
            return True
        self._name.append(text[i:j])
        self._i = j + 1
        self._mode = "function_args"
        return True

    def _on_function_args(self, final: bool) -> bool:
        if not self._skip_ws():
            return False
        if self._text[self._i] == "{":
            self._begin_json("function")
        else:
            self._ctx, self._raw, self._mode = "function", [], "seek"
        return True

    def _on_function_close(self, final: bool) -> bool:
        if not self._skip_ws():
            return False
        if self._text.startswith(FUNCTION_CLOSE, self._i):
            self._i += len(FUNCTION_CLOSE)
        elif self._waiting_for((FUNCTION_CLOSE,), final):
            return False
        self._mode = "after"
        return True

    # mistral ----------------------------------------------------------------------------------------------
    def _on_mistral_open(self, final: bool) -> bool:
        if not self._skip_ws():
            return False
        if self._text[self._i] in "{[":
            self._begin_json("mistral")
        else:
            self._mode = "mistral_name"  # [TOOL_CALLS]name[CALL_ID]id[ARGS]{...} (newer tokenizers)
        return True

    def _on_mistral_name(self, final: bool) -> bool:
        text, i, n = self._text, self._i, len(self._text)
        if i >= n:
            return False
        m = _NAME_STOP.search(text, i)
        into = self._call_id if self._in_id else self._name
        if m is None:
            into.append(text[i:n])
            self._i = n
            return False
        j = m.start()
        into.append(text[i:j])
        self._i = j
        if text.startswith(MISTRAL_ARGS, j):
            self._i = j + len(MISTRAL_ARGS)
            self._mode = "mistral_args"
        elif text[j] == "{" and "".join(self._name).strip():
            # [TOOL_CALLS]name{...}: the [ARGS] special token was dropped by the detokenizer
            self._begin_json("mistral_args")
        elif text.startswith(MISTRAL_CALL_ID, j) and not self._in_id:
            self._i = j + len(MISTRAL_CALL_ID)
            self._in_id = True
        elif self._waiting_for((MISTRAL_ARGS, MISTRAL_CALL_ID), final):
            return False
        else:
            self._ctx, self._raw, self._mode = "mistral", ["".join(self._name)], "seek"
        return True

    def _on_mistral_args(self, final: bool) -> bool:
        if not self._skip_ws():
            return False
        if self._text[self._i] == "{":
            self._begin_json("mistral_args")
        else:
            self._ctx, self._raw, self._mode = "mistral", [], "seek"
        return True

    # llama3 <|python_tag|> --------------------------------------------------------------------------------
    def _on_pytag_open(self, final: bool) -> bool:
        if not self._skip_ws():
            return False
        if self._text[self._i] in "{[":
            self._begin_json("pytag")  # JSON, or a [f(a=1)] list: a JSON error switches to Python
        else:
            self._begin_python("python")
        return True

    def _on_pytag_sep(self, final: bool) -> bool:
        if not self._skip_ws():
            return False
        if self._text[self._i] == ";":
            self._i += 1
            self._mode = "pytag_open"
        else:
            self._mode = "after"
        return True

    # ReAct ------------------------------------------------------------------------------------------------
    def _on_react_name(self, final: bool) -> bool:
        text, i, n = self._text, self._i, len(self._text)
        if i >= n:
            return False
        j = text.find("\n", i)
        if j < 0:
            self._name.append(text[i:n])
            self._i = n
            return False
        self._name.append(text[i:j])
        self._i = j + 1
        self._mode = "react_label"
        return True

    def _on_react_label(self, final: bool) -> bool:
        if not self._skip_ws():
            return False
        if self._text.startswith(ACTION_INPUT, self._i):
            self._i += len(ACTION_INPUT)
            self._mode = "react_input"
        elif self._waiting_for((ACTION_INPUT,), final):
            return False
        else:
            self._malformed(
                "Action: " + "".join(self._name).strip(), "an Action: line without an Action Input:"
            )
            self._mode = "after"
        return True

    def _on_react_input(self, final: bool) -> bool:
        if not self._skip_ws():
            return False
        text, i = self._text, self._i
        if text.startswith(FENCE, i):
            self._i = i + len(FENCE)
            self._mode = "react_fence"
            return True
        if self._waiting_for((FENCE,), final):
            return False
        if text[i] in "{[":
            self._begin_json("react")
        else:
            self._ctx, self._raw, self._mode = "react", [], "seek"
        return True

    def _on_react_fence(self, final: bool) -> bool:
        """Skip the rest of a ```json fence line, consuming it as it arrives (so waiting costs nothing)."""
        text, i = self._text, self._i
        j = text.find("\n", i)
        if j < 0:
            self._i = len(text)
            return False
        self._i = j + 1
        self._mode = "react_input"
        return True
