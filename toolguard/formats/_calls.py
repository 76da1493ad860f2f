"""From a call's JSON text (or Python call syntax) to ``ToolCall`` proposals, and back.

``ToolCall.arguments`` is the text the model wrote, never a re-serialisation: when ``arguments`` (or
``parameters``) is a JSON object inside the call, it is the raw span of that object, character for character
(number spellings such as ``1e999``, ``1.0``, ``-0`` or 23-digit integers, escapes, key order and
whitespace inside it all survive); when it is a JSON string, its decoded content (OpenAI's convention).
``render`` does the inverse: an arguments text that is one JSON object is written verbatim.

To find those spans, ``calls_from_json`` walks the (already syntax-checked) text of a call down to the
arguments' level (an array of calls, a call, a call's ``function`` object) and decodes every other value in
one go with the C decoder, numbers kept as their text (``_Number``), so nothing goes through ``float`` or
``int`` (no overflow to ``inf``, no int-digits limit). Cost: O(n) for n characters, each decoded once.
"""

from __future__ import annotations

import ast
import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, missing from typeshed
from typing import Any

from .._schema._limits import DEFAULT_LIMITS
from .._tools import ToolCall
from ._json import JsonScanner

__all__ = [
    "call_like_prefix",
    "calls_from_json",
    "embedded_arguments",
    "is_json_object",
    "pythonic_calls",
]

_CALL_KEYS = frozenset({"name", "arguments", "parameters", "id", "type"})
# The opening of a JSON value that is on its way to being a call (used for unterminated text).
_CALL_LIKE = re.compile(r'\s*(?:\[\s*)?\{\s*(?:"(?:name|function|type|id|tool_name)"|$)')
_SKIP_WS = re.compile(r"[ \t\n\r]*")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# render() writes arguments verbatim only when they are one JSON object the validator could accept (its depth
# cap); parse() reads them back inside the call's own wrapping (see _json.CALL_WRAPPING).
_RENDER_MAX_DEPTH = DEFAULT_LIMITS.max_depth

Path = tuple[str | int, ...]


