"""Coverage-guided harness: the tool-call format parsers (``toolguard.formats``).

Invariants, for every format (auto, openai, hermes, llama3, mistral, react): ``parse`` raises nothing but
``ToolguardError``; ``StreamingParser`` fed one character at a time, or split in two (at every character for
inputs up to 40 characters, else at four points), ends in the same ``Parsed`` as ``parse``.

    python fuzz/harnesses/formats_harness.py -max_total_time=60 fuzz/corpus/formats
"""

from __future__ import annotations

from typing import Any

from _harness import main

formats: Any = None


def instrument() -> None:
    global formats
    import toolguard.formats as module

    formats = module


def _stream(fmt: str, chunks: list[str]) -> Any:
    parser = formats.StreamingParser(fmt)
    for chunk in chunks:
        parser.feed(chunk)
    return parser.close()


def test_one_input(data: bytes) -> None:
    from toolguard import ToolguardError

    text = data.decode("utf-8", "replace")
    for fmt in formats.FORMATS:
        try:
            whole = formats.parse(text, format=fmt)
        except ToolguardError:
            continue
        splits = [list(text)]
        if len(text) <= 40:
            splits += [[text[:k], text[k:]] for k in range(1, len(text))]
        else:
            splits += [[text[:k], text[k:]] for k in (1, len(text) // 3, len(text) // 2, len(text) - 1)]
        for chunks in splits:
            got = _stream(fmt, chunks)
            assert got == whole, f"{fmt}, split {[len(c) for c in chunks][:8]}:\n{got!r}\n!= parse {whole!r}"


if __name__ == "__main__":
    main(test_one_input, instrument)
