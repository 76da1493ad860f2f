"""``POST /v1/messages`` with the official anthropic SDK, in both upstream modes (``protocol_modes``):
native (the scripted upstream's own ``/v1/messages``) and translated (a chat-only upstream).

Every answer is judged by the same Guard and gate as the chat path; these tests check what the anthropic
client sees (typed blocks, stop reasons, typed exceptions) and what the upstream was asked (the request as
the client sent it plus the flow's additions in Messages terms, or the chat translation).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import Reply, ScriptedUpstream
from tests.support.weather import MESSAGES, WEATHER_MESSAGES_TOOL

from . import protocol_modes as modes
from .helpers import LOOP_UNIT, bad_schema, good, runaway_content, truncated
from .protocol_modes import guarded
from .proxy_server import ProxyServer

anthropic = pytest.importorskip("anthropic")

TOOL = WEATHER_MESSAGES_TOOL
ASK = MESSAGES

# every test here runs against a native and a chat-only upstream
upstream_mode, upstream, hold, passing = modes.upstream_mode, modes.upstream, modes.hold, modes.passing


def _sent(upstream: ScriptedUpstream) -> list[Any]:
    return guarded(upstream, "messages")


def _client(proxy: ProxyServer) -> Any:
    return anthropic.Anthropic(base_url=proxy.root, api_key="sk-client", max_retries=0, timeout=20)


def _create(proxy: ProxyServer, **kw: Any) -> Any:
    with _client(proxy) as client:
        return client.messages.with_raw_response.create(
            model="m",
            max_tokens=kw.pop("max_tokens", 256),
            messages=kw.pop("messages", ASK),
            tools=kw.pop("tools", [TOOL]),
            **kw,
        )


def _stream(proxy: ProxyServer, **kw: Any) -> tuple[list[Any], Any]:
    """(raw events, the SDK's accumulated final message) of one streamed request."""
    with (
        _client(proxy) as client,
        client.messages.stream(
            model="m",
            max_tokens=kw.pop("max_tokens", 256),
            messages=kw.pop("messages", ASK),
            tools=kw.pop("tools", [TOOL]),
            **kw,
        ) as stream,
    ):
        events = list(stream)
        return events, stream.get_final_message()


def test_a_valid_call_is_a_tool_use_block(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good(usage={"prompt_tokens": 12, "completion_tokens": 7}))
    raw = _create(hold)
    assert (raw.headers["x-toolguard-retries"], raw.headers["x-toolguard-verdict"]) == ("0", "ok")
    message = raw.parse()
    assert message.stop_reason == "tool_use"
    [block] = message.content
    assert block.type == "tool_use" and block.name == "get_weather"
    assert block.input == {"city": "Paris", "unit": "c"}
    assert (message.usage.input_tokens, message.usage.output_tokens) == (12, 7)
    assert raw.headers["x-toolguard-protocol"] == ("translated" if upstream.chat_only else "native")
    [request] = _sent(upstream)
    sent = request.body
    if not upstream.chat_only:  # the request as the client sent it
        assert sent == {"model": "m", "max_tokens": 256, "messages": ASK, "tools": [TOOL]}
        return
    assert sent["tools"][0] == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": TOOL["description"],
            "parameters": TOOL["input_schema"],
        },
    }
    assert sent["max_tokens"] == 256 and sent["messages"] == ASK