class _Number:
    """A JSON number kept as the text the model wrote (no ``float``: ``1e999`` stays ``1e999``)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_DECODER = json.JSONDecoder(parse_int=_Number, parse_float=_Number)


def _skip(raw: str, i: int) -> int:
    m = _SKIP_WS.match(raw, i)
    return m.end() if m else i


def _may_hold_a_call(path: Path, c: str) -> bool:
    """Is the value opening with ``c`` at ``path`` a call, an array of calls or a call's ``function``
    object? Only those are walked (their members' spans recorded); anything else is decoded in one go."""
    if not path:
        return c in "{["
    if c != "{" or len(path) > 2:
        return False
    if len(path) == 1:
        return isinstance(path[0], int) or path[0] == "function"
    return isinstance(path[0], int) and path[1] == "function"


def _decode(raw: str, i: int, path: Path, spans: dict[Path, tuple[int, int]]) -> tuple[Any, int]:
    """Decode the value at ``raw[i]`` (no whitespace before it), recording in ``spans`` the span of every
    member of the calls it holds. Returns the value and the index just past it."""
    start = i
    c = raw[i]
    value: Any
    if not _may_hold_a_call(path, c):
        value, end = _DECODER.raw_decode(raw, i)
    elif c == "{":
        value = {}
        i = _skip(raw, i + 1)
        while raw[i] != "}":
            key, i = scanstring(raw, i + 1)
            i = _skip(raw, _skip(raw, i) + 1)  # past ':'
            value[key], i = _decode(raw, i, (*path, key), spans)
            i = _skip(raw, i)
            if raw[i] == ",":
                i = _skip(raw, i + 1)
        end = i + 1
    else:
        value = []
        i = _skip(raw, i + 1)
        while raw[i] != "]":
            item, i = _decode(raw, i, (*path, len(value)), spans)
            value.append(item)
            i = _skip(raw, i)
            if raw[i] == ",":
                i = _skip(raw, i + 1)
        end = i + 1
    spans[path] = (start, end)
    return value, end


def _arguments(raw: str, body: dict[str, Any], path: Path, spans: dict[Path, tuple[int, int]]) -> str:
    """The ``ToolCall.arguments`` text of a call object: a string's content, any other value's raw text."""
    key = "arguments" if "arguments" in body else "parameters"
    value = body.get(key)
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    start, end = spans[(*path, key)]
    return raw[start:end]


def _one_call(
    raw: str, value: Any, path: Path, spans: dict[Path, tuple[int, int]], *, strict: bool
) -> ToolCall | None:
    if not isinstance(value, dict):
        return None
    fn = value.get("function")
    if isinstance(fn, dict) and isinstance(fn.get("name"), str):
        # {"type": "function", "function": {...}, "id": ...} (an OpenAI tool_calls entry)
        if strict and not set(value) <= {"function", "id", "type"}:
            return None
        name, body, body_path = fn["name"], fn, (*path, "function")
    elif isinstance(value.get("name"), str):
        if strict and (not set(value) <= _CALL_KEYS or not ({"arguments", "parameters"} & set(value))):
            return None
        name, body, body_path = value["name"], value, path
    else:
        return None
    if not name.strip():
        return None
    call_id = value.get("id")
    return ToolCall(
        name=name,
        arguments=_arguments(raw, body, body_path, spans),
        id=call_id if isinstance(call_id, str) else None,
    )


def calls_from_json(raw: str, *, strict: bool) -> list[ToolCall] | None:
    """The calls a JSON text spells (one call or an array of calls), or ``None`` when it is not a call.

    ``raw`` is one JSON object or array, already checked by ``JsonScanner``. ``strict`` (used for JSON found
    in prose or after a call) demands the call keys and nothing else, so that an ordinary object with a
    ``name`` key is not taken for a call.
    """
    spans: dict[Path, tuple[int, int]] = {}
    try:
        value, _ = _decode(raw, _skip(raw, 0), (), spans)
    except (ValueError, IndexError, RecursionError):  # pragma: no cover - the scanner checked the syntax
        return None
    if isinstance(value, list):
        if not value:
            return None
        calls = [_one_call(raw, v, (k,), spans, strict=strict) for k, v in enumerate(value)]
        return None if any(c is None for c in calls) else [c for c in calls if c is not None]
    call = _one_call(raw, value, (), spans, strict=strict)
    return None if call is None else [call]


def is_json_object(arguments: str) -> bool:
    """Is this text one JSON object (strict JSON, whitespace around it allowed)?"""
    text = arguments.strip()
    if not text.startswith("{"):
        return False
    status, end = JsonScanner(max_depth=_RENDER_MAX_DEPTH).scan(text)
    return status == "done" and end == len(text)


def embedded_arguments(arguments: str) -> str:
    """The JSON text ``render`` writes for ``arguments``: the text itself, verbatim, when it is one JSON
    object; ``{}`` for blank text; otherwise the text as a JSON string.

    Inverse of what the parser reads: parsing the result gives back ``arguments.strip()`` for an object (the
    object's span) and ``arguments`` itself for text that is not one.
    """
    if not arguments.strip():
        return "{}"
    return arguments if is_json_object(arguments) else json.dumps(arguments, ensure_ascii=False)


def call_like_prefix(text: str) -> bool:
    """Does this (unterminated) JSON text open like a call?"""
    return _CALL_LIKE.match(text) is not None


def _callee(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        # Llama's built-in tools: brave_search.call(query=...) names the tool "brave_search".
        base = _callee(node.value)
        if base is None:
            return None
        return base if node.attr == "call" else f"{base}.{node.attr}"
    return None


def _python_json(node: ast.expr, source: str) -> str | None:
    """The JSON text of a Python literal, numbers as written when JSON can spell them; ``None`` when the
    literal is not JSON (a set, bytes, a complex number, a non-string key, an infinite float)."""
    if isinstance(node, ast.Constant):
        v = node.value
        if v is None or isinstance(v, bool):
            return {None: "null", True: "true", False: "false"}[v]
        if isinstance(v, str):
            return json.dumps(v, ensure_ascii=False)
        if isinstance(v, (int, float)):
            written = ast.get_source_segment(source, node) or ""
            if _JSON_NUMBER.fullmatch(written):
                return written
            try:
                return json.dumps(v, allow_nan=False)
            except ValueError:  # an infinite float written in a non-JSON spelling (1_0e999): no JSON
                return None
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = node.operand
        if not (isinstance(inner, ast.Constant) and type(inner.value) in (int, float)):
            return None
        text = _python_json(inner, source)
        if text is None or isinstance(node.op, ast.UAdd):
            return text
        return "-" + text  # the operand is a non-negative constant
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_python_json(e, source) for e in node.elts]
        return None if any(t is None for t in items) else "[" + ", ".join(str(t) for t in items) + "]"
    if isinstance(node, ast.Dict):
        parts = []
        for key, item in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            text = _python_json(item, source)
            if text is None:
                return None
            parts.append(f"{json.dumps(key.value, ensure_ascii=False)}: {text}")
        return "{" + ", ".join(parts) + "}"
    return None


def pythonic_calls(source: str) -> list[ToolCall] | None:
    """Calls written as Python (``f(a=1)``, ``[f(a=1), g(b="x")]``, ``brave_search.call(query="q")``).

    Only keyword arguments with literal JSON-able values are accepted (numbers keep their spelling when JSON
    allows it); anything else returns ``None``. Raises ``SyntaxError`` when the text is not a Python
    expression (the caller tells truncated from malformed).
    """
    source = source.strip()
    tree = ast.parse(source, mode="eval")
    nodes = tree.body.elts if isinstance(tree.body, (ast.List, ast.Tuple)) else [tree.body]
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call) or node.args:
            return None
        name = _callee(node.func)
        if name is None:
            return None
        parts = []
        for kw in node.keywords:
            text = None if kw.arg is None else _python_json(kw.value, source)
            if text is None:
                return None
            parts.append(f"{json.dumps(kw.arg, ensure_ascii=False)}: {text}")
        calls.append(ToolCall(name=name, arguments="{" + ", ".join(parts) + "}"))
    return calls or None
