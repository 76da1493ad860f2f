"""Added latency of ``toolguard mcp`` per ``tools/call``, measured side by side in one run.

stdio: the official ``ClientSession`` calls a small tool (``add``) on the test server (the SDK's low-level
``Server``, ``tests/mcp/servers.py``) directly, through ``python -m toolguard mcp -- <server>``, and through a
do-nothing relay on the same transports (``--stdio-relay``, for scale). Goal: the guard adds <= 1 ms at the
median.

Streamable HTTP: the same client calls the same server (its own process, uvicorn) directly, through the guard
(``toolguard mcp --upstream``, its own process) and through a do-nothing relay built on the same SDK
transports and session handling (``--relay``, its own process: ``HttpFront`` with a session that only pumps
messages). Goal: the guard's added median <= 1.25x the relay's.

Variants run in interleaved rounds (every round calls each variant ``--calls`` times) so machine load moves
all of them alike. Run: ``python benchmarks/mcp.py`` (``--rounds 6 --calls 100``); ``--json`` prints the raw
figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

# This file is named like the SDK: run as a script, its folder would shadow the ``mcp`` package.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import anyio  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SERVER = [sys.executable, str(ROOT / "tests" / "mcp" / "servers.py"), "stdio"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
ENV.pop("TOOLGUARD_TEST_CALL_LOG", None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# the do-nothing relay (same SDK transports, same HTTP session handling as the guard) ------------------------
class _NullReporter:
    sessions_open = 0

    def render_metrics(self) -> str:
        return ""


class NullRelay:
    """Pumps messages between the client's session and the server's, unchanged, and does nothing else."""

    def __init__(self, upstream: str | list[str]) -> None:
        from toolguard.mcp import http_connector, stdio_connector

        self.connect = http_connector(upstream) if isinstance(upstream, str) else stdio_connector(upstream)
        self.reporter = _NullReporter()

    async def serve(self, read: Any, write: Any, *, session_id: str | None = None) -> None:
        async with self.connect() as (up_read, up_write), anyio.create_task_group() as tg:

            async def down() -> None:
                async for item in up_read:
                    if not isinstance(item, Exception):
                        await write.send(item)

            tg.start_soon(down)
            async for item in read:
                if not isinstance(item, Exception):
                    await up_write.send(item)
            tg.cancel_scope.cancel()


def _serve_relay(upstream: str, port: int) -> None:
    import uvicorn

    from toolguard.mcp._http import HttpFront

    uvicorn.run(HttpFront(NullRelay(upstream)), host="127.0.0.1", port=port, log_level="warning")  # type: ignore[arg-type]


def _serve_stdio_relay(command: list[str]) -> None:
    from toolguard.mcp._stdio import stdio_streams

    async def main() -> None:
        async with stdio_streams() as (read, write):
            await NullRelay(command).serve(read, write)

    anyio.run(main)


def _serve_server(port: int) -> None:
    import uvicorn

    sys.path.insert(0, str(ROOT))
    from tests.mcp import servers

    uvicorn.run(servers.http_app(), host="127.0.0.1", port=port, log_level="warning")


# clients ----------------------------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def _stdio_session(command: list[str]) -> AsyncIterator[Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], env=ENV)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def _http_session(url: str) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def _calls(session: Any, n: int) -> list[float]:
    out = []
    for i in range(n):
        start = time.perf_counter()
        result = await session.call_tool("add", {"a": i, "b": 1})
        out.append(time.perf_counter() - start)
        assert result.structured_content == {"result": i + 1}, result
    return out


async def _measure(sessions: dict[str, Any], rounds: int, calls: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in sessions}
    for session in sessions.values():  # warm up
        await _calls(session, 20)
    for _ in range(rounds):
        for name, session in sessions.items():
            samples[name] += await _calls(session, calls)
    return samples


def _wait_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


async def run(rounds: int, calls: int) -> dict[str, Any]:
    guard_cmd = [sys.executable, "-m", "toolguard", "mcp", "--log-level", "warning", "--", *SERVER]
    relay_cmd = [sys.executable, __file__, "--stdio-relay", "--", *SERVER]
    async with (
        _stdio_session(SERVER) as direct,
        _stdio_session(guard_cmd) as guarded,
        _stdio_session(relay_cmd) as relay,
    ):
        stdio = await _measure({"direct": direct, "guard": guarded, "relay": relay}, rounds, calls)

    server_port, guard_port, relay_port = _free_port(), _free_port(), _free_port()
    upstream = f"http://127.0.0.1:{server_port}/mcp"
    procs = [
        subprocess.Popen([sys.executable, __file__, "--serve-server", str(server_port)], env=ENV),
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolguard",
                "mcp",
                "--upstream",
                upstream,
                "--port",
                str(guard_port),
                "--log-level",
                "warning",
            ],
            env=ENV,
        ),
        subprocess.Popen([sys.executable, __file__, "--relay", upstream, "--port", str(relay_port)], env=ENV),
    ]
    try:
        for port in (server_port, guard_port, relay_port):
            _wait_port(port)
        async with (
            _http_session(upstream) as direct,
            _http_session(f"http://127.0.0.1:{guard_port}/mcp") as guarded,
            _http_session(f"http://127.0.0.1:{relay_port}/mcp") as relay,
        ):
            http = await _measure({"direct": direct, "guard": guarded, "relay": relay}, rounds, calls)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)
    return {"stdio": stdio, "http": http}


def _ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def report(samples: dict[str, Any]) -> str:
    s, h = samples["stdio"], samples["http"]
    stdio_added = _ms(s["guard"]) - _ms(s["direct"])
    stdio_relay = _ms(s["relay"]) - _ms(s["direct"])
    guard_added = _ms(h["guard"]) - _ms(h["direct"])
    relay_added = _ms(h["relay"]) - _ms(h["direct"])
    lines = [
        f"calls per variant: {len(s['direct'])} (stdio), {len(h['direct'])} (HTTP); load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "",
        "| transport | direct p50 | through toolguard p50 | added p50 | do-nothing relay p50 | relay added "
        "| ratio |",
        "|---|---|---|---|---|---|---|",
        f"| stdio | {_ms(s['direct']):.2f} ms | {_ms(s['guard']):.2f} ms | **{stdio_added:.2f} ms** | "
        f"{_ms(s['relay']):.2f} ms | {stdio_relay:.2f} ms | {stdio_added / stdio_relay:.2f}× |",
        f"| Streamable HTTP | {_ms(h['direct']):.2f} ms | {_ms(h['guard']):.2f} ms | {guard_added:.2f} ms | "
        f"{_ms(h['relay']):.2f} ms | {relay_added:.2f} ms | **{guard_added / relay_added:.2f}×** |",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--relay", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-server", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--stdio-relay", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("command", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stdio_relay:
        _serve_stdio_relay(args.command)
        return
    if args.relay:
        _serve_relay(args.relay, args.port)
        return
    if args.serve_server:
        _serve_server(args.serve_server)
        return
    samples = anyio.run(run, args.rounds, args.calls)
    print(json.dumps(samples) if args.json else report(samples))


if __name__ == "__main__":
    main()
