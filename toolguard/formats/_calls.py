"""From decoded JSON (or Python call syntax) to ``ToolCall`` proposals, and back."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from .._tools import ToolCall

__all__ = ["arguments_text", "call_like_prefix", "calls_from_value", "embed_arguments", "pythonic_calls"]

_CALL_KEYS = frozenset({"name", "arguments", "parameters", "id", "type"})
# The opening of a JSON value that is on its way to being a call (used for unterminated text).
_CALL_LIKE = re.compile(r'\s*(?:\[\s*)?\{\s*(?:"(?:name|function|type|id|tool_name)"|$)')


def arguments_text(value: Any) -> str:
    """The ``ToolCall.arguments`` text for a decoded ``arguments`` value.

    A string is taken as the JSON text the model meant (OpenAI's convention); an object (or anything else) is
    serialised. A missing value means no arguments.
    """
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def embed_arguments(arguments: str) -> Any:
    """The value to write for ``arguments`` when rendering: the object itself, or the text as a JSON string.

    Inverse of ``arguments_text``: ``arguments_text(embed_arguments(a))`` is JSON-equal to ``a``, and equal to
    it character for character when ``a`` is not a JSON object.
    """
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return arguments
    return value if isinstance(value, dict) else arguments


def _one_call(value: Any, *, strict: bool) -> ToolCall | None:
    if not isinstance(value, dict):
        return None
    fn = value.get("function")
    if isinstance(fn, dict) and isinstance(fn.get("name"), str):
        # {"type": "function", "function": {...}, "id": ...} (an OpenAI tool_calls entry)
        if strict and not set(value) <= {"function", "id", "type"}:
            return None
        name, body = fn["name"], fn
    elif isinstance(value.get("name"), str):
        if strict and (not set(value) <= _CALL_KEYS or not ({"arguments", "parameters"} & set(value))):
            return None
        name, body = value["name"], value
    else:
        return None
    if not name.strip():
        return None
    args = body.get("arguments", body.get("parameters"))
    call_id = value.get("id")
    return ToolCall(
        name=name, arguments=arguments_text(args), id=call_id if isinstance(call_id, str) else None
    )


def calls_from_value(value: Any, *, strict: bool) -> list[ToolCall] | None:
    """The calls a decoded JSON value spells, or ``None`` when it is not a call (or an array of calls).

    ``strict`` (used for JSON found in prose or after a call) demands the call keys and nothing else, so that
    an ordinary object with a ``name`` key is not taken for a call.
    """
    if isinstance(value, list):
        if not value:
            return None
        calls = [_one_call(v, strict=strict) for v in value]
        return None if any(c is None for c in calls) else [c for c in calls if c is not None]
    call = _one_call(value, strict=strict)
    return None if call is None else [call]


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


def pythonic_calls(source: str) -> list[ToolCall] | None:
    """Calls written as Python (``f(a=1)``, ``[f(a=1), g(b="x")]``, ``brave_search.call(query="q")``).

    Only keyword arguments with literal values are accepted; anything else returns ``None``. Raises
    ``SyntaxError`` when the text is not a Python expression (the caller tells truncated from malformed).
    """
    tree = ast.parse(source.strip(), mode="eval")
    nodes = tree.body.elts if isinstance(tree.body, (ast.List, ast.Tuple)) else [tree.body]
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call) or node.args:
            return None
        name = _callee(node.func)
        if name is None:
            return None
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                return None
            try:
                kwargs[kw.arg] = ast.literal_eval(kw.value)
            except ValueError:
                return None
        try:
            calls.append(ToolCall(name=name, arguments=json.dumps(kwargs, ensure_ascii=False)))
        except (TypeError, ValueError):  # sets, bytes, complex: not JSON
            return None
    return calls or None
