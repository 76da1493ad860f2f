"""Behaviour behind the stream fuzz findings (tests/regressions/data/stream-*.json), pinned exactly.

Long numbers are a ``"limit"`` rejection whatever the chunking (never Python's int-digits ``ValueError``);
if/then/else keeps both outcomes alive until one is impossible for every completion; a schema doomed by a
kid that died earlier is rejected where the text became impossible, not where the kid died; a repeated key
under ``additionalProperties: false`` says so.
"""

from __future__ import annotations

import itertools
import json
import random
import sys
from typing import Any

import jsonschema
import pytest

from toolguard import StreamValidator, ValidationLimits, validate_json


def verdict_of(schema: Any, chunks: list[str], **kwargs: Any) -> tuple[Any, ...]:
    """(state, offset, keyword, message, chunks fed when the verdict came) for ``chunks`` then close."""
    v = StreamValidator(schema, **kwargs)
    for i, chunk in enumerate(chunks):
        verdict = v.feed(chunk)
        if verdict.error is not None:
            e = verdict.error
            return verdict.state, e.offset, e.keyword, e.message, i + 1
    verdict = v.close()
    e = verdict.error
    if e is None:
        return verdict.state, None, None, None, None
    return verdict.state, e.offset, e.keyword, e.message, None


def splits(text: str, seed: int = 0) -> list[list[str]]:
    """Whole, one character at a time, and three random cuttings."""
    rng = random.Random(seed)
    out = [[text], list(text)]
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(text)), min(5, len(text) - 1))) if len(text) > 1 else []
        out.append([text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])])
    return out


def same_for_every_split(schema: Any, text: str, **kwargs: Any) -> tuple[Any, ...]:
    results = {verdict_of(schema, chunks, **kwargs)[:4] for chunks in splits(text)}
    assert len(results) == 1, results
    return results.pop()


# -- 1, 2: long numbers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "9" * 4302 + "\r",  # the finding: past Python's 4300-digit int limit, terminated inside the chunk
        "9" * 1001 + "\U0001f600",  # the finding: terminated by a bad character
        "9" * 1001 + " ",
        "9" * 1001,
        "-" + "9" * 1000 + " ",
        "1." + "5" * 1200 + ",",
    ],
)
def test_number_past_max_number_length_is_a_limit_rejection_for_any_split(text: str) -> None:
    state, offset, keyword, message = same_for_every_split({}, text)
    assert (state, offset, keyword) == ("rejected", 1000, "limit")
    assert message == "(root): number literal longer than max_number_length=1000"


def test_number_past_max_number_length_inside_an_array() -> None:
    text = "[1, " + "9" * 1001 + "]"
    assert same_for_every_split({}, text)[:3] == ("rejected", 1004, "limit")


def test_number_of_exactly_max_number_length_is_accepted() -> None:
    for text in ("9" * 1000, "9" * 1000 + " ", "[" + "9" * 1000 + "]"):
        assert same_for_every_split({}, text)[0] == "complete"


def test_max_number_length_above_pythons_int_digit_limit_is_lowered_to_it() -> None:
    cap = sys.get_int_max_str_digits()
    assert cap > 0  # the interpreter default (4300); nothing in the suite lifts it
    limits = ValidationLimits(max_number_length=cap + 5000)
    text = "9" * (cap + 2) + "\r"
    state, offset, keyword, _ = same_for_every_split({"type": "integer"}, text, limits=limits)
    assert (state, offset, keyword) == ("rejected", cap, "limit")
    ok = validate_json({"type": "integer"}, "9" * cap, limits=limits)
    assert ok.state == "complete"


# -- 3, 4: if/then/else on an unfinished value ---------------------------------------------------------------

IF_MAX_ELSE_STRING = {"if": {"maximum": 10.25}, "else": {"type": "string"}}
NEVER_IF = {
    "if": {"not": {}},
    "then": {"type": "array"},
    "else": {"if": {}, "then": {"multipleOf": 5}},
}


