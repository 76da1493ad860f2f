"""Deaths inside a string prefix: enum/const prefixes, partial patterns, and the allowed names of a key.

A string is checked as it streams, one parser part at a time. ``choice_death`` and ``pattern_death`` find the
first character at which the prefix can no longer become an allowed value, by binary search over the part:
both checks are monotone in the prefix (once impossible, always impossible), so O(log part) checks per part.
An escape adds its character only at its last character; before that, the backslash and each hex digit of a
``\\u`` escape narrow which character it can be (any; then a range of code units), and
``choice_range_death`` / ``pattern_range_death`` say whether no character of that range saves the prefix: the
string then dies at that backslash or digit (``"abc\\u0041"`` under ``^[a-z]*$`` dies at the ``4``: no
character in U+0040..U+004F is a lowercase letter).
``KeyName`` applies the same idea to the key being written in a closed object (``additionalProperties:
false``): it dies at the first character that no unused declared name and no ``patternProperties`` regex
(partial match) allows, with a message saying which names were allowed and which are already set.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from .._schema._node import Role
from .._schema._values import describe
from ._checks import prefix_possible

if TYPE_CHECKING:
    from ._context import EvalContext, EvalParent
    from ._frame import Frame

__all__ = [
    "RANGE_PROBE_BUDGET",
    "KeyName",
    "choice_death",
    "choice_range_death",
    "first_true",
    "pattern_death",
    "pattern_range_death",
]

#: Escapes: a pattern is probed with every character of a ``\\u`` escape's remaining range when it holds at
#: most this many (the first hex digit leaves 4,096)...
RANGE_PROBE_MAX = 4096
#: ...and while the document has probes left: past this many, escapes wait for their last digit again.
RANGE_PROBE_BUDGET = 131072
_HIGH_SURROGATES = (0xD800, 0xDBFF)


def _unit(text: str, i: int) -> int:
    """The first UTF-16 code unit of ``text[i]`` (what a ``\\u`` escape for it starts with)."""
    c = ord(text[i])
    return c if c <= 0xFFFF else 0xD800 + ((c - 0x10000) >> 10)


def range_text(prev: str, lo: int, hi: int, high: int = -1) -> str:
    """How a message names ``prev`` followed by the character an escape is adding."""
    if high >= 0:
        pair = f"\\u{high:04x} and then \\u{lo:04x}..\\u{hi:04x}"
        return f"{describe(prev)} followed by {pair} (the escapes being read)"
    if lo == 0 and hi == 0xFFFF:
        return f"{describe(prev)} followed by any character (the escape being read)"
    return f"{describe(prev)} followed by a character in U+{lo:04X}..U+{hi:04X} (the escape being read)"


def choice_range_death(
    strings: tuple[str, ...] | list[str], prev: str, lo: int, hi: int, high: int = -1
) -> bool:
    """Whether no member of the sorted ``strings`` continues ``prev`` by a character whose first code unit
    is in ``lo..hi`` (exact: an astral character counts by its high surrogate, as its escape is written).

    With ``high`` (a high surrogate read by the previous escape, not yet a character), the escape being read
    either completes it (a low surrogate: one astral character) or leaves it alone (then ``chr(high)`` and
    the escape's own character follow ``prev``)."""
    n = len(prev)
    for i in range(bisect_left(strings, prev), len(strings)):
        member = strings[i]
        if not member.startswith(prev):
            break
        if len(member) <= n:
            continue
        if high < 0:
            if lo <= _unit(member, n) <= hi:
                return False
            continue
        c = ord(member[n])
        if c > 0xFFFF and _unit(member, n) == high and lo <= 0xDC00 + ((c - 0x10000) & 0x3FF) <= hi:
            return False
        if c == high and len(member) > n + 1:
            u = _unit(member, n + 1)
            if lo <= u <= hi and not 0xDC00 <= u <= 0xDFFF:
                return False
    return True


def pattern_range_death(
    patterns: list[Any], prev: str, lo: int, hi: int, ctx: EvalContext, hint: int = -1
) -> bool | None:
    """Whether no pattern of ``patterns`` can still match ``prev`` + c for any character c in ``lo..hi``.

    Decided by probing every c (partial matches; ``hint``, the escape's own character when the parser has
    it, first: a valid escape then costs one probe), so only for ranges of at most ``RANGE_PROBE_MAX``
    outside the high surrogates (those become astral characters with the next escape, or stay alone) and
    while the document's budget lasts; otherwise ``False`` (not dead: the last digit decides). The budget is
    charged the range's size whatever the probes cost, so the verdict never depends on the chunking.
    ``None``: a regex ran out of time."""
    size = hi - lo + 1
    if size > RANGE_PROBE_MAX or (lo <= _HIGH_SURROGATES[1] and hi >= _HIGH_SURROGATES[0]):
        return False
    if ctx.range_probes < size * len(patterns):
        return False
    ctx.range_probes -= size * len(patterns)
    timeout = ctx.regex_timeout
    order = range(lo, hi + 1)
    if lo <= hint <= hi:
        order = itertools.chain((hint,), order)  # type: ignore[assignment]
    try:
        for u in order:
            probe = prev + chr(u)
            for pattern in patterns:
                if pattern.search(probe, partial=True, timeout=timeout) is not None:
                    return False
    except TimeoutError:
        return None
    return True


def choice_death(strings: tuple[str, ...], prev: str, text: str, limit: int) -> int:
    """First k <= limit at which ``prev + text[:k]`` is no member's prefix (0: none)."""
    if prefix_possible(strings, prev + text[:limit]):
        return 0
    return first_true(lambda k: not prefix_possible(strings, prev + text[:k]), limit)


def pattern_death(pattern: Any, prev: str, text: str, limit: int, ctx: EvalContext) -> int | None:
    """First k <= limit at which the pattern can no longer match (0: none; None: the regex timed out)."""
    timeout = ctx.regex_timeout
    timed_out = False

    def dead(k: int) -> bool:
        nonlocal timed_out
        if timed_out:
            return False
        try:
            return pattern.search(prev + text[:k], partial=True, timeout=timeout) is None
        except TimeoutError:
            timed_out = True
            return False

    if not dead(limit):
        return None if timed_out else 0
    k = first_true(dead, limit)
    return None if timed_out else k


def first_true(pred: Any, hi: int) -> int:
    """Smallest k in [1, hi] with ``pred(k)`` true, given ``pred`` monotone and ``pred(hi)`` true."""
    lo = 1
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


class KeyName:
    """The allowed-name filter of one closed object (``additionalProperties: false``).

    Lives on the key being written; dies at the first character that neither a remaining (unused) declared
    property name nor a ``patternProperties`` regex (partial match) allows. The same filter serves the keys
    of an ``enum``/``const`` of objects (``declared``: the members' keys, ``keyword``: ``const``/``enum``,
    no patterns).
    """

    __slots__ = (
        "dead",
        "declared",
        "err",
        "frame",
        "key",
        "keyword",
        "kids",
        "names",
        "patterns",
        "role",
        "up",
    )

    def __init__(
        self,
        up: EvalParent,
        names: list[str],
        frame: Frame,
        *,
        declared: tuple[str, ...] | None = None,
        keyword: str = "additionalProperties",
    ) -> None:
        self.up = up
        self.names = names
        self.declared = up.node.names if declared is None else declared
        self.keyword = keyword
        self.patterns = up.node.pattern_props if keyword == "additionalProperties" else ()
        self.kids = None
        self.dead = False
        self.role = Role.KEYNAME
        self.key = None
        self.err: Any = None
        self.frame = frame

    def die(self, viol: Any, ctx: EvalContext) -> None:
        if not self.dead:
            self.dead = True
            self.err = viol
            if not self.up.dead:
                self.up.kid_failed(self, viol, ctx)

    def str_death(
        self, prev: str, text: str, prev_len: int, tlimit: int, ctx: EvalContext
    ) -> tuple[int, str, str]:
        if tlimit <= 0 or not self._dead_prefix(prev + text[:tlimit], ctx):
            return 0, "", ""
        k = first_true(lambda k: self._dead_prefix(prev + text[:k], ctx), tlimit)
        prefix = prev + text[:k]
        used = self.frame.value  # the object's finished members (this filter's frame is the object's)
        taken = [n for n in self.declared if n in used and n.startswith(prefix)]
        already = ""
        if taken:  # a used name: the model is repeating a key
            names = ", ".join(repr(n) for n in taken[:4])
            already = f"{names} {'is' if len(taken) == 1 else 'are'} already set; "
        return (
            k,
            self.keyword,
            f"no allowed property name starts with {describe(prefix)} ({already}{self._allowed()})",
        )

    def _dead_prefix(self, prefix: str, ctx: EvalContext) -> bool:
        if prefix_possible(self.names, prefix):
            return False
        for rx, _, _ in self.patterns:
            try:
                if rx.search(prefix, partial=True, timeout=ctx.regex_timeout) is not None:
                    return False
            except TimeoutError:
                return False
        return True

    def range_death(
        self, prev: str, lo: int, hi: int, ctx: EvalContext, hint: int = -1, high: int = -1
    ) -> tuple[str, str] | None:
        """(keyword, detail) when no allowed name continues ``prev`` by a character in ``lo..hi`` (an escape
        being read; see ``Engine.escape_range``), else ``None``."""
        if not choice_range_death(self.names, prev, lo, hi, high):
            return None
        if self.patterns:
            if high >= 0:
                return None  # the second half of a pair: patterns wait for its last digit
            rxs = [rx for rx, _, _ in self.patterns]
            if not pattern_range_death(rxs, prev, lo, hi, ctx, hint):  # alive, undecided or out of time
                return None
        what = range_text(prev, lo, hi, high)
        return self.keyword, f"no allowed property name starts with {what} ({self._allowed()})"

    def _allowed(self) -> str:
        allowed = ", ".join(repr(n) for n in self.names[:8]) or "none"
        if self.patterns:
            allowed += " or names matching " + ", ".join(repr(p[1]) for p in self.patterns[:4])
        if self.keyword != "additionalProperties":
            return f"the keys of the values the {self.keyword} allows; left: {allowed}"
        return f"additionalProperties is false; allowed: {allowed}"

    def finish_key(self, key: str, ctx: EvalContext) -> None:
        i = bisect_left(self.names, key)
        if i < len(self.names) and self.names[i] == key:
            return
        for rx, _, _ in self.patterns:
            try:
                if rx.search(key, timeout=ctx.regex_timeout) is not None:
                    return
            except TimeoutError:
                return  # decided by child_specs, which reports the timeout
        self.die(
            ctx.violation(self.frame, self.keyword, f"property {key!r} is not allowed ({self._allowed()})"),
            ctx,
        )
