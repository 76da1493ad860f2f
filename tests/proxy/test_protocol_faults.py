"""Upstream faults and bad requests on ``/v1/messages`` and ``/v1/responses``: the chat tests' twins, in
both upstream modes (``protocol_modes``: the protocol's own endpoint, or a chat-only upstream).

The faults are the chat path's (``test_stream.py``), retried by the same flow; what these tests check is that
each ends in the protocol's own form: the official client gets its answer, or raises its own typed exception,
or reads the protocol's own failure event.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from tests.support import Reply, ScriptedUpstream

from . import protocol_modes as modes
from .conftest import client_for
from .helpers import assert_hung_up_on, good
from .hostile_upstream import Fault, HostileUpstream
from .proxy_server import ProxyServer
from .test_messages import ASK as MESSAGES_ASK
from .test_messages import TOOL as MESSAGES_TOOL
from .test_responses import ASK as RESPONSES_ASK
from .test_responses import TOOL as RESPONSES_TOOL

anthropic = pytest.importorskip("anthropic")

# every test here runs against a native and a chat-only upstream
upstream_mode, upstream, hold, passing = modes.upstream_mode, modes.upstream, modes.hold, modes.passing

FAULTS = [
    Reply.error(429, retry_after=0),
    Reply.error(500),
    Reply.error(503, retry_after=0.01),
    good(disconnect_after=1),
    good(malformed_after=2),
    good(error_after=2),
]
FAULT_IDS = ["429", "500", "503", "disconnect", "malformed", "error-event"]
#: (fault, stream): the HTTP faults both ways, the stream faults on streams
CASES = [
    pytest.param(fault, stream, id=f"{name}-{'stream' if stream else 'plain'}")
    for fault, name in zip(FAULTS, FAULT_IDS, strict=True)
    for stream in (False, True)
    if stream or fault.status != 200
]


def _messages(proxy: ProxyServer, *, stream: bool, tools: bool = True) -> dict[str, Any]:
    """The final message as a dict (streamed through the SDK's accumulator or not)."""
    kw: dict[str, Any] = {"model": "m", "max_tokens": 256, "messages": MESSAGES_ASK}
    if tools:
        kw["tools"] = [MESSAGES_TOOL]
    with anthropic.Anthropic(base_url=proxy.root, api_key="k", max_retries=0, timeout=20) as client:
        if not stream:
            return client.messages.create(**kw).model_dump()  # type: ignore[no-any-return]
        with client.messages.stream(**kw) as s:
            list(s)
            return s.get_final_message().model_dump()  # type: ignore[no-any-return]


def _responses(proxy: ProxyServer, *, stream: bool, tools: bool = True) -> dict[str, Any]:
    kw: dict[str, Any] = {"model": "m", "input": RESPONSES_ASK}
    if tools:
        kw["tools"] = [RESPONSES_TOOL]
    with client_for(proxy) as client:
        if not stream:
            return client.responses.create(**kw).model_dump()  # type: ignore[no-any-return]
        with client.responses.stream(**kw) as s:
            list(s)
            return s.get_final_response().model_dump()  # type: ignore[no-any-return]


def _call_of(answer: dict[str, Any]) -> dict[str, Any]:
    for item in answer.get("content") or answer.get("output") or ():
        if item["type"] == "tool_use":
            return dict(item["input"])
        if item["type"] == "function_call":
            return dict(json.loads(item["arguments"]))
    raise AssertionError(f"no call in {answer}")


@pytest.mark.parametrize("ask", [_messages, _responses], ids=["messages", "responses"])
@pytest.mark.parametrize(("fault", "stream"), CASES)
def test_upstream_faults_are_retried(
    fault: Reply, stream: bool, ask: Any, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(fault, good())
    assert _call_of(ask(hold, stream=stream)) == {"city": "Paris", "unit": "c"}
    assert len(modes.guarded(upstream, ask.__name__.strip("_"))) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_an_upstream_client_error_is_the_anthropic_type(
    stream: bool, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(Reply.error(400, message="context length exceeded"))
    with pytest.raises(anthropic.BadRequestError) as info:
        _messages(hold, stream=stream)
    assert info.value.body["type"] == "error" and "context length exceeded" in info.value.message
    assert len(modes.guarded(upstream, "messages")) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_an_upstream_client_error_is_the_openai_type(
    stream: bool, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(Reply.error(400, message="context length exceeded"))
    with pytest.raises(openai.BadRequestError) as info:
        _responses(hold, stream=stream)
    assert "context length exceeded" in info.value.message


def test_retries_run_out(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(*[Reply.error(500) for _ in range(6)])
    with pytest.raises(anthropic.InternalServerError):
        _messages(hold, stream=True)
    with pytest.raises(openai.InternalServerError):
        _responses(hold, stream=False)


def test_a_disconnect_after_visible_text_is_the_protocol_s_failure(
    hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    # after "in Paris ": the chat stream's third event; the Messages stream's fifth (message_start, ping,
    # content_block_start first), the Responses stream's sixth (created, in_progress, item and part added)
    at = {"messages": 5, "responses": 6} if not upstream.chat_only else {"messages": 3, "responses": 3}
    upstream.script(Reply.text("The weather ", "in Paris ", "is", disconnect_after=at["messages"]))
    with pytest.raises(anthropic.APIStatusError) as info:
        _messages(hold, stream=True, tools=False)
    assert info.value.body["type"] == "error" and info.value.body["error"]["code"] == "upstream_error"
    upstream.script(Reply.text("The weather ", "in Paris ", "is", disconnect_after=at["responses"]))
    with client_for(hold) as client:
        events = list(client.responses.create(model="m", input=RESPONSES_ASK, stream=True))
    assert events[-1].type == "response.failed" and events[-1].response.error.code == "upstream_error"
    assert (
        "".join(e.delta for e in events if e.type == "response.output_text.delta") == "The weather in Paris "
    )


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/responses"])
@pytest.mark.parametrize(
    "body", [b"{not json", b"[1, 2]", b'{"model": "m", "messages": "hi", "max_tokens": 5}']
)
def test_bad_requests_are_400s_before_any_upstream_call(
    path: str, body: bytes, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    r = httpx.post(hold.root + path, content=body, headers={"content-type": "application/json"}, timeout=10)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["message"]
    if path == "/v1/messages":
        assert r.json()["type"] == "error" and error["type"] == "invalid_request_error"
    assert not upstream.requests


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/messages", {"model": "m", "max_tokens": 64, "messages": MESSAGES_ASK, "stream": True}),
        ("/v1/responses", {"model": "m", "input": RESPONSES_ASK, "stream": True}),
    ],
)
@pytest.mark.parametrize("protocols", ["native", "translate"])
def test_a_client_disconnect_closes_the_upstream_stream(
    path: str, body: dict[str, Any], protocols: str, make_proxy: Callable[..., ProxyServer]
) -> None:
    with HostileUpstream(lambda n, body: Fault("drip", events=500, delay=0.01)) as drip:
        proxy = make_proxy(upstream=drip.base_url, protocols=protocols)
        with httpx.stream("POST", proxy.root + path, timeout=10, json=body) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if "tick" in line:
                    break  # leave after the first text delta
        assert_hung_up_on(drip, proxy)


CALL_TEXT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n</tool_call>'


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("ask", [_messages, _responses], ids=["messages", "responses"])
def test_a_call_written_as_text_is_delivered_as_a_call(
    ask: Any, stream: bool, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(Reply.text("Let me look.\n", CALL_TEXT))
    answer = ask(hold, stream=stream)
    assert _call_of(answer) == {"city": "Paris", "unit": "c"}
    assert "tool_call>" not in json.dumps(answer)
    assert len(modes.guarded(upstream, ask.__name__.strip("_"))) == 1
