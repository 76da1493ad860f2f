"""Escapes under an ``enum`` and in a closed object's keys: the rejection lands exactly where the JSON text
stops spelling any member (any declared name).

An independent reference: ``spells(member, text)`` reads a string literal's text (after the opening quote,
possibly cut inside an escape) against one member, character by character, as JSON spells characters (raw,
a simple escape, ``\\uXXXX`` with any hex case, a surrogate pair for an astral character). The earliest
honest rejection is the first character after which no member can be spelled; the validator must reject at
exactly that offset, fed whole and split at every position. Members and texts are random: short strings of
ASCII, accented, CJK and astral characters, texts written with random escapes, half of them altered.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from toolguard import StreamValidator, validate_json

ALPHABET = "ab\"\\/\n\té日😀😁🙀🤔"  # the astral ones share high surrogates, differ in low ones
SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
HEX = "0123456789abcdefABCDEF"


def units(c: str) -> list[int]:
    o = ord(c)
    if o <= 0xFFFF:
        return [o]
    o -= 0x10000
    return [0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF)]


def spells(member: str, text: str) -> bool:
    """Whether the literal body ``text`` (no quotes; maybe cut mid-escape) can go on to spell ``member``."""
    want: list[tuple[str, int, bool]] = []  # (the character, one of its code units, is it the first) in order
    for c in member:
        want.extend((c, u, k == 0) for k, u in enumerate(units(c)))
    i = j = 0  # i: position in text, j: position in want (code units)
    while i < len(text):
        if j >= len(want):
            return False  # the member is spelled and more text follows
        c, unit, first = want[j]
        if text[i] != "\\":
            if not first or text[i] != c:
                return False
            i, j = i + 1, j + len(units(c))
            continue
        if i + 1 == len(text):
            return True  # a backslash: any escape may follow
        e = text[i + 1]
        if e in SIMPLE:
            if len(units(c)) != 1 or SIMPLE[e] != c:
                return False
            i, j = i + 2, j + 1
            continue
        digits = text[i + 2 : i + 6]
        if not all(d in HEX for d in digits) or not f"{unit:04x}".startswith(digits.lower()):
            return False
        if len(digits) < 4:
            return True  # cut inside the escape, consistent so far
        i, j = i + 6, j + 1
    return True


def write(rng: random.Random, value: str) -> str:
    out = []
    for c in value:
        roll = rng.random()
        if roll < 0.03:
            out.append("\\ud83d")  # a lone high surrogate: whatever follows, not an astral member's spelling
            roll = rng.random()
        if roll < 0.4:
            out.extend(f"\\u{u:04x}" if rng.random() < 0.5 else f"\\u{u:04X}" for u in units(c))
        elif c in '"\\\n\t' or (roll < 0.5 and c in "/"):
            out.append(json.dumps(c)[1:-1] if c != "/" else "\\/")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def alter(rng: random.Random, value: str) -> str:
    chars = list(value)
    pos = rng.randrange(len(chars) + 1)
    if chars and rng.random() < 0.5:
        chars[min(pos, len(chars) - 1)] = rng.choice(ALPHABET)
    else:
        chars.insert(pos, rng.choice(ALPHABET))
    return "".join(chars)


def earliest(members: list[str], text: str) -> int | None:
    """The first offset after which no member can be spelled (None: a member is spelled at the close)."""
    body_end = len(text) - 1  # the closing quote
    for k in range(1, body_end):
        if not any(spells(m, text[1 : k + 1]) for m in members):
            return k
    value = json.loads(text)
    return None if value in members else body_end


def cases(n: int) -> list[Any]:
    rng = random.Random(20261202)
    out = []
    for i in range(n):
        members = sorted({"".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 4))) for _ in range(3)})
        value = rng.choice(members)
        if i % 2:
            value = alter(rng, value)
        out.append(pytest.param(members, write(rng, value), id=f"case{i}"))
    return out


@pytest.mark.parametrize(("members", "text"), cases(120))
def test_enum_escapes_are_rejected_where_no_member_can_be_spelled(members: list[str], text: str) -> None:
    schema = {"type": "string", "enum": members}
    expected = earliest(members, text)
    got = validate_json(schema, text)
    assert (got.error.offset if got.error else None) == expected, (members, text)
    for cut in range(1, len(text)):
        v = StreamValidator(schema)
        v.feed(text[:cut])
        v.feed(text[cut:])
        verdict = v.close()
        assert (verdict.error.offset if verdict.error else None) == expected, cut


@pytest.mark.parametrize(("members", "text"), cases(60))
def test_closed_object_keys_with_escapes_are_rejected_where_no_name_can_be_spelled(
    members: list[str], text: str
) -> None:
    schema = {"type": "object", "properties": {m: {} for m in members}, "additionalProperties": False}
    doc = "{" + text + ": 1}"
    at = earliest(members, text)
    expected = None if at is None else at + 1
    got = validate_json(schema, doc)
    assert (got.error.offset if got.error else None) == expected, (members, doc)
    for cut in range(1, len(doc)):
        v = StreamValidator(schema)
        v.feed(doc[:cut])
        v.feed(doc[cut:])
        verdict = v.close()
        assert (verdict.error.offset if verdict.error else None) == expected, cut
