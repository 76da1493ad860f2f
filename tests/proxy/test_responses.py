"""``POST /v1/responses`` with the official openai SDK, in both upstream modes (``protocol_modes``): native
(the scripted upstream's own ``/v1/responses``) and translated (a chat-only upstream).

Every answer is judged by the same Guard and gate as the chat path; these tests check what
``client.responses`` sees (output items, statuses, typed exceptions, stream events) and what the upstream was
asked (the request as the client sent it plus the flow's additions as Responses items, or the chat
translation).
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.support import Reply, ScriptedUpstream
from tests.support.weather import WEATHER_RESPONSES_TOOL

from . import protocol_modes as modes
from .conftest import client_for
from .helpers import LOOP_UNIT, bad_schema, good, runaway_content, truncated
from .protocol_modes import guarded
from .proxy_server import ProxyServer

TOOL = WEATHER_RESPONSES_TOOL
ASK = "What is the weather in Paris?"

# every test here runs against a native and a chat-only upstream
upstream_mode, upstream, hold, passing = modes.upstream_mode, modes.upstream, modes.hold, modes.passing


def _sent(upstream: ScriptedUpstream) -> list[Any]:
    return guarded(upstream, "responses")


def _create(proxy: ProxyServer, **kw: Any) -> Any:
    with client_for(proxy) as client:
        return client.responses.with_raw_response.create(
            model="m", input=kw.pop("input", ASK), tools=kw.pop("tools", [TOOL]), **kw
        )


def _stream(proxy: ProxyServer, **kw: Any) -> tuple[list[Any], Any]:
    """(events, the SDK's final response) of one streamed request."""
    with (
        client_for(proxy) as client,
        client.responses.stream(
            model="m", input=kw.pop("input", ASK), tools=kw.pop("tools", [TOOL]), **kw
        ) as s,
    ):
        events = list(s)
        return events, s.get_final_response()


def _raw_stream(proxy: ProxyServer, **kw: Any) -> list[Any]:
    with client_for(proxy) as client:
        return list(
            client.responses.create(
                model="m", input=kw.pop("input", ASK), tools=kw.pop("tools", [TOOL]), stream=True, **kw
            )
        )


def _calls(response: Any) -> list[Any]:
    return [item for item in response.output if item.type == "function_call"]


def test_a_valid_call_is_a_function_call_item(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good(usage={"prompt_tokens": 12, "completion_tokens": 7}))
    raw = _create(hold, max_output_tokens=256)
    assert (raw.headers["x-toolguard-retries"], raw.headers["x-toolguard-verdict"]) == ("0", "ok")
    response = raw.parse()
    assert response.status == "completed"
    [call] = _calls(response)
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris", "unit": "c"}
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (
        12,
        7,
        19,
    )
    assert raw.headers["x-toolguard-protocol"] == ("translated" if upstream.chat_only else "native")
    [request] = _sent(upstream)
    sent = request.body
    if not upstream.chat_only:  # the request as the client sent it
        assert sent == {"model": "m", "input": ASK, "tools": [TOOL], "max_output_tokens": 256}
        return
    assert sent["tools"][0]["function"]["name"] == "get_weather" and sent["tools"][0]["function"]["strict"]
    assert sent["messages"] == [{"role": "user", "content": ASK}] and sent["max_tokens"] == 256


def test_an_invalid_call_is_re_asked_then_valid(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(bad_schema(), good())
    raw = _create(hold)
    assert raw.headers["x-toolguard-retries"] == "1"
    assert json.loads(_calls(raw.parse())[0].arguments) == {"city": "Paris", "unit": "c"}
    assert len(_sent(upstream)) == 2
    if not upstream.chat_only:  # the failed call and its violation as input items
        items = _sent(upstream)[1].body["input"]
        assert items[0] == {"role": "user", "content": ASK}
        call, output = items[-2:]
        assert call["type"] == "function_call" and json.loads(call["arguments"])["unit"] == "kelvin"
        assert output["type"] == "function_call_output" and output["call_id"] == call["call_id"]
        assert "/unit" in output["output"]


def test_a_call_invalid_on_every_attempt_is_a_typed_422(
    hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(*[bad_schema() for _ in range(hold.app.config.max_attempts)])
    with pytest.raises(openai.UnprocessableEntityError) as info:
        _create(hold)
    assert "kelvin" in json.dumps(info.value.body)


def test_truncation_is_incomplete_and_never_a_call(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(truncated(), truncated())
    raw = _create(hold, max_output_tokens=10)
    assert raw.headers["x-toolguard-verdict"] == "truncated"
    retry = _sent(upstream)[1].body
    assert retry["max_tokens" if upstream.chat_only else "max_output_tokens"] == 20
    response = raw.parse()
    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"
    assert not _calls(response)


def test_a_runaway_is_cut_after_one_copy(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(runaway_content(), runaway_content(), runaway_content())
    raw = _create(hold, tools=[])
    assert raw.headers["x-toolguard-verdict"] == "runaway"
    response = raw.parse()
    assert response.status == "incomplete" and len(response.output_text) < len(LOOP_UNIT) * 5


def test_fabricated_text_beside_the_call_is_cut(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good(content=("Checking.\nObservation: 21 degrees, sunny.",)))
    raw = _create(hold)
    assert raw.headers["x-toolguard-verdict"] == "fabricated"
    response = raw.parse()
    assert response.output_text == "Checking.\n" and len(_calls(response)) == 1


def test_history_with_function_call_items(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.text("It is 18C in Paris."))
    history = [
        {"role": "user", "content": ASK},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
        {"role": "developer", "content": [{"type": "input_text", "text": "Answer in words."}]},
    ]
    response = _create(hold, input=history, instructions="Be brief.").parse()
    assert response.output_text == "It is 18C in Paris." and response.status == "completed"
    if not upstream.chat_only:  # the items as they came
        assert _sent(upstream)[0].body["input"] == history
        assert _sent(upstream)[0].body["instructions"] == "Be brief."
        return
    sent = upstream.chat_requests[0].body["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert sent[2]["role"] == "assistant" and sent[2]["tool_calls"][0]["id"] == "call_1"
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": "18C"}
    assert sent[4] == {"role": "system", "content": "Answer in words."}


@pytest.mark.parametrize(
    ("choice", "chat"),
    [
        ("required", "required"),
        ("none", "none"),
        (
            {"type": "function", "name": "get_weather"},
            {"type": "function", "function": {"name": "get_weather"}},
        ),
    ],
)
def test_tool_choice(hold: ProxyServer, upstream: ScriptedUpstream, choice: Any, chat: Any) -> None:
    upstream.script(Reply.text("No tool.") if choice == "none" else good())
    _create(hold, tool_choice=choice)
    assert _sent(upstream)[0].body["tool_choice"] == (chat if upstream.chat_only else choice)


def test_required_refuses_a_text_answer(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.text("I will not call it."), good())
    response = _create(hold, tool_choice="required").parse()
    assert len(_calls(response)) == 1 and len(_sent(upstream)) == 2


@pytest.mark.parametrize(
    "extra",
    [{"previous_response_id": "resp_1"}, {"tools": [{"type": "web_search"}]}],
)
def test_what_cannot_be_translated_is_a_typed_400(
    hold: ProxyServer, upstream: ScriptedUpstream, extra: dict[str, Any]
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        _create(hold, **extra)
    assert info.value.body["param"].startswith(next(iter(extra)))
    assert not upstream.requests


# ------------------------------------------------------------------------------------------------- stream
@pytest.mark.parametrize("mode", ["hold", "passing"])
def test_stream_a_call(mode: str, request: pytest.FixtureRequest, upstream: ScriptedUpstream) -> None:
    proxy = request.getfixturevalue(mode)
    upstream.script(Reply.calls(*good().tool_calls, content=("Let me check. ",)))
    events, response = _stream(proxy)
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    for kind in (
        "response.output_item.added",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
    ):
        assert kind in kinds
    assert response.output_text == "Let me check. "
    [call] = _calls(response)
    assert json.loads(call.arguments) == {"city": "Paris", "unit": "c"}
    assert response.usage.output_tokens > 0
    [request] = _sent(upstream)
    assert request.body["stream"] is True


def test_stream_re_ask(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(bad_schema(), good())
    _, response = _stream(hold)
    assert json.loads(_calls(response)[0].arguments) == {"city": "Paris", "unit": "c"}
    assert len(_sent(upstream)) == 2


def test_stream_pass_mode_ends_a_shown_invalid_call_failed(
    passing: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(bad_schema(), good())
    events = _raw_stream(passing)
    assert events[-1].type == "response.failed"
    assert events[-1].response.status == "failed" and events[-1].response.error.code == "rejected"
    assert len(_sent(upstream)) == 1


def test_stream_truncation(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(truncated(), truncated())
    events = _raw_stream(hold, max_output_tokens=10)
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"
    assert not [e for e in events if e.type.startswith("response.function_call")]


def test_stream_runaway(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(runaway_content(), runaway_content(), runaway_content())
    events = _raw_stream(hold, tools=[])
    assert events[-1].type == "response.incomplete"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert 0 < len(text) < len(LOOP_UNIT) * 5


def test_stream_fabricated_text_cut(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good(content_after=("The weather in Paris is ", "sunny and 25C.")))
    _, response = _stream(hold)
    assert response.output_text == "" and len(_calls(response)) == 1


def test_stream_violation_fails_the_response(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(*[bad_schema() for _ in range(hold.app.config.max_attempts)])
    events = _raw_stream(hold)
    assert [e.type for e in events] == ["response.created", "response.in_progress", "response.failed"]
    error = events[-1].response.error
    assert error.code == "rejected" and "kelvin" in json.dumps(error.toolguard)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_reasoning_is_a_reasoning_item_never_judged(
    stream: bool, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    from .test_messages import REASONING, REASONING_CHUNKS

    upstream.script(Reply(chunks=REASONING_CHUNKS, finish_reason="tool_calls"))
    response = _stream(hold)[1] if stream else _create(hold).parse()
    assert [item.type for item in response.output] == ["reasoning", "function_call"]
    assert response.output[0].content[0].text == REASONING
    assert json.loads(response.output[1].arguments) == {"city": "Paris"}
    assert len(_sent(upstream)) == 1
    if not upstream.chat_only:  # a Responses upstream's item as it came: its id and encrypted content
        assert response.output[0].id == ("rs_0" if stream else "rs_1")
        assert response.output[0].encrypted_content == Reply().signature


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_parallel_calls_are_function_call_items_in_order(
    stream: bool, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    from tests.support import Call

    upstream.script(
        Reply.calls(
            Call("get_weather", ('{"city": ', '"Paris"}')), Call("get_weather", ('{"city": "Rome"}',))
        )
    )
    response = _stream(hold)[1] if stream else _create(hold).parse()
    calls = _calls(response)
    assert [json.loads(c.arguments) for c in calls] == [{"city": "Paris"}, {"city": "Rome"}]
    assert calls[0].call_id != calls[1].call_id