def test_if_on_a_number_being_written_is_not_decided_by_its_prefix() -> None:
    v = StreamValidator(IF_MAX_ELSE_STRING)
    assert v.feed("2").state == "open"
    assert v.feed("9").state == "open"  # '29e-1' (2.9) is still possible
    verdict = v.close()
    assert verdict.error is not None
    assert (verdict.error.offset, verdict.error.keyword) == (2, "type")
    assert verdict.error.message == "(root): expected string, got a number"
    assert validate_json(IF_MAX_ELSE_STRING, "2").state == "complete"
    assert validate_json(IF_MAX_ELSE_STRING, "29e-1").state == "complete"
    assert validate_json(IF_MAX_ELSE_STRING, '"x"').state == "complete"
    # Terminated inside the stream: rejected at the character that ends the number.
    assert same_for_every_split({"items": IF_MAX_ELSE_STRING}, "[29]")[:3] == ("rejected", 3, "type")


def test_never_true_if_does_not_apply_then() -> None:
    assert validate_json(NEVER_IF, "10").state == "complete"
    v = StreamValidator(NEVER_IF)
    assert v.feed("1").state == "open"
    verdict = v.close()
    assert verdict.error is not None
    assert (verdict.error.offset, verdict.error.keyword, verdict.error.message) == (
        1,
        "multipleOf",
        "(root): 1 is not a multiple of 5",
    )
    # The finding: '1' then a backslash, under a property; rejected where the backslash ends the number.
    schema = {"properties": {"a\\b": NEVER_IF}}
    state, offset, keyword, message = same_for_every_split(schema, '{"a\\u005Cb":1\\')
    assert (state, offset, keyword, message) == (
        "rejected",
        13,
        "multipleOf",
        "/a\\b: 1 is not a multiple of 5",
    )


def test_not_of_the_empty_schema_fails_at_the_first_character() -> None:
    assert verdict_of({"not": {}}, list("1"))[:3] == ("rejected", 0, "not")
    schema = {"if": {"not": {}}, "then": {"type": "array"}, "else": {"type": "string"}}
    state, offset, keyword, _, fed = verdict_of(schema, list("12"))
    assert (state, offset, keyword, fed) == ("rejected", 0, "type", 1)
    assert validate_json(schema, '"ok"').state == "complete"


def test_then_failing_while_if_is_undecided_waits_for_the_close() -> None:
    schema = {"if": {"minimum": 5}, "then": {"type": "string"}}
    v = StreamValidator(schema)
    assert v.feed("7").state == "open"
    verdict = v.close()
    assert verdict.error is not None
    assert (verdict.error.offset, verdict.error.keyword) == (1, "type")
    assert validate_json(schema, "3").state == "complete"
    assert same_for_every_split({"items": schema}, "[3, 7]")[:3] == ("rejected", 5, "type")


def test_both_branches_dead_while_if_is_undecided() -> None:
    schema = {"if": {"minimum": 5}, "then": {"type": "string"}, "else": {"type": "array"}}
    state, offset, keyword, message, fed = verdict_of(schema, list("7"))
    assert (state, offset, keyword, fed) == ("rejected", 0, "type", 1)
    assert message == (
        "(root): matches neither branch of if/then/else (then: (root): expected string, got a number; "
        "else: (root): expected array, got a number)"
    )


def test_always_true_if_with_failing_then() -> None:
    schema = {"if": True, "then": {"type": "string"}, "else": {"type": "number"}}
    assert verdict_of(schema, list("7"))[:3] == ("rejected", 0, "type")
    assert validate_json(schema, '"s"').state == "complete"


