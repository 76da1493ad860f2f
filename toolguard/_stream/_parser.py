r"""An incremental (push) JSON parser: feed text in chunks, get events; never re-reads consumed text.

Theory of operation. ``JsonPushParser`` is a character-level state machine whose hot paths are precompiled
regular expressions: a string body is consumed with ``[^"\\\x00-\x1f]*``, whitespace with ``[ \t\n\r]*``,
a number run with ``[0-9eE.+-]*``, and a whole string, key-and-colon or terminated number inside one chunk
is recognised by a single match. State between chunks is a handful of fields (the state, the container
stack, a partial escape, a partial number, a partial literal), so work is O(n) in the total text whatever
the chunk sizes, and every split of the text produces the same verdicts (string parts may be split
differently; their concatenation and offsets are the same).

Strict RFC 8259: no NaN/Infinity, no comments, no trailing commas, no leading zeros, no raw control
characters in strings. Escapes are decoded the way ``json.loads`` decodes them (a ``\uD83D\uDE00`` pair
becomes one code point, a lone surrogate stays a lone surrogate).

Events (methods called on the handler; offsets index the whole stream):

- ``value_start(kind, offset)``: the first character of a value; ``kind`` is ``"object"``, ``"array"``,
  ``"string"``, ``"number"``, ``"true"``, ``"false"`` or ``"null"`` (a literal is known from its first char).
- ``string_part(text, offset)`` / ``key_part(text, offset)``: decoded text. A raw run maps one to one onto the
  stream starting at ``offset``; a decoded escape arrives as its own one-character part whose ``offset`` is
  the escape's last character.
- ``string_end(offset)`` / ``key_end(offset)``: the closing quote. ``key_start(offset)``: a key's opening
  quote. ``escape_start(offset)``: a backslash that will add at least one character to the string or key
  being read (not sent for the second half of a surrogate pair); a true return asks for the next events.
  ``escape_range(lo, hi, offset)``: after a ``\u`` escape's first, second and third hex digit (at
  ``offset``), the UTF-16 code unit it will decode to lies in ``lo..hi``; the decoded character follows at
  the fourth, whatever the chunking (``hint``: that code unit when the parser already has it, else -1;
  ``high``: a pending high surrogate the escape may complete into one astral character, else -1). A high
  surrogate's fourth digit sends ``lo == hi`` (its character comes with the next escape, or alone).
- ``number_part(text, start)``: the number so far (``text`` is everything from ``start``), sent when a chunk
  ends inside a number. ``number_end(text, start, end)``: the whole literal; ``end`` is the offset of the
  character that terminated it (or the stream length at ``close()``).
- ``literal_end(offset)``: the last character of ``true``/``false``/``null``.
- ``comma(offset)``: a comma between members or items (an item or key must follow).
- ``object_end(offset)`` / ``array_end(offset)``: the closing bracket.
- Shorthands ``string_full``, ``key_full``, ``number_full`` for a token wholly inside one chunk: see
  ``JsonHandlerBase`` (inherit it to get them for free).

Malformed input raises ``JsonParseError`` with ``keyword`` ``"syntax"`` (or ``"limit"`` past ``max_depth`` or
``max_number_length``) at the offending character's offset; the parser is then unusable. A handler may raise
its own exception to stop parsing; the parser does not catch anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["JsonHandler", "JsonHandlerBase", "JsonParseError", "JsonPushParser"]

# These three always match (possibly empty): typed as such.
_AlwaysMatch = Callable[[str, int], "re.Match[str]"]
_WS: _AlwaysMatch = re.compile(r"[ \t\n\r]*").match  # type: ignore[assignment]
_STR_RUN: _AlwaysMatch = re.compile(r'[^"\\\x00-\x1f]*').match  # type: ignore[assignment]
_NUM_RUN: _AlwaysMatch = re.compile(r"[0-9eE.+\-]*").match  # type: ignore[assignment]
_NUM_FULL = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+\-]?[0-9]+)?").fullmatch
_NUM_PREFIX = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*|(?:\.[0-9]+)?[eE][+\-]?[0-9]*)?)?").fullmatch
_STR_FULL = re.compile(r'"([^"\\\x00-\x1f]*)"').match
_KEY_FULL = re.compile(r'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:').match
_COMMA_KEY = re.compile(r',[ \t\n\r]*"([^"\\\x00-\x1f]*)"[ \t\n\r]*:').match
_NUM_TOKEN = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+\-]?[0-9]+)?(?=[^0-9eE.+\-])").match
_UESC = re.compile(r"\\u([0-9a-fA-F]{4})").match
_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS = {"t": "true", "f": "false", "n": "null"}

# States.
_VALUE, _ARR_FIRST, _OBJ_FIRST, _KEY, _COLON, _AFTER, _STRING, _ESC, _UESC_ST, _NUMBER, _LITERAL, _DONE = (
    range(12)
)
_EXPECT = {
    _VALUE: "a value",
    _ARR_FIRST: "a value or ']'",
    _OBJ_FIRST: "'\"' (a key) or '}'",
    _KEY: "'\"' (a key)",
    _COLON: "':'",
}


class JsonParseError(Exception):
    """Malformed JSON (``keyword="syntax"``) or a parser cap (``keyword="limit"``) at ``offset``."""

    def __init__(self, message: str, offset: int, keyword: str = "syntax") -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.keyword = keyword


class JsonHandler(Protocol):
    """The events a ``JsonPushParser`` emits (see the module docstring for their contract)."""

    def value_start(self, kind: str, offset: int) -> None: ...
    def string_part(self, text: str, offset: int) -> None: ...
    def string_end(self, offset: int) -> None: ...
    def key_start(self, offset: int) -> None: ...
    def key_part(self, text: str, offset: int) -> None: ...
    def key_end(self, offset: int) -> None: ...
    def escape_start(self, offset: int) -> bool | None: ...
    def escape_range(self, lo: int, hi: int, offset: int, hint: int = -1, high: int = -1) -> None: ...
    def number_part(self, text: str, start: int) -> None: ...
    def number_end(self, text: str, start: int, end: int) -> None: ...
    def literal_end(self, offset: int) -> None: ...
    def comma(self, offset: int) -> None: ...
    def object_end(self, offset: int) -> None: ...
    def array_end(self, offset: int) -> None: ...
    def string_full(self, text: str, start: int, end: int) -> None: ...
    def key_full(self, text: str, start: int, end: int) -> None: ...
    def number_full(self, text: str, start: int, end: int) -> None: ...


class JsonHandlerBase:
    """Default shorthands for a handler: each ``*_full`` event is exactly the basic events it stands for.

    The parser sends ``string_full(text, start, end)`` for a string with no escape that starts and ends in one
    chunk (``start``/``end``: its quotes), ``key_full(text, start, end)`` likewise for a key (the colon
    follows), and ``number_full(text, start, end)`` for a number terminated inside one chunk (never one
    longer than ``max_number_length``: that one takes the basic events, and the cap). Subclass and
    override them only to go faster.
    """

    def escape_start(self, offset: int) -> bool | None:
        """A backslash: most handlers wait for the decoded character instead (and return a false value: no
        ``escape_range`` events for this escape, nor for the second half of a pair it starts)."""

    def escape_range(self, lo: int, hi: int, offset: int, hint: int = -1, high: int = -1) -> None:
        """A ``\\u`` escape's first, second or third hex digit: most handlers wait for the fourth."""

    def string_full(self, text: str, start: int, end: int) -> None:
        h: Any = self
        h.value_start("string", start)
        if text:
            h.string_part(text, start + 1)
        h.string_end(end)

    def key_full(self, text: str, start: int, end: int) -> None:
        h: Any = self
        h.key_start(start)
        if text:
            h.key_part(text, start + 1)
        h.key_end(end)

    def number_full(self, text: str, start: int, end: int) -> None:
        h: Any = self
        h.value_start("number", start)
        h.number_end(text, start, end)


