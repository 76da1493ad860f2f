"""Reference oracles for the stream target: strict JSON, jsonschema's verdict, viable prefixes, completions.

Theory of operation
-------------------
The stream validator is checked against three independent truths. ``strict_loads`` is ``json.loads`` made
strict (no NaN/Infinity, no duplicate keys). ``reference_valid`` is the ``jsonschema`` library's verdict with
format assertion, or None when the reference cannot decide (a schema jsonschema refuses, a regex Python's
``re`` cannot compile). ``scan_prefix`` is a pushdown recognizer of
RFC 8259 prefixes written here from the grammar: it returns the index of the first character after which no
completion can be JSON, and the parse state, from which ``completions`` builds a few closing suffixes. A
suffix that makes a jsonschema-valid document proves a prefix viable, so a rejection at or before it was too
early; the converse is not claimed (the completions are a heuristic, sound but incomplete).

Cost: ``scan_prefix`` is O(n) in the text; ``completions`` returns O(len(FILL_VALUES)) documents, each
the prefix plus a suffix of length O(depth).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "FILL_VALUES",
    "PrefixState",
    "completions",
    "formats_used",
    "is_complete",
    "max_depth",
    "reference_valid",
    "scan_prefix",
    "strict_loads",
]

WHITESPACE = " \t\n\r"
FILL_VALUES: tuple[str, ...] = ("null", "0", '""', "true", "{}", "[]", "1", '"a"')
_LITERALS = ("true", "false", "null")
_HEX = set("0123456789abcdefABCDEF")

# Formats jsonschema checks offline here (others it ignores, as does the StreamValidator, which uses
# jsonschema's FormatChecker as its judge of formats).
CHECKED_FORMATS = frozenset({"date", "date-time", "email", "ipv4", "ipv6", "time", "uuid", "regex"})


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_loads(text: str) -> Any:
    """``json.loads`` without NaN/Infinity and without duplicate keys. Raises ValueError."""
    return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)


def formats_used(schema: Any) -> set[str]:
    """Every ``format`` value anywhere in the schema."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            fmt = node.get("format")
            if isinstance(fmt, str):
                found.add(fmt)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


@lru_cache(maxsize=512)
def _validator(schema_text: str, check: bool) -> Any:
    import jsonschema
    from jsonschema.validators import validator_for

    schema = json.loads(schema_text)
    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    if check:
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError:
            return None
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def reference_valid(schema: Any, value: Any, *, check_schema: bool = True) -> bool | None:
    """jsonschema's verdict on ``value``, or None when the reference cannot decide.

    ``check_schema=False`` trusts the schema (checking it against its metaschema costs ~20 ms); the
    generators' schemas are checked by the fuzz suite's own tests instead.
    """
    try:
        validator = _validator(json.dumps(schema, sort_keys=True), check_schema)
    except (ValueError, TypeError, RecursionError):
        return None
    if validator is None:
        return None
    try:
        return bool(validator.is_valid(value))
    except (re.error, RecursionError, ValueError, TypeError, LookupError, AttributeError):
        return None
    except Exception:  # referencing.exceptions.Unresolvable and friends: no verdict
        return None


@dataclass(frozen=True, slots=True)
class PrefixState:
    """Where a viable prefix stops: the open containers and what the scanner expects next."""

    stack: tuple[str, ...]  # "{" or "[" per open container, outermost first
    mode: str  # value | value_or_end | key | key_or_end | colon | after | done | string | number | literal
    in_key: bool = False
    pending: str = ""  # what closes the token in progress (rest of a literal, escape, digits)


