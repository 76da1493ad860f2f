"""``toolguard._openai``: the one reader and writer of the OpenAI chat-completions wire shape."""

from __future__ import annotations

import email.utils
import json
import re

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from toolguard import ContentDelta, Finish, Policy, ToolCallDelta
from toolguard._exceptions import (
    GrammarCompileTimeout,
    RemoteRefRefused,
    SchemaError,
    UnsupportedKeyword,
    UpstreamTimeout,
    UsageError,
)
from toolguard._openai import (
    ERROR_CODES,
    ChunkWriter,
    choice_events,
    closing_chunk,
    error_body,
    exception_code,
    first_choice,
    message_events,
    parse_retry_after,
    pieces_chunk,
    read_chunk,
    reply_message,
)
from toolguard._release import CallArguments, CallStart, Text
from toolguard._retry import RetryPolicy, exponential_backoff

CHUNK = {
    "id": "c1",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "delta": {
                "content": "Hi. ",
                "tool_calls": [
                    {"index": 0, "id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": '{"city"'}},
                    {"index": 1, "function": {"arguments": ": 1"}},
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
}
EVENTS = [
    ContentDelta("Hi. "),
    ToolCallDelta(0, "call_1", "get_weather", '{"city"'),
    ToolCallDelta(1, None, None, ": 1"),
]


def test_a_chunk_reads_the_same_as_a_dict_and_as_an_sdk_object() -> None:
    sdk = ChatCompletionChunk.model_validate(CHUNK)
    assert choice_events(CHUNK["choices"][0]) == (EVENTS, "tool_calls")
    assert choice_events(sdk.choices[0]) == (EVENTS, "tool_calls")
    assert read_chunk(CHUNK).events == [*EVENTS, Finish("tool_calls")]


def test_a_hostile_chunk_is_skipped_not_raised() -> None:
    delta = {"content": 3, "tool_calls": [7, {"function": "x", "index": "a"}]}
    odd = {"choices": [{"index": 0, "delta": delta, "finish_reason": 5}]}
    assert read_chunk(odd).events == [ToolCallDelta(1, None, None, "")]
    with pytest.raises(ValueError):
        read_chunk([1])


def test_reasoning_deltas_are_forwarded_unjudged() -> None:
    chunk = read_chunk({"choices": [{"index": 0, "delta": {"reasoning_content": "hmm"}}]})
    assert (chunk.events, chunk.extra) == ([], {"reasoning_content": "hmm"})


def test_a_message_reads_the_same_as_a_dict_and_as_an_sdk_object() -> None:
    completion = {
        "id": "x", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "ok",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}],
    }
    expected = [ContentDelta("ok"), ToolCallDelta(0, "c", "f", "{}"), Finish("tool_calls")]
    for form in (completion, ChatCompletion.model_validate(completion)):
        message, finish = first_choice(form)
        assert message_events(message, finish) == expected
        plain, finish = reply_message(form)
        assert finish == "tool_calls" and plain["tool_calls"][0]["function"]["name"] == "f"


def test_reply_message_joins_parts_and_reads_a_legacy_function_call() -> None:
    legacy = {"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"text": "b"}],
                                       "function_call": {"name": "f", "arguments": "{}"}}}]}
    message, _ = reply_message(legacy)
    assert message["content"] == "ab"
    assert message["tool_calls"] == [{"function": {"name": "f", "arguments": "{}"}}]


def test_released_pieces_become_the_same_chunks_as_bytes_and_as_objects() -> None:
    pieces = [Text("Hi. "), CallStart(0, "call_1", "get_weather", '{"city"'), CallArguments(0, ': "Oslo"}')]
    writer = ChunkWriter(id="c1", created=1, model="m")
    sse = [json.loads(raw.removeprefix(b"data: ")) for raw in writer.pieces(pieces)]
    deltas = [c["choices"][0]["delta"] for c in sse]
    assert deltas == [
        {"content": "Hi. "},
        {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": '{"city"'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": ': "Oslo"}'}}]},
    ]
    one = pieces_chunk(CHUNK, pieces)
    sdk = pieces_chunk(ChatCompletionChunk.model_validate(CHUNK), pieces)
    assert one["choices"][0]["delta"]["content"] == "Hi. " == sdk.choices[0].delta.content
    assert choice_events(one["choices"][0]) == choice_events(sdk.choices[0])
    fresh = json.loads(writer.pieces([CallStart(1, None, "f", "")])[0].removeprefix(b"data: "))
    assert re.fullmatch(r"call_[0-9a-f]{24}", fresh["choices"][0]["delta"]["tool_calls"][0]["id"])
    assert closing_chunk(CHUNK, "stop")["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop",
                                                          "logprobs": None}
    last = json.loads(writer.finish("stop", {"verdict": "ok"}).removeprefix(b"data: "))["choices"][0]
    assert last["delta"] == {"toolguard": {"verdict": "ok"}} and last["finish_reason"] == "stop"


def test_error_bodies_have_one_shape_and_snake_case_codes() -> None:
    assert error_body("no", status=429, code="upstream_error") == {
        "error": {"message": "no", "type": "rate_limit_error", "param": None, "code": "upstream_error"}
    }
    cases = {
        UnsupportedKeyword("x"): "unsupported_keyword",
        RemoteRefRefused("x"): "remote_ref_refused",
        SchemaError("x"): "invalid_tool_schema",
        GrammarCompileTimeout("x"): "grammar_compile_timeout",
        UsageError("x"): "invalid_request",
        UpstreamTimeout("x"): "upstream_timeout",
        RuntimeError("x"): "server_error",
    }
    for exc, code in cases.items():
        assert exception_code(exc) == code
    assert all(re.fullmatch(r"[a-z]+(_[a-z]+)*", code) for code in ERROR_CODES)


def test_retry_after_is_read_once_for_every_header_form() -> None:
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "-3"}) == 0.0
    date = email.utils.formatdate(1_000_030, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=1_000_000) == 30.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after-ms": "x", "retry-after": "2"}) == 2.0
    assert parse_retry_after(None) is None and parse_retry_after({}) is None


def test_one_backoff_formula() -> None:
    policy = Policy(backoff_initial=0.5, backoff_max=4.0, backoff_jitter=0.5)
    tools = RetryPolicy(backoff=0.5, max_backoff=4.0, jitter=0.5, random=lambda: 0.25)
    for retry in range(1, 6):
        expected = min(4.0, 0.5 * 2 ** (retry - 1)) * (1 - 0.5 * 0.25)
        assert policy.backoff(retry, lambda: 0.25) == pytest.approx(expected)
        assert tools.delay(retry) == pytest.approx(expected)
        assert exponential_backoff(retry, initial=0.5, cap=4.0, jitter=0.5, random=lambda: 0.25) == expected
