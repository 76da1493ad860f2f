"""The translation's fast path (``_protocols._Translating._fast``) reads the chat writer's own chunks into the
same events as reading them in full, and only those chunks."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from toolguard._openai import ChunkWriter
from toolguard.proxy._protocols import _Messages, _Responses, _Translating, _writer_prefix

TEXTS = ["plain ", 'a "quoted" \\ back', "é \u2028 line\nbreak", '"},"logprobs":null,"finish_reason":null}]}']


def _stream_bytes() -> list[bytes]:
    writer = ChunkWriter(id="chatcmpl-1", created=1, model='m","x":"y')
    out = [writer.role()] + [writer.content(t) for t in TEXTS]
    out.append(writer.call_start(0, "call_1", "f", '{"a": '))
    out += [writer.call_arguments(0, t) for t in ['"x\\"y', ' é"}', '",\\"function\\":{']]
    out.append(writer.call_start(1, "call_2", "g"))
    out.append(writer.call_arguments(1, "{}"))
    out += [
        writer.finish("tool_calls", {"verdict": "ok"}),
        writer.usage({"prompt_tokens": 3}),
        b"data: [DONE]\n\n",
    ]
    return out


def _reference(wire: Any, chunks: list[bytes]) -> bytes:
    """Every chunk read in full."""
    events: list[Any] = []
    for raw in chunks:
        data = raw[6:-2].decode()
        events.extend(wire.stream.close() if data == "[DONE]" else wire.stream.feed(json.loads(data)))
    return bytes(wire.encode(events))


def _translated(wire: Any, chunks: list[bytes]) -> bytes:
    sent: list[bytes] = []

    class Inner:
        complete = False
        status = 200

        async def __call__(self, message: Any) -> None:
            if message["type"] == "http.response.body":
                sent.append(message["body"])

    async def run() -> None:
        t = _Translating(Inner(), wire)
        await t(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for i, raw in enumerate(chunks):
            await t({"type": "http.response.body", "body": raw, "more_body": i < len(chunks) - 1})

    anyio.run(run)
    return b"".join(sent)


def _fixed_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    import itertools

    from toolguard import _messages, _responses

    counter = itertools.count()
    monkeypatch.setattr(_messages, "_id", lambda prefix: f"{prefix}{next(counter)}")
    monkeypatch.setattr(_responses, "_id", lambda prefix: f"{prefix}{next(counter)}")
    monkeypatch.setattr(_responses.time, "time", lambda: 5)


@pytest.mark.parametrize("wire_type", [_Messages, _Responses], ids=["messages", "responses"])
def test_the_fast_path_writes_what_reading_in_full_writes(
    wire_type: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunks = _stream_bytes()
    _fixed_ids(monkeypatch)
    expected = _reference(wire_type({"model": "m"}), chunks)
    _fixed_ids(monkeypatch)
    assert _translated(wire_type({"model": "m"}), chunks) == expected


def test_the_fast_path_takes_the_writer_s_text_and_argument_chunks_only() -> None:
    chunks = [raw[6:-2].decode() for raw in _stream_bytes()[:-1]]
    t = _Translating(None, _Messages({"model": "m"}))
    t._prefix = _writer_prefix(chunks[0])
    assert t._prefix
    taken = [t._fast(t._wire.stream, c) is not None for c in chunks if c.startswith(t._prefix)]
    # role: no; 4 texts: yes; call start: no; 3 fragments: yes; call start: no; fragment: yes; finish: no
    assert taken == [False, True, True, True, True, False, True, True, True, False, True, False]


def _split(chunks: list[bytes], how: str) -> list[bytes]:
    """The same stream sent in other bodies than one event each."""
    if how == "joined":
        return [b"".join(chunks)]
    if how == "bytes":  # one byte per body: every line, and every multi-byte character, split
        return [bytes([b]) for b in b"".join(chunks)]
    if how == "halves":
        return [part for c in chunks for part in (c[: len(c) // 2], c[len(c) // 2 :])]
    if how == "crlf":  # line ends the decoder must read, one event per body
        return [c.replace(b"\n", b"\r\n") for c in chunks]
    if how == "lines":  # the first text event as two data lines, in two bodies: one event, not two
        at = chunks[1].index(b",")
        return [chunks[0], chunks[1][: at + 1] + b"\n", b"data: " + chunks[1][at + 1 :], *chunks[2:]]
    # "mixed": the first text event split, the next two in one body, the rest one event each
    return [chunks[0], chunks[1][:9], chunks[1][9:] + chunks[2] + chunks[3], *chunks[4:]]


@pytest.mark.parametrize("how", ["joined", "bytes", "halves", "crlf", "lines", "mixed"])
@pytest.mark.parametrize("wire_type", [_Messages, _Responses], ids=["messages", "responses"])
def test_any_split_of_the_stream_writes_the_same_events(
    wire_type: Any, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunks = _stream_bytes()
    _fixed_ids(monkeypatch)
    expected = _reference(wire_type({"model": "m"}), chunks)
    _fixed_ids(monkeypatch)
    assert _translated(wire_type({"model": "m"}), _split(chunks, how)) == expected


def test_the_one_event_body_path_takes_the_writer_s_text_and_argument_bodies_only() -> None:
    chunks = _stream_bytes()
    t = _Translating(None, _Messages({"model": "m"}))
    t._event(chunks[0][6:-2].decode())  # the role chunk: read in full, the writer's bytes learnt
    taken = [t._one(c) is not None for c in chunks[1:-1]]
    # 4 texts: yes; call start: no; 3 fragments: yes; call start: no; fragment: yes; finish, usage: no
    assert taken == [True] * 4 + [False] + [True] * 3 + [False, True, False, False]
    text, fragment = chunks[1], chunks[6]
    at = text.index(b'"plain') + 1
    for bad in (b"\r", b"\n", b"\x00", b"\xff", b'"'):  # framing, control, not UTF-8, not one string
        assert t._one(text[:at] + bad + text[at:]) is None
    digit = fragment.index(b'"index":') + 8
    assert t._one(fragment[:digit] + "\u0663".encode() + fragment[digit + 1 :]) is None  # a non-ASCII digit
    assert t._one(text[:-1]) is None and t._one(fragment[:-1]) is None
