"""The SSE decoder: chunk-boundary independence, line endings, framing limits; the error-event encoder."""

from __future__ import annotations

import json

import pytest

from toolguard import UpstreamProtocolError
from toolguard.proxy._sse import DONE, SSEDecoder, SSEEvent, encode_data, encode_error

STREAM = (
    b": keep-alive comment\n"
    b'data: {"a": 1}\n\n'
    b"event: ping\ndata: x\n\n"
    b"data: line one\ndata: line two\n\n"
    b"retry: 10\nid: 7\ndata:no-space\n\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    SSEEvent('{"a": 1}'),
    SSEEvent("x", "ping"),
    SSEEvent("line one\nline two"),
    SSEEvent("no-space"),
    SSEEvent("[DONE]"),
]


def _decode(chunks: list[bytes], **kw: int) -> list[SSEEvent]:
    decoder = SSEDecoder(**kw)
    out: list[SSEEvent] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.close())
    return out


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_whole_and_byte_by_byte_agree(newline: bytes) -> None:
    stream = STREAM.replace(b"\n", newline)
    assert _decode([stream]) == EXPECTED
    assert _decode([stream[i : i + 1] for i in range(len(stream))]) == EXPECTED
    assert _decode([stream[i : i + 7] for i in range(0, len(stream), 7)]) == EXPECTED


def test_event_without_final_blank_line_is_dispatched_at_close() -> None:
    assert _decode([b"data: tail"]) == [SSEEvent("tail")]


def test_utf8_split_across_chunks() -> None:
    raw = 'data: {"c": "héllo ☃"}\n\n'.encode()
    cut = raw.index("☃".encode()) + 1
    assert _decode([raw[:cut], raw[cut:]]) == [SSEEvent('{"c": "héllo ☃"}')]


def test_line_without_newline_past_the_cap_is_malformed() -> None:
    decoder = SSEDecoder(max_line_bytes=1024)
    decoder.feed(b"data: " + b"x" * 1000)
    with pytest.raises(UpstreamProtocolError, match="line exceeds"):
        decoder.feed(b"x" * 100)


def test_event_past_the_cap_is_malformed() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    with pytest.raises(UpstreamProtocolError, match="event exceeds"):
        decoder.feed(b"data: " + b"y" * 60 + b"\n" + b"data: " + b"y" * 60 + b"\n")


def test_invalid_utf8_is_malformed() -> None:
    with pytest.raises(UpstreamProtocolError, match="UTF-8"):
        SSEDecoder().feed(b"data: \xff\xfe\n\n")


def test_encoders() -> None:
    assert encode_data({"k": "v\n"}) == b'data: {"k":"v\\n"}\n\n'
    assert DONE == b"data: [DONE]\n\n"
    event = encode_error("boom", type="invalid_tool_call", code="rejected")
    payload = json.loads(event[len(b"data: ") :])
    assert payload == {
        "error": {"message": "boom", "type": "invalid_tool_call", "param": None, "code": "rejected"}
    }
