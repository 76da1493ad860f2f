"""Earliest honest rejection: the exact offset of the first character no completion can save."""

from __future__ import annotations

from typing import Any

import pytest

from toolguard import StreamValidator, validate_json


def first_reject(schema: Any, text: str, *, close: bool = True) -> tuple[int, str, str] | None:
    """Feed one character at a time; (offset, keyword, path) of the rejection, checking it is sticky."""
    v = StreamValidator(schema)
    verdict = v.verdict
    for i, c in enumerate(text):
        verdict = v.feed(c)
        if verdict.state == "rejected":
            assert verdict.error is not None
            assert verdict.error.offset == i, (verdict.error, i)
            assert v.feed("x") == verdict  # sticky
            return verdict.error.offset, verdict.error.keyword, verdict.error.path
    if close:
        verdict = v.close()
        if verdict.state == "rejected":
            assert verdict.error is not None
            return verdict.error.offset, verdict.error.keyword, verdict.error.path
    return None


OBJ = {
    "type": "object",
    "properties": {
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "city": {"type": "string", "maxLength": 5},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "ok": {"const": True},
    },
    "additionalProperties": False,
}

CASES = [
    # (schema, text, expected (offset, keyword, path) or None for valid)
    pytest.param({"type": "integer"}, '"3"', (0, "type", ""), id="quote-where-integer"),
    pytest.param(OBJ, '{"days": "3"}', (9, "type", "/days"), id="quote-where-integer-nested"),
    pytest.param(OBJ, '{"dayz": 3}', (5, "additionalProperties", ""), id="key-prefix-no-name"),
    pytest.param(OBJ, '{"x": 3}', (2, "additionalProperties", ""), id="key-first-char"),
    pytest.param(OBJ, '{"unit": "celx"}', (13, "enum", "/unit"), id="enum-prefix"),
    pytest.param(OBJ, '{"unit": "celsius"}', None, id="enum-ok"),
    pytest.param(OBJ, '{"unit": "cel"}', (13, "enum", "/unit"), id="enum-prefix-closed-early"),
    pytest.param(OBJ, '{"city": "Paris!"}', (15, "maxLength", "/city"), id="maxLength"),
    pytest.param(OBJ, '{"city": "Paris"}', None, id="maxLength-ok"),
    pytest.param(OBJ, '{"code": "AB1"}', (12, "pattern", "/code"), id="pattern-partial"),
    pytest.param(OBJ, '{"code": "ABCD"}', (13, "pattern", "/code"), id="pattern-too-long"),
    pytest.param(OBJ, '{"code": "AB"}', (12, "pattern", "/code"), id="pattern-at-close"),
    pytest.param(OBJ, '{"days": -1}', (9, "minimum", "/days"), id="minus-below-positive-minimum"),
    pytest.param(OBJ, '{"days": 0}', (10, "minimum", "/days"), id="zero-at-close"),
    pytest.param(OBJ, '{"days": 20}', (11, "maximum", "/days"), id="maximum-at-close-integer-draft2020"),
    pytest.param(OBJ, '{"days": 20e-1}', None, id="exponent-brings-back"),
    pytest.param(OBJ, '{"days": 2e1}', (11, "maximum", "/days"), id="exponent-digit-past-maximum"),
    pytest.param(OBJ, '{"days": 1.5}', (11, "maximum", "/days"), id="fraction-significant-digits-past-max"),
    pytest.param(OBJ, '{"days": 0.5}', (12, "type", "/days"), id="fraction-integer-at-close"),
    pytest.param(OBJ, '{"days": 15}', (10, "maximum", "/days"), id="significant-digits-past-max"),
    pytest.param(OBJ, '{"days": 100}', (12, "maximum", "/days"), id="trailing-zeros-wait-for-close"),
    pytest.param(
        {"type": "integer", "minimum": -9},
        "-12",
        (2, "minimum", ""),
        id="negative-significant-digits-below-min",
    ),
    pytest.param(OBJ, '{"days": 3.0}', None, id="integer-valued-float"),
    pytest.param(OBJ, '{"tags": ["a", "b", "c"]}', (18, "maxItems", "/tags"), id="maxItems-at-comma"),
    pytest.param(OBJ, '{"tags": ["a", 1]}', (15, "type", "/tags/1"), id="item-type"),
    pytest.param(OBJ, '{"ok": false}', (7, "const", "/ok"), id="const-literal-first-char"),
    pytest.param({}, '{"days": 3, "days": 4}', (17, "syntax", ""), id="duplicate-key"),
    pytest.param(
        OBJ, '{"days": 3, "days": 4}', (13, "additionalProperties", ""), id="used-name-closed-object"
    ),
    pytest.param(OBJ, '{"days": 3}{"days": 4}', (11, "syntax", ""), id="trailing-document"),
    pytest.param(OBJ, '{"days": 3} ', None, id="trailing-whitespace"),
    pytest.param(OBJ, '{"days": 3', (10, "syntax", "/days"), id="incomplete-at-close"),
    pytest.param(OBJ, '{"days": 03}', (10, "syntax", "/days"), id="leading-zero"),
    pytest.param(OBJ, '{"days" 3}', (8, "syntax", ""), id="missing-colon"),
    pytest.param(OBJ, '{"city": "a\x01"}', (11, "syntax", "/city"), id="raw-control-char"),
    pytest.param(OBJ, '{"city": "a\\q"}', (12, "syntax", "/city"), id="bad-escape"),
    pytest.param({"type": "number", "minimum": 0}, "-0", None, id="minus-zero-equals-zero"),
    pytest.param({"type": "number", "minimum": 0}, "-", (1, "syntax", ""), id="lone-minus-incomplete"),
    pytest.param(
        {"type": "number", "exclusiveMinimum": 0}, "-", (0, "exclusiveMinimum", ""), id="exclusive-min"
    ),
    pytest.param({"type": "number", "maximum": -1}, "5", (0, "maximum", ""), id="digit-above-negative-max"),
    pytest.param(
        {"type": "number", "minimum": 1}, "5e-1", (3, "minimum", ""), id="negative-exponent-shrinks"
    ),
    pytest.param({"type": "number", "minimum": 1}, "5e-0", None, id="negative-exponent-zero"),
    pytest.param(
        {"type": "integer", "maximum": 14}, "20", (2, "maximum", ""), id="integer-top-level-at-close"
    ),
    pytest.param(
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "maximum": 14},
        "20",
        (1, "maximum", ""),
        id="draft4-integer-digits-only-grow",
    ),
    pytest.param(
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"},
        "2.0",
        (1, "type", ""),
        id="draft4-integer-no-fraction",
    ),
    pytest.param({"type": "array", "maxItems": 0}, "[1]", (1, "maxItems", ""), id="maxItems-zero-first-item"),
    pytest.param({"type": "array", "minItems": 2}, "[1]", (2, "minItems", ""), id="minItems-at-close"),
    pytest.param({"type": "array", "uniqueItems": True}, "[1, 2, 1]", (8, "uniqueItems", ""), id="unique"),
    pytest.param({"type": "array", "uniqueItems": True}, "[1, true]", None, id="unique-bool-not-int"),
    pytest.param(
        {"prefixItems": [{"type": "integer"}], "items": False},
        "[1, 2]",
        (2, "items", ""),
        id="items-false-at-comma",
    ),
    pytest.param(
        {"type": "object", "required": ["a"]}, '{"b": 1}', (7, "required", ""), id="required-at-close"
    ),
    pytest.param(
        {"type": "object", "maxProperties": 1},
        '{"a": 1, "b": 2}',
        (7, "maxProperties", ""),
        id="maxProperties-at-comma",
    ),
    pytest.param(
        {"type": "object", "propertyNames": {"maxLength": 2}},
        '{"abc": 1}',
        (4, "maxLength", ""),
        id="propertyNames-early",
    ),
    pytest.param(
        {"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False},
        '{"y": 1}',
        (2, "additionalProperties", ""),
        id="additional-with-anchored-patterns-early",
    ),
    pytest.param(
        {"type": "object", "patternProperties": {"x": {}}, "additionalProperties": False},
        '{"y": 1}',
        (3, "additionalProperties", ""),
        id="additional-with-unanchored-pattern-at-key-close",
    ),
    pytest.param(
        {
            "properties": {"ab": {}},
            "patternProperties": {"^x-": {"type": "integer"}},
            "additionalProperties": False,
        },
        '{"x-1": 1, "ab": 2, "x-2": "s"}',
        (27, "type", "/x-2"),
        id="names-and-patterns",
    ),
    pytest.param(
        {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer"}]},
        '"abc"',
        (3, "anyOf", ""),
        id="anyOf-last-branch-dies",
    ),
    pytest.param(
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "true",
        (0, "anyOf", ""),
        id="anyOf-all-die-at-once",
    ),
    pytest.param(
        {"oneOf": [{"type": "integer"}, {"minimum": 2}]}, "3", (1, "oneOf", ""), id="oneOf-at-close"
    ),
    pytest.param({"not": {"type": "integer"}}, "3", (1, "not", ""), id="not-at-close"),
    pytest.param({"not": {"type": "integer"}}, '"3"', None, id="not-ok"),
    pytest.param({"allOf": [{"type": "string"}, {"maxLength": 1}]}, '"ab"', (2, "maxLength", ""), id="allOf"),
    pytest.param(
        {"if": {"type": "integer"}, "then": {"minimum": 5}, "else": {"type": "string"}},
        "true",
        (0, "type", ""),
        id="if-else-dies",
    ),
    pytest.param(
        {
            "$defs": {
                "n": {
                    "type": "object",
                    "properties": {"next": {"$ref": "#/$defs/n"}},
                    "additionalProperties": False,
                }
            },
            "$ref": "#/$defs/n",
        },
        '{"next": {"next": {"nexx": 1}}}',
        (23, "additionalProperties", "/next/next"),
        id="recursive-ref",
    ),
    pytest.param(
        {"type": "string", "maxLength": 1}, '"\\ud83d\\ude00"', None, id="surrogate-pair-one-codepoint"
    ),
    pytest.param(
        {"type": "string", "maxLength": 1}, '"\\ud83d\\ude00x"', (13, "maxLength", ""), id="cp-after-pair"
    ),
    pytest.param({"type": "string", "maxLength": 1}, '"ab"', (2, "maxLength", ""), id="maxLength-raw"),
    pytest.param({"enum": ["a\nb"]}, '"a\\nb"', None, id="enum-escape"),
    pytest.param({"enum": ["a\nb"]}, '"a\\tb"', (3, "enum", ""), id="enum-escape-wrong"),
    pytest.param(False, "1", (0, "false", ""), id="false-schema"),
    pytest.param(True, "[1, {}]", None, id="true-schema"),
]


@pytest.mark.parametrize(("schema", "text", "expected"), CASES)
def test_earliest_offset(schema: Any, text: str, expected: tuple[int, str, str] | None) -> None:
    assert first_reject(schema, text) == expected
    # The whole text in one chunk gives the same verdict.
    whole = validate_json(schema, text)
    if expected is None:
        assert whole.state == "complete"
    else:
        assert whole.error is not None
        assert (whole.error.offset, whole.error.keyword, whole.error.path) == expected


def test_message_is_actionable() -> None:
    verdict = validate_json(OBJ, '{"days": 20}')
    assert verdict.error is not None
    assert verdict.error.message == "/days: 20 is greater than the maximum of 14"


def test_top_level_number_complete_only_at_close() -> None:
    v = StreamValidator({"type": "integer"})
    assert v.feed("12").state == "open"
    assert v.close().state == "complete"
    v = StreamValidator({"type": "integer"})
    assert v.feed("12 ").state == "complete"


def test_complete_then_trailing_whitespace() -> None:
    v = StreamValidator({"type": "object"})
    assert v.feed("{}").state == "complete"
    assert v.feed("  \n").state == "complete"
    assert v.close().state == "complete"