def scan_prefix(text: str, *, duplicates: bool = True) -> tuple[int | None, PrefixState]:
    """Return (index of the first character that makes ``text`` no JSON prefix, or None; final state).

    A duplicate key (by decoded value) is not viable either: its closing quote is the bad character, as
    strict JSON here (``strict_loads``) refuses duplicates. ``duplicates=False`` allows them (RFC 8259 syntax
    only).
    """
    stack: list[str] = []
    keys: list[set[str]] = []  # the keys seen in each open object (a duplicate key is not viable)
    key_start = 0
    mode = "value"
    in_key = False
    literal = ""
    num = ""  # number sub-state: sign, zero, int, dot, frac, exp, expsign, expdigits
    esc = 0  # 0 none, -1 after backslash, n>0 hex digits still needed
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if mode == "string":
            if esc == -1:
                if c in '"\\/bfnrt':
                    esc = 0
                elif c == "u":
                    esc = 4
                else:
                    return i, PrefixState(tuple(stack), mode, in_key)
            elif esc > 0:
                if c not in _HEX:
                    return i, PrefixState(tuple(stack), mode, in_key)
                esc -= 1
            elif c == "\\":
                esc = -1
            elif c == '"':
                mode = "colon" if in_key else "after"
                if in_key and duplicates:
                    key = json.loads(text[key_start : i + 1])
                    if key in keys[-1]:
                        return i, PrefixState(tuple(stack), "string", in_key)
                    keys[-1].add(key)
            elif ord(c) < 0x20:
                return i, PrefixState(tuple(stack), mode, in_key)
            i += 1
            continue
        if mode == "literal":
            if c != literal[0]:
                return i, PrefixState(tuple(stack), mode, pending=literal)
            literal = literal[1:]
            if not literal:
                mode = "after"
            i += 1
            continue
        if mode == "number":
            nxt = _number_step(num, c)
            if nxt is not None:
                num = nxt
                i += 1
                continue
            if num in ("sign", "dot", "exp", "expsign"):
                return i, PrefixState(tuple(stack), mode, pending=num)
            mode = "after"  # the number ended; this character is read in the 'after' mode
            continue
        if c in WHITESPACE:
            i += 1
            continue
        if mode in ("value", "value_or_end"):
            if mode == "value_or_end" and c == "]":
                stack.pop()
                mode = "after"
            elif c == "{":
                stack.append("{")
                keys.append(set())
                mode = "key_or_end"
            elif c == "[":
                stack.append("[")
                mode = "value_or_end"
            elif c == '"':
                mode, in_key, esc = "string", False, 0
            elif c == "-":
                mode, num = "number", "sign"
            elif c.isdigit() and c.isascii():
                mode, num = "number", "zero" if c == "0" else "int"
            elif c in "tfn":
                literal = next(word for word in _LITERALS if word[0] == c)[1:]
                mode = "literal"
            else:
                return i, PrefixState(tuple(stack), mode)
        elif mode in ("key", "key_or_end"):
            if c == '"':
                mode, in_key, esc, key_start = "string", True, 0, i
            elif c == "}" and mode == "key_or_end":
                stack.pop()
                keys.pop()
                mode = "after"
            else:
                return i, PrefixState(tuple(stack), mode)
        elif mode == "colon":
            if c != ":":
                return i, PrefixState(tuple(stack), mode)
            mode = "value"
        elif mode == "after":
            if not stack:
                return i, PrefixState((), "done")
            top = stack[-1]
            if c == ",":
                mode = "key" if top == "{" else "value"
            elif (c == "}" and top == "{") or (c == "]" and top == "["):
                if stack.pop() == "{":
                    keys.pop()
                mode = "after"
            else:
                return i, PrefixState(tuple(stack), mode)
        i += 1
    if mode == "after" and not stack:
        mode = "done"
    pending = literal if mode == "literal" else num if mode == "number" else ""
    if mode == "string":
        pending = "\\" if esc == -1 else "u" * esc
    return None, PrefixState(tuple(stack), mode, in_key, pending)


def is_complete(text: str, *, duplicates: bool = True) -> bool:
    """Whether ``text`` is one whole JSON document (by the scanner; agrees with ``strict_loads``)."""
    bad, state = scan_prefix(text, duplicates=duplicates)
    if bad is not None:
        return False
    if state.mode == "number":
        return not state.stack and state.pending in ("zero", "int", "frac", "expdigits")
    return state.mode == "done"


def _number_step(state: str, c: str) -> str | None:
    digit = c.isascii() and c.isdigit()
    if state == "sign":
        return ("zero" if c == "0" else "int") if digit else None
    if state == "zero":
        return "dot" if c == "." else "exp" if c in "eE" else None
    if state == "int":
        return "int" if digit else "dot" if c == "." else "exp" if c in "eE" else None
    if state in ("dot", "frac"):
        return "frac" if digit else ("exp" if state == "frac" and c in "eE" else None)
    if state == "exp":
        return "expdigits" if digit else "expsign" if c in "+-" else None
    if state in ("expsign", "expdigits"):
        return "expdigits" if digit else None
    return None


def max_depth(text: str) -> int:
    """The deepest nesting of brackets outside strings (for skipping documents past the validator's caps)."""
    depth = deepest = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


_NUMBER_TAILS = {
    "sign": ("0", "1"),
    "zero": ("", ".5", "e-1", "e1"),
    "int": ("", "0", ".5", "e-1", "e-9", "e1"),
    "dot": ("0", "5"),
    "frac": ("", "0", "5", "e-1", "e1"),
    "exp": ("1", "-1"),
    "expsign": ("1", "0"),
    "expdigits": ("", "0"),
}


def completions(prefix: str, *, fills: tuple[str, ...] = FILL_VALUES) -> list[str]:
    """Complete documents that start with ``prefix`` (none when the prefix is not viable).

    Each finishes the token in progress (numbers also with exponents: ``10e-1`` is the integer 1), then closes
    every open container, putting one fill value wherever a value is needed.
    """
    bad, state = scan_prefix(prefix)
    if bad is not None:
        return []
    heads = [_finish_token(state)]
    if state.mode == "number":
        heads = list(_NUMBER_TAILS.get(state.pending, ("",)))
    out: list[str] = []
    for head in heads:
        for fill in fills:
            for fill_open in (False, True):
                suffix = head
                mode = _mode_after_token(state)
                if mode == "value_or_end":
                    mode = "value" if fill_open else "after"
                elif mode == "key_or_end":
                    mode = "key" if fill_open else "after"
                for container in reversed(state.stack):
                    if mode == "value":
                        suffix += fill
                    elif mode == "key":
                        suffix += f'"a":{fill}'
                    elif mode == "colon":
                        suffix += f":{fill}"
                    suffix += "}" if container == "{" else "]"
                    mode = "after"
                if not state.stack and mode == "value":
                    suffix += fill
                out.append(prefix + suffix)
    return list(dict.fromkeys(out))


def _finish_token(state: PrefixState) -> str:
    if state.mode == "string":
        head = {"\\": "n", "uuuu": "0041", "uuu": "041", "uu": "41", "u": "1"}.get(state.pending, "")
        return head + '"'
    if state.mode == "literal":
        return state.pending
    return ""


def _mode_after_token(state: PrefixState) -> str:
    if state.mode == "string":
        return "colon" if state.in_key else "after"
    if state.mode in ("literal", "number", "done"):
        return "after"
    return state.mode