def test_an_invalid_call_is_re_asked_then_valid(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(bad_schema(), good())
    raw = _create(hold)
    assert raw.headers["x-toolguard-retries"] == "1"
    message = raw.parse()
    assert message.stop_reason == "tool_use" and message.content[-1].input == {"city": "Paris", "unit": "c"}
    assert len(_sent(upstream)) == 2
    reask = _sent(upstream)[1].body["messages"]
    if upstream.chat_only:
        assert any(m["role"] == "tool" for m in reask)  # the violation went back as a tool result
        return
    # in Messages terms: the failed tool_use, then a tool_result with is_error carrying the violation
    assert reask[: len(ASK)] == ASK
    [use] = reask[-2]["content"]
    [result] = reask[-1]["content"]
    assert use["type"] == "tool_use" and use["input"] == {"city": "Paris", "unit": "kelvin"}
    assert result["type"] == "tool_result" and result["tool_use_id"] == use["id"] and result["is_error"]
    assert "get_weather" in result["content"] and "/unit" in result["content"]


def test_a_call_invalid_on_every_attempt_is_a_typed_422(
    hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(*[bad_schema() for _ in range(hold.app.config.max_attempts)])
    with pytest.raises(anthropic.UnprocessableEntityError) as info:
        _create(hold)
    body = info.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "kelvin" in json.dumps(body["error"]["toolguard"])


def _truncated(upstream: ScriptedUpstream) -> Reply:
    """A call cut by max_tokens (a Messages upstream's cut ``tool_use`` carries what input parsed)."""
    if upstream.chat_only:
        return truncated()
    return Reply.call("get_weather", '{"city": "Pa"}', finish_reason="length")


def test_truncation_is_max_tokens_and_never_a_call(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(_truncated(upstream), _truncated(upstream))
    raw = _create(hold, max_tokens=10)
    assert raw.headers["x-toolguard-verdict"] == "truncated"
    assert _sent(upstream)[1].body["max_tokens"] == 20  # the chat flow's own retry, in Messages terms
    message = raw.parse()
    assert message.stop_reason == "max_tokens"
    assert not [b for b in message.content if b.type == "tool_use"]


def test_a_runaway_is_cut_after_one_copy(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(runaway_content(), runaway_content(), runaway_content())
    raw = _create(hold, tools=[])
    assert raw.headers["x-toolguard-verdict"] == "runaway"
    message = raw.parse()
    assert message.stop_reason == "max_tokens"
    text = message.content[0].text
    assert text.count(LOOP_UNIT.strip()) <= 2 and len(text) < len(LOOP_UNIT) * 5


def test_fabricated_text_after_the_call_is_cut(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good(content=("Checking.\nObservation: 21 degrees, sunny.",)))
    raw = _create(hold)
    assert raw.headers["x-toolguard-verdict"] == "fabricated"
    message = raw.parse()
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[0].text == "Checking.\n" and "sunny" not in json.dumps(message.model_dump())


def test_history_with_tool_use_and_tool_result(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.text("It is 18C in Paris."))
    history = [
        *ASK,
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "18C"}],
                },
                {"type": "text", "text": "And in words?"},
            ],
        },
    ]
    message = _create(hold, messages=history, system="Be brief.").parse()
    assert message.stop_reason == "end_turn" and message.content[0].text == "It is 18C in Paris."
    if not upstream.chat_only:  # the turns as they came
        assert _sent(upstream)[0].body["messages"] == history
        assert _sent(upstream)[0].body["system"] == "Be brief."
        return
    sent = upstream.chat_requests[0].body["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert sent[2]["tool_calls"][0]["id"] == "toolu_1"
    assert json.loads(sent[2]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert sent[3] == {"role": "tool", "tool_call_id": "toolu_1", "content": "18C"}
    assert sent[4] == {"role": "user", "content": "And in words?"}


@pytest.mark.parametrize(
    ("choice", "chat"),
    [
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "get_weather"}, {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
def test_tool_choice(hold: ProxyServer, upstream: ScriptedUpstream, choice: Any, chat: Any) -> None:
    upstream.script(Reply.text("No tool.") if choice["type"] == "none" else good())
    _create(hold, tool_choice=choice)
    assert _sent(upstream)[0].body["tool_choice"] == (chat if upstream.chat_only else choice)


def test_tool_choice_any_refuses_a_text_answer(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.text("I will not call it."), good())
    message = _create(hold, tool_choice={"type": "any"}).parse()
    assert message.stop_reason == "tool_use" and len(_sent(upstream)) == 2


def test_what_cannot_be_translated_is_a_typed_400(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        _create(hold, tools=[{"type": "web_search_20250305", "name": "web_search"}])
    assert info.value.body["error"]["type"] == "invalid_request_error"
    assert "web_search" in info.value.body["error"]["message"]
    assert not upstream.requests


def test_an_upstream_error_keeps_its_status(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(*[Reply.error(401) for _ in range(3)])
    with pytest.raises(anthropic.AuthenticationError) as info:
        _create(hold)
    assert info.value.body["type"] == "error"


# ------------------------------------------------------------------------------------------------- stream
@pytest.mark.parametrize("mode", ["hold", "passing"])
def test_stream_a_call(mode: str, request: pytest.FixtureRequest, upstream: ScriptedUpstream) -> None:
    proxy = request.getfixturevalue(mode)
    upstream.script(Reply.calls(*good().tool_calls, content=("Let me check. ",)))
    events, message = _stream(proxy)
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "input_json" in kinds  # the SDK's own event for input_json_delta.partial_json
    assert message.stop_reason == "tool_use"
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[0].text == "Let me check. "
    assert message.content[1].input == {"city": "Paris", "unit": "c"}
    assert message.usage.output_tokens > 0
    [request] = _sent(upstream)
    assert request.body["stream"] is True


def test_stream_re_ask(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(bad_schema(), good())
    _, message = _stream(hold)
    assert message.stop_reason == "tool_use" and message.content[-1].input == {"city": "Paris", "unit": "c"}
    assert len(_sent(upstream)) == 2


def test_stream_pass_mode_ends_a_shown_invalid_call_with_an_error_event(
    passing: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(bad_schema(), good())
    with pytest.raises(anthropic.APIStatusError) as info:
        _stream(passing)
    assert info.value.body["type"] == "error" and info.value.body["error"]["code"] == "rejected"
    assert len(_sent(upstream)) == 1  # what was shown cannot be taken back: no invisible retry


def test_stream_truncation(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(truncated(), truncated())  # streamed, a cut input is a cut partial_json either way
    _, message = _stream(hold, max_tokens=10)
    assert message.stop_reason == "max_tokens" and not [b for b in message.content if b.type == "tool_use"]


def test_stream_runaway(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(runaway_content(), runaway_content(), runaway_content())
    _, message = _stream(hold, tools=[])
    assert message.stop_reason == "max_tokens"
    assert len(message.content[0].text) < len(LOOP_UNIT) * 5


def test_stream_fabricated_text_cut(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good(content_after=("The weather in Paris is ", "sunny and 25C.")))
    _, message = _stream(hold)
    assert [b.type for b in message.content] == ["tool_use"]


def test_stream_violation_is_a_typed_error(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(*[bad_schema() for _ in range(hold.app.config.max_attempts)])
    with pytest.raises(anthropic.APIStatusError) as info:
        _stream(hold)
    assert info.value.body["type"] == "error"
    assert info.value.body["error"]["type"] == "invalid_request_error"


REASONING_CHUNKS = [
    {"role": "assistant", "content": ""},
    {"reasoning_content": "The user wants Paris; "},
    {"reasoning_content": '"unit": "kelvin" is no option.'},
    {
        "tool_calls": [
            {
                "index": 0,
                "id": "call_r",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ]
    },
]
REASONING = 'The user wants Paris; "unit": "kelvin" is no option.'


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_reasoning_is_a_thinking_block_never_judged(
    stream: bool, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(Reply(chunks=REASONING_CHUNKS, finish_reason="tool_calls"))
    message = _stream(hold)[1] if stream else _create(hold).parse()
    assert [b.type for b in message.content] == ["thinking", "tool_use"]
    assert message.content[0].thinking == REASONING
    assert message.content[1].input == {"city": "Paris"} and message.stop_reason == "tool_use"
    assert len(_sent(upstream)) == 1
    # a Messages upstream's signature comes back unchanged (the client sends it again next turn)
    assert message.content[0].signature == ("" if upstream.chat_only else Reply().signature)


REDACTED = "RW5jcnlwdGVkIHRoaW5raW5n"


@pytest.mark.parametrize("text", [False, True], ids=["call", "text-then-call"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_redacted_thinking_comes_back_as_it_came(
    stream: bool, text: bool, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    chunks = REASONING_CHUNKS[:3] + ([{"content": "Checking. "}] if text else []) + REASONING_CHUNKS[3:]
    upstream.script(Reply(chunks=chunks, finish_reason="tool_calls", redacted=REDACTED))
    if stream:
        events, message = _stream(hold)
        starts = [e for e in events if e.type == "content_block_start"]
        assert [e.index for e in starts] == list(range(len(message.content)))  # indices moved to make room
    else:
        message = _create(hold).parse()
    kinds = ["thinking", "redacted_thinking", *(["text"] if text else []), "tool_use"]
    if upstream.chat_only:  # chat has no field for it: a chat upstream never sends one
        kinds.remove("redacted_thinking")
    assert [b.type for b in message.content] == kinds
    if not upstream.chat_only:
        assert message.content[1].data == REDACTED
        assert message.content[0].signature == Reply().signature
    assert message.content[-1].input == {"city": "Paris"}
    assert len(_sent(upstream)) == 1


def test_the_sdk_s_api_key_goes_upstream_as_the_bearer_token(
    hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(good())
    with anthropic.Anthropic(base_url=hold.root, api_key="sk-ant-test", max_retries=0, timeout=20) as client:
        client.messages.create(model="m", max_tokens=64, messages=ASK, tools=[TOOL])
    headers = {k.lower(): v for k, v in _sent(upstream)[0].headers.items()}
    if not upstream.chat_only:  # a Messages upstream gets the Messages headers (version, betas) as they came
        assert headers["authorization"] == "Bearer sk-ant-test" and headers["anthropic-version"]
        return
    assert headers["authorization"] == "Bearer sk-ant-test"
    assert "x-api-key" not in headers and not [k for k in headers if k.startswith("anthropic-")]


def test_with_a_proxy_token_the_sdk_s_api_key_stays_here(make_proxy: Any, upstream: ScriptedUpstream) -> None:
    proxy = make_proxy(upstream=upstream.base_url, auth_token="team-token")
    upstream.script(good())
    with anthropic.Anthropic(
        base_url=proxy.root,
        auth_token="team-token",
        default_headers={"x-api-key": "sk-ant-test"},
        max_retries=0,
        timeout=20,
    ) as client:
        client.messages.create(model="m", max_tokens=64, messages=ASK, tools=[TOOL])
    headers = {k.lower(): v for k, v in _sent(upstream)[0].headers.items()}
    assert "x-api-key" not in headers and "authorization" not in headers
    with (
        anthropic.Anthropic(base_url=proxy.root, api_key="sk-ant-test", max_retries=0) as client,
        pytest.raises(anthropic.AuthenticationError),
    ):
        client.messages.create(model="m", max_tokens=64, messages=ASK, tools=[TOOL])


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_parallel_calls_are_tool_use_blocks_in_order(
    stream: bool, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    from tests.support import Call

    upstream.script(
        Reply.calls(
            Call("get_weather", ('{"city": ', '"Paris"}')), Call("get_weather", ('{"city": "Rome"}',))
        )
    )
    message = _stream(hold)[1] if stream else _create(hold).parse()
    assert [(b.type, b.input) for b in message.content] == [
        ("tool_use", {"city": "Paris"}),
        ("tool_use", {"city": "Rome"}),
    ]
    assert message.content[0].id != message.content[1].id and message.stop_reason == "tool_use"
