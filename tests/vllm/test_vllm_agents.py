"""An OpenAI Agents SDK agent (Responses API, its default) runs a function tool end to end through the proxy's
``/v1/responses`` in front of a real vLLM (issue 18): the proxy translates over vLLM's chat completions and
guards every call; the agent executes the tool, sends its output back as a ``function_call_output`` item and
finishes its run with the model's text answer (the demo model's words are not the point)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.proxy.proxy_server import ProxyServer
from tests.support.vllm_server import VLLMServer

pytestmark = pytest.mark.vllm
agents = pytest.importorskip("agents")

from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402


@pytest.fixture(scope="module")
def proxy(vllm_hermes: VLLMServer) -> Iterator[ProxyServer]:
    with ProxyServer(upstream=vllm_hermes.base_url, read_timeout=120) as server:
        yield server


def test_an_agents_sdk_agent_runs_a_tool_through_the_proxy(
    proxy: ProxyServer, vllm_hermes: VLLMServer
) -> None:
    set_tracing_disabled(True)
    seen: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        seen.append(city)
        return f"It is 21 C and sunny in {city}."

    client = AsyncOpenAI(base_url=proxy.base_url, api_key="unused", max_retries=0, timeout=180)
    agent = Agent(
        name="weather",
        instructions="Answer weather questions with the get_weather tool.",
        tools=[get_weather],
        model=OpenAIResponsesModel(model=vllm_hermes.model, openai_client=client),
        model_settings=ModelSettings(tool_choice="required", temperature=0, max_tokens=200),
    )
    # required for the first turn; the SDK resets it to auto after the tool ran, and the model answers in text
    result = Runner.run_sync(agent, "What's the weather in Paris?", max_turns=4)
    assert seen == ["Paris"], "the agent ran its tool once, with the city asked about"
    assert isinstance(result.final_output, str) and result.final_output.strip()
