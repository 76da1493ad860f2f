"""The compiled metaschema (toolguard._schema._metacheck) never accepts what jsonschema's check refuses.

``metaschema_check`` may only say "valid" when ``cls.check_schema`` would; everything else goes to the full
check, so the differential tests below compare the two over the real tool sets, over generated schemas and
over generated schemas with one keyword's value replaced by a random (mostly wrong) value, for every draft.
The speed is measured in benchmarks/grammar.py (section ``corpus``), not here.
"""

from __future__ import annotations

import copy
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import SchemaError as JSONSchemaError
from jsonschema import validators

from toolguard import SchemaError, ToolSet
from toolguard._fuzz._jsongen import gen_schema
from toolguard._schema import normalize_schema
from toolguard._schema._metacheck import metaschema_check
from toolguard._tools import _format_checker

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "local"))
from _local_toolsets import real_toolsets

DRAFTS = [
    validators.Draft4Validator,
    validators.Draft6Validator,
    validators.Draft7Validator,
    validators.Draft201909Validator,
    validators.Draft202012Validator,
]

# values a schema keyword might wrongly hold
ODD_VALUES: list[Any] = [
    True, False, None, 0, -1, 1.5, 2.0, "", "x", "(", "[\\w-\\.]", "^[a-z]+$", "integer", "strin", [], ["a"],
    ["a", "a"], [1, True], ["string", "null"], {}, {"type": "x"}, {"a": 1}, {"a": {"type": "string"}},
    [{"type": "string"}], "#/$defs/x", "http://exa mple.com/ bad", "not a uri#", "urn:x", 10**20,
]
KEYWORDS = [
    "type", "properties", "required", "items", "prefixItems", "additionalProperties", "enum", "const",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
    "pattern", "format", "anyOf", "oneOf", "allOf", "not", "$ref", "$id", "id", "$anchor", "$defs",
    "definitions", "dependencies", "dependentRequired", "dependentSchemas", "patternProperties",
    "propertyNames", "minItems", "maxItems", "uniqueItems", "contains", "minContains", "if", "then",
    "$dynamicRef", "$recursiveRef", "$vocabulary", "$comment", "title", "description", "default", "examples",
    "readOnly", "deprecated", "contentEncoding", "contentSchema", "unevaluatedProperties", "x-custom",
]


def full_check(cls: Any, schema: Any) -> bool:
    try:
        cls.check_schema(schema, format_checker=_format_checker(cls))
    except JSONSchemaError:
        return False
    return True


def fast_check(cls: Any, schema: Any) -> bool:
    check = metaschema_check(cls, _format_checker(cls))
    assert check is not None, f"{cls.__name__}'s metaschema should compile"
    return check(schema)