def test_dependent_schema_failure_is_reported_where_the_key_completes() -> None:
    schema = {"dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}}}
    text = '{"b": 1, "a": 2}'
    assert same_for_every_split(schema, text)[:3] == ("rejected", 11, "type")
    assert validate_json(schema, '{"b": 1, "ab": 2}').state == "complete"


IF_SCHEMAS = [
    IF_MAX_ELSE_STRING,
    NEVER_IF,
    {"if": {"minimum": 5}, "then": {"multipleOf": 2}, "else": {"maximum": -1}},
    {"if": {"type": "integer"}, "then": {"maximum": 19}, "else": {"exclusiveMinimum": 0.5}},
    {"if": {"exclusiveMaximum": 2}, "then": {"type": "integer", "minimum": 1}},
    {"if": {"not": {"minimum": 10}}, "then": {"type": "array"}, "else": {"maximum": 100}},
    {"if": {"minimum": 10}, "then": {"const": 10}, "else": {"enum": [-1, 1.5]}},
]


def _numbers(max_len: int) -> list[str]:
    alphabet = "019-.e"
    out = []
    for n in range(1, max_len + 1):
        for chars in itertools.product(alphabet, repeat=n):
            text = "".join(chars)
            try:
                json.loads(text)
            except ValueError:
                continue
            out.append(text)
    return out


@pytest.mark.parametrize("schema", IF_SCHEMAS, ids=range(len(IF_SCHEMAS)))
def test_if_then_else_rejects_only_when_no_completion_is_valid(schema: Any) -> None:
    """Exhaustive over short numbers, top-level and inside an array: the verdict after close equals
    jsonschema's, and a rejection at offset k (during the feed or at the close) leaves no valid document in
    the set that starts with the first k+1 characters."""
    docs = []
    for number in _numbers(4):
        docs += [number, f"[{number}]"]
    judge = jsonschema.Draft202012Validator(schema)
    item_judge = jsonschema.Draft202012Validator({"type": "array", "items": schema})
    valid = [d for d in docs if (item_judge if d.startswith("[") else judge).is_valid(json.loads(d))]
    for doc in docs:
        sub = {"type": "array", "items": schema} if doc.startswith("[") else schema
        state, offset, _, message, fed = verdict_of(sub, list(doc))
        assert (state == "complete") == (doc in valid), (doc, message)
        if fed is not None:
            assert offset < fed, (doc, offset, fed)
        if state == "rejected" and offset < len(doc):
            prefix = doc[: offset + 1]
            witness = [d for d in valid if d.startswith(prefix)]
            assert not witness, f"{doc!r} rejected at {offset} ({message}) yet {witness[0]!r} is valid"


# -- 5: a repeated key under additionalProperties: false -----------------------------------------------------


def test_repeated_only_key_of_closed_object() -> None:
    schema = {"type": "object", "properties": {"days": {"type": "integer"}}, "additionalProperties": False}
    state, offset, keyword, message = same_for_every_split(schema, '{"days": 3, "days": 4}')
    assert (state, offset, keyword) == ("rejected", 10, "additionalProperties")
    assert message == (
        "(root): no further property is allowed (additionalProperties is false; allowed: 'days', already set)"
    )


def test_repeated_key_of_closed_object_says_it_is_already_set() -> None:
    schema = {
        "type": "object",
        "properties": {"days": {"type": "integer"}, "x": {}},
        "additionalProperties": False,
    }
    state, offset, keyword, message = same_for_every_split(schema, '{"days": 3, "days": 4}')
    assert (state, offset, keyword) == ("rejected", 13, "additionalProperties")
    assert message == (
        "(root): no allowed property name starts with 'd' ('days' is already set; "
        "additionalProperties is false; allowed: 'x')"
    )
    # A name that is not used gets no such note.
    _, offset, _, message = same_for_every_split(schema, '{"days": 3, "q": 4}')
    assert offset == 13
    assert (
        message
        == "(root): no allowed property name starts with 'q' (additionalProperties is false; allowed: 'x')"
    )


def test_repeated_key_of_open_object_is_a_duplicate_at_its_closing_quote() -> None:
    assert same_for_every_split({}, '{"days": 3, "days": 4}') == (
        "rejected",
        17,
        "syntax",
        "(root): duplicate key 'days'",
    )
