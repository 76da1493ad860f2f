"""Keyword checks on a value's first character, on a number prefix, and on a closed scalar.

Each returns ``(keyword, detail)`` for the first failed keyword, or ``None``; the caller turns it into a
violation at the current offset. They mirror ``jsonschema``'s semantics on ``json.loads`` values exactly
(``_not_multiple`` is its multipleOf, integers from draft 6 on include ``1.0``, draft 4's do not).
``number_prefix_error`` is the only one that looks at an unfinished value: see its docstring for why each rule
is sound. All are O(size of the value) at most.
"""

from __future__ import annotations

from bisect import bisect_left
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .._schema._choices import MAX_SIGNIFICANT
from .._schema._choices import significant as _significant
from .._schema._node import ARR, BOOL, KIND_BITS, NULL, NUM, OBJ, STR, Node
from .._schema._values import describe, json_equal

if TYPE_CHECKING:
    from ._context import EvalContext

__all__ = ["begin_error", "final_error", "number_prefix_error", "prefix_possible", "scalar_error"]

_LITERAL_VALUE = {"true": True, "false": False, "null": None}
_KIND_NAMES = (
    (OBJ, "object"),
    (ARR, "array"),
    (STR, "string"),
    (NUM, "number"),
    (BOOL, "boolean"),
    (NULL, "null"),
)


def prefix_possible(sorted_names: tuple[str, ...] | list[str], prefix: str) -> bool:
    """Whether some member of ``sorted_names`` starts with ``prefix`` (O(log n))."""
    i = bisect_left(sorted_names, prefix)
    return i < len(sorted_names) and sorted_names[i].startswith(prefix)


def _kind_text(kind: str) -> str:
    return {"true": "boolean", "false": "boolean", "null": "null"}.get(kind, kind)


def _expected(node: Node) -> str:
    if node.type_names:
        return " or ".join(node.type_names)
    return " or ".join(name for bit, name in _KIND_NAMES if node.kinds & bit)


