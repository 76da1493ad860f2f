"""The SSE decoder: chunk-boundary independence, line endings, framing limits; the error-event encoder.

The last tests run the real proxy against a fake upstream whose one network write carries good events and
then a line that is not UTF-8, and checks the relay fails that attempt at once (not at the next read).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from toolguard import UpstreamProtocolError
from toolguard.proxy._sse import DONE, SSEDecoder, SSEEvent, encode_data, encode_error

from .hostile_upstream import Fault, HostileUpstream, _chunk, _events
from .proxy_server import ProxyServer

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


# -- split invariance of malformed streams: the events before the first bad line, then the error ------------

Outcome = tuple[list[SSEEvent], str | None]


def _outcome(chunks: list[bytes], **kw: int) -> Outcome:
    """Events fed then closed, and the error message (None when the stream decoded cleanly)."""
    decoder = SSEDecoder(**kw)
    out: list[SSEEvent] = []
    try:
        for chunk in chunks:
            out.extend(decoder.feed(chunk))
        out.extend(decoder.close())
    except UpstreamProtocolError as exc:
        return out, str(exc)
    return out, None


def _splits(data: bytes) -> list[list[bytes]]:
    """Whole, one byte at a time, and in two at every byte."""
    return [
        [data],
        [data[i : i + 1] for i in range(len(data))],
        *([data[:k], data[k:]] for k in range(1, len(data))),
    ]


GOOD = b'data: {"a": 1}\n\nevent: ping\ndata: x\n\n'
GOOD_EVENTS = [SSEEvent('{"a": 1}'), SSEEvent("x", "ping")]
AFTER = b"data: never\n\ndata: [DONE]\n\n"  # follows the bad line: never decoded


@pytest.mark.parametrize(
    ("bad", "kw", "message"),
    [
        (b"data: caf\xc3\n\n", {}, "not UTF-8"),  # a character cut short by the line end
        (b"data: \xed\xa0\x80\n\n", {}, "not UTF-8"),  # an encoded surrogate
        (b"event: \xff\n", {}, "not UTF-8"),
        (b"id: \xfe\n", {}, "not UTF-8"),  # unknown fields are decoded too
        (b"data: " + b"z" * 80 + b"\n\n", {"max_line_bytes": 64}, "line exceeds 64 bytes"),
        (b"data: " + b"z" * 80, {"max_line_bytes": 64}, "line exceeds 64 bytes"),  # no line break at all
        (b"data: " + b"z" * 30 + b"\n\n", {"max_event_bytes": 32}, "event exceeds 32 bytes"),
        (b"data: " + b"z" * 20 + b"\ndata: " + b"z" * 20 + b"\n", {"max_event_bytes": 32}, "event exceeds"),
    ],
    ids=[
        "cut-char",
        "surrogate",
        "event-name",
        "unknown-field",
        "long-line",
        "endless-line",
        "fast-event",
        "big-event",
    ],
)
@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_bad_line_after_good_events_whatever_the_split(
    bad: bytes, kw: dict[str, int], message: str, newline: bytes
) -> None:
    stream = (GOOD + bad + AFTER).replace(b"\n", newline)
    for chunks in _splits(stream):
        events, error = _outcome(chunks, **kw)
        assert events == GOOD_EVENTS, [len(c) for c in chunks]
        assert error is not None and message in error, [len(c) for c in chunks]


def test_feed_returns_the_events_before_a_bad_line_and_raises_next() -> None:
    decoder = SSEDecoder()
    assert decoder.error is None
    assert decoder.feed(GOOD + b"data: \xff\n\n" + AFTER) == GOOD_EVENTS
    assert decoder.error is not None and "not UTF-8" in decoder.error
    for call in (lambda: decoder.feed(b"data: more\n\n"), lambda: decoder.feed(b""), decoder.close):
        with pytest.raises(UpstreamProtocolError, match="not UTF-8"):
            call()  # sticky: every later call fails the same way


def test_bad_line_with_nothing_before_it_raises_at_once() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: partial") == []
    with pytest.raises(UpstreamProtocolError, match="not UTF-8"):
        decoder.feed(b" \xff\n\ndata: after\n\n")
    with pytest.raises(UpstreamProtocolError, match="not UTF-8"):
        decoder.close()


def test_unfinished_bad_last_line_fails_at_close() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(GOOD + b"data: \xc3") == GOOD_EVENTS
    with pytest.raises(UpstreamProtocolError, match="not UTF-8"):
        decoder.close()


def test_fuzz_finding_5c0e6f004c54() -> None:
    # An empty data event, then a line that is not UTF-8: fed whole it used to lose the event.
    for chunks in _splits(b"data\n\r\xdb\n"):
        events, error = _outcome(chunks)
        assert events == [SSEEvent("")]
        assert error is not None and "not UTF-8" in error


def test_multibyte_characters_split_anywhere_decode_alike() -> None:
    text = 'hé ☃ 😀 \u00a0"'
    stream = f"data: {text}\n\nevent: é\ndata: 😀\n\n".encode()
    for chunks in _splits(stream):
        assert _outcome(chunks) == ([SSEEvent(text), SSEEvent("😀", "é")], None)


def test_invalid_utf8_in_a_comment_is_ignored_whatever_the_split() -> None:
    stream = b": \xff\xc3 keep-alive\n" + GOOD
    for chunks in _splits(stream):
        assert _outcome(chunks) == (GOOD_EVENTS, None)


def test_one_event_reads_respect_the_event_cap() -> None:
    # A read carrying exactly one single-line event takes a shortcut; the caps still apply to it.
    line = b"data: " + b"q" * 20
    assert _outcome([line + b"\n\n"], max_event_bytes=len(line)) == ([SSEEvent("q" * 20)], None)
    events, error = _outcome([line + b"\n\n"], max_event_bytes=len(line) - 1)
    assert events == [] and error is not None and "event exceeds" in error
    events, error = _outcome([line + b"\n\n"], max_line_bytes=len(line) - 1)
    assert events == [] and error is not None and "line exceeds" in error


def test_encoders() -> None:
    assert encode_data({"k": "v\n"}) == b'data: {"k":"v\\n"}\n\n'
    assert DONE == b"data: [DONE]\n\n"
    event = encode_error("boom", type="invalid_tool_call", code="rejected")
    payload = json.loads(event[len(b"data: ") :])
    assert payload == {
        "error": {"message": "boom", "type": "invalid_tool_call", "param": None, "code": "rejected"}
    }


# -- the relay: a bad line after good events in one read fails the attempt at that read ---------------------


class BadLineUpstream(HostileUpstream):
    """FAKE upstream: on its first request, one write of ``good`` events and a non-UTF-8 line, then a hang."""

    def __init__(self, good: int) -> None:
        super().__init__(lambda n, body: Fault("bad-line" if n == 0 else "ok"))
        self.good = good

    async def _answer(self, w: asyncio.StreamWriter, fault: Fault, body: Any, path: str = "/") -> bool:
        if fault.kind != "bad-line":
            return await super()._answer(w, fault, body, path)
        w.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        w.write(_chunk(b"".join(_events(Fault(), False)[: self.good]) + b"data: \xff\n\n"))
        await w.drain()
        await asyncio.sleep(READ_TIMEOUT + 5)  # the stream neither ends nor sends another byte
        return False


READ_TIMEOUT = 8.0
REQUEST = {
    "model": "m",
    "messages": [{"role": "user", "content": "weather?"}],
    "stream": True,
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
}


def _events_of(text: str) -> list[Any]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]


@pytest.mark.parametrize(
    ("mode", "good", "retried"),
    [("hold", 3, True), ("pass", 2, True), ("pass", 3, False)],
    ids=["hold", "pass-nothing-visible", "pass-fragment-visible"],
)
def test_relay_fails_the_attempt_at_the_read_with_the_bad_line(
    make_proxy: Callable[..., ProxyServer], mode: str, good: int, retried: bool
) -> None:
    with BadLineUpstream(good) as upstream:
        proxy = make_proxy(upstream=upstream.base_url, mode=mode, read_timeout=READ_TIMEOUT)
        start = time.monotonic()
        r = httpx.post(proxy.base_url + "/chat/completions", json=REQUEST, timeout=30)
        elapsed = time.monotonic() - start
    assert elapsed < READ_TIMEOUT / 2  # not left waiting for a read that never comes
    assert r.status_code == 200
    events = _events_of(r.text)
    errors = [e for e in events if "error" in e]
    if retried:  # nothing of the broken attempt was visible: the retry answers
        assert upstream.requests == 2
        assert errors == []
        assert events[-1]["choices"][0]["finish_reason"] == "tool_calls"
    else:  # a fragment went out in pass mode: one terminal error event ends the response
        assert upstream.requests == 1
        assert len(errors) == 1 and "not UTF-8" in errors[0]["error"]["message"]
        assert "error" in events[-1]
