"""The push parser on its own (the Guard and the format parsers reuse it): events, offsets, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolguard._stream._parser import JsonHandlerBase, JsonParseError, JsonPushParser


class Recorder(JsonHandlerBase):
    """Records events, merging string/key/number parts so any chunking records the same list."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def _text(self, kind: str, text: str, offset: int) -> None:
        if self.events and self.events[-1][0] == kind:
            _, prev, start = self.events[-1]
            self.events[-1] = (kind, prev + text, start)
        else:
            self.events.append((kind, text, offset))

    def value_start(self, kind: str, offset: int) -> None:
        self.events.append(("start", kind, offset))

    def string_part(self, text: str, offset: int) -> None:
        self._text("str", text, offset)

    def key_part(self, text: str, offset: int) -> None:
        self._text("key", text, offset)

    def string_end(self, offset: int) -> None:
        self.events.append(("str_end", offset))

    def key_start(self, offset: int) -> None:
        self.events.append(("key_start", offset))

    def key_end(self, offset: int) -> None:
        self.events.append(("key_end", offset))

    def number_part(self, text: str, start: int) -> None:
        pass

    def number_end(self, text: str, start: int, end: int) -> None:
        self.events.append(("num", text, start, end))

    def literal_end(self, offset: int) -> None:
        self.events.append(("lit_end", offset))

    def comma(self, offset: int) -> None:
        self.events.append(("comma", offset))

    def object_end(self, offset: int) -> None:
        self.events.append(("obj_end", offset))

    def array_end(self, offset: int) -> None:
        self.events.append(("arr_end", offset))


def events(chunks: list[str]) -> list[tuple[Any, ...]]:
    rec = Recorder()
    parser = JsonPushParser(rec)
    for c in chunks:
        parser.feed(c)
    parser.close()
    assert parser.done
    return rec.events


DOC = '{"a": [1, -2.5e3, true, null], "k\\u00e9y": "v\\n\\ud83d\\ude00", "e": {}}'


def test_event_sequence() -> None:
    assert events([DOC]) == [
        ("start", "object", 0),
        ("key_start", 1),
        ("key", "a", 2),
        ("key_end", 3),
        ("start", "array", 6),
        ("start", "number", 7),
        ("num", "1", 7, 8),
        ("comma", 8),
        ("start", "number", 10),
        ("num", "-2.5e3", 10, 16),
        ("comma", 16),
        ("start", "true", 18),
        ("lit_end", 21),
        ("comma", 22),
        ("start", "null", 24),
        ("lit_end", 27),
        ("arr_end", 28),
        ("comma", 29),
        ("key_start", 31),
        ("key", "kéy", 32),
        ("key_end", 40),
        ("start", "string", 43),
        ("str", "v\n😀", 44),
        ("str_end", 59),
        ("comma", 60),
        ("key_start", 62),
        ("key", "e", 63),
        ("key_end", 64),
        ("start", "object", 67),
        ("obj_end", 68),
        ("obj_end", 69),
    ]
    assert json.loads(DOC)["k\u00e9y"] == "v\n\U0001f600"


def test_any_chunking_gives_the_same_events() -> None:
    expected = events([DOC])
    assert events(list(DOC)) == expected
    for i in range(1, len(DOC)):
        assert events([DOC[:i], DOC[i:]]) == expected


def test_lone_surrogate_kept_like_json_loads() -> None:
    doc = '"\\ud83dx"'
    rec = events([doc])
    assert ("str", "\ud83dx", 1) in [(e[0], e[1], 1) for e in rec if e[0] == "str"]
    assert json.loads(doc) == "\ud83dx"


@pytest.mark.parametrize(
    ("text", "offset", "keyword"),
    [
        ("[1,]", 3, "syntax"),
        ("{,}", 1, "syntax"),
        ("[01]", 2, "syntax"),
        ("[1.]", 3, "syntax"),
        ("[1e]", 3, "syntax"),
        ("[-]", 2, "syntax"),
        ("NaN", 0, "syntax"),
        ("[tru]", 4, "syntax"),
        ('"a\\x"', 3, "syntax"),
        ('"\\u12g4"', 5, "syntax"),
        ('{"a" 1}', 5, "syntax"),
        ("[1] 2", 4, "syntax"),
        ("[" * 200, 128, "limit"),
        ("[1", 2, "syntax"),
    ],
)
def test_errors_at_the_offending_character(text: str, offset: int, keyword: str) -> None:
    for chunks in ([text], list(text)):
        parser = JsonPushParser(Recorder())
        with pytest.raises(JsonParseError) as info:
            for c in chunks:
                parser.feed(c)
            parser.close()
        assert (info.value.offset, info.value.keyword) == (offset, keyword), chunks
