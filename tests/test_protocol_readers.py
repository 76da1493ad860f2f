"""The readers of a protocol upstream's stream (``_messages_back.MessagesReader``,
``_responses_back.ResponsesReader``), sans-IO: the ScriptedUpstream's own encoders (the real wire shapes,
checked against the official SDKs' types here) in, the chat chunks the Guard reads out.

Each reader is run with the real Guard and ChunkPump over the chunks it makes (nothing of toolguard's is
mocked): a call's arguments split at every position read as the same call; thinking and reasoning pass
through unjudged and are written back by the protocol's stream encoder with their signature; upstream
failures are the errors the SDK drivers turn into retries.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from pydantic import TypeAdapter

from tests.support import Call, Reply
from tests.support.scripted_protocols import messages_events, responses_events
from tests.support.weather import GOOD_ARGS, WEATHER_TOOL
from toolguard import Guard, ToolSet
from toolguard._exceptions import UpstreamError, UpstreamProtocolError
from toolguard._messages import MessagesStream
from toolguard._messages_back import MessagesReader
from toolguard._responses import ResponsesStream
from toolguard._responses_back import ResponsesReader
from toolguard.sdk._pump import ChunkPump

anthropic_types = pytest.importorskip("anthropic.types")
from openai.types.responses import ResponseStreamEvent  # noqa: E402

MESSAGE_EVENT = TypeAdapter(anthropic_types.RawMessageStreamEvent)
RESPONSE_EVENT = TypeAdapter(ResponseStreamEvent)


def _sse(raw: list[bytes]) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of each encoded SSE event."""
    out = []
    for event in raw:
        lines = dict(line.split(": ", 1) for line in event.decode().strip().split("\n"))
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def _ids(prefix: str) -> Any:
    return (f"{prefix}{n}" for n in itertools.count(1))


def messages_wire(reply: Reply) -> list[dict[str, Any]]:
    events = _sse(messages_events(reply, "msg_1", _ids("toolu_")))
    for name, data in events:
        assert name == data["type"]
        if name != "ping":  # the SDK skips pings; every other event is one of its types
            MESSAGE_EVENT.validate_python(data)
    return [data for _, data in events]


def responses_wire(reply: Reply) -> list[dict[str, Any]]:
    events = _sse(responses_events(reply, "resp_1", _ids("call_")))
    for n, (name, data) in enumerate(events):
        assert name == data["type"] and data["sequence_number"] == n
        RESPONSE_EVENT.validate_python(data)
    return [data for _, data in events]


def guarded(reader: Any, events: list[Any], mode: str = "hold") -> tuple[Guard, list[dict[str, Any]]]:
    """Every event through ``reader``, its chunks through a real Guard and ChunkPump; the released chunks."""
    guard = Guard(ToolSet.from_openai([WEATHER_TOOL]))
    pump = ChunkPump(guard, mode)  # type: ignore[arg-type]
    released: list[dict[str, Any]] = []
    for event in events:
        for chunk in reader.feed(event):
            released.extend(pump.on_chunk(chunk))
        if pump.stop:  # a failing verdict: the drivers close the upstream here, nothing more is released
            return guard, released
    assert reader.done
    released.extend(pump.flush())  # what the drivers release once the flow accepted the attempt
    return guard, released


READERS = pytest.mark.parametrize(
    ("reader", "wire"),
    [(MessagesReader, messages_wire), (ResponsesReader, responses_wire)],
    ids=["messages", "responses"],
)


@READERS
def test_a_call_split_at_every_position_reads_as_the_same_call(reader: Any, wire: Any) -> None:
    for at in range(1, len(GOOD_ARGS)):
        reply = Reply.call("get_weather", GOOD_ARGS[:at], GOOD_ARGS[at:])
        guard, _ = guarded(reader(), wire(reply))
        verdict = guard.close()
        assert verdict.ok, (at, verdict)
        [call] = guard.tool_calls
        assert call.name == "get_weather" and json.loads(call.arguments) == json.loads(GOOD_ARGS)


@READERS
def test_an_invalid_call_is_judged_invalid(reader: Any, wire: Any) -> None:
    guard, released = guarded(
        reader(), wire(Reply.call("get_weather", '{"city": "Paris", ', '"unit": "kelvin"}'))
    )
    assert guard.close().kind == "rejected"
    assert not any(c.get("choices") and c["choices"][0]["delta"].get("tool_calls") for c in released)


