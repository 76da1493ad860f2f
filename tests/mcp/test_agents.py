"""An agent framework drives a tool through ``toolguard mcp``: the OpenAI Agents SDK's own MCP client
(``MCPServerStdio``) launches the guard, which launches the test server. The model is scripted (the one fake,
at the true external boundary): it first proposes arguments outside the schema, reads the guard's error in the
tool output, and corrects the call."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.helpers import SERVER_COMMAND, CallLog

agents = pytest.importorskip("agents", reason="openai-agents is not installed (pip install -e '.[dev]')")

from agents import Agent, Runner, set_tracing_disabled  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.mcp import MCPServerStdio  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


class ScriptedModel(Model):
    """Proposes get_weather(days=15), then days=3 after reading the guard's error, then answers."""

    def __init__(self) -> None:
        self.seen_outputs: list[str] = []
        self.tool_names: list[str] = []

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        **_: Any,
    ) -> ModelResponse:
        self.tool_names = [t.name for t in tools]
        outputs = [
            i["output"] for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        self.seen_outputs = [o if isinstance(o, str) else json.dumps(o) for o in outputs]
        turn = len(outputs)
        if turn < 2:
            days = 15 if turn == 0 else 3
            item: Any = ResponseFunctionToolCall(
                type="function_call",
                id=f"fc_{turn}",
                call_id=f"call_{turn}",
                name="get_weather",
                arguments=json.dumps({"city": "Paris", "days": days}),
            )
        else:
            item = ResponseOutputMessage(
                id="msg_1",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text="21.5 °C in Paris", annotations=[])],
            )
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - not used
        raise NotImplementedError


async def test_an_agent_corrects_its_call_after_the_guard_refuses_it(call_log: CallLog) -> None:
    set_tracing_disabled(True)
    env = {**os.environ, **call_log.env, "PYTHONPATH": str(ROOT)}
    server = MCPServerStdio(
        params={
            "command": sys.executable,
            "args": ["-m", "toolguard", "mcp", "--", *SERVER_COMMAND],
            "env": env,
        },
        client_session_timeout_seconds=30,
    )
    model = ScriptedModel()
    async with server:
        agent = Agent(name="weather", instructions="Answer with the tool.", mcp_servers=[server], model=model)
        result = await Runner.run(agent, "What's the weather in Paris for the next days?", max_turns=5)
    assert result.final_output == "21.5 °C in Paris"
    assert "get_weather" in model.tool_names
    refused, accepted = model.seen_outputs
    assert "Invalid arguments for tool 'get_weather'" in refused and "/days" in refused
    assert "21.5" in accepted
    assert [c["arguments"] for c in call_log.calls()] == [{"city": "Paris", "days": 3}]  # one call ran
