"""The public surface of the stream validator: names, records, lifecycle, partial values, formats."""

from __future__ import annotations

import dataclasses

import jsonschema
import pytest

import toolguard
from toolguard import StreamValidator, UsageError, ValidationLimits, Verdict, Violation, validate_json

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "maximum": 14},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city"],
}


def test_public_names() -> None:
    for name in ("StreamValidator", "Verdict", "Violation", "ValidationLimits", "validate_json"):
        assert name in toolguard.__all__
        assert getattr(toolguard, name).__module__ == "toolguard"


def test_records_are_frozen_slotted_dataclasses() -> None:
    for cls in (Verdict, Violation, ValidationLimits):
        assert dataclasses.is_dataclass(cls)
        assert "__slots__" in vars(cls)
    verdict = Verdict("open")
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.state = "complete"  # type: ignore[misc]
    assert Verdict("open") == verdict


def test_lifecycle_open_complete_close() -> None:
    v = StreamValidator(SCHEMA)
    assert v.verdict.state == "open"
    assert v.feed('{"city": "Pa').state == "open"
    assert v.feed('ris"}').state == "complete"
    assert v.close().state == "complete"
    assert v.close().state == "complete"  # idempotent
    with pytest.raises(UsageError):
        v.feed(" ")


def test_rejection_is_sticky_and_does_no_work() -> None:
    v = StreamValidator(SCHEMA)
    rejected = v.feed('{"days": "')
    assert rejected.state == "rejected"
    assert rejected.error == Violation(9, "/days", "/days: expected integer, got a string", "type")
    assert v.feed("anything at all {{{") is rejected
    assert v.offset == 10
    assert v.close() is rejected


def test_incomplete_document_rejected_at_close() -> None:
    v = StreamValidator(SCHEMA)
    v.feed('{"city": "Par')
    verdict = v.close()
    assert verdict.state == "rejected"
    assert verdict.error is not None
    assert verdict.error.offset == 13
    assert "incomplete" in verdict.error.message
    assert verdict.error.keyword == "syntax"


def test_empty_document() -> None:
    verdict = validate_json({}, "   ")
    assert verdict.error is not None and "empty document" in verdict.error.message


def test_partial_value() -> None:
    v = StreamValidator(SCHEMA)
    assert v.value is None
    v.feed('{"city": "Par')
    assert v.value == {"city": "Par"}
    v.feed('is", "tags": ["a", "b')
    assert v.value == {"city": "Paris", "tags": ["a", "b"]}
    v.feed('c"], "days": 1')
    assert v.value == {"city": "Paris", "tags": ["a", "bc"], "days": 1}
    v.feed("2}")
    assert v.value == {"city": "Paris", "tags": ["a", "bc"], "days": 12}
    assert StreamValidator({}).feed('"ab').state == "open"
    top = StreamValidator({})
    top.feed('"ab')
    assert top.value == "ab"


def test_required_checked_at_close_of_object_not_before() -> None:
    v = StreamValidator(SCHEMA)
    assert v.feed('{"days": 3').state == "open"
    verdict = v.feed("}")
    assert verdict.error is not None
    assert (verdict.error.offset, verdict.error.keyword) == (10, "required")
    assert verdict.error.message == "(root): missing required property 'city'"


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date", "2024-02-29", "2024-02-30"),
        ("date-time", "2024-02-29T10:00:00Z", "2024-02-29 10:00"),
        ("time", "10:00:00Z", "25:00:00Z"),
        ("email", "a@b.c", "no-at-sign"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
        ("ipv6", "::1", "::g"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
        ("uri", "https://example.com/a?b=c", "not a uri"),
    ],
)
def test_format_assertion_matches_jsonschema(fmt: str, good: str, bad: str) -> None:
    schema = {"type": "string", "format": fmt}
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    if fmt not in checker.checkers:  # jsonschema checks 'uri' only with rfc3986-validator installed
        pytest.skip(f"jsonschema does not check {fmt!r} in this environment")
    for text, expected in ((good, True), (bad, False)):
        assert checker.conforms(text, fmt) is expected
        verdict = validate_json(schema, f'"{text}"')
        assert (verdict.state == "complete") is expected, (fmt, text, verdict)
        assert validate_json(schema, f'"{text}"', format_assertion=False).state == "complete"


def test_format_error_message() -> None:
    verdict = validate_json({"properties": {"day": {"format": "date"}}}, '{"day": "2024-13-01"}')
    assert verdict.error is not None
    assert verdict.error.message == "/day: '2024-13-01' is not a valid 'date'"
    assert verdict.error.offset == 19  # the closing quote


def test_compiled_schema_shared() -> None:
    a = StreamValidator(SCHEMA)
    b = StreamValidator(dict(SCHEMA))
    assert a.compiled is b.compiled
    c = StreamValidator(a.compiled)
    assert c.compiled is a.compiled


def test_json_pointer_escaping_in_paths() -> None:
    verdict = validate_json({"properties": {"a/b~c": {"type": "integer"}}}, '{"a/b~c": "x"}')
    assert verdict.error is not None
    assert verdict.error.path == "/a~1b~0c"
