"""Bounded load on 127.0.0.1: 1,000 requests at concurrency 64, 10% of upstream answers faulty.

Every request must end with exactly one terminal answer (a valid tool call, or an OpenAI-format error the SDK
raises), within a bounded time, and the proxy must be left with no open stream.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from .helpers import MESSAGES, TOOLS
from .hostile_upstream import Fault, HostileUpstream

REQUESTS = 1000
CONCURRENCY = 64
#: One request's bound: the proxy's deadline plus slack. A request past it would be hung.
PROXY_DEADLINE_S = 20.0
REQUEST_BOUND_S = PROXY_DEADLINE_S + 5.0
#: The whole run's bound, a backstop for the test itself (about 10 s on two idle cores; 40 s measured with
#: the 2-core machine at load average 5).
WALL_BUDGET_S = 90.0

FAULTS = [
    Fault("status", status=500),
    Fault("status", status=429, retry_after=0),
    Fault("close_mid_stream", events=3),
    Fault("close_before_headers"),
    Fault("bad_json"),
    Fault("garbage"),
    Fault("slow_first_byte", delay=0.2),
    Fault("hang", delay=1.5),  # longer than read_timeout: a timeout, then a retry
    Fault("no_newline", size=64 * 1024, delay=0.2),
    Fault("ok", arguments=('{"city": ', "42}")),  # a schema violation: re-asked
]


def plan(n: int, body: Any) -> Fault:
    return FAULTS[(n // 10) % len(FAULTS)] if n % 10 == 0 else Fault()


async def _plain(http: httpx.AsyncClient, body: dict[str, Any]) -> str:
    r = await http.post("/chat/completions", json=body)
    data = r.json()
    if r.status_code != 200:
        return f"error:{r.status_code}:{data['error']['code']}"  # an OpenAI-format error body
    return _verdict(data["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])


async def _streamed(http: httpx.AsyncClient, body: dict[str, Any]) -> str:
    """Read the SSE stream as the openai SDK does: an ``error`` event is terminal, ``[DONE]`` the end."""
    args = ""
    async with http.stream("POST", "/chat/completions", json=body) as r:
        if r.status_code != 200:
            await r.aread()
            return f"error:{r.status_code}:{r.json()['error']['code']}"
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                return _verdict(args)
            chunk = json.loads(line[6:])
            if "error" in chunk:
                return f"error:stream:{chunk['error']['code']}"
            for choice in chunk["choices"]:
                for tc in choice["delta"].get("tool_calls") or ():
                    args += tc["function"].get("arguments") or ""
    return "lost: the stream ended without [DONE]"


def _verdict(args: str) -> str:
    return "ok" if args == '{"city": "Paris"}' else f"wrong:{args}"


@pytest.mark.slow
def test_thousand_requests_with_ten_percent_faults() -> None:
    outcomes: Counter[str] = Counter()
    latencies: list[float] = []
    with HostileUpstream(plan) as bad:
        with _proxy_process(bad.base_url) as base:
            started = time.monotonic()
            asyncio.run(_load(base + "/v1", outcomes, latencies))
            elapsed = time.monotonic() - started
            metrics = httpx.get(base + "/metrics").text
            pooled = bad.open_connections
        deadline = time.monotonic() + 5
        while bad.open_connections and time.monotonic() < deadline:
            time.sleep(0.02)
        left_open = bad.open_connections

    print(
        f"\n{REQUESTS} requests, concurrency {CONCURRENCY}: {elapsed:.1f}s, slowest {max(latencies):.2f}s,"
        f" {dict(outcomes)}"
    )
    assert sum(outcomes.values()) == REQUESTS, outcomes  # none lost
    assert max(latencies) < REQUEST_BOUND_S, max(latencies)  # none hung
    assert elapsed < WALL_BUDGET_S
    bad_ends = [k for k in outcomes if k.startswith(("wrong", "lost"))]
    assert not bad_ends, outcomes  # no invalid call reached a client, no stream ended without its terminal
    assert outcomes["ok"] >= 0.98 * REQUESTS, outcomes  # the faults were retried away
    assert "toolguard_streams_open 0" in metrics
    assert pooled <= CONCURRENCY  # the upstream pool stayed bounded
    assert left_open == 0  # and the proxy's shutdown closed every upstream connection


@contextmanager
def _proxy_process(upstream: str) -> Iterator[str]:
    """``toolguard proxy`` in its own process (as deployed; and the test's client gets the other core)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "toolguard",
        "proxy",
        "--upstream",
        upstream,
        "--port",
        str(port),
        "--read-timeout",
        "1",
        "--deadline",
        str(PROXY_DEADLINE_S),
        "--backoff-initial",
        "0.01",
        "--max-connections",
        str(CONCURRENCY),
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the proxy did not start"
            time.sleep(0.05)
        yield base
    finally:
        proc.send_signal(signal.SIGINT)  # a graceful shutdown closes the upstream pool
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        assert b"Traceback" not in err, err.decode(errors="replace")


async def _load(base_url: str, outcomes: Counter[str], latencies: list[float]) -> None:
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=30) as http:
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(i: int) -> None:
            body = {"model": "m", "messages": MESSAGES, "tools": TOOLS, "stream": bool(i % 2)}
            async with gate:
                started = time.monotonic()
                outcomes[await (_streamed(http, body) if i % 2 else _plain(http, body))] += 1
                latencies.append(time.monotonic() - started)

        await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(REQUESTS))), WALL_BUDGET_S)
