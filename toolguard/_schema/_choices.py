"""What ``enum``/``const`` and type-only schemas let the validator decide before a value closes.

Three derivations, made once per node at compile time:

- **Members inside a container** (``derive_choice_children``). A value equal to one of the object members of
  an ``enum``/``const`` has only their keys, and under each key a value equal to one of theirs; an array
  member likewise fixes each index. So each key (index) gets a synthetic child node whose own ``enum`` is
  the values the members hold there, built recursively: ``{"a": 3`` against ``const {"a": 1}`` dies at the
  ``3``, not at the closing brace. The per-key sets are a superset of what the members jointly allow (with
  several members the choice is joint), so a death is always sound; the exact check still runs when the
  value closes.
- **Number prefixes against numeric members** (``number_signatures``). Appending digits, a fraction or an
  exponent keeps a number's significant digits as a prefix, so a prefix can still equal a member only if
  its significant digits begin that member's (or begin the digits of a real that rounds to the member's
  double: ``9.99999999999999999`` is ``10.0``). A member 0 is reachable from any prefix (``7e-400`` is
  ``0.0``), so it disables the check; so does a prefix of more than 15 significant digits.
- **Schemas that hold for a whole kind** (``holds_for``): the kinds of value every completion of which
  satisfies the node (``{"type": "string"}`` holds for every string; ``{"minLength": 1}`` for every
  non-string). ``not`` over such a schema fails at the value's first character, and an ``if`` that holds for
  the value's kind cannot fail, so its ``else`` outcome is gone.

Cost: linear in the size of the members; reachability is O(len(prefix)) per member.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from ._node import ALL_KINDS, ARR, BOOL, NULL, NUM, OBJ, STR, Choice, Node

__all__ = [
    "MAX_SIGNIFICANT",
    "choice_record",
    "finish_choice_node",
    "holds_for",
    "number_signatures",
    "significant",
]

MAX_SIGNIFICANT = 15
"""Prefixes with more significant digits than this are left to the close: float rounding could still map
them onto a member."""


def significant(digits: str) -> str:
    """The significant digits of a digit string (leading and trailing zeros removed)."""
    return digits.strip("0")


def _sig_of_decimal(value: Decimal) -> str:
    digits = "".join(str(d) for d in value.as_tuple().digits)
    return significant(digits)


def number_signatures(values: tuple[Any, ...]) -> tuple[tuple[int, tuple[str, ...]], ...] | None:
    """For each numeric member: (sign, significant-digit strings a prefix may begin), or ``None`` when a
    member is zero (reachable from every prefix through underflow)."""
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if v == 0:
            return None
        if isinstance(v, float) and not math.isfinite(v):
            continue
        sigs = {_sig_of_decimal(Decimal(v))}
        d = float(v) if isinstance(v, int) and abs(v) < 2**1023 else v
        if isinstance(d, float) and d == v:
            # every real in (lo, hi) parses to the double d
            below, above = math.nextafter(d, -math.inf), math.nextafter(d, math.inf)
            lo = (Decimal(d) + Decimal(below)) / 2
            hi = (Decimal(d) + Decimal(above)) / 2
            sigs |= {_sig_of_decimal(lo), _sig_of_decimal(hi), _sig_of_decimal(Decimal(d))}
        out.append((-1 if v < 0 else 1, tuple(sorted(sigs))))
    return tuple(out)


def choice_record(keyword: str, values: tuple[Any, ...]) -> Choice:
    """The ``Choice`` of an ``enum``/``const``: its members, the kinds they cover, its strings sorted."""
    kinds = 0
    for v in values:
        kinds |= _kind_of(v)
    strings = tuple(sorted({v for v in values if isinstance(v, str)}))
    return Choice(keyword, values, kinds, strings)


def _kind_of(value: Any) -> int:
    if value is None:
        return NULL
    if value is True or value is False:
        return BOOL
    if isinstance(value, str):
        return STR
    if isinstance(value, (int, float)):
        return NUM
    if isinstance(value, dict):
        return OBJ
    return ARR


def _child_choice(parent: Node, where: str, keyword: str, values: tuple[Any, ...]) -> Node:
    child = Node(f"{parent.loc}/{keyword}{where}", parent.draft, parent.resource)
    child.choices = (choice_record(keyword, values),)
    child.has_final = True
    finish_choice_node(child)
    return child


def finish_choice_node(n: Node) -> None:
    """Set the early-decision flags a node's ``enum``/``const`` allow (see the module docstring)."""
    for ch in n.choices:
        if ch.kinds & STR:
            n.str_early = True
        if ch.kinds & NUM:
            n.num_early = True
    derive_choice_children(n)


def derive_choice_children(n: Node) -> None:
    """Per-key and per-index synthetic nodes for the object and array members of ``n``'s choices."""
    for ch in n.choices:
        objects = [v for v in ch.values if isinstance(v, dict)]
        if objects and ch.kinds & OBJ:
            keys = sorted({k for o in objects for k in o})
            props = {
                k: _child_choice(n, f"/{k}", ch.keyword, tuple(o[k] for o in objects if k in o)) for k in keys
            }
            n.choice_props = _merge(n.choice_props, props)
            most = max(len(o) for o in objects)
            n.choice_max_props = most if n.choice_max_props is None else min(n.choice_max_props, most)
            n.has_obj = True
        arrays = [v for v in ch.values if isinstance(v, list)]
        if arrays and ch.kinds & ARR:
            longest = max(len(a) for a in arrays)
            items = tuple(
                _child_choice(n, f"/{i}", ch.keyword, tuple(a[i] for a in arrays if len(a) > i))
                for i in range(longest)
            )
            n.choice_items = items if n.choice_items is None else n.choice_items[: len(items)]
            n.has_arr = True
        if ch.kinds & NUM:
            sigs = number_signatures(ch.values)
            if sigs is not None:
                n.choice_sigs = (*(n.choice_sigs or ()), (ch, sigs))


def _merge(old: dict[str, Node] | None, new: dict[str, Node]) -> dict[str, Node]:
    """Two choices (``enum`` and ``const``) on one node: a key must be allowed by both."""
    if old is None:
        return new
    return {k: v for k, v in new.items() if k in old}


def holds_for(n: Node) -> int:
    """The kinds for which every value satisfies ``n`` (see the module docstring); 0 when unsure."""
    if n.always is True:
        return ALL_KINDS
    if n.always is False or n.choices or n.inplace or n.needs_ann:
        return 0
    constrained = 0
    if n.min_len is not None or n.max_len is not None or n.pattern is not None or n.format is not None:
        constrained |= STR
    if n.int_only or n.num_early or n.multiple_of is not None:
        constrained |= NUM
    if n.has_obj:
        constrained |= OBJ
    if n.has_arr:
        constrained |= ARR
    return n.kinds & ~constrained & ALL_KINDS
