"""``/v1/messages`` and ``/v1/responses`` through the proxy in front of a real vLLM (issue 18).

The proxy translates each request over vLLM's chat completions (vLLM's own ``hermes`` parser, the embedded
demo model, greedy decoding, the engine constraint on) and the official ``anthropic`` and ``openai`` clients
read the answers: for ``tool_choice`` auto / required / a named tool, streamed and not, every call names an
offered tool (the named one, if any) and its arguments validate against the tool's full schema.
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


@pytest.fixture(scope="module")
def proxy(vllm_hermes: VLLMServer) -> Iterator[ProxyServer]:
    with ProxyServer(upstream=vllm_hermes.base_url, read_timeout=120) as server:
        yield server


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
            answer = client.messages.create(**kw)
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
            answer = client.responses.create(**kw)
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
    calls = ask(proxy, vllm_hermes.model, message, tools, choice, stream)
    check_calls(calls, tools, choice)
