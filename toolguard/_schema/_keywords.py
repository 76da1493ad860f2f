"""Which keywords each draft defines, and how toolguard treats them.

The keyword scan runs once per subschema at compile time. Three outcomes:

- an *assertion or applicator* of the schema's draft: compiled and enforced;
- an *annotation* (title, description, default, examples, $comment, readOnly, ...) or a keyword that belongs
  to another draft: ignored, exactly as ``jsonschema`` ignores it;
- a keyword of the draft that toolguard does not enforce: ``UnsupportedKeyword``, never silently dropped.
"""

from __future__ import annotations

from .._exceptions import UnsupportedKeyword

__all__ = [
    "APPLICATOR_LISTS",
    "APPLICATOR_MAPS",
    "APPLICATOR_SINGLE",
    "DRAFT_ORDER",
    "check_keywords",
]

DRAFT_ORDER = {"draft4": 4, "draft6": 6, "draft7": 7, "draft2019-09": 8, "draft2020-12": 9}

# Keywords whose value holds subschemas (walked for $id/$anchor indexing, and compiled).
APPLICATOR_SINGLE = (
    "additionalProperties",
    "additionalItems",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
APPLICATOR_MAPS = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
)
APPLICATOR_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")

_DRAFT4 = frozenset(
    {
        "$ref",
        "additionalItems",
        "additionalProperties",
        "allOf",
        "anyOf",
        "dependencies",
        "enum",
        "format",
        "items",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "multipleOf",
        "not",
        "oneOf",
        "pattern",
        "patternProperties",
        "properties",
        "required",
        "type",
        "uniqueItems",
        "exclusiveMaximum",
        "exclusiveMinimum",
    }
)
_DRAFT6 = _DRAFT4 | {"const", "contains", "propertyNames"}
_DRAFT7 = _DRAFT6 | {"if", "then", "else"}
_DRAFT2019 = (_DRAFT7 - {"dependencies"}) | {
    "dependentRequired",
    "dependentSchemas",
    "minContains",
    "maxContains",
    "unevaluatedItems",
    "unevaluatedProperties",
    "$recursiveRef",
}
_DRAFT2020 = (_DRAFT2019 - {"additionalItems", "$recursiveRef"}) | {"prefixItems", "$dynamicRef"}

ENFORCED = {
    "draft4": _DRAFT4,
    "draft6": _DRAFT6,
    "draft7": _DRAFT7,
    "draft2019-09": _DRAFT2019,
    "draft2020-12": _DRAFT2020,
}

# Keywords of a draft that toolguard does not enforce (reported, never ignored).
_UNSUPPORTED = {
    "draft2019-09": frozenset({"$recursiveRef"}),
}


def check_keywords(schema: dict[str, object], draft: str, path: str) -> None:
    """Raise ``UnsupportedKeyword`` for a keyword of ``draft`` that toolguard cannot enforce."""
    unsupported = _UNSUPPORTED.get(draft)
    if unsupported:
        for key in schema:
            if key in unsupported:
                raise UnsupportedKeyword(key, path=path)
