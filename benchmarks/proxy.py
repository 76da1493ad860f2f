"""Benchmark the proxy side by side in one run: direct, a bare pass-through hop, and toolguard.

On a small shared machine absolute added latency mostly measures CPU contention, so every figure here is read
against anchors measured in the same run, on the same upstream, with the same client:

- **direct**: the client talks to the upstream;
- **bare hop**: a Starlette + httpx pass-through that does nothing but forward bytes (the floor any Python
  proxy pays: an ASGI server, an HTTP client, one more socket pair);
- **toolguard**: ``toolguard proxy`` (hold mode) guarding the same streams.

The upstream (a FAKE model server on raw asyncio sockets, in its own process) streams one tool call per
request as canonical OpenAI chunks: a role chunk, a short preamble in word-sized content chunks, the call's
arguments in 3-to-5-character fragments, the finish chunk, ``[DONE]``. Every server runs in its own process;
the client (httpx, reading the SSE stream to its end) runs here. For each concurrency (1, 8, 64 concurrent
streams) the three targets are measured in interleaved rounds so drift hits all alike; figures are medians
over rounds.

Goals: toolguard's added p50 latency <= 1.25x the bare hop's; toolguard's throughput >= 90 % of the bare
hop's; the Guard's own CPU per SSE chunk, in-process without network, <= 20 us.

    .venv/bin/python benchmarks/proxy.py            # full run (about 2 minutes on 2 cores)
    .venv/bin/python benchmarks/proxy.py --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "book_flight",
        "parameters": {
            "type": "object",
            "properties": {
                "origin": {"type": "string", "pattern": "^[A-Z]{3}$"},
                "destination": {"type": "string", "pattern": "^[A-Z]{3}$"},
                "date": {"type": "string", "format": "date"},
                "passengers": {"type": "integer", "minimum": 1, "maximum": 9},
                "cabin": {"enum": ["economy", "premium", "business", "first"]},
                "notes": {"type": "string", "maxLength": 500},
            },
            "required": ["origin", "destination", "date", "passengers"],
            "additionalProperties": False,
        },
    },
}
PREAMBLE = "I will book that flight for you now, checking the dates and the cabin you asked for."
ARGUMENTS = json.dumps(
    {
        "origin": "CDG",
        "destination": "JFK",
        "date": "2025-06-14",
        "passengers": 2,
        "cabin": "business",
        "notes": "window seats if possible, one vegetarian meal, travelling with a small dog in the cabin",
    }
)
REQUEST = {
    "model": "bench",
    "messages": [{"role": "user", "content": "Book CDG to JFK on 14 June for two, business."}],
    "tools": [TOOL],
    "stream": True,
}


def fragments(text: str) -> list[str]:
    """Cut like a tokenizer does: 3, 4, 5, 3, 4, 5... characters."""
    out, i, k = [], 0, 0
    while i < len(text):
        n = 3 + k % 3
        out.append(text[i : i + n])
        i, k = i + n, k + 1
    return out


def stream_events() -> list[bytes]:
    base = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "bench",
    }

    def ev(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return b"data: " + json.dumps({**base, "choices": [choice]}).encode() + b"\n\n"

    out = [ev({"role": "assistant", "content": ""})]
    out += [ev({"content": w + " "}) for w in PREAMBLE.split()]
    head = {
        "index": 0,
        "id": "call_bench",
        "type": "function",
        "function": {"name": "book_flight", "arguments": ""},
    }
    out.append(ev({"tool_calls": [head]}))
    out += [ev({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments(ARGUMENTS)]
    out.append(ev({}, "tool_calls"))
    out.append(b"data: [DONE]\n\n")
    return out


# ------------------------------------------------------------------------------------------------ servers
def serve_upstream(port: int) -> None:
    """A FAKE upstream: raw HTTP/1.1 keep-alive, chunked SSE, no delay between chunks."""
    events = stream_events()
    body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                raw = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in raw.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                await reader.readexactly(length)
                writer.write(head + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
        async with server:
            await server.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())


def serve_bare(port: int, upstream: str) -> None:
    """The floor: Starlette + httpx, forwarding bytes both ways, no parsing."""
    import httpx
    import uvicorn
    from starlette.applications import Starlette
    from starlette.background import BackgroundTask
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    client = httpx.AsyncClient(base_url=upstream, timeout=60, limits=httpx.Limits(max_connections=256))

    async def forward(request: Request) -> StreamingResponse:
        req = client.build_request(
            "POST",
            "/chat/completions",
            content=await request.body(),
            headers={"content-type": "application/json"},
        )
        resp = await client.send(req, stream=True)
        return StreamingResponse(
            resp.aiter_raw(),
            status_code=resp.status_code,
            media_type=resp.headers.get("content-type"),
            background=BackgroundTask(resp.aclose),
        )

    app = Starlette(routes=[Route("/v1/chat/completions", forward, methods=["POST"])])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


# ------------------------------------------------------------------------------------------------ client
async def run_load(base: str, concurrency: int, requests: int) -> tuple[list[float], float]:
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as http:
        latencies: list[float] = []

        async def one() -> None:
            started = time.perf_counter()
            async with http.stream("POST", "/chat/completions", json=REQUEST) as r:
                assert r.status_code == 200, await r.aread()
                tail = b""
                async for chunk in r.aiter_raw():
                    tail = (tail + chunk)[-32:]
                assert tail.endswith(b"data: [DONE]\n\n"), tail
            latencies.append(time.perf_counter() - started)

        async def worker(n: int) -> None:
            for _ in range(n):
                await one()

        await worker(1)  # warm the connection
        latencies.clear()
        per = max(1, requests // concurrency)
        started = time.perf_counter()
        await asyncio.gather(*(worker(per) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return latencies, len(latencies) / elapsed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ------------------------------------------------------------------------------------------------ guard CPU
def guard_cpu_per_chunk(repeats: int) -> tuple[float, int]:
    """Median microseconds of Guard.feed per event over ``repeats`` generations (process CPU time)."""
    from toolguard import ContentDelta, Finish, Guard, ToolCallDelta, ToolSet

    tools = ToolSet.from_openai([TOOL])
    events: list[Any] = [ContentDelta(w + " ") for w in PREAMBLE.split()]
    events.append(ToolCallDelta(0, "call_bench", "book_flight", ""))
    events += [ToolCallDelta(0, None, None, f) for f in fragments(ARGUMENTS)]
    events.append(Finish("tool_calls"))
    samples = []
    for _ in range(repeats):
        guard = Guard(tools)
        started = time.process_time()
        for event in events:
            verdict = guard.feed(event)
        samples.append((time.process_time() - started) / len(events))
        assert verdict.kind == "ok", verdict
    return statistics.median(samples) * 1e6, len(events)


def relay_cpu_per_chunk(repeats: int) -> float:
    """Median microseconds per SSE chunk of the proxy's whole per-chunk path, in-process: SSE decoding,
    ``json.loads``, translation to events, ``Guard.feed`` and re-encoding what goes out (hold mode)."""
    import json as _json

    from toolguard import Guard, ToolSet
    from toolguard._events import ContentDelta
    from toolguard._openai import ChunkWriter, read_chunk
    from toolguard.proxy._sse import SSEDecoder

    tools = ToolSet.from_openai([TOOL])
    events = stream_events()
    samples = []
    for _ in range(repeats):
        guard = Guard(tools)
        decoder = SSEDecoder()
        writer = ChunkWriter(id="chatcmpl-bench", created=1, model="bench")
        out = []
        started = time.process_time()
        for raw in events:
            for event in decoder.feed(raw):
                if event.data == "[DONE]":
                    continue
                for ev in read_chunk(_json.loads(event.data)).events:
                    guard.feed(ev)
                    if type(ev) is ContentDelta:
                        out.append(writer.content(ev.text))
        samples.append((time.process_time() - started) / len(events))
    return statistics.median(samples) * 1e6


def proxy_cpu_per_request(
    requests: int,
    *,
    path: str = "/v1/chat/completions",
    request: dict[str, Any] | None = None,
    **options: Any,
) -> tuple[float, float]:
    """Milliseconds of CPU per streamed request through the whole proxy app in-process (ASGI calls, the
    upstream an ``httpx.MockTransport`` yielding one SSE event per read, as a socket does): for the full
    stream, and for a minimal one (role, finish, ``[DONE]``) that isolates the fixed per-request cost.
    ``path`` and ``request``: another route's request over the same upstream stream (benchmarks/protocols.py);
    ``options``: proxy options for ``create_app`` (``protocols="translate"`` there).
    """
    import httpx

    from toolguard.proxy import create_app

    full = stream_events()
    minimal = [full[0], full[-2], full[-1]]

    class Events(httpx.AsyncByteStream):
        def __init__(self, events: list[bytes]) -> None:
            self.events = events

        async def __aiter__(self) -> Any:
            for event in self.events:
                yield event

    payload = json.dumps(REQUEST if request is None else request).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
    }

    async def measure(events: list[bytes]) -> float:
        async def upstream(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Events(events))

        app = create_app(
            upstream="http://upstream.invalid/v1", upstream_transport=httpx.MockTransport(upstream), **options
        )

        async def one() -> None:
            finished = asyncio.Event()
            first = True

            async def receive() -> dict[str, Any]:
                nonlocal first
                if first:
                    first = False
                    return {"type": "http.request", "body": payload, "more_body": False}
                await finished.wait()
                return {"type": "http.disconnect"}

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.body" and not message.get("more_body"):
                    finished.set()

            await app(scope, receive, send)

        async with app:
            await one()
            started = time.process_time()
            for _ in range(requests):
                await one()
            return (time.process_time() - started) / requests * 1e3

    return asyncio.run(measure(full)), asyncio.run(measure(minimal))


# ------------------------------------------------------------------------------------------------ main
def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: fewer requests and rounds")
    parser.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-bare", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
        return
    if args.serve_bare:
        serve_bare(int(args.serve_bare[0]), args.serve_bare[1])
        return

    rounds = 1 if args.quick else 3
    levels = [
        (1, 20 if args.quick else 100),
        (8, 40 if args.quick else 240),
        (64, 128 if args.quick else 640),
    ]
    us, n_events = guard_cpu_per_chunk(50 if args.quick else 400)
    relay_us = relay_cpu_per_chunk(50 if args.quick else 400)
    full_ms, fixed_ms = proxy_cpu_per_request(50 if args.quick else 400)

    up, bare, guard = free_port(), free_port(), free_port()
    upstream = f"http://127.0.0.1:{up}/v1"
    py = sys.executable
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen([py, __file__, "--serve-upstream", str(up)], env=env),
        subprocess.Popen([py, __file__, "--serve-bare", str(bare), upstream], env=env),
        subprocess.Popen(
            [
                py,
                "-m",
                "toolguard",
                "proxy",
                "--upstream",
                upstream,
                "--port",
                str(guard),
                "--log-level",
                "warning",
            ],
            env=env,
        ),
    ]
    try:
        for port in (up, bare, guard):
            wait_port(port)
        targets = {
            "direct": upstream,
            "bare hop": f"http://127.0.0.1:{bare}/v1",
            "toolguard": f"http://127.0.0.1:{guard}/v1",
        }
        results: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
        for concurrency, requests in levels:
            for _ in range(rounds):
                for name, base in targets.items():
                    lat, tput = asyncio.run(run_load(base, concurrency, requests))
                    results.setdefault((name, concurrency), []).append((pct(lat, 0.5), pct(lat, 0.99), tput))
    finally:
        for p in procs:
            p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()

    chunks = len(stream_events()) - 1
    print(
        f"# toolguard proxy benchmark ({os.cpu_count()} CPUs, {rounds} round(s),"
        f" {chunks} SSE chunks per stream)"
    )
    print(
        f"\nGuard CPU per SSE chunk, in-process: {us:.1f} us (median over generations of {n_events} events;"
        f" goal <= 20 us)"
    )
    print(
        f"Proxy relay CPU per SSE chunk, in-process (SSE decode + json.loads + events + Guard + re-encode):"
        f" {relay_us:.1f} us"
    )
    print(
        f"Proxy CPU per streamed request, whole app in-process: {full_ms:.2f} ms for {chunks} chunks,"
        f" {fixed_ms:.2f} ms for 3 (the fixed part); {(full_ms - fixed_ms) / (chunks - 2) * 1e3:.1f} us per"
        f" further chunk\n"
    )
    print("| concurrency | target | p50 ms | p99 ms | streams/s | added p50 ms | throughput vs bare hop |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    verdicts = []
    for concurrency, _ in levels:
        med = {
            name: tuple(statistics.median(r[i] for r in results[(name, concurrency)]) for i in range(3))
            for name in targets
        }
        direct_p50 = med["direct"][0]
        for name in targets:
            p50, p99, tput = med[name]
            added = "" if name == "direct" else f"{(p50 - direct_p50) * 1e3:.2f}"
            vs = "" if name == "direct" else f"{tput / med['bare hop'][2] * 100:.0f} %"
            print(
                f"| {concurrency} | {name} | {p50 * 1e3:.2f} | {p99 * 1e3:.2f} | {tput:.0f}"
                f" | {added} | {vs} |"
            )
        added_bare = med["bare hop"][0] - direct_p50
        added_guard = med["toolguard"][0] - direct_p50
        ratio = added_guard / added_bare if added_bare > 0 else float("inf")
        share = med["toolguard"][2] / med["bare hop"][2]
        verdicts.append((concurrency, ratio, share))
    print()
    for concurrency, ratio, share in verdicts:
        print(
            f"- concurrency {concurrency}: added p50 latency {ratio:.2f}x the bare hop's (goal <= 1.25x);"
            f" throughput {share * 100:.0f} % of the bare hop's (goal >= 90 %)"
        )


if __name__ == "__main__":
    main()
