"""Coverage-guided harness: the StreamValidator's JSON push parser (``toolguard._stream._parser``).

Invariants: the events (string parts joined), the error offset and keyword are the same fed whole, one
character at a time, or split in two (at every character for inputs up to 200 characters); a syntax error is
reported exactly where an independent RFC 8259 prefix recognizer (``toolguard._fuzz._jsonref.scan_prefix``)
says the text stops being a JSON prefix; nothing but ``JsonParseError`` is raised.

    python fuzz/harnesses/json_parser_harness.py -max_total_time=60 fuzz/corpus/json
"""

from __future__ import annotations

from typing import Any

from _harness import main

parser_cls: Any = None
base_cls: Any = object
parse_error: Any = None


def instrument() -> None:
    global parser_cls, base_cls, parse_error
    from toolguard._stream._parser import JsonHandlerBase, JsonParseError, JsonPushParser

    parser_cls, base_cls, parse_error = JsonPushParser, JsonHandlerBase, JsonParseError


def _run(chunks: list[str]) -> tuple[list[tuple[Any, ...]], tuple[int, str] | None]:
    events: list[tuple[Any, ...]] = []
    text: list[str] = []

    class Recorder(base_cls):  # type: ignore[misc, valid-type]
        def value_start(self, kind: str, offset: int) -> None:
            events.append(("start", kind, offset))

        def string_part(self, part: str, offset: int) -> None:
            text.append(part)

        def string_end(self, offset: int) -> None:
            events.append(("string", "".join(text), offset))
            text.clear()

        def key_start(self, offset: int) -> None:
            events.append(("key_start", offset))

        def key_part(self, part: str, offset: int) -> None:
            text.append(part)

        def key_end(self, offset: int) -> None:
            events.append(("key", "".join(text), offset))
            text.clear()

        def number_part(self, part: str, start: int) -> None:
            pass

        def number_end(self, literal: str, start: int, end: int) -> None:
            events.append(("number", literal, start, end))

        def literal_end(self, offset: int) -> None:
            events.append(("literal", offset))

        def comma(self, offset: int) -> None:
            events.append(("comma", offset))

        def object_end(self, offset: int) -> None:
            events.append(("}", offset))

        def array_end(self, offset: int) -> None:
            events.append(("]", offset))

    parser = parser_cls(Recorder())
    try:
        for chunk in chunks:
            parser.feed(chunk)
        parser.close()
    except parse_error as exc:
        return events, (exc.offset, exc.keyword)
    return events, None


def test_one_input(data: bytes) -> None:
    from toolguard._fuzz._jsonref import is_complete, scan_prefix

    text = data.decode("utf-8", "replace")
    whole = _run([text])
    splits = [list(text)]
    if len(text) <= 200:
        splits += [[text[:k], text[k:]] for k in range(1, len(text))]
    for chunks in splits:
        got = _run(chunks)
        assert got == whole, f"split {[len(c) for c in chunks][:8]}: {got!r}\n!= whole {whole!r}"
    bad, _ = scan_prefix(text, duplicates=False)
    error = whole[1]
    if error is not None and error[1] == "limit":
        return
    if bad is not None:
        assert error == (bad, "syntax"), f"syntax error at {bad} per RFC 8259, parser said {error}"
    elif is_complete(text, duplicates=False):
        assert error is None, f"complete JSON rejected: {error}"
    else:
        assert error is not None, "an incomplete document was accepted at close()"


if __name__ == "__main__":
    main(test_one_input, instrument)
