"""Normalise tool schemas once, at the edge.

Tool schemas in the wild use language type names (BFCL's ``dict``, ``float``, ``tuple``, ``any``, and its Java
and JavaScript ``String``, ``HashMap``, ``ArrayList``...) and several JSON Schema drafts. ``normalize_schema``
maps the type names to JSON Schema and returns a new dict; it never mutates its input. Draft detection reads
``$schema`` only (no network, no guessing from keywords).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from .._exceptions import SchemaError

__all__ = ["Draft", "detect_draft", "normalize_schema"]

Draft = Literal["draft4", "draft6", "draft7", "draft2019-09", "draft2020-12"]

_DRAFT_URIS: dict[str, Draft] = {
    "json-schema.org/draft-04/schema": "draft4",
    "json-schema.org/draft-06/schema": "draft6",
    "json-schema.org/draft-07/schema": "draft7",
    "json-schema.org/draft/2019-09/schema": "draft2019-09",
    "json-schema.org/draft/2020-12/schema": "draft2020-12",
}

# Language type names that tool sets in the wild use for JSON Schema types: Python (BFCL's own ``dict``,
# ``float``, ``tuple``, ``any``), Java and JavaScript (BFCL's ``String``, ``HashMap``, ``ArrayList``,
# ``Boolean``, ``long``, ``char``...). Looked up case-insensitively, so ``String`` and ``Array`` are the JSON
# types they spell. ``None`` means no type constraint: ``any``, and a blank name (one BFCL doc declares
# ``"type": ""``), which says nothing about the value. Every type name in BFCL's published function docs is
# here (tests/data/bfcl); anything else is refused, naming the tool.
_TYPE_NAMES: dict[str, str | None] = {
    # object
    "dict": "object",
    "object": "object",
    "map": "object",
    "hashmap": "object",
    "hashtable": "object",
    # number / integer
    "float": "number",
    "double": "number",
    "number": "number",
    "int": "integer",
    "integer": "integer",
    "long": "integer",
    "short": "integer",
    "byte": "integer",
    "bigint": "integer",
    # string / boolean / null
    "str": "string",
    "string": "string",
    "char": "string",
    "bool": "boolean",
    "boolean": "boolean",
    "none": "null",
    "null": "null",
    # array
    "list": "array",
    "array": "array",
    "tuple": "array",
    "arraylist": "array",
    "set": "array",
    "queue": "array",
    "stack": "array",
    # no constraint
    "any": None,
    "": None,
}
_JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})

# Keywords whose value is a schema / a map of schemas / a list of schemas.
_SUBSCHEMA = (
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")


def detect_draft(schema: Any, default: Draft = "draft2020-12") -> Draft:
    """The draft named by ``$schema`` (``default`` when absent or unknown)."""
    if isinstance(schema, Mapping):
        uri = schema.get("$schema")
        if isinstance(uri, str):
            for key, draft in _DRAFT_URIS.items():
                if key in uri:
                    return draft
    return default


def normalize_schema(schema: Any, *, tool: str | None = None) -> Any:
    """Return a copy of ``schema`` with BFCL-style type names mapped to JSON Schema.

    Raises ``SchemaError`` (naming ``tool``) for a schema that is not an object or boolean, or for an unknown
    type name.
    """
    if not isinstance(schema, (Mapping, bool)):
        raise SchemaError(f"a schema must be an object or a boolean, not {type(schema).__name__}", tool=tool)
    return _normalize(schema, "", tool)


def _map_type(value: Any, path: str, tool: str | None) -> Any:
    if isinstance(value, str):
        if value in _JSON_TYPES:
            return value
        lowered = value.strip().lower()
        if lowered in _TYPE_NAMES:
            return _TYPE_NAMES[lowered]
        raise SchemaError(
            f"unknown type name {value!r}: use a JSON Schema type (object, array, string, number, integer, "
            "boolean, null)",
            path=path,
            tool=tool,
        )
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise SchemaError(
                f"'type' must be a string or a list of strings, not {value!r}", path=path, tool=tool
            )
        mapped = [_map_type(v, path, tool) for v in value]
        if any(m is None for m in mapped):
            return None
        return list(dict.fromkeys(mapped))
    raise SchemaError(f"'type' must be a string or a list of strings, not {value!r}", path=path, tool=tool)


def _normalize(schema: Any, path: str, tool: str | None) -> Any:
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        sub = f"{path}/{key}"
        if key == "type":
            mapped = _map_type(value, sub, tool)
            if mapped is not None:
                out[key] = mapped
        elif key in _SUBSCHEMA and isinstance(value, Mapping):
            out[key] = _normalize(value, sub, tool)
        elif key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {k: _normalize(v, f"{sub}/{k}", tool) for k, v in value.items()}
        elif (key in _SUBSCHEMA_LISTS and isinstance(value, list)) or (
            key == "items" and isinstance(value, list)
        ):
            out[key] = [_normalize(v, f"{sub}/{i}", tool) for i, v in enumerate(value)]
        else:
            out[key] = value
    return out
