"""Coverage-guided harness: the proxy's SSE decoder (``toolguard.proxy._sse.SSEDecoder``).

Invariant: fed whole, one byte at a time, or split in two at every byte (inputs up to 200 bytes), the decoder
gives the same events and the same error class, and raises nothing but ``ToolguardError``.

    python fuzz/harnesses/sse_harness.py -max_total_time=60 fuzz/corpus/sse
"""

from __future__ import annotations

from typing import Any

from _harness import main

decoder_cls: Any = None


def instrument() -> None:
    global decoder_cls
    from toolguard.proxy._sse import SSEDecoder

    decoder_cls = SSEDecoder


def _events(chunks: list[bytes]) -> tuple[list[tuple[str, str | None]], str | None]:
    from toolguard import ToolguardError

    decoder = decoder_cls(max_line_bytes=256, max_event_bytes=512)
    out: list[tuple[str, str | None]] = []
    try:
        for chunk in chunks:
            out.extend((e.data, e.event) for e in decoder.feed(chunk))
        out.extend((e.data, e.event) for e in decoder.close())
    except ToolguardError as exc:
        return out, type(exc).__name__
    return out, None


def test_one_input(data: bytes) -> None:
    whole = _events([data])
    splits = [[data[i : i + 1] for i in range(len(data))]]
    if len(data) <= 200:
        splits += [[data[:k], data[k:]] for k in range(1, len(data))]
    for chunks in splits:
        got = _events(chunks)
        assert got == whole, f"split {[len(c) for c in chunks][:8]}: {got!r} != whole {whole!r}"


if __name__ == "__main__":
    main(test_one_input, instrument)
