"""Deaths inside a string prefix: enum/const prefixes, partial patterns, and the allowed names of a key.

A string is checked as it streams, one parser part at a time. ``choice_death`` and ``pattern_death`` find the
first character at which the prefix can no longer become an allowed value, by binary search over the part:
both checks are monotone in the prefix (once impossible, always impossible), so O(log part) checks per part.
``KeyName`` applies the same idea to the key being written in a closed object (``additionalProperties:
false``): it dies at the first character that no unused declared name and no ``patternProperties`` regex
(partial match) allows, with a message saying which names were allowed and which are already set.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from .._schema._node import Role
from .._schema._values import describe
from ._checks import prefix_possible

if TYPE_CHECKING:
    from ._context import EvalContext, EvalParent
    from ._frame import Frame

__all__ = ["KeyName", "choice_death", "first_true", "pattern_death"]


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
