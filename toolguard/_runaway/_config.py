"""Runaway thresholds: the named defaults, the unit classes and the rule that turns a unit into a threshold.

The periodic detectors measure one quantity, the *extent* of a loop: how many characters at the end of the
text are purely periodic with the loop's period, first copy included. A loop fires when its extent reaches
``need(unit)``, a number of characters that depends on what the unit looks like:

- ``content`` (letters, ``?!``, words, sentences): the cheap case, few copies (``S S S S``, ``?!?!``,
  ``lock``);
- ``lines`` (the unit holds whole lines: repeated code or prose lines): a few more copies, because code
  repeats identical lines (``next(it)``, ``pass``) legitimately;
- ``rule`` (punctuation used for layout, or a unit that is seven eighths layout: ``-----``, ``=====``,
  ``|---|``, ``))))``, ``* * *``, box lines): longer than any divider line. Layout is decided per character
  by Unicode, not by a fixed ASCII set: ASCII dividers and brackets, and beyond ASCII the punctuation
  (dashes, leaders ``…`` ``・``, CJK punctuation), separators and the symbols before U+2C00 (box drawing
  ``─━═│┌┐``, block elements ``█▁░``, geometric shapes, arrows, check marks and stars ``✔★`` in tables,
  braille spinners). A character whose NFKC form is ASCII is judged as that ASCII (``！`` is ``!``,
  content; ``－`` is ``-``, layout); emoji (U+1F000 on) are content;
- ``numeric`` (digits with layout punctuation or hex digits: ``1000000000``, ``00 00 00``) and ``encoded``
  (a run inside a base64 blob or hex dump, told by the context before it: ``AAAA``, ``ffff``);
- ``items`` (equal JSON or Python list items: ``{"a": 1}, ``, ``"x", ``, ``0, ``, ``None, ``, SQL placeholders
  ``?, ``; literals separated by spaces, ``nil nil``; rows of a markdown table), the most benign.

A unit inside a JSON string (``\\n``, ``\\"`` escapes: code written into a tool argument) is classified as
the text it encodes. Benign classes raise the threshold; none switches detection off: ``cap`` bounds every
threshold, so no unit in any context repeats for more than ``cap`` characters (whitespace has its own pair of
caps). Classifying a unit costs O(period + context); it happens once per candidate loop, not per character.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Literal

from .._exceptions import ConfigError

__all__ = ["SHORT_TOKEN", "RunawayConfig", "UnitClass", "classify_unit"]

UnitClass = Literal["whitespace", "content", "lines", "rule", "numeric", "encoded", "items"]

_WS = frozenset(" \t\r\n\x0b\x0c")
# Punctuation used for layout: dividers, table rules, ASCII art, closing brackets, quotes and separators.
_LAYOUT = frozenset("-=_*#~+.:|/\\<>^`,;()[]{}'\"") | _WS
_DIGITS = frozenset("0123456789")
_HEX_LETTERS = frozenset("abcdefABCDEFxX")
_NUMERIC = _LAYOUT | _DIGITS
_HEXISH = _NUMERIC | _HEX_LETTERS
# Token texts this long or shorter (spaces aside) are "short": common words and punctuation that repeat in
# legitimate text (lyrics, SQL placeholders, token diagrams such as "V V V V T T"), see token_run_short.
SHORT_TOKEN = 4
# One list item in a rotation that starts right after a comma: JSON / Python strings and literals.
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_BASE64_TAIL = re.compile(r"[A-Za-z0-9+/=\n]+\Z")
_HEX_DUMP = frozenset("0123456789abcdefABCDEF :")
# The end of a hex number or dump: "0x7f", "#7fff", "0010: 00 00 ff" (prefix and digits checked apart).
_HEX_TAIL = re.compile(r"[0-9a-fA-F :]+\Z")
_ITEM_MARKS = frozenset(",\n ")
# An item holds a value: a string, a number, a literal word (checked by regex), an empty object or list, or
# an SQL placeholder.
_ITEM_VALUES = frozenset("\"'{}[]0123456789eElnN?%")
_ROTATION_POINTS = frozenset(",\n \"'")
_LITERAL_RUN = frozenset("0 \t")
_ESCAPE = re.compile(r'\\(["\\/bfnrt])')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}
_STRING = re.compile(r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'""")
_LITERAL = re.compile(
    r"\b(?:true|false|null|None|True|False|NaN|nan|Infinity|inf|nil|NULL|nullptr|undefined)\b|\?|%s"
)


