"""The late cases outside checks found (issue 15), now rejected at the first character no completion saves.

Each case states the exact offset, and a *witness*: a valid completion of the text before that offset, so
the rejection is proved not early (``jsonschema`` accepts the witness). Every case is checked fed whole, one
character at a time and split in two at every position. The cases that stay at the close say why: a float
that underflows (``-5e-400`` is ``-0.0``, ``5e-400`` is the integer ``0.0``) completes them validly.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from toolguard import StreamValidator, validate_json

CASES = [
    # (schema, text, (offset, keyword, path) or None, witness: a valid completion of text[:offset])
    pytest.param(
        {"type": "integer", "enum": [1, 2, 3]}, "7", (0, "enum", ""), "1", id="int-outside-int-enum"
    ),
    pytest.param({"enum": [10, 20]}, "15", (1, "enum", ""), "0", id="second-digit-outside-enum"),
    pytest.param({"enum": [10, 20]}, "1e1", None, "", id="enum-reached-through-an-exponent"),
    pytest.param({"enum": [10]}, "9.9999999999999999", None, "", id="enum-reached-through-rounding"),
    pytest.param({"enum": [0, 5]}, "7", (1, "enum", ""), "e-400", id="zero-member-reachable-by-underflow"),
    # -2.9999999999999999 is the double -3.0: rounding keeps "-2" open until the close
    pytest.param({"enum": [-3, 2]}, "-2", (2, "enum", ""), ".9999999999999999", id="negative-enum-rounding"),
    pytest.param({"enum": [-3, 2]}, "-1", (1, "enum", ""), "3", id="negative-enum"),
    pytest.param(
        {"const": {"a": 1, "b": "x"}},
        '{"a": 3, "b": "x"}',
        (6, "const", "/a"),
        '1, "b": "x"}',
        id="const-member",
    ),
    pytest.param(
        {"const": {"a": 1, "b": "x"}}, '{"a": 1, "b": "y"}', (15, "const", "/b"), 'x"}', id="const-str"
    ),
    pytest.param({"const": {"a": 1}}, '{"b": 1}', (2, "const", ""), 'a": 1}', id="const-key-not-in-member"),
    pytest.param(
        {"const": {"a": 1}}, '{"a": 1, "a2": 2}', (7, "const", ""), "}", id="const-one-key-too-many"
    ),
    pytest.param(
        {"const": [1, {"k": True}]}, '[1, {"k": false}]', (10, "const", "/1/k"), "true}]", id="const-nested"
    ),
    pytest.param({"const": [1, 2]}, "[1, 2, 3]", (5, "const", ""), "]", id="const-array-too-long"),
    pytest.param(
        {"enum": [{"a": 1}, {"a": 2, "b": 3}]}, '{"a": 4}', (6, "enum", "/a"), '2, "b": 3}', id="enum-objects"
    ),
    pytest.param({"type": "integer", "minimum": 1}, "5e-1", (3, "type", ""), "0", id="int-negative-exponent"),
    pytest.param({"type": "integer", "maximum": -1}, "-5e-1", (4, "type", ""), "0", id="int-neg-exp-below"),
    pytest.param(
        {"type": "integer"}, "5e-1", (4, "type", ""), "000", id="int-negative-exponent-zero-allowed"
    ),
    pytest.param({"type": "integer", "minimum": 1}, "50e-1", None, "", id="int-negative-exponent-integral"),
    pytest.param(
        {"if": {"type": "number"}, "then": {"type": "string"}},
        "5",
        (0, "type", ""),
        '"x"',
        id="if-holds-then-dead",
    ),
    pytest.param(
        {"if": {"minLength": 2}, "then": {"type": "string"}},
        "1.5",
        (0, "type", ""),
        '"ab"',
        id="if-holds-for-kind",
    ),
    pytest.param({"not": {"type": "string"}}, '"abc"', (0, "not", ""), "1", id="not-over-a-string-schema"),
    pytest.param(
        {"not": {"type": "string", "maxLength": 1}}, '"abc"', None, "", id="not-over-a-partial-schema"
    ),
    pytest.param(
        {"type": "string", "maxLength": 3}, '"abc\\u0041"', (4, "maxLength", ""), '"', id="escape-past-max"
    ),
    pytest.param({"type": "string", "maxLength": 3}, '"ab\\n"', None, "", id="escape-within-max"),
    pytest.param({"maxLength": 1}, '"\\ud83d\\ude00"', None, "", id="surrogate-pair-is-one-character"),
    # an escape that already breaks an enum, a const, a pattern or a closed object's key names dies at its
    # first character that rules out every character it can still decode to (the backslash: any character;
    # each \u hex digit: a range of code units), not at its last one
    pytest.param({"enum": ["a", "b"]}, '"a\\n"', (2, "enum", ""), '"', id="escape-after-a-whole-member"),
    pytest.param({"const": "x"}, '"x\\u0078"', (2, "const", ""), '"', id="escape-after-the-const"),
    pytest.param({"enum": ["ab"]}, '"a\\u1234"', (4, "enum", ""), '0062"', id="escape-first-hex-digit"),
    pytest.param({"enum": ["ab"]}, '"a\\u0063"', (7, "enum", ""), '2"', id="escape-last-hex-digit"),
    pytest.param({"enum": ["ab"]}, '"a\\u0062"', None, "", id="escape-spelling-the-member"),
    pytest.param(
        {"type": "string", "pattern": "^[a-z]*$"}, '"abc\\u0041"', (8, "pattern", ""), '61"',
        id="escape-pattern-third-digit",
    ),
    pytest.param(
        {"type": "string", "pattern": "^[a-z]*$"}, '"ab\\u1234"', (5, "pattern", ""), '0061"',
        id="escape-pattern-first-digit",
    ),
    # Python's $ (jsonschema's reading) also matches before a final newline: U+000A keeps "ABC" alive until
    # the third digit leaves U+0040..U+004F
    pytest.param(
        {"type": "string", "pattern": "^[A-Z]{3}$"}, '"ABC\\u0041"', (8, "pattern", ""), '0a"',
        id="escape-pattern-newline-before-dollar",
    ),
    pytest.param(
        {"type": "string", "pattern": "^[a-z]*$"}, '"ab\\u0063"', None, "", id="escape-pattern-within"
    ),
    pytest.param(
        {"type": "object", "properties": {"ab": {}}, "additionalProperties": False},
        '{"a\\u1234": 1}',
        (5, "additionalProperties", ""),
        '0062": 1}',
        id="escape-key-first-digit",
    ),
    pytest.param(
        {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
        '{"a\\n": 1}',
        (3, "additionalProperties", ""),
        '": 1}',
        id="escape-key-after-the-whole-name",
    ),
    # an astral member: its escape is a surrogate pair, each half narrowed digit by digit
    pytest.param({"enum": ["a\U0001F600"]}, '"a\\ud83d\\ude00"', None, "", id="escape-astral-member"),
    pytest.param(
        {"enum": ["a\U0001F600"]}, '"a\\ud83d\\ude01"', (13, "enum", ""), '0"', id="escape-astral-other"
    ),
    pytest.param(  # U+1F600 is \ud83d\ude00: a high surrogate no member starts with dies at its last digit
        {"enum": ["\U0001F600"]}, '"\\ud83e\\udd14"', (6, "enum", ""), 'd\\ude00"', id="escape-high-half"
    ),
    pytest.param(  # ...and a low half no member continues with dies at the digit that rules it out
        {"enum": ["\U0001F600"]}, '"\\ud83d\\udf00"', (10, "enum", ""), 'e00"', id="escape-low-half"
    ),
    # stay at the close: an underflowing float completes them validly
    pytest.param({"minimum": 0}, "-5", (2, "minimum", ""), "e-400", id="minus-under-minimum-0-waits"),
    pytest.param({"minimum": 0}, "-0.5", (4, "minimum", ""), "e-400", id="minus-half-under-minimum-0-waits"),
]


def _feed(schema: Any, chunks: list[str]) -> Any:
    v = StreamValidator(schema)
    for chunk in chunks:
        v.feed(chunk)
    return v.close()


def _outcome(verdict: Any) -> tuple[int, str, str] | None:
    if verdict.error is None:
        return None
    return verdict.error.offset, verdict.error.keyword, verdict.error.path


@pytest.mark.parametrize(("schema", "text", "expected", "witness"), CASES)
def test_offset_at_every_split(schema: Any, text: str, expected: Any, witness: str | None) -> None:
    assert _outcome(validate_json(schema, text)) == expected
    assert _outcome(_feed(schema, list(text))) == expected
    for i in range(1, len(text)):
        assert _outcome(_feed(schema, [text[:i], text[i:]])) == expected, i
    if expected is not None:
        v = StreamValidator(schema)
        for i, c in enumerate(text):  # the rejection arrives with the offending character, not later
            if v.feed(c).state == "rejected":
                assert i == expected[0] or expected[0] == len(text)
                break
    # the verdict after close is jsonschema's, and the rejection is not early: a completion exists
    value = json.loads(text)
    assert jsonschema.Draft202012Validator(schema).is_valid(value) == (expected is None)
    if expected is not None and witness is not None:
        completed = text[: expected[0]] + witness
        assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(completed)), completed


@pytest.mark.parametrize(("before", "offset"), [(5, 2), (40, 5)])
def test_escapes_past_the_probe_budget_wait_for_their_last_digit(before: int, offset: int) -> None:
    """A pattern is probed with every character an escape's range still holds, within a per-document budget
    (``_prefix.RANGE_PROBE_BUDGET``, charged by range size whatever the chunking): 30 escapes use it up, and
    later ones are decided at their last hex digit again (late, never early)."""
    schema = {"type": "string", "pattern": "^[a-z]*$"}
    text = '"' + "\\u0061" * before + '\\u1234"'
    expected = (1 + 6 * before + offset, "pattern", "")
    assert _outcome(validate_json(schema, text)) == expected
    for cut in (2, 4, 6 * before - 2, 6 * before + 3, 6 * before + 5):
        assert _outcome(_feed(schema, [text[:cut], text[cut:]])) == expected, cut
