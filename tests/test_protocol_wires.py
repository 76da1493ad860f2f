"""The Messages and Responses wire modules, sans-IO: any JSON request is a chat request or a refusal.

Property tests over arbitrary JSON (and over requests shaped like each protocol's, with arbitrary values in
every field): ``to_chat`` never raises anything but ``ProtocolRefusal`` (a 400 naming the field), and what it
returns is a chat request the proxy's chat path can check.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolguard import _messages, _responses
from toolguard._messages import ProtocolRefusal

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
BLOCK_TYPES = [
    "text",
    "image",
    "tool_use",
    "tool_result",
    "thinking",
    "document",
    "input_text",
    "output_text",
    "function_call",
    "function_call_output",
    "reasoning",
    "message",
    "input_image",
]


def _block() -> Any:
    return st.fixed_dictionaries(
        {"type": st.sampled_from(BLOCK_TYPES)},
        optional={
            k: JSON
            for k in (
                "text",
                "id",
                "name",
                "input",
                "content",
                "tool_use_id",
                "is_error",
                "source",
                "call_id",
                "arguments",
                "output",
                "role",
                "image_url",
            )
        },
    )


MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "developer", "tool"]) | JSON},
    optional={"content": st.text(max_size=8) | st.lists(_block(), max_size=3) | JSON, "type": JSON},
)
MESSAGES_REQUEST = st.fixed_dictionaries(
    {"model": JSON, "max_tokens": st.integers() | JSON, "messages": st.lists(MESSAGE, max_size=3) | JSON},
    optional={
        "system": JSON,
        "tools": st.lists(JSON, max_size=2) | JSON,
        "tool_choice": JSON,
        "stream": JSON,
        "stop_sequences": JSON,
        "thinking": JSON,
    },
)
RESPONSES_REQUEST = st.fixed_dictionaries(
    {"model": JSON, "input": st.text(max_size=8) | st.lists(MESSAGE | _block(), max_size=3) | JSON},
    optional={
        "instructions": JSON,
        "tools": st.lists(JSON, max_size=2) | JSON,
        "tool_choice": JSON,
        "stream": JSON,
        "text": JSON,
        "max_output_tokens": JSON,
        "previous_response_id": JSON,
    },
)


def _translates_or_refuses(to_chat: Any, body: Any) -> None:
    try:
        chat = to_chat(body)
    except ProtocolRefusal as exc:
        assert str(exc)
        return
    assert isinstance(chat, dict) and isinstance(chat["messages"], list)
    for message in chat["messages"]:
        assert message["role"] in ("system", "user", "assistant", "tool")


@settings(max_examples=300, deadline=None)
@given(st.one_of(JSON, MESSAGES_REQUEST))
def test_messages_to_chat_translates_or_refuses(body: Any) -> None:
    _translates_or_refuses(_messages.to_chat, body)


@settings(max_examples=300, deadline=None)
@given(st.one_of(JSON, RESPONSES_REQUEST))
def test_responses_to_chat_translates_or_refuses(body: Any) -> None:
    _translates_or_refuses(_responses.to_chat, body)


def test_error_bodies_keep_the_status_type() -> None:
    assert _messages.error_body(429, {"error": {"message": "slow down"}}) == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
    }
    assert _messages.error_body(502, None)["error"]["type"] == "api_error"


def test_usage_from_a_careless_upstream_counts_zero() -> None:
    completion = {
        "id": "chatcmpl-1",
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": "12", "completion_tokens": -1},
    }
    assert _messages.from_chat(completion)["usage"] == {"input_tokens": 0, "output_tokens": 0}
    assert _responses.from_chat(completion, {"model": "m"})["usage"]["total_tokens"] == 0


_generic = __import__("json").JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

TRICKY = ["plain ", 'a "quoted" \\ back', "é ünï \u2028 line\nbreak", "<tag>&", ""]


def _chunks() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"id": "chatcmpl-x", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}
    ]
    out += [{"choices": [{"index": 0, "delta": {"content": t}}]} for t in TRICKY]
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": '}}
    out.append({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    out += [
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": t}}]}}]}
        for t in ['"x\\"y', ' é"}']
    ]
    out.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return out


def test_the_delta_templates_write_the_generic_bytes() -> None:
    messages = _messages.MessagesStream(model="m")
    responses = _responses.ResponsesStream({"model": "m"})
    m_events = [e for c in _chunks() for e in messages.feed(c)] + messages.close()
    r_events = [e for c in _chunks() for e in responses.feed(c)] + responses.close()
    assert {name for name, _ in m_events} >= {"content_block_delta"}
    for name, data in m_events:
        generic = b"event: " + name.encode() + b"\ndata: " + _generic(data).encode() + b"\n\n"
        assert _messages.encode_event(name, data) == generic
    kinds = {data["type"] for data in r_events}
    assert {"response.output_text.delta", "response.function_call_arguments.delta"} <= kinds
    for data in r_events:
        generic = b"event: " + data["type"].encode() + b"\ndata: " + _generic(data).encode() + b"\n\n"
        assert _responses.encode_event(data) == generic


#: Strings the fast encoding must escape as the JSON encoder does (``%``: the templates are %-formats).
AWKWARD = [
    'say "hi"',
    "back\\slash \\u0041 \\n",
    "\x00\x01\x08\x0c\x1f\x7f\t\r\n",
    "😀 𝄞 non-BMP",
    "\u2028 and \u2029",
    "100% %d %s %% %(x)s",
    "é ünï ß",
    "</script>",
]


def _written(module: Any, fast: bool, texts: list[str], fragments: list[str]) -> bytes:
    """One stream's bytes: its text and argument chunks written by the fast path (``text_sse``,
    ``arguments_sse``), or every chunk read by ``feed`` and written by the generic JSON encoder."""
    stream: Any = (
        module.MessagesStream(model="m") if module is _messages else module.ResponsesStream({"model": "m"})
    )

    def written(events: list[Any]) -> bytes:
        out = b""
        for event in events:
            name, data = event if module is _messages else (event["type"], event)
            out += b"event: " + name.encode() + b"\ndata: " + _generic(data).encode() + b"\n\n"
        return out

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return written(stream.feed({"id": "x", "choices": [{"delta": delta, "finish_reason": finish}]}))

    def text(piece: str) -> bytes:
        return stream.text_sse(piece) if fast else chunk({"content": piece})

    def arguments(index: int, piece: str) -> bytes:
        if fast:
            return bytes(stream.arguments_sse(index, piece))
        return chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})

    out = chunk({"role": "assistant", "content": ""}) + b"".join(text(t) for t in texts)
    out += chunk(
        {"tool_calls": [{"index": 0, "id": "call_%d", "function": {"name": "f%s", "arguments": ""}}]}
    )
    out += b"".join(arguments(0, f) for f in fragments)
    out += b"".join(arguments(1, f) for f in fragments[:2])  # a call whose start the stream never saw
    out += text(texts[0]) + chunk({}, "tool_calls")  # text after the calls: a new item
    return out + written(stream.close())


def _data(raw: bytes) -> list[Any]:
    return [__import__("json").loads(line[6:]) for line in raw.split(b"\n") if line.startswith(b"data: ")]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(AWKWARD) | st.text(min_size=1, max_size=12), min_size=1, max_size=5),
    st.lists(st.sampled_from(AWKWARD) | st.text(min_size=1, max_size=12), min_size=1, max_size=5),
)
def test_the_fast_stream_encoding_writes_the_generic_bytes(texts: list[str], fragments: list[str]) -> None:
    for module in (_messages, _responses):
        runs = []
        for fast in (True, False):  # the same ids in both: awkward ones, % and a quote in them
            counter = itertools.count()
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(module, "_id", lambda prefix, c=counter: f'{prefix}%d"%s{next(c)}')
                patch.setattr(_responses.time, "time", lambda: 5)
                runs.append(_written(module, fast, texts, fragments))
        assert _data(runs[0]) == _data(runs[1])
        assert runs[0] == runs[1]
        assert (
            b"event: content_block_delta" in runs[0] or b"response.function_call_arguments.delta" in runs[0]
        )