@dataclass(frozen=True, slots=True)
class RunawayConfig:
    """Thresholds of ``RunawayDetector``; every one is a named default, all detectors are on except ``ngram``.

    Character thresholds count *pure periodic repetition, first copy included* (``ab`` x 4 = 8 characters).
    Build a variant with ``dataclasses.replace(RunawayConfig(), cap=4096)`` or
    ``RunawayDetector(cap=4096)``.
    """

    # -- token runs (only when push() gets token ids) ------------------------------------------------------
    token_run: int = 4
    """Identical consecutive token ids that fire when the token is content: a word longer than
    ``SHORT_TOKEN`` characters (`` verify``) or a subword (``ck``, ``ing``), rare to repeat in legitimate
    text."""
    token_run_short: int = 12
    """... and when it is a short word or punctuation (`` S``, `` la``, `` nil``, ``?,``): common words,
    letters and punctuation repeat legitimately (``la la la la``, ``?, ?, ?, ?``, token diagrams such as
    ``[V V V V V V V V V V V V T T]``), so more copies are needed. Chosen from data: the smallest count with
    no false alarm on the corpora of ``benchmarks/runaway.py`` (trade-off curve in benchmarks/RESULTS.md)."""
    # -- periodic loops in the text --------------------------------------------------------------------------
    max_period: int = 256
    """Longest unit searched for at every checkpoint (units up to ``max_block_period`` are searched less
    often)."""
    probe: int = 8
    """Characters of the tail searched for earlier in the window (short: quick; long: fewer false leads)."""
    char_run: int = 32
    """One content character repeated (``GGGG``, ``!!!!``): characters."""
    content_copies: int = 4
    """Copies of a short content unit (``?!``, `` S``, ``lock ``) ..."""
    content_chars: int = 48
    """... and at least this many characters."""
    long_unit: int = 40
    """Content units of at least this many characters (sentences) need only ``long_copies`` copies."""
    long_copies: float = 2.25
    """(2.5 caught held-out sentence loops at p95 421 characters; 2.0 fired on a man page that states one
    49-character option twice.)"""
    line_copies: int = 3
    """Copies of a unit made of whole lines (identical code lines repeat legitimately: ``next(it)``) ..."""
    line_chars: int = 96
    """... plus this many characters."""
    paragraph_copies: float = 3.0
    """Copies of a whole-lines unit of ``2 * long_unit`` characters or more (plus ``line_chars``)."""
    rule_chars: int = 480
    """Layout punctuation (``-----``, ``=====``, ``|---|``, ``))))``): longer than any divider line."""
    numeric_chars: int = 256
    """Digits and hex (``1000000000``, ``00 00 00``), and runs inside base64 or hex dumps (``AAAA``)."""
    items_chars: int = 2304
    """Equal list items (``{"a": 1}, ``, ``"x", ``, ``0, ``, ``None, ``, ``?, ``) and equal table rows: real
    JSON has runs of equal items past 2 KB (status lists, zero-filled coordinates pretty-printed; p99 700
    characters over 11,478 JSON files here, a few above 2 KB)."""
    benign_copies: int = 8
    """Copies of a long unit of a benign class (table rows, box lines) when more than its characters."""
    cap: int = 2560
    """Absolute cap: no unit of any class, in any context, repeats longer than this (characters)."""
    # -- whitespace without content (the JSON-mode failure) -------------------------------------------------
    whitespace_chars: int = 256
    whitespace_newlines: int = 24
    # -- long units (paragraphs, blocks of lines) ------------------------------------------------------------
    max_block_period: int = 1024
    """Longest unit looked for at all; units above ``max_period`` are searched every ``block_every``
    checkpoints with a ``block_probe``-character probe."""
    block_probe: int = 32
    block_every: int = 8
    # -- optional: recurrence of an n-gram that is not strictly periodic (reasoning loops that vary) ---------
    ngram: bool = False
    ngram_length: int = 40
    ngram_copies: int = 10
    ngram_window: int = 2048
    # -- memory ----------------------------------------------------------------------------------------------
    window: int = 4096
    """Characters of tail kept (memory is O(window)); must hold a loop at its threshold plus a copy."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool):
                continue
            if f.name.endswith("_copies") or f.name.startswith("token_run"):
                if not isinstance(value, int | float) or value < 2:
                    raise ConfigError(f"RunawayConfig.{f.name} must be at least 2 copies, got {value!r}")
            elif not isinstance(value, int) or value < 1:
                raise ConfigError(f"RunawayConfig.{f.name} must be a positive int, got {value!r}")
        if self.probe > 64 or self.block_probe > 256:
            raise ConfigError("probe must be at most 64 characters and block_probe at most 256")
        if self.max_period < self.probe or self.max_block_period < self.max_period:
            raise ConfigError("need probe <= max_period <= max_block_period")
        least = max(self.cap, 2 * self.max_block_period, self.whitespace_chars) + self.max_block_period
        if self.window < max(least, self.ngram_window):
            raise ConfigError(
                "window must hold a loop at the cap plus one period, and the n-gram window: raise window "
                f"to at least {max(least, self.ngram_window)}"
            )


def classify_unit(unit: str, context: str = "") -> UnitClass:
    """Name the class of a loop unit (see the module docstring). ``context`` is the text just before the
    loop's first copy (a few dozen characters), used to recognise base64 and hex runs. O(len(unit) +
    len(context))."""
    if unit.isspace():
        return "whitespace"
    if "\\" in unit:
        unit = _unescape(unit)
    chars = set(unit)
    if chars & _ITEM_MARKS and chars & _ITEM_VALUES and _is_items(unit):
        return "items"
    layout = {c for c in chars if _is_layout(c)}
    if layout == chars:
        return "rule"
    if chars & _DIGITS and (chars <= layout | _DIGITS or chars <= layout | _HEXISH):
        return "numeric"
    if "|" in chars and "\n" in chars and _is_table(unit):
        return "items"  # rows of a table, equal rows included
    if len(unit) >= 16 and 8 * sum(c not in layout and c not in _DIGITS for c in unit) <= len(unit):
        return "numeric" if chars & _DIGITS else "rule"  # mostly layout: a table row, a box, a banner
    if context and _encoded(context, chars):
        return "encoded"
    if "\n" in chars:
        return "lines"
    return "content"


@lru_cache(maxsize=4096)
def _is_layout(c: str) -> bool:
    """Whether the character is layout (see the module docstring): ASCII from ``_LAYOUT``; beyond ASCII, its
    NFKC form when that is ASCII, else punctuation, separators, and symbols before U+2C00."""
    if c.isascii():
        return c in _LAYOUT
    folded = unicodedata.normalize("NFKC", c)
    if folded.isascii():
        return bool(folded) and all(ch in _LAYOUT for ch in folded)
    category = unicodedata.category(c)
    if category[0] in "PZ":
        return True
    if category in ("So", "Sm", "Sk"):
        code = ord(c)
        return (
            code < 0x2C00
        )  # through braille and misc symbols and arrows (✔ ★ ⬛); emoji (U+1F000 on) are not
    return False


def _is_items(unit: str) -> bool:
    """Whether some rotation of ``unit`` is a list of literals: JSON/Python strings, numbers, true/false/null,
    None, nil, SQL placeholders, separated by layout characters and at least one comma or newline (``"x", ``,
    ``0,\n``, ``?, ``), or literal words separated by spaces (``nil nil``)."""
    tried = 0
    for i, c in enumerate(unit):
        if c not in _ROTATION_POINTS:
            continue
        rotated = unit[i:] + unit[:i] if c in "\"'" else unit[i + 1 :] + unit[: i + 1]
        strings = _STRING.findall(rotated)
        if any(text.count(" ") >= 2 for text in strings):
            return False  # prose in quotes is content, not a data item
        rest = _LITERAL.sub("0", _STRING.sub("0", rotated))
        if set(rest) <= _NUMERIC and ("," in rest or "\n" in rest):
            return True
        if set(rest) <= _LITERAL_RUN and "0" in rest and " " in rest and not set(rotated) & _DIGITS:
            return True  # literal words separated by spaces: nil nil nil, ? ? ? (digits stay numeric)
        tried += 1
        if tried == 4:
            break
    return False


def _unescape(unit: str) -> str:
    """The unit as text when it sits inside a JSON string (code written into a tool argument): rotated to
    start at an escape (``\\n`` first), then ``\\n``, ``\\t``, ``\\"``, ``\\\\``... decoded."""
    twice = unit + unit
    k = twice.find("\\n")
    if k < 0 or k >= len(unit):
        k = unit.index("\\")
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(1)], twice[k : k + len(unit)])


