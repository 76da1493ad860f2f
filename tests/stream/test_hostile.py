"""Hostile documents and schemas: clear errors, bounded time, no stack overflow."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from toolguard import (
    RemoteRefRefused,
    SchemaError,
    SchemaLimitExceeded,
    StreamValidator,
    UnsupportedKeyword,
    ValidationLimits,
    validate_json,
)


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail if the block takes longer than ``seconds`` (generous: the CI machine is shared and slow)."""
    start = time.monotonic()
    yield
    elapsed = time.monotonic() - start
    assert elapsed < seconds, f"took {elapsed:.2f}s"


def test_nesting_past_max_depth_rejected_at_the_bracket() -> None:
    with within(5):
        verdict = validate_json({}, "[" * 100_000)
    assert verdict.error is not None
    assert (verdict.error.offset, verdict.error.keyword) == (128, "limit")
    assert "max_depth=128" in verdict.error.message
    ok = validate_json({}, "[" * 128 + "]" * 128)
    assert ok.state == "complete"


def test_custom_depth() -> None:
    verdict = validate_json({}, '{"a": {"b": [1]}}', limits=ValidationLimits(max_depth=2))
    assert verdict.error is not None and verdict.error.offset == 12


def test_document_size_cap() -> None:
    limits = ValidationLimits(max_document_size=10)
    v = StreamValidator({}, limits=limits)
    assert v.feed('"abcdefg').state == "open"
    verdict = v.feed("hijk")
    assert verdict.error is not None
    assert (verdict.error.offset, verdict.error.keyword) == (10, "limit")


def test_number_length_cap() -> None:
    verdict = validate_json({}, "1" * 5000)
    assert verdict.error is not None
    assert (verdict.error.offset, verdict.error.keyword) == (1000, "limit")


@pytest.mark.parametrize("pattern", ["(a+)+$", "^(a|aa)+$", "(x+x+)+y"])
def test_catastrophic_patterns_do_not_hang(pattern: str) -> None:
    limits = ValidationLimits(regex_timeout=0.05)
    text = '"' + "a" * 5000 + "x" * 30 + '!"'
    with within(10):
        verdict = validate_json({"type": "string", "pattern": pattern}, text, limits=limits)
    assert verdict.state == "rejected"
    assert verdict.error is not None and verdict.error.keyword in ("limit", "pattern")


def test_catastrophic_pattern_streamed_in_small_chunks() -> None:
    limits = ValidationLimits(regex_timeout=0.05)
    v = StreamValidator({"type": "string", "pattern": "^(a+)+$"}, limits=limits)
    text = '"' + "a" * 3000 + '!"'
    with within(10):
        for i in range(0, len(text), 16):
            v.feed(text[i : i + 16])
        verdict = v.close()
    assert verdict.state == "rejected"


def test_long_string_with_pattern_stays_linear() -> None:
    schema = {"type": "string", "pattern": "^[a-z]*$"}
    text = '"' + "a" * 200_000 + '"'
    with within(10):
        v = StreamValidator(schema)
        for i in range(0, len(text), 16):
            v.feed(text[i : i + 16])
        assert v.close().state == "complete"


@pytest.mark.parametrize(
    ("schema", "error"),
    [
        ({"$ref": "#"}, SchemaError),
        (
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                "$ref": "#/$defs/a",
            },
            SchemaError,
        ),
        ({"$ref": "https://example.com/schema.json"}, RemoteRefRefused),
        ({"$ref": "other.json#/x"}, RemoteRefRefused),
        ({"enum": list(range(20_000))}, SchemaLimitExceeded),
        ({"pattern": "a" * 5000}, SchemaLimitExceeded),
        (
            {"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveRef": "#"},
            UnsupportedKeyword,
        ),
        ({"pattern": "("}, SchemaError),
        ({"type": "nonsense"}, SchemaError),
        ({"$ref": "#/$defs/missing"}, SchemaError),
        ([], SchemaError),
    ],
)
def test_hostile_or_bad_schemas_raise_at_construction(schema: Any, error: type[Exception]) -> None:
    with within(5), pytest.raises(error):
        StreamValidator(schema)


def _nest(depth: int, make: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    for _ in range(depth):
        schema = make(schema)
    return schema


def test_deep_schema_refused_without_recursion_error() -> None:
    deep = _nest(50_000, lambda inner: {"properties": {"a": inner}})
    with within(10), pytest.raises(SchemaLimitExceeded):
        StreamValidator(deep)


def test_exponential_inplace_expansion_refused() -> None:
    defs = {
        f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]} for i in range(40)
    }
    defs["d40"] = {"type": "integer"}
    with within(5), pytest.raises(SchemaLimitExceeded):
        StreamValidator({"$defs": defs, "$ref": "#/$defs/d0"})


def test_recursive_schema_is_fine() -> None:
    tree = {"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}
    assert validate_json(tree, "[[[]], [[[]]]]").state == "complete"
    verdict = validate_json(tree, "[[[1]]]")
    assert verdict.error is not None and verdict.error.path == "/0/0/0"


def test_many_keys_and_items_linear() -> None:
    doc = "[" + ", ".join(f'{{"k{i}": {i}}}' for i in range(20_000)) + "]"
    with within(15):
        v = StreamValidator({"type": "array", "items": {"type": "object", "maxProperties": 1}})
        for i in range(0, len(doc), 16):
            v.feed(doc[i : i + 16])
        assert v.close().state == "complete"