def subschemas(node: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(node, dict):
        out.append(node)
        for value in node.values():
            out.extend(subschemas(value))
    elif isinstance(node, list):
        for value in node:
            out.extend(subschemas(value))
    return out


def mutated(rng: random.Random, schema: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(schema)
    for _ in range(rng.randint(1, 2)):
        node = rng.choice(subschemas(out))
        node[rng.choice(KEYWORDS)] = copy.deepcopy(rng.choice(ODD_VALUES))
    return out


@pytest.fixture(scope="module")
def corpus_schemas() -> list[Any]:
    schemas = []
    for s in real_toolsets():
        for entry in s.tools:
            fn = entry.get("function", entry)
            raw = fn.get("inputSchema", fn.get("parameters", {"type": "object"}))
            try:
                schemas.append(normalize_schema(raw))  # as ToolSet checks them: BFCL's type names mapped
            except SchemaError:
                continue
    return schemas


@pytest.mark.parametrize("cls", DRAFTS, ids=lambda c: c.__name__)
def test_real_tool_schemas_get_the_full_checks_verdict(cls: Any, corpus_schemas: list[Any]) -> None:
    accepted = decided = 0
    for schema in corpus_schemas:
        full = full_check(cls, schema)
        fast = fast_check(cls, schema)
        assert not fast or full, schema
        accepted += full
        decided += fast
    assert accepted > 600
    if cls is validators.Draft202012Validator:
        # the point of it: the real schemas jsonschema accepts are all decided without it
        assert decided == accepted


@pytest.mark.parametrize("cls", DRAFTS, ids=lambda c: c.__name__)
def test_generated_and_broken_schemas_never_pass_where_jsonschema_refuses(cls: Any) -> None:
    rng = random.Random(f"metacheck-{cls.__name__}")
    refused = accepted = decided = 0
    for _ in range(250):
        schema = gen_schema(rng)
        for candidate in (schema, mutated(rng, schema)):
            full = full_check(cls, candidate)
            fast = fast_check(cls, candidate)
            if fast and not full:
                pytest.fail(f"accepted what {cls.__name__} refuses: {candidate}")
            refused += not full
            accepted += full
            decided += fast
    assert refused > 100  # the broken half does break the metaschema often
    assert decided >= 0.95 * accepted


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"maxItems": "3"}}},
        {"type": "object", "required": "a"},
        {"type": "object", "required": ["a", "a"]},
        {"type": "object", "properties": {"a": {"pattern": "("}}},
        {"type": "object", "properties": {"a": {"minLength": -1}}},
        {"type": "object", "properties": {"a": {"minLength": 1.5}}},
        {"type": "object", "properties": {"n": {"exclusiveMinimum": True}}},
        {"type": "object", "patternProperties": {"(": {}}},
        {"type": "object", "$ref": 3},
        {"type": "object", "properties": {"a": {"enum": "x"}}},
        {"type": "object", "properties": {"a": {"items": [{"type": "string"}]}}},
    ],
)
def test_invalid_schemas_are_not_decided_fast_and_keep_jsonschemas_reason(schema: dict[str, Any]) -> None:
    cls = validators.Draft202012Validator
    assert not fast_check(cls, schema)
    with pytest.raises(JSONSchemaError) as expected:
        cls.check_schema(schema, format_checker=_format_checker(cls))
    with pytest.raises(SchemaError, match="invalid draft2020-12 schema") as refused:
        ToolSet.from_openai([{"name": "t", "parameters": schema}])
    assert expected.value.message in str(refused.value)


@pytest.mark.parametrize(
    ("values", "unique"),
    [
        (["a", "b"], True),
        (["a", "a"], False),
        ([1, True], True),  # jsonschema: a boolean is not the number 1
        ([0, False, None, ""], True),
        ([1, 1.0], False),  # ...but 1 and 1.0 are the same number
        ([2**53 + 1, float(2**53)], True),
        ([[1], [1.0]], False),
        ([[1], [True]], True),
        ([{"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}], False),
        ([{"a": 1}, {"a": 1, "b": 2}], True),
    ],
)
def test_draft4_enum_uniqueness_follows_jsonschema(values: list[Any], unique: bool) -> None:
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "enum": values}
    cls = validators.Draft4Validator
    assert full_check(cls, schema) == unique
    assert fast_check(cls, schema) == unique


def test_draft4_boolean_exclusive_minimum_is_decided_fast() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
    }
    assert fast_check(validators.Draft4Validator, schema)
    numeric = {**schema, "properties": {"n": {"exclusiveMinimum": 1}}}  # a number: draft 6's spelling
    assert not fast_check(validators.Draft4Validator, numeric)
    assert ToolSet.from_openai([{"name": "ok", "parameters": schema}])["ok"].parameters == schema


def test_ecma_patterns_are_read_by_the_same_format_checker() -> None:
    cls = validators.Draft202012Validator
    annex_b = {"type": "object", "properties": {"e": {"type": "string", "pattern": "^[\\w-\\.]+$"}}}
    assert fast_check(cls, annex_b) and full_check(cls, annex_b)
    lookbehind_bad = {"type": "object", "properties": {"e": {"type": "string", "pattern": "(?P<x>a)"}}}
    assert fast_check(cls, lookbehind_bad) == full_check(cls, lookbehind_bad)


def test_deep_schemas_fall_back_instead_of_failing() -> None:
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(400):
        deep = {"type": "object", "properties": {"a": deep}}
    assert not fast_check(validators.Draft202012Validator, deep)  # RecursionError inside: not decided here


def test_a_metaschema_it_cannot_compile_is_left_to_jsonschema() -> None:
    assert metaschema_check(validators.Draft3Validator, _format_checker(validators.Draft3Validator)) is None