def _show(c: str) -> str:
    return repr(c) if c.isprintable() else f"U+{ord(c):04X}"


class JsonPushParser:
    """Push parser for one JSON document. ``feed(chunk)`` any number of times, then ``close()``.

    ``depth`` is the number of open containers; ``done`` is true once a whole top-level value was read
    (a top-level number is only known to be whole at ``close()`` or at the whitespace after it).
    """

    __slots__ = (
        "_h",
        "_hi",
        "_in_key",
        "_lit",
        "_lit_i",
        "_num",
        "_num_start",
        "_pos",
        "_stack",
        "_state",
        "_ubuf",
        "_watch",
        "max_depth",
        "max_number_length",
    )

    def __init__(self, handler: Any, *, max_depth: int = 128, max_number_length: int = 1000) -> None:
        self._h = handler
        self._state = _VALUE
        self._stack: list[bool] = []  # True = object, False = array
        self._in_key = False
        self._ubuf = ""
        self._hi = -1  # pending high surrogate (code), -1 when none
        self._watch = False  # the handler wants escape_range for the escape being read
        self._num = ""
        self._num_start = 0
        self._lit = ""
        self._lit_i = 0
        self._pos = 0  # stream offset of the next chunk
        self.max_depth = max_depth
        self.max_number_length = max_number_length

    @property
    def depth(self) -> int:
        return len(self._stack)

    @property
    def done(self) -> bool:
        return self._state == _DONE

    @property
    def offset(self) -> int:
        """Characters consumed so far."""
        return self._pos

    # -- helpers ---------------------------------------------------------------------------------------------

    def _after_value(self) -> int:
        return _AFTER if self._stack else _DONE

    def _flush_hi(self, offset: int) -> None:
        """A pending high surrogate turned out to be alone: emit it as ``json.loads`` would."""
        hi = self._hi
        self._hi = -1
        (self._h.key_part if self._in_key else self._h.string_part)(chr(hi), offset)

    def _escape_char(self, char: str, offset: int) -> None:
        if self._hi >= 0:
            self._flush_hi(offset)
        (self._h.key_part if self._in_key else self._h.string_part)(char, offset)

    def _escape_code(self, code: int, offset: int) -> None:
        if self._hi >= 0:
            if 0xDC00 <= code <= 0xDFFF:
                combined = 0x10000 + ((self._hi - 0xD800) << 10) + (code - 0xDC00)
                self._hi = -1
                (self._h.key_part if self._in_key else self._h.string_part)(chr(combined), offset)
                return
            self._flush_hi(offset)
        if 0xD800 <= code <= 0xDBFF:
            self._hi = code
            # no character yet (an astral one if a low surrogate follows, else this one alone), but its first
            # code unit is known: checks can decide now
            if self._watch:
                self._h.escape_range(code, code, offset, code)
            return
        (self._h.key_part if self._in_key else self._h.string_part)(chr(code), offset)

    def _hex_ranges(self, digits: str, first: int) -> None:
        """``escape_range`` after each of an escape's first three hex ``digits`` (the first at offset
        ``first``), as the digit-by-digit path sends them, so every chunking sees the same events; with all
        four at hand, the code they spell goes along as a ``hint`` (a handler may try it first)."""
        hint = int(digits, 16) if len(digits) == 4 else -1
        for k in range(1, min(len(digits), 3) + 1):
            self._range_after(digits[:k], first + k - 1, hint)

    def _range_after(self, digits: str, offset: int, hint: int = -1) -> None:
        """The code unit a ``\\u`` escape begun with ``digits`` can still decode to: one range (``high``: the
        pending high surrogate this escape may complete, else -1)."""
        shift = 4 * (4 - len(digits))
        lo = int(digits, 16) << shift
        self._h.escape_range(lo, lo | ((1 << shift) - 1), offset, hint, self._hi)

    def _end_number(self, end: int) -> None:
        text = self._num
        if _NUM_FULL(text) is None:
            self._number_error(text, end)
        self._num = ""
        self._state = self._after_value()
        self._h.number_end(text, self._num_start, end)

    def _number_error(self, text: str, end: int) -> None:
        """Raise at the first bad character, after showing the handler the valid prefix (so a semantic
        rejection inside it wins, exactly as when the prefix arrived in earlier chunks)."""
        for k in range(1, len(text) + 1):
            if _NUM_PREFIX(text[:k]) is None:
                if k > 1:
                    self._h.number_part(text[: k - 1], self._num_start)
                raise JsonParseError(
                    f"invalid number: unexpected {_show(text[k - 1])} in {text[:k]!r}",
                    self._num_start + k - 1,
                )
        if text:
            self._h.number_part(text, self._num_start)
        raise JsonParseError(f"incomplete number {text!r}", end)

    # -- the state machine -----------------------------------------------------------------------------------

    def feed(self, chunk: str) -> None:
        """Consume ``chunk``; raises ``JsonParseError`` at the first malformed character."""
        h = self._h
        base = self._pos
        n = len(chunk)
        pos = 0
        state = self._state
        try:
            while pos < n:
                if state == _STRING:
                    end = _STR_RUN(chunk, pos).end()
                    if end > pos:
                        if self._hi >= 0:
                            self._flush_hi(base + pos)
                        (h.key_part if self._in_key else h.string_part)(chunk[pos:end], base + pos)
                        if end == n:
                            pos = n
                            break
                    c = chunk[end]
                    if c == '"':
                        if self._hi >= 0:
                            self._flush_hi(base + end)
                        pos = end + 1
                        if self._in_key:
                            state = _COLON
                            h.key_end(base + end)
                        else:
                            state = self._after_value()
                            h.string_end(base + end)
                    elif c == "\\":
                        if self._hi < 0:  # an escape adds at least one character (a pair completes one)
                            self._watch = bool(h.escape_start(base + end))
                        if end + 1 < n:
                            e = chunk[end + 1]
                            simple = _SIMPLE.get(e)
                            if simple is not None:
                                self._escape_char(simple, base + end + 1)
                                pos = end + 2
                                continue
                            if e == "u":
                                m = _UESC(chunk, end)
                                if m is not None:
                                    if self._watch:
                                        self._hex_ranges(m.group(1), base + end + 2)
                                    self._escape_code(int(m.group(1), 16), base + end + 5)
                                    pos = end + 6
                                    continue
                                if end + 6 <= n:
                                    bad = next(i for i in range(end + 2, end + 6) if chunk[i] not in _HEX)
                                    if self._watch:
                                        self._hex_ranges(chunk[end + 2 : bad], base + end + 2)
                                    raise JsonParseError(
                                        f"invalid \\u escape: {_show(chunk[bad])} is not a hex digit",
                                        base + bad,
                                    )
                                state = _UESC_ST
                                self._ubuf = ""
                                pos = end + 2
                                continue
                            raise JsonParseError(f"invalid escape '\\{e}'", base + end + 1)
                        state = _ESC
                        pos = end + 1
                    else:
                        raise JsonParseError(
                            f"raw control character {_show(c)} in a string (escape it)", base + end
                        )
                elif state == _AFTER:
                    pos = _WS(chunk, pos).end()
                    if pos == n:
                        break
                    c = chunk[pos]
                    in_obj = self._stack[-1]
                    if c == "," and in_obj:
                        m = _COMMA_KEY(chunk, pos)
                        if m is not None:  # comma, key and colon in this chunk
                            state = _VALUE
                            h.comma(base + pos)
                            h.key_full(m.group(1), base + m.start(1) - 1, base + m.end(1))
                            pos = m.end()
                            continue
                    if c == ",":
                        state = _KEY if in_obj else _VALUE
                        h.comma(base + pos)
                    elif c == "}" and in_obj:
                        self._stack.pop()
                        state = self._after_value()
                        h.object_end(base + pos)
                    elif c == "]" and not in_obj:
                        self._stack.pop()
                        state = self._after_value()
                        h.array_end(base + pos)
                    else:
                        want = "',' or '}'" if in_obj else "',' or ']'"
                        raise JsonParseError(f"expected {want}, got {_show(c)}", base + pos)
                    pos += 1
                elif state <= _ARR_FIRST:  # _VALUE or _ARR_FIRST
                    pos = _WS(chunk, pos).end()
                    if pos == n:
                        break
                    c = chunk[pos]
                    if c == '"':
                        m = _STR_FULL(chunk, pos)
                        if m is not None:  # the whole string is in this chunk, without escapes
                            end = m.end()
                            state = _AFTER if self._stack else _DONE
                            h.string_full(m.group(1), base + pos, base + end - 1)
                            pos = end
                            continue
                        self._in_key = False
                        state = _STRING
                        h.value_start("string", base + pos)
                        pos += 1
                    elif c in "-0123456789":
                        m = _NUM_TOKEN(chunk, pos)
                        if m is not None and m.end() - pos <= self.max_number_length:
                            # a whole number, terminated inside this chunk (a longer one takes the slow path
                            # below, which enforces max_number_length exactly as a char-by-char feed does)
                            end = m.end()
                            state = _AFTER if self._stack else _DONE
                            h.number_full(m.group(), base + pos, base + end)
                            pos = end
                            continue
                        state = _NUMBER
                        self._num = ""
                        self._num_start = base + pos
                        h.value_start("number", base + pos)
                    elif c == "{" or c == "[":
                        if len(self._stack) >= self.max_depth:
                            raise JsonParseError(
                                f"nesting deeper than max_depth={self.max_depth}", base + pos, "limit"
                            )
                        is_obj = c == "{"
                        self._stack.append(is_obj)
                        state = _OBJ_FIRST if is_obj else _ARR_FIRST
                        h.value_start("object" if is_obj else "array", base + pos)
                        pos += 1
                    elif c == "]" and state == _ARR_FIRST:
                        self._stack.pop()
                        state = self._after_value()
                        h.array_end(base + pos)
                        pos += 1
                    elif c in _LITERALS:
                        self._lit = _LITERALS[c]
                        self._lit_i = 1
                        state = _LITERAL
                        h.value_start(self._lit, base + pos)
                        pos += 1
                    else:
                        raise JsonParseError(f"expected {_EXPECT[state]}, got {_show(c)}", base + pos)
                elif state == _NUMBER:
                    end = _NUM_RUN(chunk, pos).end()
                    if end > pos:
                        self._num += chunk[pos:end]
                        if len(self._num) > self.max_number_length:
                            kept = self._num[: self.max_number_length]
                            if _NUM_PREFIX(kept) is None:
                                self._number_error(kept, base + end)
                            h.number_part(kept, self._num_start)
                            raise JsonParseError(
                                f"number literal longer than max_number_length={self.max_number_length}",
                                self._num_start + self.max_number_length,
                                "limit",
                            )
                    if end == n:
                        pos = n
                        if _NUM_PREFIX(self._num) is None:
                            self._number_error(self._num, base + n)
                        h.number_part(self._num, self._num_start)
                        break
                    pos = end
                    text = self._num
                    if _NUM_FULL(text) is None:
                        self._number_error(text, base + end)
                    self._num = ""
                    state = self._after_value()
                    h.number_end(text, self._num_start, base + end)
                elif state in (_OBJ_FIRST, _KEY):
                    pos = _WS(chunk, pos).end()
                    if pos == n:
                        break
                    c = chunk[pos]
                    if c == '"':
                        m = _KEY_FULL(chunk, pos)
                        if m is not None:  # the whole key and its colon are in this chunk
                            state = _VALUE
                            h.key_full(m.group(1), base + pos, base + m.end(1))
                            pos = m.end()
                            continue
                        self._in_key = True
                        state = _STRING
                        h.key_start(base + pos)
                    elif c == "}" and state == _OBJ_FIRST:
                        self._stack.pop()
                        state = self._after_value()
                        h.object_end(base + pos)
                    else:
                        raise JsonParseError(f"expected {_EXPECT[state]}, got {_show(c)}", base + pos)
                    pos += 1
                elif state == _COLON:
                    pos = _WS(chunk, pos).end()
                    if pos == n:
                        break
                    if chunk[pos] != ":":
                        raise JsonParseError(f"expected ':' after a key, got {_show(chunk[pos])}", base + pos)
                    state = _VALUE
                    pos += 1
                elif state == _LITERAL:
                    lit = self._lit
                    i = self._lit_i
                    while pos < n and i < len(lit):
                        if chunk[pos] != lit[i]:
                            raise JsonParseError(
                                f"invalid literal: expected {lit!r}, got {_show(chunk[pos])}", base + pos
                            )
                        i += 1
                        pos += 1
                    self._lit_i = i
                    if i == len(lit):
                        state = self._after_value()
                        h.literal_end(base + pos - 1)
                elif state == _ESC:
                    e = chunk[pos]
                    simple = _SIMPLE.get(e)
                    if simple is not None:
                        state = _STRING
                        self._escape_char(simple, base + pos)
                    elif e == "u":
                        state = _UESC_ST
                        self._ubuf = ""
                    else:
                        raise JsonParseError(f"invalid escape '\\{e}'", base + pos)
                    pos += 1
                elif state == _UESC_ST:
                    c = chunk[pos]
                    if c not in _HEX:
                        raise JsonParseError(f"invalid \\u escape: {_show(c)} is not a hex digit", base + pos)
                    self._ubuf += c
                    pos += 1
                    if len(self._ubuf) < 4 and self._watch:
                        self._range_after(self._ubuf, base + pos - 1)
                    if len(self._ubuf) == 4:
                        state = _STRING
                        self._escape_code(int(self._ubuf, 16), base + pos - 1)
                else:  # _DONE
                    pos = _WS(chunk, pos).end()
                    if pos < n:
                        raise JsonParseError(
                            f"trailing data after the complete document: {_show(chunk[pos])}", base + pos
                        )
        finally:
            self._state = state
        self._pos = base + n

    def close(self) -> None:
        """End of stream: completes a top-level number; raises ``JsonParseError`` if the document is
        unfinished."""
        end = self._pos
        if self._state == _NUMBER and not self._stack:
            self._end_number(end)
            return
        if self._state == _DONE:
            return
        if self._state == _VALUE and not self._stack:
            raise JsonParseError("empty document: no JSON value", end)
        raise JsonParseError(f"incomplete JSON document: it ends inside {self._where()}", end)

    def _where(self) -> str:
        state = self._state
        if state in (_STRING, _ESC, _UESC_ST):
            return "a key" if self._in_key else "a string"
        if state == _NUMBER:
            return "a number"
        if state == _LITERAL:
            return f"the literal {self._lit!r}"
        if not self._stack:
            return "the document (no value yet)"
        return "an object" if self._stack[-1] else "an array"
