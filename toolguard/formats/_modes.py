"""The modes of the formats with call markers (hermes, mistral, llama3 ``<|python_tag|>``, ReAct) and of
broken calls; ``_parser`` has the theory of operation."""

from __future__ import annotations

from .._tools import ToolCall
from ._calls import pythonic_calls
from ._core import (
    _NAME_STOP,
    ACTION_INPUT,
    END_TOKENS,
    FENCE,
    HERMES_CLOSE,
    MISTRAL_ARGS,
    MISTRAL_CALL_ID,
    MISTRAL_CALLS,
    ParserCore,
    _holdback,
    _prefixes,
)

__all__ = ["MarkerModes"]


class MarkerModes(ParserCore):
    """Handlers for the call modes entered at a marker, and for finding the end of a broken call."""

    # broken calls: find their end -------------------------------------------------------------------------
    def _seek_stops(self) -> tuple[str, ...]:
        if self._ctx == "hermes":
            return (HERMES_CLOSE, *END_TOKENS)
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
        elif self._ctx == "hermes":
            self._unterminated(raw, "the turn ended inside a <tool_call> that was never closed")
        else:
            self._seek_end(raw, eof=False)
        self._mode = "after"
        return True

    def _seek_end(self, raw: str, *, eof: bool) -> None:
        if self._ctx == "react":
            self._add_calls([ToolCall("".join(self._name).strip(), raw.strip())], "react")
            self._problem(
                "arguments_not_json",
                self._call_offset,
                "the Action Input is not JSON; it was passed on as raw text",
                raw.strip(),
            )
        elif self._ctx == "python":
            try:
                calls = pythonic_calls(raw)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                if eof:
                    self._unterminated(raw)
                else:
                    self._malformed(raw, "the text after <|python_tag|> is neither JSON nor a Python call")
                return
            if calls is None:
                self._malformed(
                    raw, "the Python call after <|python_tag|> must use literal keyword arguments"
                )
            else:
                self._add_calls(calls, "llama3")
        else:
            self._malformed(raw, "the tool call is not valid JSON")

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
        self._pending = None
        self._mode = "after"

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
            self._begin_json("pytag")
        else:
            self._ctx, self._raw, self._mode = "python", [], "seek"
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
