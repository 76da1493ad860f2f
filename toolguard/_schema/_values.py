"""JSON value semantics exactly as ``jsonschema`` applies them to ``json.loads`` output.

``json_equal`` and ``json_unique`` mirror ``jsonschema._utils.equal``/``uniq``: ``True`` is not ``1``,
``1`` equals ``1.0``, containers compare recursively. ``parse_number`` turns a JSON number literal into what
``json.loads`` returns (``int`` without fraction or exponent, otherwise ``float``, so ``1e400`` is ``inf``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["describe", "json_equal", "json_kind", "json_unique", "parse_number"]


def parse_number(text: str) -> int | float:
    """The value ``json.loads`` gives for the number literal ``text`` (already known to be valid)."""
    if "." in text or "e" in text or "E" in text:
        return float(text)
    return int(text)


def json_kind(value: Any) -> str:
    """The JSON kind of a Python value: object, array, string, number, boolean or null."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, Sequence):
        return "array"
    return "unknown"


def json_equal(one: Any, two: Any) -> bool:
    """JSON Schema equality (``jsonschema._utils.equal``): booleans never equal numbers."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(json_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(k in two and json_equal(v, two[k]) for k, v in one.items())
    if isinstance(one, bool) or isinstance(two, bool):
        return type(one) is type(two) and one == two
    return bool(one == two)


def _hashable(value: Any) -> Any:
    """A hashable key such that equal keys <=> ``json_equal`` values."""
    if value is True or value is False:
        return ("b", value)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, (int, float)):
        return ("n", value)
    if value is None:
        return ("z",)
    if isinstance(value, Mapping):
        return ("o", frozenset((k, _hashable(v)) for k, v in value.items()))
    return ("a", tuple(_hashable(v) for v in value))


def json_unique(items: Sequence[Any]) -> int | None:
    """Index of the first item equal to an earlier one (``uniqueItems``), or ``None`` when all differ.

    Linear expected time through hashing; ``nan`` never occurs in parsed JSON.
    """
    seen: set[Any] = set()
    for index, item in enumerate(items):
        key = _hashable(item)
        if key in seen:
            return index
        seen.add(key)
    return None


def describe(value: Any, limit: int = 60) -> str:
    """A short repr for messages (JSON-ish, truncated)."""
    if value is True:
        text = "true"
    elif value is False:
        text = "false"
    elif value is None:
        text = "null"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
