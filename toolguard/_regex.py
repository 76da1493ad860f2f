"""JSON Schema patterns are ECMA-262 regular expressions: translate them for Python's ``regex`` and for
grammar engines.

JSON Schema says ``pattern`` (and ``patternProperties``) use the ECMA-262 dialect. Real tool schemas are
written for JavaScript validators and use its forms freely; Python's ``re`` rejects some that ECMA-262
accepts (``[\\w-\\.]``: Annex B reads the ``-`` after a class escape as a literal), others parse in both with
a different meaning (``$`` also matches before a final newline in Python; ``\\d`` and ``\\w`` are Unicode in
Python, ASCII in ECMA-262; ``x{,3}`` is a quantifier in Python and the literal text ``{,3}`` in ECMA-262), and
grammar engines (llguidance, whose regex syntax is Rust's) reject yet others (``[^]``, ``\\cJ``, ``a{,3}``).

``translate(pattern, target)`` rewrites a pattern token by token, once, O(len(pattern)):

- ``"python"``: for the ``regex`` package. ``\\d``, ``\\w``, ``\\s`` and their complements are spelled out as
  ECMA-262 defines them (ASCII digits and word characters; its Unicode white space), ``\\b``/``\\B`` with
  ASCII word characters, ``$`` becomes ``\\Z``, ``.`` excludes the four ECMA-262 line terminators, named
  groups and ``\\k<name>`` take Python's spelling; ``\\p{...}`` is kept (the regex package reads it).
- ``"engine"``: for llguidance, which already reads ``\\d``/``\\w`` (ASCII) and ``$`` as ECMA-262 does
  (measured in tests/test_regex.py); its ``\\s`` lacks U+FEFF and its ``.`` matches ``\\r``, so those two are
  spelled out; otherwise only what it cannot parse is rewritten.

JSON Schema patterns have Unicode (``u`` flag) semantics (``\\p{Letter}``, ``\\u{1F600}``); the Annex B forms
that only the non-``u`` grammar allows are accepted too, since real schemas use them.

Both targets rewrite the Annex B forms: a ``{`` that does not start a quantifier is a literal, ``\\cX`` is a
control character, ``\\0`` is NUL, an identity escape of a letter (``\\e``) is the letter, ``[^]`` is any
character and ``[]`` none, a ``-`` next to a class escape is a literal, and ``[``, ``&``, ``~`` inside a class
are literals (Python and Rust read some doubled ones as set operations).

Where the translation is used: a pattern the ``regex`` package parses as written keeps that reading
everywhere (the validator, the grammar engine, and every other Python validator such as jsonschema agree on
it); only a pattern it cannot parse is translated, for the validator (``compile_pattern``) and the grammar
engine (``engine_pattern``) alike, so the two never read one pattern differently. ``ecma_error`` is the
metaschema's ``regex`` format check on those terms.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Literal

__all__ = ["Target", "compile_pattern", "ecma_error", "engine_pattern", "translate"]

Target = Literal["python", "engine"]

# ECMA-262's class escapes as code point ranges: \d, \w (ASCII), \s (WhiteSpace and LineTerminator).
_DIGIT = ((0x30, 0x39),)
_WORD = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_SPACE = ((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
          (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF))
_LINE_END = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))


def _cp(c: int) -> str:
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


def _members(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(_cp(a) if a == b else f"{_cp(a)}-{_cp(b)}" for a, b in ranges)


def _complement(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    out, lo = [], 0
    for a, b in ranges:
        if a > lo:
            out.append((lo, a - 1))
        lo = b + 1
    if lo <= 0x10FFFF:
        out.append((lo, 0x10FFFF))
    return tuple(out)


_SETS = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
#: Python: every class escape spelled out (the regex package's \d, \w, \s and \p differ from ECMA-262's,
#: and its ASCII flag would also narrow \p{...}); inside a class, its members.
_PY_IN_CLASS = {**{k: _members(v) for k, v in _SETS.items()},
                **{k.upper(): _members(_complement(v)) for k, v in _SETS.items()}}
#: llguidance reads \d, \w as ASCII and \s as Unicode White_Space, which lacks U+FEFF.
_ENGINE_IN_CLASS = {"d": "\\d", "D": "\\D", "w": "\\w", "W": "\\W", "s": "\\s\\ufeff",
                    "S": "[\\S&&[^\\ufeff]]"}
_WORD_CLASS = "[" + _members(_WORD) + "]"
_BOUNDARY = {"b": f"(?:(?<={_WORD_CLASS})(?!{_WORD_CLASS})|(?<!{_WORD_CLASS})(?={_WORD_CLASS}))",
             "B": f"(?:(?<={_WORD_CLASS})(?={_WORD_CLASS})|(?<!{_WORD_CLASS})(?!{_WORD_CLASS}))"}
_DOT = "[^" + _members(_LINE_END) + "]"
_CLASS_ESCAPES = frozenset("dDwWsS")
#: Escapes with a meaning of their own in ECMA-262 (other letters are identity escapes in Annex B).
_ECMA_LETTERS = frozenset("bBdDwWsSfnrtvcxukpP")
_QUANTIFIER = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
_GROUP_NAME = re.compile(r"\(\?<([A-Za-z_$][A-Za-z0-9_$]*)>")
_HEX2 = re.compile(r"[0-9A-Fa-f]{2}")
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
_BRACED_HEX = re.compile(r"\{([0-9A-Fa-f]{1,6})\}")
_NAME_REF = re.compile(r"<([A-Za-z_$][A-Za-z0-9_$]*)>")
_PROPERTY = re.compile(r"\{[A-Za-z_=]+\}")


@functools.lru_cache(maxsize=4096)
def translate(pattern: str, target: Target = "python") -> str:
    """``pattern`` (ECMA-262) rewritten for ``target`` (see the module docstring). Patterns that are not
    valid ECMA-262 come back in a form the target also rejects, so the error surfaces where it is compiled."""
    py = target == "python"
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    class_start = False  # right after "[" or "[^"
    prev_class_escape = False  # the previous class member was \d, \w, \s...
    while i < n:
        c = pattern[i]
        if c == "\\":
            piece, i, is_class_escape = _escape(pattern, i, in_class, py)
            if in_class and is_class_escape and out and out[-1] == "-" and not class_start:
                out[-1] = "\\-"  # [a-\d]: Annex B, a literal "-"
            out.append(piece)
            prev_class_escape = is_class_escape
            class_start = False
            continue
        if in_class:
            if c == "]":
                in_class = False
                out.append("]")
            elif c == "-" and prev_class_escape:
                out.append("\\-")  # [\w-.]: Annex B, a literal "-"
            elif c in "[&~|":
                out.append("\\" + c)  # literals in ECMA-262; Python and Rust read some as set operations
            else:
                out.append(c)
            prev_class_escape = False
            class_start = False
            i += 1
            continue
        if c == "[":
            if pattern.startswith("[^]", i):
                out.append("[\\s\\S]")
                i += 3
                continue
            if pattern.startswith("[]", i):
                out.append("(?!)")  # matches nothing (llguidance has no look-around: it refuses the pattern)
                i += 2
                continue
            in_class, class_start, prev_class_escape = True, True, False
            step = 2 if pattern.startswith("[^", i) else 1
            out.append(pattern[i:i + step])
            i += step
            continue
        if c == "{":
            m = _QUANTIFIER.match(pattern, i)
            if m:  # a quantifier (where nothing precedes it, invalid in both dialects)
                out.append(m.group())
                i = m.end()
            else:  # Annex B: "{" that starts no quantifier is a literal ("a{,3}" is the text "a{,3}")
                out.append("\\{")
                i += 1
            continue
        if c == "}":
            out.append("\\}")
        elif c == "$" and py:
            out.append("\\Z")
        elif c == ".":
            out.append(_DOT)
        elif c == "(" and py and (m := _GROUP_NAME.match(pattern, i)):
            out.append(f"(?P<{m.group(1)}>")
            i = m.end()
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _escape(p: str, i: int, in_class: bool, py: bool) -> tuple[str, int, bool]:
    """The translation of the escape at ``p[i] == "\\"``: (text, next index, is a class escape)."""
    if i + 1 >= len(p):
        return "\\", i + 1, False  # a trailing backslash: invalid everywhere, left for the compiler to refuse
    e = p[i + 1]
    j = i + 2
    if e in _CLASS_ESCAPES:
        members = (_PY_IN_CLASS if py else _ENGINE_IN_CLASS)[e]
        if in_class:
            return members, j, True
        if not py and e in "dDwW":
            return "\\" + e, j, True
        return ("[" + members + "]" if not members.startswith("[") else members), j, True
    if e in "bB" and not in_class:
        return (_BOUNDARY[e] if py else "\\" + e), j, False
    if e == "c":
        if j < len(p) and p[j].isascii() and p[j].isalpha():
            return f"\\x{ord(p[j]) % 32:02x}", j + 1, False
        return "\\\\c", j, False  # Annex B: a backslash, then "c"
    if e == "0" and not (j < len(p) and p[j].isdigit()):
        return "\\x00", j, False
    if e == "x":
        return ("\\x" + p[j:j + 2], j + 2, False) if _HEX2.match(p, j) else ("x", j, False)
    if e == "u":
        if _HEX4.match(p, j):
            return "\\u" + p[j:j + 4], j + 4, False
        m = _BRACED_HEX.match(p, j)
        if m:  # the u-flag form: JSON Schema patterns have Unicode semantics
            return (_cp(int(m.group(1), 16)) if py else "\\u" + m.group()), m.end(), False
        return "u", j, False
    if e == "k":
        m = _NAME_REF.match(p, j)
        if m:
            return (f"(?P={m.group(1)})" if py else "\\k" + m.group()), m.end(), False
        return "k", j, False
    if e in "pP":
        m = _PROPERTY.match(p, j)
        if m:
            return "\\" + e + m.group(), m.end(), False
        return e, j, False
    if e.isascii() and e.isalpha() and e not in _ECMA_LETTERS:
        return e, j, False  # identity escape (\e is "e"); Python and Rust give letters meanings of their own
    return "\\" + e, j, False  # punctuation, a backreference (engines refuse those), \b in a class...


def compile_pattern(pattern: str) -> Any:
    """``pattern`` compiled with the ``regex`` package: as written when it parses (Python's reading, which
    every other Python validator shares), else its ECMA-262 translation (``[^]``, ``\\cJ``, ``\\e``,
    ``\\k<name>``, ``\\u{...}``: forms only ECMA-262 reads). Raises ``regex.error`` (the original's) when
    neither parses."""
    import regex

    try:
        return regex.compile(pattern)
    except regex.error as first:
        try:
            return regex.compile(translate(pattern, "python"))
        except regex.error:
            raise first from None


def engine_pattern(pattern: str) -> str:
    """The pattern a grammar engine gets: as written when the ``regex`` package parses it (the validator then
    reads it the same way), else its ECMA-262 translation (as ``compile_pattern``), so that the grammar and
    the validator always read a pattern alike."""
    import regex

    try:
        regex.compile(pattern)
    except regex.error:
        return translate(pattern, "engine")
    return pattern


def ecma_error(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid pattern (None if it is): neither it nor its ECMA-262 translation parses
    (so Annex B forms such as ``[\\w-\\.]`` pass, which Python's ``re`` rejects)."""
    import regex

    try:
        compile_pattern(pattern)
    except regex.error as exc:
        return str(exc)
    return None
