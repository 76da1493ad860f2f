"""Schema compilation: the cache, local $ref resolution, draft detection, keyword scan."""

from __future__ import annotations

from typing import Any

import pytest

from toolguard import RemoteRefRefused, UnsupportedKeyword, validate_json
from toolguard._schema import CompiledSchema, compile_schema, detect_draft


def ok(schema: Any, text: str) -> bool:
    return validate_json(schema, text).state == "complete"


def test_cache_is_keyed_by_canonical_json() -> None:
    a = compile_schema({"type": "object", "properties": {"x": {"type": "integer"}}})
    b = compile_schema({"properties": {"x": {"type": "integer"}}, "type": "object"})
    assert isinstance(a, CompiledSchema)
    assert a is b
    assert compile_schema(a) is a
    assert compile_schema({"type": "string"}) is not a


def test_cache_is_not_fooled_by_mutation() -> None:
    schema: dict[str, Any] = {"type": "integer"}
    first = compile_schema(schema)
    schema["type"] = "string"
    assert compile_schema(schema) is not first
    assert ok(schema, '"x"')


@pytest.mark.parametrize(
    ("uri", "draft"),
    [
        ("http://json-schema.org/draft-04/schema#", "draft4"),
        ("http://json-schema.org/draft-06/schema#", "draft6"),
        ("http://json-schema.org/draft-07/schema#", "draft7"),
        ("https://json-schema.org/draft/2019-09/schema", "draft2019-09"),
        ("https://json-schema.org/draft/2020-12/schema", "draft2020-12"),
    ],
)
def test_draft_detection(uri: str, draft: str) -> None:
    assert detect_draft({"$schema": uri}) == draft
    assert compile_schema({"$schema": uri}).draft == draft


def test_default_draft_is_2020_12() -> None:
    assert compile_schema({}).draft == "draft2020-12"


def test_draft4_boolean_exclusive_bounds() -> None:
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 3, "exclusiveMaximum": True}
    assert ok(schema, "2")
    assert not ok(schema, "3")


def test_draft6_numeric_exclusive_bounds() -> None:
    schema = {"$schema": "http://json-schema.org/draft-06/schema#", "exclusiveMaximum": 3}
    assert not ok(schema, "3")


def test_draft7_dependencies_and_tuple_items() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "dependencies": {"a": ["b"], "c": {"required": ["d"]}},
        "properties": {"t": {"items": [{"type": "integer"}], "additionalItems": False}},
    }
    assert ok(schema, '{"a": 1, "b": 2}')
    assert not ok(schema, '{"a": 1}')
    assert not ok(schema, '{"c": 1}')
    assert ok(schema, '{"c": 1, "d": 2, "t": [1]}')
    verdict = validate_json(schema, '{"t": [1, 2]}')
    assert verdict.error is not None and verdict.error.keyword == "additionalItems"


def test_draft7_ref_overrides_siblings() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"i": {"type": "integer"}},
        "$ref": "#/definitions/i",
        "maximum": 1,
    }
    assert ok(schema, "5")
    assert not ok({**schema, "$schema": "https://json-schema.org/draft/2020-12/schema"}, "5")


def test_2020_12_items_array_refused_with_advice() -> None:
    with pytest.raises(Exception, match="prefixItems"):
        compile_schema({"items": [{"type": "integer"}]})


def test_id_based_and_anchor_refs() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "$defs": {
            "a": {"$id": "item.json", "type": "integer"},
            "b": {"$anchor": "name", "type": "string"},
        },
        "properties": {
            "x": {"$ref": "item.json"},
            "y": {"$ref": "#name"},
            "z": {"$ref": "https://example.com/item.json"},
        },
    }
    assert ok(schema, '{"x": 1, "y": "a", "z": 2}')
    assert not ok(schema, '{"x": "1"}')
    assert not ok(schema, '{"y": 1}')


def test_dynamic_ref_extends_recursively() -> None:
    schema = {
        "$id": "https://example.com/strict-tree",
        "$dynamicAnchor": "node",
        "$ref": "tree",
        "unevaluatedProperties": False,
        "$defs": {
            "tree": {
                "$id": "tree",
                "$dynamicAnchor": "node",
                "type": "object",
                "properties": {
                    "data": True,
                    "children": {"type": "array", "items": {"$dynamicRef": "#node"}},
                },
            }
        },
    }
    assert ok(schema, '{"children": [{"data": 1}]}')
    assert not ok(schema, '{"children": [{"daat": 1}]}')


def test_metaschema_ref_is_local() -> None:
    schema = {"$ref": "https://json-schema.org/draft/2020-12/schema"}
    assert ok(schema, '{"type": "integer"}')
    assert not ok(schema, '{"type": 12}')


def test_remote_ref_refused_with_advice() -> None:
    with pytest.raises(RemoteRefRefused, match="never fetches"):
        compile_schema({"properties": {"a": {"$ref": "https://example.com/s.json#/a"}}})


def test_unsupported_keyword_is_reported() -> None:
    with pytest.raises(UnsupportedKeyword) as info:
        compile_schema(
            {
                "$schema": "https://json-schema.org/draft/2019-09/schema",
                "properties": {"a": {"$recursiveRef": "#"}},
            }
        )
    assert info.value.keyword == "$recursiveRef"
    assert info.value.path == "#/properties/a"


def test_annotations_ignored() -> None:
    schema = {
        "title": "t",
        "description": "d",
        "examples": [1],
        "default": 0,
        "$comment": "c",
        "deprecated": True,
        "readOnly": True,
        "writeOnly": False,
        "contentMediaType": "text/plain",
        "x-vendor": {"a": 1},
    }
    assert compile_schema(schema).root.always is True


def test_unevaluated_properties() -> None:
    schema = {
        "properties": {"a": True},
        "anyOf": [{"properties": {"b": True}}, {"properties": {"c": True}}],
        "unevaluatedProperties": False,
    }
    assert ok(schema, '{"a": 1, "b": 2}')
    assert not ok(schema, '{"a": 1, "d": 2}')
