"""Property-based tests of the stream validator (hypothesis + hypothesis-jsonschema, deterministic).

Properties, over a set of tool-argument schemas:

1. every split of a document gives the same verdict as feeding it whole;
2. a valid instance is never rejected at any prefix (it is ``open`` until complete, ``complete`` at close);
3. the verdict after ``close()`` equals ``jsonschema``'s (format assertion on, with its FormatChecker);
4. never too early: change a valid document from position ``d`` on; the rejection offset is ``>= d``, since
   every shorter prefix is still a prefix of the valid document.

Budgets are small and ``derandomize=True`` keeps CI stable; raise ``TOOLGUARD_FUZZ_EXAMPLES`` to search
longer.
"""

from __future__ import annotations

import json
import os
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolguard import StreamValidator, Verdict
from toolguard._fuzz._instances import instances

EXAMPLES = int(os.environ.get("TOOLGUARD_FUZZ_EXAMPLES", "40"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

SCHEMAS: dict[str, dict[str, Any]] = {
    "weather": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1, "maxLength": 12},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "unit": {"enum": ["celsius", "fahrenheit"]},
            "code": {"type": "string", "pattern": "^[A-Z]{2,3}$"},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
    "search": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "maxLength": 30},
            "limit": {"type": "number", "exclusiveMinimum": 0, "maximum": 100, "multipleOf": 0.5},
            "tags": {
                "type": "array",
                "items": {"type": "string", "maxLength": 5},
                "maxItems": 3,
                "uniqueItems": True,
            },
            "filters": {
                "type": "object",
                "additionalProperties": {"type": ["integer", "boolean", "null"]},
                "maxProperties": 3,
            },
        },
        "required": ["query"],
    },
    "union": {
        "anyOf": [
            {
                "type": "object",
                "properties": {"kind": {"const": "a"}, "n": {"type": "integer", "minimum": 0}},
                "required": ["kind"],
            },
            {
                "type": "object",
                "properties": {"kind": {"const": "b"}, "s": {"type": "string"}},
                "required": ["kind", "s"],
            },
            {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
        ]
    },
    "logic": {
        "type": "object",
        "properties": {
            "mode": {"enum": ["x", "y", 1, None]},
            "v": {"oneOf": [{"type": "integer", "maximum": 10}, {"type": "number", "minimum": 5}]},
            "w": {"not": {"type": "string"}},
        },
        "if": {"properties": {"mode": {"const": "x"}}, "required": ["mode"]},
        "then": {"required": ["v"]},
        "dependentRequired": {"w": ["v"]},
    },
    "formats": {
        "type": "object",
        "properties": {
            "day": {"type": "string", "format": "date"},
            "ip": {"type": "string", "format": "ipv4"},
            "id": {"type": "string", "format": "uuid"},
        },
        "additionalProperties": False,
    },
}
NAMES = sorted(SCHEMAS)
VALIDATORS = {
    name: jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    for name, schema in SCHEMAS.items()
}

KEYS = st.sampled_from(
    [
        "city",
        "days",
        "unit",
        "code",
        "query",
        "limit",
        "tags",
        "filters",
        "kind",
        "n",
        "s",
        "mode",
        "v",
        "w",
        "day",
        "ip",
        "id",
        "x",
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-20, 200)
    | st.floats(-50, 150, allow_nan=False)
    | st.sampled_from(["", "a", "celsius", "AB", "x", "b", "2024-02-30", "10.0.0.1", "Paris"])
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=10,
)


def valid_instances(name: str) -> st.SearchStrategy[Any]:
    return instances(SCHEMAS[name]).filter(VALIDATORS[name].is_valid)


def stream(schema: dict[str, Any], chunks: list[str]) -> Verdict:
    v = StreamValidator(schema)
    for c in chunks:
        v.feed(c)
    return v.close()


def splits(text: str, data: st.DataObject) -> list[str]:
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=6))))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True) if a < b]


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_valid_instances_never_rejected_and_any_split_agrees(name: str, data: st.DataObject) -> None:
    schema = SCHEMAS[name]
    instance = data.draw(valid_instances(name))
    indent = data.draw(st.sampled_from([None, 1]))
    text = json.dumps(instance, indent=indent, ensure_ascii=data.draw(st.booleans()))
    assert VALIDATORS[name].is_valid(instance)
    v = StreamValidator(schema)
    for i, c in enumerate(text):
        verdict = v.feed(c)
        assert verdict.state != "rejected", (text, i, verdict)
    assert v.close().state == "complete", text
    assert stream(schema, splits(text, data)).state == "complete"


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_verdict_equals_jsonschema_and_splits_agree(name: str, data: st.DataObject) -> None:
    schema = SCHEMAS[name]
    instance = data.draw(JSON_VALUES | instances(schema))
    text = json.dumps(instance)
    whole = stream(schema, [text])
    assert (whole.state == "complete") == VALIDATORS[name].is_valid(instance), (text, whole)
    assert stream(schema, list(text)) == whole
    assert stream(schema, splits(text, data)) == whole


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_rejection_is_never_too_early(name: str, data: st.DataObject) -> None:
    schema = SCHEMAS[name]
    text = json.dumps(data.draw(valid_instances(name)))
    d = data.draw(st.integers(0, len(text)))
    tail = data.draw(
        st.sampled_from(
            [
                '"',
                "1",
                "-",
                "}",
                "]",
                ",",
                "x",
                " ",
                '"zz"',
                "[",
                "{",
                "null",
                "9e9",
                '"\\u00e9"',
                "-0.5",
                "true}",
            ]
        )
    )
    mutated = text[:d] + tail + text[d + data.draw(st.integers(0, 3)) :]
    verdict = stream(schema, list(mutated))
    if verdict.state == "rejected":
        assert verdict.error is not None
        # text[:d] is a prefix of a valid document, so no rejection can come before position d.
        assert verdict.error.offset >= d, (text, mutated, d, verdict)
    assert stream(schema, [mutated]) == verdict