def _is_table(unit: str) -> bool:
    """Whether ``unit`` is whole rows of a markdown/rst table: every line starts and ends with | or +."""
    cut = unit.index("\n") + 1
    lines = (unit[cut:] + unit[:cut]).split("\n")[:-1]
    return all(line.strip()[:1] in ("|", "+") and line.strip()[-1:] in ("|", "+") for line in lines)


def _encoded(context: str, chars: set[str]) -> bool:
    """Whether ``context`` ends inside a base64 blob (40+ characters of the alphabet without a space, lines
    allowed, or 24+ with digits and both cases) or a hex dump or number (hex digits, spaces and colons with a
    digit among them) whose alphabet the unit shares."""
    if chars <= _HEX_DUMP:
        dump = _HEX_TAIL.search(context)
        if dump is not None:
            tail = dump.group()
            digits = sum(c in _DIGITS for c in tail)
            if digits >= 4 or (digits and context[: dump.start()].endswith(("0x", "0X", "#"))):
                return True
    if not chars <= _BASE64:
        return False
    token = _BASE64_TAIL.search(context)
    if token is None:
        return False
    text = token.group().replace("\n", "")
    if len(text) >= 40:
        return True
    return len(text) >= 24 and any(c in _DIGITS for c in text) and not text.isupper() and not text.islower()


def need_chars(config: RunawayConfig, unit: str, cls: UnitClass) -> int:
    """Characters of pure repetition (first copy included) at which a loop of ``unit`` fires. At most
    ``config.cap`` and never below two copies."""
    p = len(unit)
    if cls == "content":
        if p == 1:
            need = config.char_run
        elif p >= config.long_unit:
            need = math.ceil(config.long_copies * p)
        else:
            need = max(config.content_copies * p, config.content_chars)
    elif cls == "lines":
        copies = config.paragraph_copies if p >= 2 * config.long_unit else config.line_copies
        need = math.ceil(copies * p) + config.line_chars
    elif cls == "rule":
        need = max(config.rule_chars, config.benign_copies * p)
    elif cls in ("numeric", "encoded"):
        need = max(config.numeric_chars, config.benign_copies * p)
    elif cls == "items":
        need = max(config.items_chars, config.benign_copies * p)
    else:  # whitespace has its own detector; keep a finite threshold all the same
        need = config.whitespace_chars
    return max(min(need, config.cap), 2 * p)