def _choices_text(values: tuple[Any, ...], limit: int = 6) -> str:
    shown = ", ".join(describe(v, 40) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def _is_integer(value: Any, strict: bool) -> bool:
    if isinstance(value, int):
        return True
    return not strict and isinstance(value, float) and value.is_integer()


def _not_multiple(value: int | float, divisor: int | float) -> bool:
    """``jsonschema``'s multipleOf test, verbatim in behaviour."""
    if isinstance(divisor, float):
        quotient = value / divisor
        try:
            return int(quotient) != quotient
        except OverflowError:
            return (Fraction(value) / Fraction(divisor)).denominator != 1
    return bool(value % divisor)


def _bounds_error(node: Node, value: int | float) -> tuple[str, str] | None:
    """(keyword, detail) of the first numeric bound ``value`` breaks."""
    if node.minimum is not None and value < node.minimum:
        return "minimum", f"{describe(value)} is less than the minimum of {describe(node.minimum)}"
    if node.ex_min is not None and value <= node.ex_min:
        kw = "minimum" if node.draft == "draft4" else "exclusiveMinimum"
        return (
            kw,
            f"{describe(value)} is less than or equal to the exclusive minimum of {describe(node.ex_min)}",
        )
    if node.maximum is not None and value > node.maximum:
        return "maximum", f"{describe(value)} is greater than the maximum of {describe(node.maximum)}"
    if node.ex_max is not None and value >= node.ex_max:
        kw = "maximum" if node.draft == "draft4" else "exclusiveMaximum"
        return (
            kw,
            f"{describe(value)} is greater than or equal to the exclusive maximum of {describe(node.ex_max)}",
        )
    return None


def _upper_error(node: Node, value: int | float) -> tuple[str, str] | None:
    if node.maximum is not None and value > node.maximum:
        return "maximum", f"{describe(value)} is greater than the maximum of {describe(node.maximum)}"
    if node.ex_max is not None and value >= node.ex_max:
        kw = "maximum" if node.draft == "draft4" else "exclusiveMaximum"
        return (
            kw,
            f"{describe(value)} is greater than or equal to the exclusive maximum of {describe(node.ex_max)}",
        )
    return None


def _lower_error(node: Node, value: int | float) -> tuple[str, str] | None:
    if node.minimum is not None and value < node.minimum:
        return "minimum", f"{describe(value)} is less than the minimum of {describe(node.minimum)}"
    if node.ex_min is not None and value <= node.ex_min:
        kw = "minimum" if node.draft == "draft4" else "exclusiveMinimum"
        return (
            kw,
            f"{describe(value)} is less than or equal to the exclusive minimum of {describe(node.ex_min)}",
        )
    return None


def _zero_allowed(node: Node) -> bool:
    """Whether 0 satisfies the node's bounds and numeric choices (every completion can underflow to 0)."""
    if _bounds_error(node, 0) is not None:
        return False
    return all(any(json_equal(0, v) for v in ch.values) for ch in node.choices if ch.kinds & NUM)


def _choice_prefix_error(node: Node, text: str, neg: bool, body: str) -> tuple[str, str] | None:
    """No member of an ``enum``/``const`` can be spelled by extending ``text`` (see ``_schema._choices``)."""
    if node.choice_sigs is None or "e" in body or "E" in body:
        return None
    sign = -1 if neg else 1
    sig = _significant(body.replace(".", ""))
    if (body and not sig) or len(sig) > MAX_SIGNIFICANT:
        return None  # zeros so far (anything may follow), or too many digits to rule out rounding
    for choice, members in node.choice_sigs:
        reachable = any(s == sign and any(m.startswith(sig) for m in sigs) for s, sigs in members)
        if not reachable:
            return choice.keyword, f"no number starting with {text} is one of {_choices_text(choice.values)}"
    return None


def number_prefix_error(node: Node, text: str) -> tuple[str, str] | None:
    """Why no number starting with ``text`` (a valid number prefix) can satisfy ``node``, or ``None``.

    Sound, monotone in the prefix: '-' rules out values above 0 (and ``-0`` equals 0); a first digit rules out
    negatives; once exponent digits are present the value only moves one way as digits are added; in draft 4
    an integer cannot take a fraction or an exponent, so its digits only move away from zero. Everything else
    (an exponent can still bring ``20`` down to ``2.0``, a valid integer from draft 6 on) waits for the close.
    Numeric ``enum``/``const`` members are matched by significant digits (``7`` is none of 1, 2, 3). From
    draft 6 on an integer with a negative exponent that is already a fraction (``5e-1``) can only shrink, to
    other fractions or, by underflow, to 0: it is rejected when 0 is not allowed either. A negative prefix
    under ``minimum: 0`` is not rejected: ``-5e-400`` is ``-0.0``, which is not below 0.
    """
    neg = text.startswith("-")
    body = text[1:] if neg else text
    found = _choice_prefix_error(node, text, neg, body)
    if found is not None:
        return found
    if not body:
        if node.minimum is not None and node.minimum > 0:
            return "minimum", f"a negative number is less than the minimum of {describe(node.minimum)}"
        if node.ex_min is not None and node.ex_min >= 0:
            kw = "minimum" if node.draft == "draft4" else "exclusiveMinimum"
            return kw, f"a negative number is not above the exclusive minimum of {describe(node.ex_min)}"
        return None
    if not neg:
        if node.maximum is not None and node.maximum < 0:
            return "maximum", f"a non-negative number is greater than the maximum of {describe(node.maximum)}"
        if node.ex_max is not None and node.ex_max <= 0:
            kw = "maximum" if node.draft == "draft4" else "exclusiveMaximum"
            return kw, f"a non-negative number is not below the exclusive maximum of {describe(node.ex_max)}"
    if node.int_strict and ("." in body or "e" in body or "E" in body):
        return "type", f"expected integer, got a number with a {'fraction' if '.' in body else 'exponent'}"
    epos = max(body.find("e"), body.find("E"))
    if epos >= 0:
        exp = body[epos + 1 :]
        if not exp.lstrip("+-"):
            return None
        value = float(text)
        if float(body[:epos]) == 0:
            return _bounds_error(node, value)
        if node.int_only and exp.startswith("-") and not _zero_allowed(node):
            mantissa = body[:epos]
            power = int(exp[1:])
            exact = power <= 300 and len(_significant(mantissa.replace(".", ""))) <= MAX_SIGNIFICANT
            if exact and (Fraction(mantissa) / 10**power).denominator != 1:
                return "type", f"expected integer: {text}… can only become a fraction or 0 (not allowed)"
        growing = not exp.startswith("-")
        if growing != neg:  # the value only increases from here
            return _upper_error(node, value)
        return _lower_error(node, value)
    if node.int_strict:
        value_i = int(text)
        if body == "0":
            return _bounds_error(node, value_i)
        return _lower_error(node, value_i) if neg else _upper_error(node, value_i)
    if node.int_only:
        # From draft 6 on, 20e-1 (= 2.0) is an integer, so digits alone do not fix the value. But the
        # significant digits do bound it: any integer a number starting with these digits can become has
        # significant digits starting with them (leading and trailing zeros and the dot aside), so its
        # magnitude is at least their value. "12" can never become an integer <= 9 (12e-1 = 1.2), while "20"
        # can (20e-1 = 2).
        significant = body.replace(".", "").strip("0")
        if not significant:
            return None
        least = int(significant)
        found = _lower_error(node, -least) if neg else _upper_error(node, least)
        if found is not None and body != significant:
            keyword, _ = found
            bound = None
            if neg and keyword == "minimum":
                bound = node.minimum
            elif keyword == "maximum":
                bound = node.maximum
            limit = describe(bound) if bound is not None else "the exclusive bound"
            sign, extreme = ("-", "at most") if neg else ("", "at least")
            found = keyword, f"any integer starting with {text} is {extreme} {sign}{least}, beyond {limit}"
        return found
    return None


def begin_error(node: Node, kind: str) -> tuple[str, str] | None:
    """(keyword, detail) when no value starting as ``kind`` can satisfy ``node``'s type/enum/const."""
    always = node.always
    if always is not None:
        return None if always else ("false", "no value is allowed here (the schema is false)")
    bit = KIND_BITS[kind]
    if not node.kinds & bit:
        article = "an" if kind == "object" or kind == "array" else "a"
        return "type", f"expected {_expected(node)}, got {article} {_kind_text(kind)}"
    for ch in node.choices:
        if not ch.kinds & bit:
            return ch.keyword, f"expected one of {_choices_text(ch.values)}, got a {_kind_text(kind)}"
        if kind in _LITERAL_VALUE:
            value = _LITERAL_VALUE[kind]
            if not any(json_equal(value, v) for v in ch.values):
                return ch.keyword, f"{kind} is not one of {_choices_text(ch.values)}"
    return None


def final_error(node: Node, value: Any, ctx: EvalContext) -> tuple[str, str] | None:
    """enum/const and format of a closed value."""
    for ch in node.choices:
        if not any(json_equal(value, v) for v in ch.values):
            if ch.keyword == "const":
                return "const", f"{describe(value)} is not the required value {describe(ch.values[0])}"
            return "enum", f"{describe(value)} is not one of {_choices_text(ch.values)}"
    if (
        node.format is not None
        and ctx.format_checker is not None
        and not ctx.format_checker.conforms(value, node.format)
    ):
        return "format", f"{describe(value)} is not a valid {node.format!r}"
    return None


def scalar_error(node: Node, kind: str, value: Any, ctx: EvalContext) -> tuple[str, str] | None:
    """Every check of ``node`` a closed string, number or literal can fail (after ``begin_error``)."""
    if kind == "string":
        n = len(value)
        if node.min_len is not None and n < node.min_len:
            return "minLength", f"{describe(value)} is shorter than the minLength of {node.min_len}"
        if node.max_len is not None and n > node.max_len:
            return "maxLength", f"the string is longer than the maxLength of {node.max_len}"
        if node.pattern is not None:
            try:
                found = node.pattern.search(value, timeout=ctx.regex_timeout) is not None
            except TimeoutError:
                return "limit", (
                    f"the pattern {node.pattern_src!r} ran out of its time budget ({ctx.regex_timeout}s) "
                    "on this string"
                )
            if not found:
                return "pattern", f"{describe(value)} does not match the pattern {node.pattern_src!r}"
    elif kind == "number":
        if node.int_only and not _is_integer(value, node.int_strict):
            return "type", f"expected {_expected(node)}, got {describe(value)}"
        err = _bounds_error(node, value)
        if err is not None:
            return err
        if node.multiple_of is not None:
            try:
                bad = _not_multiple(value, node.multiple_of)
            except (OverflowError, ValueError):
                bad = True
            if bad:
                return "multipleOf", f"{describe(value)} is not a multiple of {describe(node.multiple_of)}"
    elif node.format is None:
        return None  # literals: enum/const were decided at the first character
    return final_error(node, value, ctx)
