"""Regressions for what fuzzing the proxy's OpenAPI description found (fuzz/test_proxy_schemathesis.py).

Each was an unhandled exception, a 500 ``proxy_error``, on a request the proxy should refuse with a 400 or
serve: a ``temperature`` that is not a number (or a ``seed`` that is not an integer) once the model looped,
a tool schema whose ``$schema`` is not a string, a request nested close to Python's recursion limit, a
``type`` list holding a list, a ``tool_choice`` type that is not a string, a Responses ``text.format`` that
is not an object. Errors on ``/v1/messages`` before the request is read (a token refused, a body too large, a
method other than POST) come in Anthropic's shape, so the anthropic SDK raises its own typed errors.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.support import Reply, ScriptedUpstream

from .helpers import MESSAGES, TOOLS, runaway_content
from .proxy_server import ProxyServer


def _post(proxy: ProxyServer, body: Any = None, *, content: str | None = None) -> httpx.Response:
    return httpx.post(proxy.base_url + "/chat/completions", json=body, content=content, timeout=20)


@pytest.mark.parametrize(
    "sampling",
    [{"temperature": "AAA"}, {"temperature": [1]}, {"seed": "x"}, {"seed": 1.5, "temperature": True}],
)
def test_a_runaway_retry_ignores_sampling_values_that_are_not_numbers(
    sampling: dict[str, Any], hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    upstream.script(runaway_content(), runaway_content(), runaway_content())
    r = _post(hold, {"model": "m", "messages": MESSAGES, **sampling})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["finish_reason"] == "repetition"
    retry = upstream.chat_requests[1].body  # the retry carries sampling of its own
    assert type(retry["temperature"]) is float
    assert type(retry["seed"]) is int


@pytest.mark.parametrize("declared", [5, ["https://json-schema.org/draft/2020-12/schema"], None])
def test_a_schema_whose_schema_keyword_is_not_a_string_is_refused(
    declared: Any, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"$schema": declared}}}
    r = _post(hold, {"messages": MESSAGES, "tools": [tool]})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_tool_schema"
    assert "$schema" in r.json()["error"]["message"]
    assert upstream.requests == []


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("where", ["messages", "tools", "extra"])
def test_a_body_nested_past_the_cap_is_refused_wherever_the_nesting_is(
    where: str, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    # Around 970 levels (the exact depth depends on the stack), json parsed the body but could not encode it
    # again for the upstream: a RecursionError. Deeper, the parse itself fails (invalid_json).
    for depth in (130, *range(900, 1000, 3)):
        if where == "messages":
            raw = '{"messages":[{"role":"user","content":' + _nested(depth) + "}]}"
        elif where == "tools":
            fn = '{"type":"function","function":{"name":"f","x":' + _nested(depth) + "}}"
            raw = '{"messages":[{"role":"user"}],"tools":[' + fn + "]}"
        else:
            raw = '{"messages":[{"role":"user"}],"metadata":' + _nested(depth) + "}"
        r = _post(hold, content=raw)
        assert r.status_code == 400, (depth, r.text)
        assert r.json()["error"]["code"] in ("invalid_request", "invalid_json")
    assert upstream.requests == []


def test_a_body_within_the_nesting_cap_is_served(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.text("Sunny."))
    schema: Any = {}
    for _ in range(15):  # a schema 31 levels deep (max_schema_depth is 32): the body is 35 deep
        schema = {"type": "object", "properties": {"a": schema}}
    tools = [{**TOOLS[0], "function": {**TOOLS[0]["function"], "parameters": schema}}]
    metadata: dict[str, Any] = {"x": [[[[[[[[[[[[]]]]]]]]]]]]}
    r = _post(hold, {"messages": MESSAGES, "tools": tools, "metadata": metadata})
    assert r.status_code == 200, r.text
    assert upstream.chat_requests[0].body["tools"] == tools


@pytest.mark.parametrize("kind", [[[]], [["string"]], ["string", ["null"]]])
def test_a_type_list_holding_a_list_is_refused(
    kind: Any, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    parameters = {"type": "object", "properties": {"a": {"type": kind}}}
    r = _post(
        hold,
        {
            "messages": MESSAGES,
            "tools": [{"type": "function", "function": {"name": "f", "parameters": parameters}}],
        },
    )
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_tool_schema"
    assert "list of strings" in r.json()["error"]["message"]
    assert upstream.requests == []


@pytest.mark.parametrize("kind", [["function"], {"a": 1}, 5])
def test_a_tool_choice_type_that_is_not_a_string_is_refused(
    kind: Any, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    r = _post(hold, {"messages": MESSAGES, "tools": TOOLS, "tool_choice": {"type": kind}})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_request"
    assert "tool_choice" in r.json()["error"]["message"]
    assert upstream.requests == []


@pytest.mark.parametrize("text", [{"format": 5}, {"format": [1]}, {"format": "text"}, 5])
def test_a_responses_text_format_that_is_not_an_object_is_refused_in_openai_shape(
    text: Any, hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    client = openai.OpenAI(base_url=hold.base_url, api_key="sk-client", max_retries=0, timeout=20)
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="m", input="hi", extra_body={"text": text})
    assert caught.value.code == "invalid_request"
    assert caught.value.param == "text"
    assert upstream.requests == []


def test_errors_before_a_messages_request_is_read_are_anthropic_shaped(
    make_proxy: Any, upstream: ScriptedUpstream
) -> None:
    proxy = make_proxy(upstream=upstream.base_url, auth_token="s3cret", max_body_bytes=2000)
    messages = [{"role": "user", "content": "hi"}]
    wrong = anthropic.Anthropic(base_url=proxy.root, auth_token="wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as refused:
        wrong.messages.create(model="m", max_tokens=5, messages=messages)  # type: ignore[arg-type]
    assert refused.value.body == {
        "type": "error",
        "error": {
            "type": "authentication_error",
            "message": "missing or wrong bearer token for this proxy",
            "code": "invalid_api_key",
        },
    }
    right = anthropic.Anthropic(base_url=proxy.root, auth_token="s3cret", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as too_large:
        right.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "y" * 3000}])
    assert too_large.value.status_code == 413
    assert too_large.value.body["error"]["code"] == "body_too_large"  # type: ignore[index]
    r = httpx.get(proxy.root + "/v1/messages", headers={"authorization": "Bearer s3cret"}, timeout=20)
    assert r.status_code == 405
    assert r.json()["type"] == "error"
    assert r.json()["error"]["code"] == "method_not_allowed"
    r = httpx.delete(proxy.root + "/v1/responses", headers={"authorization": "Bearer s3cret"}, timeout=20)
    assert r.status_code == 405
    assert r.json()["error"]["code"] == "method_not_allowed"
    assert upstream.requests == []
