"""CPU of ``/v1/messages`` and ``/v1/responses`` against ``/v1/chat/completions``, the same stream guarded.

Each route gets the same request (the flight-booking tool of ``benchmarks/proxy.py``, in each protocol's own
form) over the same upstream stream (a role chunk, a preamble in word-sized chunks, the call's arguments in
3-to-5-character fragments, the finish chunk, ``[DONE]``), through the whole proxy app in-process
(``proxy_cpu_per_request``: ASGI calls, an ``httpx.MockTransport`` upstream, no network), with
``protocols="translate"``: the upstream stream is chat for every route, so what is measured is the guard plus
the translation into each protocol's events (in the default ``auto`` mode the mock upstream would be asked
natively and answer in chat's shape). The figure per
further chunk is (full stream - minimal stream) / extra chunks, so the fixed per-request cost cancels; the
goal (issue 18) is that the translated protocols' CPU per streamed event stays within 20 % of the chat path's.
Routes are measured in interleaved rounds; figures are the best round's (the least disturbed by other load
on a shared machine: CPU time under contention is inflated by cache and core sharing).

    .venv/bin/python benchmarks/protocols.py            # 9 rounds of 200 requests per route
    .venv/bin/python benchmarks/protocols.py --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from proxy import REQUEST, TOOL, proxy_cpu_per_request, stream_events

FUNCTION = TOOL["function"]
ROUTES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": REQUEST,
    "/v1/messages": {
        "model": "bench",
        "max_tokens": 512,
        "messages": REQUEST["messages"],
        "tools": [{"name": FUNCTION["name"], "input_schema": FUNCTION["parameters"]}],
        "stream": True,
    },
    "/v1/responses": {
        "model": "bench",
        "input": REQUEST["messages"][0]["content"],
        "tools": [{"type": "function", "name": FUNCTION["name"], "parameters": FUNCTION["parameters"]}],
        "stream": True,
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, requests = (1, 40) if args.quick else (9, 200)
    chunks = len(stream_events()) - 1
    per_chunk: dict[str, list[float]] = {path: [] for path in ROUTES}
    per_request: dict[str, list[float]] = {path: [] for path in ROUTES}
    for _ in range(rounds):
        for path, request in ROUTES.items():
            full, fixed = proxy_cpu_per_request(requests, path=path, request=request, protocols="translate")
            per_request[path].append(full)
            per_chunk[path].append((full - fixed) / (chunks - 2) * 1e3)
    chat = min(per_chunk["/v1/chat/completions"])
    print(
        f"# /v1/messages and /v1/responses vs chat ({os.cpu_count()} CPUs, {rounds} round(s) of {requests}"
        f" requests per route, {chunks} SSE chunks per stream)\n"
    )
    print("| route | CPU per request ms | CPU per further chunk us | vs chat |")
    print("|---|---:|---:|---:|")
    for path in ROUTES:
        us = min(per_chunk[path])
        print(f"| `{path}` | {min(per_request[path]):.2f} | {us:.1f} | {us / chat * 100:.0f} % |")


if __name__ == "__main__":
    main()
