"""Any split of the text gives the same verdict (strings, escapes, surrogate pairs, numbers, literals)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from toolguard import StreamValidator, Verdict

SCHEMA = {
    "type": "object",
    "properties": {
        "s": {"type": "string", "maxLength": 12, "pattern": "^[a-z\\n😀é]*$"},
        "e": {"enum": ["alpha", "alpine", "beta\u00e9"]},
        "n": {"type": "number", "minimum": -5, "maximum": 100},
        "i": {"type": "integer", "exclusiveMinimum": 0},
        "b": {"type": "boolean"},
        "z": {"type": "null"},
        "a": {"type": "array", "items": {"type": "integer"}, "maxItems": 3, "uniqueItems": True},
        "o": {"type": "object", "additionalProperties": False, "properties": {"key": {}, "kez": {}}},
    },
    "required": ["s"],
    "additionalProperties": False,
}

DOCS = [
    '{"s": "abc", "e": "alpine", "n": 1.5e1, "i": 3, "b": true, "z": null, "a": [1, 2], "o": {"kez": 1}}',
    '{"s": "a\\nb\\u00e9\\ud83d\\ude00", "e": "beta\\u00e9"}',
    '{"s": "a\\ud83d\\ude00\\ud83d"}',
    '{"s": "abcdefghijklmnop"}',
    '{"s": "abc", "e": "alpx"}',
    '{"s": "ABC"}',
    '{"s": "x", "n": -6}',
    '{"s": "x", "n": 1e3}',
    '{"s": "x", "n": 10e-1, "i": 0}',
    '{"s": "x", "i": -0}',
    '{"s": "x", "a": [1, 2, 3, 4]}',
    '{"s": "x", "a": [1, 1]}',
    '{"s": "x", "o": {"kex": 1}}',
    '{"s": "x", "b": tru}',
    '{"s": "x", "b": nul}',
    '{"s": "x", "z": nulll}',
    '{"s": "x", "n": 1.}',
    '{"s": "x", "n": 01}',
    '{"s": "x", "n": -}',
    '{"s": "x", "i": -}',
    '{"s": "x", "i": -5-}',
    '{"s": "x", "i": -1x}',
    '{"s": "x\\u12G4"}',
    '{"s": "x"} {"s": "y"}',
    '{"s": "x", "s": "y"}',
    '{"t": 1}',
    ' \n {"s" : "x" , "z" : null } \t',
    '{"s": "x"',
    "[1, 2]",
]


def verdict_of(chunks: list[str], schema: Any = SCHEMA) -> Verdict:
    v = StreamValidator(schema)
    for c in chunks:
        v.feed(c)
    return v.close()


@pytest.mark.parametrize("doc", DOCS)
def test_every_two_way_split_and_single_chars(doc: str) -> None:
    expected = verdict_of([doc])
    assert verdict_of(list(doc)) == expected
    for i in range(1, len(doc)):
        assert verdict_of([doc[:i], doc[i:]]) == expected, i


@pytest.mark.parametrize("doc", DOCS)
def test_random_splits(doc: str) -> None:
    rng = random.Random(doc)
    expected = verdict_of([doc])
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(doc)), min(len(doc) - 1, rng.randint(1, 6))))
        parts = [doc[a:b] for a, b in zip([0, *cuts], [*cuts, len(doc)], strict=True)]
        assert verdict_of(parts) == expected, parts


def test_empty_chunks_are_harmless() -> None:
    doc = DOCS[0]
    assert verdict_of(["", doc[:5], "", doc[5:], ""]) == verdict_of([doc])


def test_long_string_text_checks_independent_of_chunking() -> None:
    """Past ``partial_pattern_max_length`` prefix checks stop, at the same character for any split."""
    schema = {"type": "string", "pattern": "^a*$"}
    doc = '"' + "a" * 4000 + "b" + "a" * 2000 + '"'
    whole = verdict_of([doc], schema)
    assert whole.error is not None and whole.error.offset == 4001
    assert verdict_of([doc[i : i + 700] for i in range(0, len(doc), 700)], schema) == whole
    late = '"' + "a" * 5000 + "b" + '"'
    whole = verdict_of([late], schema)
    assert whole.error is not None and whole.error.offset == len(late) - 1  # decided at the closing quote
    assert verdict_of([late[i : i + 16] for i in range(0, len(late), 16)], schema) == whole
