"""A pydantic-ai agent runs a function tool end to end through the proxy's ``/v1/messages`` in front of a real
vLLM (issue 18): pydantic-ai's ``AnthropicModel`` speaks Anthropic Messages (the official ``anthropic``
client, pointed at the proxy), the proxy translates over vLLM's chat completions and guards every call; the
agent executes the tool, sends its result back as a ``tool_result`` block and finishes its run with the
model's text answer. The Agents SDK twin (test_vllm_agents.py) covers ``/v1/responses``; this one covers the
other translated door. The demo model's words are not the point: that the tool ran with valid arguments, the
run ended in a final answer and every model request the agent made was answered guarded is.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.proxy.proxy_server import ProxyServer
from tests.support.vllm_server import VLLMServer

pytestmark = pytest.mark.vllm
pytest.importorskip("pydantic_ai")

import httpx2  # noqa: E402
from anthropic import AsyncAnthropic  # noqa: E402
from pydantic_ai import Agent, ModelSettings, RunContext  # noqa: E402
from pydantic_ai.messages import ToolReturnPart  # noqa: E402
from pydantic_ai.models.anthropic import AnthropicModel  # noqa: E402
from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: E402


@pytest.fixture(scope="module")
def proxy(vllm_hermes: VLLMServer) -> Iterator[ProxyServer]:
    with ProxyServer(upstream=vllm_hermes.base_url, read_timeout=120) as server:
        yield server


def _settings(ctx: RunContext[None]) -> ModelSettings:
    """``tool_choice`` required until the tool has answered, then auto (the model answers in text).

    pydantic-ai refuses a static ``required`` (the run could never end); a callable varies it per step."""
    answered = any(
        isinstance(part, ToolReturnPart) for message in ctx.messages for part in getattr(message, "parts", ())
    )
    return ModelSettings(tool_choice="auto" if answered else "required", temperature=0, max_tokens=200)


def test_a_pydantic_ai_agent_runs_a_tool_through_the_proxys_messages(
    proxy: ProxyServer, vllm_hermes: VLLMServer
) -> None:
    seen: list[str] = []
    answers: list[httpx2.Response] = []

    async def keep(response: httpx2.Response) -> None:
        answers.append(response)

    http = httpx2.AsyncClient(event_hooks={"response": [keep]}, timeout=180)
    client = AsyncAnthropic(
        base_url=proxy.root, api_key="unused", max_retries=0, timeout=180, http_client=http
    )
    agent = Agent(
        AnthropicModel(vllm_hermes.model, provider=AnthropicProvider(anthropic_client=client)),
        instructions="Answer weather questions with the get_weather tool.",
        model_settings=_settings,
    )

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        seen.append(city)
        return f"It is 21 C and sunny in {city}."

    result = agent.run_sync("What's the weather in Paris?")

    assert seen == ["Paris"], "the agent ran its tool once, with the city asked about"
    assert isinstance(result.output, str) and result.output.strip()
    # every model request went through the guarded Messages door and was answered with the guard's verdict
    assert [r.request.url.path for r in answers] == ["/v1/messages"] * len(answers) and len(answers) >= 2
    assert all(r.status_code == 200 for r in answers), [r.status_code for r in answers]
    assert [r.headers["x-toolguard-verdict"] for r in answers] == ["ok"] * len(answers)
    assert proxy.app.metrics.verdicts[(("kind", "ok"),)] >= len(answers)
