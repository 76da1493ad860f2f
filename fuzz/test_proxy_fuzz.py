"""The proxy fuzz target: its fake hostile upstream, its judges, and a short seeded run (CI budget).

The judges are checked on hand-written responses (a stream without ``[DONE]``, an error event that is not
last, an invalid tool call delivered), so a clean fuzz run means the proxy passed, not that nothing looked.
Schemathesis drives the client side from the proxy's OpenAPI description: test_proxy_schemathesis.py.
"""

from __future__ import annotations

import base64
import json
import socket
import time
from pathlib import Path

import pytest

from toolguard._fuzz import new_findings, run_fuzz
from toolguard._fuzz._hostile import HostileUpstream, write_step
from toolguard._fuzz._targets._proxy import ProxyTarget

REGRESSIONS = Path(__file__).resolve().parent.parent / "tests" / "regressions" / "data"
SEED = 20261129


def _ask(port: int, script: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            f"POST /v1/x HTTP/1.1\r\nhost: h\r\nx-fuzz-script: {script}\r\n"
            "content-length: 2\r\n\r\n{}".encode()
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        return data


def test_hostile_upstream_plays_scripts_in_order() -> None:
    upstream = HostileUpstream()
    upstream.start()
    try:
        upstream.load("s", [[write_step(b"first")], [write_step(b"sec"), ["s", 10], write_step(b"ond")]])
        assert _ask(upstream.port, "s") == b"first"
        assert _ask(upstream.port, "s") == b"second"
        assert _ask(upstream.port, "s") == b"second"  # the last response repeats
        assert len(upstream.requests("s")) == 3
        deadline = time.monotonic() + 2
        while upstream.active() and time.monotonic() < deadline:  # the handler's last step races our read
            time.sleep(0.01)
        assert upstream.active() == []
    finally:
        upstream.stop()


def test_hostile_upstream_sees_the_peer_leave() -> None:
    upstream = HostileUpstream()
    upstream.start()
    try:
        upstream.load("slow", [[write_step(b"x"), ["s", 5000]]])
        sock = socket.create_connection(("127.0.0.1", upstream.port), timeout=5)
        sock.sendall(b"GET / HTTP/1.1\r\nx-fuzz-script: slow\r\n\r\n")
        assert sock.recv(1) == b"x"
        assert upstream.active() == ["slow#0"]  # a proxy that stopped here would leak this connection
        sock.close()
        deadline = time.monotonic() + 2
        while upstream.active() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert upstream.active() == []
    finally:
        upstream.stop()


def _request(tools: list[dict[str, object]]) -> dict[str, object]:
    body = {"model": "m", "messages": [], "tools": tools, "stream": True}
    return {
        "method": "POST",
        "path": "/v1/chat/completions",
        "mode": "hold",
        "responses": [],
        "body_b64": base64.b64encode(json.dumps(body).encode()).decode(),
    }


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        },
    }
]


def _sse(*payloads: object) -> bytes:
    return b"".join(
        b"data: " + (p if isinstance(p, bytes) else json.dumps(p).encode()) + b"\n\n" for p in payloads
    )


def _call(arguments: str, finish: str = "tool_calls") -> list[object]:
    return [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "c",
                                "type": "function",
                                "function": {"name": "f", "arguments": arguments},
                            }
                        ]
                    },
                    "finish_reason": None,
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
    ]


@pytest.mark.parametrize(
    ("body", "invariant"),
    [
        (_sse(*_call('{"n": 1}'), b"[DONE]"), None),
        (_sse(*_call('{"n": 1}')), "one-terminal-response"),
        (_sse({"error": {"message": "x"}}, *_call('{"n": 1}'), b"[DONE]"), "one-terminal-response"),
        (_sse(*_call('{"n": 1}'), b"[DONE]", b"[DONE]"), "one-terminal-response"),
        (_sse(*_call('{"n": "one"}'), b"[DONE]"), "guarded-output"),
        (_sse(*_call('{"n": '), b"[DONE]"), "guarded-output"),
        (_sse(*_call('{"n": ', finish="length"), b"[DONE]"), None),  # truncated, honestly labelled
        (_sse(*_call('{"n": "one"}'), {"error": {"message": "x"}}, b"[DONE]"), None),  # ended by an error
    ],
)
def test_stream_judge(body: bytes, invariant: str | None) -> None:
    found = ProxyTarget()._judge_stream(_request(TOOLS), body, "test", "")
    assert [v.invariant for v in found] == ([invariant] if invariant else [])


def test_short_seeded_run(tmp_path: Path) -> None:
    report = run_fuzz(
        targets=["proxy"], time_budget=40, seed=SEED, max_inputs=14, findings_dir=tmp_path, shrink_time=2.0
    )
    (result,) = report.targets
    if result.status == "skipped":
        pytest.skip(result.skip_reason)
    new = new_findings(report, REGRESSIONS)
    assert not new, "\n".join(f"{f.path}: {f.invariant}: {f.observed[:800]}" for f in new)
