"""From a call's JSON text (or Python call syntax) to ``ToolCall`` proposals, and back.

``ToolCall.arguments`` is the text the model wrote, never a re-serialisation: when ``arguments`` (or
``parameters``) is a JSON object inside the call, it is the raw span of that object, character for character
(number spellings such as ``1e999``, ``1.0``, ``-0`` or 23-digit integers, escapes, key order and
whitespace inside it all survive); when it is a JSON string holding one object, its decoded content (OpenAI's
convention); any other value (a string that is not an object, a number, an array) keeps its JSON text, so
``arguments`` is always JSON and the validator, not ``json.loads``, says what is wrong with it. ``render``
does the inverse: an arguments text that is one JSON value is written verbatim.

To find those spans, ``calls_from_json`` walks the (already syntax-checked) text of a call down to the
arguments' level (an array of calls, a call, a call's ``function`` object) and decodes every other value in
one go with the C decoder, numbers kept as their text (``_Number``), so nothing goes through ``float`` or
``int`` (no overflow to ``inf``, no int-digits limit). Cost: O(n) for n characters, each decoded once.
"""

from __future__ import annotations

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
    "is_json_value",
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
    """The ``ToolCall.arguments`` text of a call object.

    A JSON string holding one JSON object is OpenAI's convention: its decoded content. Any other value keeps
    its raw text, a JSON string that holds something else included (``"hello"``, ``"[oops"``, an object
    with tail text): that is valid JSON, just not an object, so the validator rejects it with a message the
    model can act on, and ``parsed_arguments()`` never raises. ``null`` or no key: ``{}``.
    """
    key = "arguments" if "arguments" in body else "parameters"
    value = body.get(key)
    if value is None:
        return "{}"
    if isinstance(value, str) and is_json_object(value):
        return value
    start, end = spans[(*path, key)]
    return raw[start:end]


def _one_call(
    raw: str, value: Any, path: Path, spans: dict[Path, tuple[int, int]], *, strict: bool, keyed: bool
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
        if strict and not set(value) <= _CALL_KEYS:
            return None
        name, body, body_path = value["name"], value, path
    else:
        return None
    if keyed and not {"arguments", "parameters"} & set(body):
        return None
    if not name.strip():
        return None
    call_id = value.get("id")
    return ToolCall(
        name=name,
        arguments=_arguments(raw, body, body_path, spans),
        id=call_id if isinstance(call_id, str) else None,
    )


def calls_from_json(raw: str, *, strict: bool, keyed: bool = True) -> list[ToolCall] | None:
    """The calls a JSON text spells (one call or an array of calls), or ``None`` when it is not a call.

    ``raw`` is one JSON object or array, already checked by ``JsonScanner``. ``strict`` (JSON found in prose
    or after a call) demands the call keys and nothing else, so that an ordinary object with a ``name`` key
    is not taken for a call. ``keyed`` demands an ``arguments`` (or ``parameters``) key: JSON without a call
    marker around it is a call only when it says so, as the peer parsers require (``{"name": "Alice"}`` is an
    answer); inside ``<tool_call>``, ``[TOOL_CALLS]`` or ``<|python_tag|>`` the marker says it, and a missing
    key means no arguments.
    """
    spans: dict[Path, tuple[int, int]] = {}
    try:
        value, _ = _decode(raw, _skip(raw, 0), (), spans)
    except (ValueError, IndexError, RecursionError):  # pragma: no cover - the scanner checked the syntax
        return None
    if isinstance(value, list):
        if not value:
            return None
        calls = [_one_call(raw, v, (k,), spans, strict=strict, keyed=keyed) for k, v in enumerate(value)]
        return None if any(c is None for c in calls) else [c for c in calls if c is not None]
    call = _one_call(raw, value, (), spans, strict=strict, keyed=keyed)
    return None if call is None else [call]


def is_json_object(arguments: str) -> bool:
    """Is this text one JSON object (strict JSON, whitespace around it allowed)?"""
    text = arguments.strip()
    if not text.startswith("{"):
        return False
    status, end = JsonScanner(max_depth=_RENDER_MAX_DEPTH).scan(text)
    return status == "done" and end == len(text)


def is_json_value(text: str) -> bool:
    """Is this text one strict JSON value of any kind (whitespace around it allowed)? No NaN, no Infinity."""
    text = text.strip()
    if not text:
        return False
    if text[0] in "{[":
        status, end = JsonScanner(max_depth=_RENDER_MAX_DEPTH).scan(text)
        return status == "done" and end == len(text)
    if text[0] == '"':
        try:
            closed: int = scanstring(text, 1, True)[1]
        except ValueError:
            return False
        return closed == len(text)
    return text in ("true", "false", "null") or _JSON_NUMBER.fullmatch(text) is not None


def embedded_arguments(arguments: str) -> str:
    """The JSON text ``render`` writes for ``arguments``: the text itself, verbatim, when it is one JSON value
    (an object, or the JSON text of something else: ``"hello"``, ``[1e999]``); ``{}`` for blank text;
    otherwise the text as a JSON string.

    Inverse of what the parser reads: parsing the result gives back ``arguments.strip()`` for a JSON value,
    except a JSON string that holds one object (read as that object, OpenAI's convention), and the JSON
    string of the text for text that is not JSON (``json.loads`` of it is the text).
    """
    if not arguments.strip():
        return "{}"
    return arguments if is_json_value(arguments) else json.dumps(arguments, ensure_ascii=False)


def call_like_prefix(text: str) -> bool:
    """Does this (unterminated) JSON text open like a call?"""
    return _CALL_LIKE.match(text) is not None
