"""``/v1/messages`` and ``/v1/responses`` through the proxy in front of a real vLLM (issue 18), both ways.

``native``: each attempt goes to vLLM's own ``/v1/messages`` or ``/v1/responses`` and the answer or stream
is read back by the Guard (Responses with the engine's structural tag as ``structured_outputs``; Messages
without: vLLM's Messages endpoint takes no constraint, so only the Guard's re-ask stands behind it, and where
the demo model names a tool not offered on every attempt the client gets the typed 422, never the call).
``translate``: over vLLM's chat completions, the engine constraint on. ``auto`` (the default): Responses
native, Messages with tools translated (to keep the constraint). vLLM's own ``hermes`` parser, the
embedded demo model, greedy decoding; the official ``anthropic`` and ``openai`` clients read the answers:
for ``tool_choice`` auto / required / a named tool, streamed and not, every call names an offered tool (the
named one, if any) and its arguments validate against the tool's full schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.proxy.proxy_server import ProxyServer
from tests.support.vllm_server import VLLMServer
from tests.vllm.test_vllm_plugin import SCENARIOS, check_calls, tool_choice

pytestmark = pytest.mark.vllm
anthropic = pytest.importorskip("anthropic")

CASES = [
    (scenario, choice, stream)
    for scenario in ("weather", "offered-only", "math")
    for choice in ("auto", "required", "named")
    for stream in (False, True)
]


def _ids(case: tuple[Any, ...]) -> str:
    scenario, choice, stream = case
    return f"{scenario}-{choice}-{'stream' if stream else 'plain'}"


@pytest.fixture(scope="module", params=["auto", "native", "translate"])
def proxy(vllm_hermes: VLLMServer, request: pytest.FixtureRequest) -> Iterator[ProxyServer]:
    with ProxyServer(upstream=vllm_hermes.base_url, read_timeout=120, protocols=request.param) as server:
        yield server


def _protocol(proxy: ProxyServer, route: str) -> str:
    """How ``route`` reaches vLLM (``x-toolguard-protocol``) under the proxy's ``protocols``."""
    mode = proxy.app.config.protocols
    native = mode == "native" or (mode == "auto" and route == "responses")
    return "native" if native else "translated"


def _messages(proxy: ProxyServer, model: str, message: str, tools: Any, choice: Any, stream: bool) -> Any:
    kw: dict[str, Any] = {
        "model": model,
        "max_tokens": 200,
        "extra_body": {"temperature": 0},  # the SDK's create() no longer takes it; the API still does
        "messages": [{"role": "user", "content": message}],
        "tools": [
            {
                "name": t["function"]["name"],
                "description": t["function"].get("description", ""),
                "input_schema": t["function"]["parameters"],
            }
            for t in tools
        ],
        "tool_choice": (
            {"type": "tool", "name": choice["function"]["name"]}
            if isinstance(choice, dict)
            else {"type": {"auto": "auto", "required": "any"}[choice]}
        ),
    }
    with anthropic.Anthropic(base_url=proxy.root, api_key="unused", max_retries=0, timeout=180) as client:
        if stream:
            with client.messages.stream(**kw) as s:
                list(s)
                answer = s.get_final_message()
        else:
            raw = client.messages.with_raw_response.create(**kw)
            assert raw.headers["x-toolguard-protocol"] == _protocol(proxy, "messages")
            answer = raw.parse()
    calls = [(b.name, json.dumps(b.input)) for b in answer.content if b.type == "tool_use"]
    assert (answer.stop_reason == "tool_use") == bool(calls), answer
    return calls


def _responses(proxy: ProxyServer, model: str, message: str, tools: Any, choice: Any, stream: bool) -> Any:
    kw: dict[str, Any] = {
        "model": model,
        "temperature": 0,
        "max_output_tokens": 200,
        "input": message,
        "tools": [
            {
                "type": "function",
                "name": t["function"]["name"],
                "description": t["function"].get("description", ""),
                "parameters": t["function"]["parameters"],
            }
            for t in tools
        ],
        "tool_choice": {"type": "function", "name": choice["function"]["name"]}
        if isinstance(choice, dict)
        else choice,
    }
    with openai.OpenAI(base_url=proxy.base_url, api_key="unused", max_retries=0, timeout=180) as client:
        if stream:
            with client.responses.stream(**kw) as s:
                list(s)
                answer = s.get_final_response()
        else:
            raw = client.responses.with_raw_response.create(**kw)
            assert raw.headers["x-toolguard-protocol"] == _protocol(proxy, "responses")
            answer = raw.parse()
    assert answer.status == "completed", answer
    return [(item.name, item.arguments) for item in answer.output if item.type == "function_call"]


@pytest.mark.parametrize("ask", [_messages, _responses], ids=["messages", "responses"])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_only_valid_calls_of_offered_tools(
    ask: Any, case: tuple[Any, ...], proxy: ProxyServer, vllm_hermes: VLLMServer
) -> None:
    scenario, kind, stream = case
    message, tools = SCENARIOS[scenario]
    choice = tool_choice(kind, tools)
    unconstrained = ask is _messages and _protocol(proxy, "messages") == "native"
    try:
        calls = ask(proxy, vllm_hermes.model, message, tools, choice, stream)
    except anthropic.APIStatusError as exc:
        if not unconstrained:
            raise
        # no engine constraint reaches vLLM's Messages endpoint: the re-asks ran out, and the client got the
        # Guard's typed refusal instead of the invalid call
        assert exc.body["error"]["toolguard"]["kind"] in ("unknown_tool", "rejected", "missing_call")
        return
    check_calls(calls, tools, choice)


def test_an_unknown_model_is_the_client_s_404_and_the_endpoint_stays_native(
    vllm_hermes: VLLMServer,
) -> None:
    """vLLM answers 404 for a model it does not serve, on its Messages and chat endpoints alike: the
    detection reads it as the client's (a 404 on both paths), the Anthropic error reaches the client as vLLM
    wrote it, and nothing is remembered (the next request is native)."""
    with (
        ProxyServer(upstream=vllm_hermes.base_url, read_timeout=120) as proxy,
        anthropic.Anthropic(base_url=proxy.root, api_key="unused", max_retries=0, timeout=180) as client,
    ):
        ask = {"max_tokens": 20, "messages": [{"role": "user", "content": "Hi"}]}
        with pytest.raises(anthropic.NotFoundError) as info:
            client.messages.create(model="no-such-model", **ask)  # type: ignore[arg-type]
        assert info.value.body["type"] == "error" and "no-such-model" in info.value.message
        raw = client.messages.with_raw_response.create(model=vllm_hermes.model, **ask)  # type: ignore[arg-type]
        assert raw.headers["x-toolguard-protocol"] == "native"
        assert raw.parse().stop_reason in ("end_turn", "max_tokens")
