"""``toolguard mcp -- CMD`` as a real process on stdio: raw JSON-RPC frames in, one well-formed answer out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.helpers import SERVER_COMMAND, CallLog

ROOT = Path(__file__).resolve().parents[2]


class RawClient:
    """Newline-delimited JSON-RPC to a ``toolguard mcp`` process."""

    def __init__(self, call_log: CallLog, *extra: str) -> None:
        env = {**os.environ, **call_log.env, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "toolguard", "mcp", *extra, "--", *SERVER_COMMAND],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )

    def send(self, message: dict[str, Any] | str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the guard closed stdout; stderr: {self.proc.stderr.read() if self.proc.stderr else ''}"
        return json.loads(line)

    def answer(self, rid: Any) -> dict[str, Any]:
        while True:
            message = self.receive()
            if message.get("id") == rid and "method" not in message:
                return message

    def request(self, rid: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params else {})})
        return self.answer(rid)

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stderr.read()


@pytest.fixture
def client(call_log: CallLog) -> Any:
    raw = RawClient(call_log)
    init = raw.request(
        1,
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    )
    assert init["result"]["serverInfo"]["name"] == "toolguard-test-server"
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    yield raw
    raw.close()


def test_calls_over_the_command_line_guard(client: RawClient, call_log: CallLog) -> None:
    ok = client.request(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert ok["result"]["structuredContent"] == {"result": 3}
    bad = client.request(3, "tools/call", {"name": "add", "arguments": {"a": "x"}})
    assert bad["result"]["isError"] is True
    unknown = client.request(4, "tools/call", {"name": "nope"})
    assert unknown["error"] == {"code": -32602, "message": "Unknown tool: nope"}
    assert [c["arguments"] for c in call_log.calls()] == [{"a": 1, "b": 2}]
    stderr = client.close()
    assert "decision=invalid_arguments tool=add id=3" in stderr
    assert "decision=unknown_tool tool=nope id=4" in stderr


def test_a_repeated_request_id_runs_once(client: RawClient, call_log: CallLog) -> None:
    params = {"name": "write_note", "arguments": {"text": "hello"}}
    first = client.request(7, "tools/call", params)
    second = client.request(7, "tools/call", params)
    assert first == second and first["result"]["content"][0]["text"] == "write_note done"
    reused = client.request(7, "tools/call", {"name": "write_note", "arguments": {"text": "other"}})
    assert reused["error"]["code"] == -32600
    assert len(call_log.calls("write_note")) == 1


def test_malformed_frames_get_a_parse_error_and_the_session_goes_on(client: RawClient) -> None:
    client.send("{not json")
    error = client.receive()
    assert error["id"] is None and error["error"]["code"] == -32700
    discover = client.request(9, "server/discover")
    assert discover["error"]["code"] == -32601
    assert client.request(10, "ping") == {"jsonrpc": "2.0", "id": 10, "result": {}}
    assert client.request(11, "no/such/method")["error"]["code"] == -32601


def test_the_command_needs_a_server() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "toolguard", "mcp"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert proc.returncode == 2
    assert "give either a server command" in proc.stderr