@READERS
def test_text_calls_finish_and_usage_reach_the_chat_view(reader: Any, wire: Any) -> None:
    reply = Reply(
        content=("Let me ", "check."),
        tool_calls=(Call("get_weather", ('{"city": "Paris"}',)), Call("get_weather", ('{"city": "Rome"}',))),
        usage={"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
    )
    guard, released = guarded(reader(), wire(reply))
    assert guard.close().ok
    assert (
        "".join(c["choices"][0]["delta"].get("content") or "" for c in released if c["choices"])
        == "Let me check."
    )
    assert [json.loads(c.arguments)["city"] for c in guard.tool_calls] == ["Paris", "Rome"]
    finishes = [c["choices"][0]["finish_reason"] for c in released if c["choices"]]
    assert finishes[-1] == "tool_calls"
    [usage] = [c["usage"] for c in released if not c["choices"]]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (12, 7)


@READERS
def test_a_cut_reads_as_length(reader: Any, wire: Any) -> None:
    guard, _ = guarded(reader(), wire(Reply.call("get_weather", '{"city": ', '"Pa', finish_reason="length")))
    assert guard.close().kind == "truncated"


def test_thinking_passes_unjudged_with_its_signature() -> None:
    reply = Reply(
        reasoning=("I should call ", '{"name": "get_wether"}'),
        tool_calls=(Call("get_weather", (GOOD_ARGS,)),),
    )
    guard, released = guarded(MessagesReader(), messages_wire(reply))
    assert guard.close().ok and [c.name for c in guard.tool_calls] == ["get_weather"]
    stream = MessagesStream(model="m")
    events = [e for chunk in released for e in stream.feed(chunk)] + stream.close()
    for _, data in events:
        MESSAGE_EVENT.validate_python(data)
    deltas = [d["delta"] for name, d in events if name == "content_block_delta"]
    assert "".join(d.get("thinking", "") for d in deltas) == 'I should call {"name": "get_wether"}'
    assert [d["signature"] for d in deltas if d["type"] == "signature_delta"] == [reply.signature]
    starts = [d["content_block"]["type"] for name, d in events if name == "content_block_start"]
    assert starts == ["thinking", "tool_use"]


def test_redacted_thinking_passes_through() -> None:
    events = [
        {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 3}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "redacted_thinking", "data": "abc"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    _, released = guarded(MessagesReader(), events)
    stream = MessagesStream(model="m")
    out = [e for chunk in released for e in stream.feed(chunk)] + stream.close()
    blocks = [d["content_block"] for name, d in out if name == "content_block_start"]
    assert blocks == [{"type": "redacted_thinking", "data": "abc"}, {"type": "text", "text": ""}]


def test_reasoning_items_pass_unjudged() -> None:
    reply = Reply(reasoning=("call get_wether?",), tool_calls=(Call("get_weather", (GOOD_ARGS,)),))
    guard, released = guarded(ResponsesReader(), responses_wire(reply))
    assert guard.close().ok
    stream = ResponsesStream({"model": "m"}, response_id="resp_1")
    events = [e for chunk in released for e in stream.feed(chunk)] + stream.close()
    for data in events:
        RESPONSE_EVENT.validate_python(data)
    final = events[-1]["response"]
    assert final["id"] == "resp_1" and [i["type"] for i in final["output"]] == ["reasoning", "function_call"]
    assert final["output"][0]["content"][0]["text"] == "call get_wether?"


def test_the_readers_read_the_sdks_own_event_objects_as_the_wire() -> None:
    reply = Reply(
        reasoning=("hm",), content=("Hi",), tool_calls=(Call("get_weather", ('{"city": ', '"Paris"}')),)
    )
    for reader, wire, adapter in (
        (MessagesReader, messages_wire, MESSAGE_EVENT),
        (ResponsesReader, responses_wire, RESPONSE_EVENT),
    ):
        events = wire(reply)
        a, b = reader(), reader()
        from_dicts = [c for e in events for c in a.feed(e)]
        from_objects = [c for e in events if e["type"] != "ping" for c in b.feed(adapter.validate_python(e))]
        assert from_dicts == from_objects and a.done and b.done


def test_upstream_failures_raise() -> None:
    reader = MessagesReader()
    with pytest.raises(UpstreamError, match="overloaded"):
        reader.feed({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    with pytest.raises(UpstreamProtocolError):
        MessagesReader().feed(
            {
                "type": "content_block_delta",
                "index": 3,
                "delta": {"type": "input_json_delta", "partial_json": "{"},
            }
        )
    with pytest.raises(UpstreamProtocolError, match="server_tool_use"):
        MessagesReader().feed(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use"}}
        )
    failed = {"type": "response.failed", "response": {"error": {"code": "server_error", "message": "boom"}}}
    with pytest.raises(UpstreamError, match="boom"):
        ResponsesReader().feed(failed)
    with pytest.raises(UpstreamError, match="rate"):
        ResponsesReader().feed(
            {"type": "error", "code": "rate_limit", "message": "slow down", "sequence_number": 1}
        )
    with pytest.raises(UpstreamProtocolError):
        ResponsesReader().feed(
            {"type": "response.function_call_arguments.delta", "item_id": "fc_9", "delta": "{"}
        )
    with pytest.raises(UpstreamProtocolError, match="web_search_call"):
        ResponsesReader().feed({"type": "response.output_item.added", "item": {"type": "web_search_call"}})


@pytest.mark.parametrize("mode", ["hold", "pass"])
def test_released_chunks_written_back_are_the_upstreams_stream(mode: str) -> None:
    """Reader, Guard and gate, then the protocol's own stream writer: a valid stream comes back as itself."""
    reply = Reply(content=("Sure. ",), tool_calls=(Call("get_weather", ('{"city": ', '"Paris"}')),))
    _, released = guarded(MessagesReader(), messages_wire(reply), mode)
    stream = MessagesStream(model="scripted-model")
    out = [e for chunk in released for e in stream.feed(chunk)] + stream.close()
    upstream = [e for e in messages_wire(reply) if e["type"] != "ping"]
    assert [d["type"] for _, d in out] == [e["type"] for e in upstream]
    assert [d.get("delta") for _, d in out if d["type"] == "content_block_delta"] == [
        e["delta"] for e in upstream if e["type"] == "content_block_delta"
    ]
