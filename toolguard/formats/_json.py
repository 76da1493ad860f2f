"""An incremental JSON boundary scanner: where does this object or array end, and is it still JSON?

The format parsers need to know, chunk by chunk, when a JSON value that opened with ``{`` or ``[`` closes, and
the first character that makes it not JSON (prose that merely contains a brace, a tag inside a broken call).
``JsonScanner.scan(text, i)`` consumes ``text[i:]`` and keeps its state (container stack, string/escape state,
the literal being read) between calls, so chunk boundaries may fall anywhere. It checks JSON syntax (tokens
and their order, escapes, literals, number shape) but builds no value: callers decode the closed slice once
(``_calls.calls_from_json``, which keeps the arguments' text).

Cost: each character is looked at once; strings are skipped with one regex search per run of plain characters.
Nesting is capped (``DEFAULT_MAX_DEPTH``): past it the scan reports an error, never recursion.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["DEFAULT_MAX_DEPTH", "JsonScanner", "ScanStatus"]

DEFAULT_MAX_DEPTH = 256

ScanStatus = Literal["more", "done", "error"]

_WS = " \t\n\r"
_STRING_STOP = re.compile(r'["\\\x00-\x1f]')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_LITERALS = ("true", "false", "null")
_HEX = frozenset("0123456789abcdefABCDEF")

# states
_VALUE = 0  # a value is expected (inside a container)
_KEY_OR_CLOSE = 1  # after "{"
_KEY = 2  # after "," in an object
_COLON = 3
_VALUE_OR_CLOSE = 4  # after "["
_COMMA_OR_CLOSE = 5
_STRING = 6
_ESCAPE = 7
_UNICODE = 8
_LITERAL = 9
_DONE = 10
_ERROR = 11
_START = 12  # nothing read yet: only "{" or "[" may open the value


class JsonScanner:
    """Scan one top-level JSON object or array incrementally. See the module docstring."""

    __slots__ = ("_hex_left", "_is_key", "_max_depth", "_stack", "_state", "_token")

    def __init__(self, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self._stack: list[str] = []
        self._state = _START
        self._is_key = False
        self._token: list[str] = []
        self._hex_left = 0
        self._max_depth = max_depth

    @property
    def started(self) -> bool:
        """True once the opening bracket has been read."""
        return self._state != _START

    def scan(self, text: str, i: int = 0) -> tuple[ScanStatus, int]:
        """Consume ``text[i:]``.

        Returns ``("done", j)`` when the value closed, ``j`` being the index just past its last character;
        ``("error", j)`` when ``text[j]`` cannot continue a JSON value (the state is then sticky); or
        ``("more", len(text))`` when everything was consumed and the value is still open.
        """
        n = len(text)
        if self._state == _ERROR:
            return "error", i
        while i < n:
            st = self._state
            if st == _STRING:
                m = _STRING_STOP.search(text, i)
                if m is None:
                    return "more", n
                j = m.start()
                c = text[j]
                if c == '"':
                    i = j + 1
                    if self._is_key:
                        self._state = _COLON
                    elif self._value_done():
                        return "done", i
                elif c == "\\":
                    self._state = _ESCAPE
                    i = j + 1
                else:
                    return self._fail(j)
                continue
            c = text[i]
            if st == _ESCAPE:
                if c in '"\\/bfnrt':
                    self._state = _STRING
                elif c == "u":
                    self._state, self._hex_left = _UNICODE, 4
                else:
                    return self._fail(i)
                i += 1
                continue
            if st == _UNICODE:
                if c not in _HEX:
                    return self._fail(i)
                self._hex_left -= 1
                if self._hex_left == 0:
                    self._state = _STRING
                i += 1
                continue
            if st == _LITERAL:
                if c.isalnum() or c in _NUMBER_CHARS:
                    self._token.append(c)
                    if not self._token_prefix_ok(c):
                        return self._fail(i)
                    i += 1
                    continue
                token = "".join(self._token)
                if token not in _LITERALS and not _NUMBER.fullmatch(token):
                    return self._fail(i)
                self._token.clear()
                if self._value_done():  # pragma: no cover - literals never stand at the top level here
                    return "done", i
                continue  # re-read c in the new state
            if c in _WS:
                i += 1
                continue
            if st == _START:
                if c not in "{[":
                    return self._fail(i)
                self._open(c)
                i += 1
                continue
            if st in (_KEY_OR_CLOSE, _KEY):
                if c == '"':
                    self._state, self._is_key = _STRING, True
                elif c == "}" and st == _KEY_OR_CLOSE:
                    if self._close(c):
                        return "done", i + 1
                else:
                    return self._fail(i)
                i += 1
                continue
            if st == _COLON:
                if c != ":":
                    return self._fail(i)
                self._state = _VALUE
                i += 1
                continue
            if st == _COMMA_OR_CLOSE:
                if c == ",":
                    self._state = _KEY if self._stack[-1] == "{" else _VALUE
                elif c in "}]":
                    if (c == "}") != (self._stack[-1] == "{"):
                        return self._fail(i)
                    if self._close(c):
                        return "done", i + 1
                else:
                    return self._fail(i)
                i += 1
                continue
            # _VALUE or _VALUE_OR_CLOSE
            if c == "]" and st == _VALUE_OR_CLOSE:
                if self._close(c):
                    return "done", i + 1
            elif c in "{[":
                if len(self._stack) >= self._max_depth:
                    return self._fail(i)
                self._open(c)
            elif c == '"':
                self._state, self._is_key = _STRING, False
            elif c == "-" or c.isdigit() or c in "tfn":
                self._state = _LITERAL
                self._token.append(c)
            else:
                return self._fail(i)
            i += 1
        return "more", n

    # helpers ---------------------------------------------------------------------------------------------
    def _fail(self, i: int) -> tuple[ScanStatus, int]:
        self._state = _ERROR
        return "error", i

    def _open(self, c: str) -> None:
        self._stack.append(c)
        self._state = _KEY_OR_CLOSE if c == "{" else _VALUE_OR_CLOSE

    def _close(self, c: str) -> bool:
        self._stack.pop()
        return self._value_done()

    def _value_done(self) -> bool:
        """A value ended; True when it was the top-level one."""
        if not self._stack:
            self._state = _DONE
            return True
        self._state = _COMMA_OR_CLOSE
        return False

    def _token_prefix_ok(self, c: str) -> bool:
        """Can the literal read so far (ending with ``c``) still become true/false/null or a number?"""
        if self._token[0] in "tfn":
            token = "".join(self._token)  # at most 5 characters before it fails
            return any(lit.startswith(token) for lit in _LITERALS)
        return c in _NUMBER_CHARS
