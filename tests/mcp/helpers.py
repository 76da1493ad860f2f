"""Fixtures for the MCP guard: real servers (stdio subprocesses, Streamable HTTP in a uvicorn thread) and the
official ``ClientSession`` connected either directly or through an in-process ``McpGuard``."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="toolguard[mcp] (the official MCP SDK) is not installed")

from mcp import ClientSession, StdioServerParameters, stdio_client

from toolguard.mcp import McpDecision, McpGuard, McpPolicy

SERVERS = Path(__file__).with_name("servers.py")
SERVER_COMMAND = [sys.executable, str(SERVERS), "stdio"]


class CallLog:
    """The test server's record of every tools/call it received (``$TOOLGUARD_TEST_CALL_LOG``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def env(self) -> dict[str, str]:
        return {"TOOLGUARD_TEST_CALL_LOG": str(self.path)}

    def calls(self, name: str | None = None) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        rows = [json.loads(line) for line in self.path.read_text().splitlines() if line]
        return [r for r in rows if name is None or r["name"] == name]


@pytest.fixture
def call_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CallLog:
    log = CallLog(tmp_path / "calls.jsonl")
    monkeypatch.setenv("TOOLGUARD_TEST_CALL_LOG", str(log.path))  # in-process HTTP servers read it too
    return log


@contextlib.asynccontextmanager
async def guarded(guard: McpGuard, **session_options: Any) -> AsyncIterator[ClientSession]:
    """A ``ClientSession`` talking to ``guard`` over in-memory streams (the guard's own upstream is real)."""
    to_guard, guard_in = anyio.create_memory_object_stream[Any](0)
    guard_out, from_guard = anyio.create_memory_object_stream[Any](0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(guard.serve, guard_in, guard_out)
        async with ClientSession(from_guard, to_guard, **session_options) as session:
            await session.initialize()
            yield session
        await to_guard.aclose()
        with anyio.move_on_after(10):
            while guard.reporter.sessions_open:
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def direct(command: list[str], env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """A ``ClientSession`` connected straight to the stdio server ``command``."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


class Recorder:
    """Collects the guard's decisions (``on_event``)."""

    def __init__(self) -> None:
        self.decisions: list[McpDecision] = []

    def __call__(self, decision: McpDecision) -> None:
        self.decisions.append(decision)

    def kinds(self, tool: str | None = None) -> list[str]:
        return [d.kind for d in self.decisions if tool is None or d.tool == tool]


def make_guard(call_log: CallLog, recorder: Recorder | None = None, **policy: Any) -> McpGuard:
    fast_retry = {"retry": policy.pop("retry")} if "retry" in policy else {}
    return McpGuard(
        command=SERVER_COMMAND, env=call_log.env, policy=McpPolicy(**policy, **fast_retry), on_event=recorder
    )


# Streamable HTTP servers in a thread ------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Run an ASGI app with uvicorn on 127.0.0.1 (a free port) in a thread; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test HTTP server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
