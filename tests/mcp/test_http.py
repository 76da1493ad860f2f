"""The guard served over Streamable HTTP in front of a Streamable HTTP server (both real, uvicorn threads)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.mcp import servers
from tests.mcp.helpers import CallLog, Recorder, serve_in_thread
from toolguard.mcp import McpGuard

pytestmark = pytest.mark.anyio

TOKEN = "test-token-123"


@pytest.fixture
def upstream(call_log: CallLog) -> Iterator[str]:
    with serve_in_thread(servers.http_app()) as url:
        yield f"{url}/mcp"


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def guard_url(upstream: str, recorder: Recorder) -> Iterator[str]:
    guard = McpGuard(upstream=upstream, on_event=recorder)
    with serve_in_thread(guard.http_app(auth_token=TOKEN)) as url:
        yield url


@contextlib.asynccontextmanager
async def session_at(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _dump(result: Any) -> dict[str, Any]:
    return result.model_dump(by_alias=True, exclude_none=True)


async def test_valid_calls_pass_through_unchanged(upstream: str, guard_url: str, call_log: CallLog) -> None:
    calls = [("get_weather", {"city": "Oslo"}), ("add", {"a": 1.5, "b": 2})]
    async with session_at(upstream) as session:
        expected = [_dump(await session.call_tool(n, a)) for n, a in calls]
    async with session_at(f"{guard_url}/mcp", TOKEN) as session:
        got = [_dump(await session.call_tool(n, a)) for n, a in calls]
    assert got == expected
    assert len(call_log.calls()) == 4


async def test_invalid_and_unknown_calls_never_reach_the_server(
    guard_url: str, call_log: CallLog, recorder: Recorder
) -> None:
    async with session_at(f"{guard_url}/mcp", TOKEN) as session:
        bad = await session.call_tool("get_weather", {"city": ""})
        with pytest.raises(MCPError) as err:
            await session.call_tool("missing_tool", {})
        output = await session.call_tool("bad_output", {})
    assert bad.is_error and "/city" in bad.content[0].text
    assert err.value.error.code == -32602
    assert output.is_error and "outputSchema" in output.content[0].text
    assert [c["name"] for c in call_log.calls()] == ["bad_output"]
    assert recorder.kinds() == ["invalid_arguments", "unknown_tool", "output_invalid"]


async def test_progress_reaches_an_http_client(guard_url: str) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with session_at(f"{guard_url}/mcp", TOKEN) as session:
        await session.call_tool("progress", {}, progress_callback=on_progress)
        for _ in range(
            100
        ):  # the client runs progress callbacks in their own tasks: the result may come first
            if len(seen) == 2:
                break
            await anyio.sleep(0.02)
    assert seen == [1, 2]


async def test_metrics_health_and_the_bearer_token(guard_url: str) -> None:
    async with session_at(f"{guard_url}/mcp", TOKEN) as session:
        await session.call_tool("add", {"a": 1, "b": 1})
        await session.call_tool("add", {"a": "one"})
    async with httpx.AsyncClient() as http:
        refused = await http.post(f"{guard_url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert (await http.get(f"{guard_url}/healthz", headers=auth)).json() == {"status": "ok"}
        metrics = (await http.get(f"{guard_url}/metrics", headers=auth)).text
        unknown_session = await http.post(
            f"{guard_url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={**auth, "mcp-session-id": "nope", "accept": "application/json, text/event-stream"},
        )
    assert 'toolguard_mcp_decisions_total{kind="forwarded"} 1' in metrics
    assert 'toolguard_mcp_decisions_total{kind="invalid_arguments"} 1' in metrics
    assert "toolguard_mcp_call_seconds_count 2" in metrics
    assert unknown_session.status_code == 404


async def test_an_auto_negotiating_client_falls_back_to_the_handshake(guard_url: str) -> None:
    from mcp import Client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        Client(streamable_http_client(f"{guard_url}/mcp", http_client=http), mode="auto") as client,
    ):
        result = await client.call_tool("add", {"a": 2, "b": 2})
    assert result.structured_content == {"result": 4}
