"""Fuzz target ``proxy``: the proxy between random clients and a hostile upstream.

Setup (``open``): a ``HostileUpstream`` (raw asyncio server, a fake) on 127.0.0.1, and two proxies built by
``toolguard.proxy.create_app`` (modes ``hold`` and ``pass``, short timeouts) served by uvicorn in a thread on
127.0.0.1. Each case loads response scripts into the upstream (SSE with valid or invalid tool-call arguments,
mutated framing, truncation, a slow drip, a giant chunk, non-stream JSON, error statuses with odd
``retry-after``, random bytes, silence, a reset) and sends one to four client requests (chat completions,
stream or not, with generated tool schemas; malformed bodies; other paths; a client that leaves mid-stream),
some concurrently. Invariants:

- ``one-terminal-response``: every client gets one complete HTTP response; a chat SSE stream ends with
  ``data: [DONE]``, with at most one error event, right before it, and nothing after; error statuses carry an
  OpenAI-format ``{"error": {...}}`` body;
- ``no-hang``: every request ends within the proxy's deadline plus a margin;
- ``proxy-internal-error``: no unhandled exception in the proxy (its safety net's 500 ``proxy_error`` or a
  logged traceback);
- ``guarded-output``: a stream that ends cleanly (no error event, finish reason not ``length``) and a 200
  non-stream answer only deliver tool calls of a requested tool whose arguments jsonschema accepts; a
  truncated call is never labelled ``tool_calls``;
- ``no-leak``: once the clients have their answers, no upstream connection is still open from the proxy's
  side, and the ``streams_open`` gauge is back to zero;
- ``no-crash``: ``/healthz`` still answers 200.

Cost per case: a few HTTP exchanges on loopback, bounded by the short timeouts (about 0.05 s typically, up to
~5 s for silent or dripping upstreams).
"""

from __future__ import annotations

import base64
import json
import logging
import random
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .._core import Target, Violation, register
from .._hostile import HostileUpstream, steps_to_text
from .._instances import hypothesis_missing
from .._jsonref import reference_valid, strict_loads
from ._common import component, describe_exception
from ._proxy_cases import make_request
from ._sse import reference_decode

__all__ = ["PROXY_OPTIONS", "ProxyTarget"]

PROXY_OPTIONS: dict[str, Any] = {
    "connect_timeout": 1.0,
    "read_timeout": 1.0,
    "deadline": 4.0,
    "upstream_retries": 1,
    "backoff_initial": 0.01,
    "backoff_max": 0.05,
    "max_retry_after": 0.2,
    "max_reasks": 1,
    "log_level": "warning",
}
CLIENT_MARGIN = 4.0
"""Seconds beyond the proxy's deadline before a request counts as hung."""
LEAK_GRACE = 3.0
"""Seconds after the last answer within which upstream connections must be closed."""


class _LogTrap(logging.Handler):
    """Collects ERROR records of the proxy and uvicorn (an unhandled exception is a finding)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []
        self._lock2 = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        with self._lock2:
            self.records.append(f"{record.name}: {text}")

    def drain(self) -> list[str]:
        with self._lock2:
            out, self.records = self.records, []
        return out


@dataclass(slots=True)
class _Served:
    app: Any
    server: Any
    thread: threading.Thread
    port: int


# -- the target --------------------------------------------------------------------------------------------


class ProxyTarget(Target):
    name = "proxy"
    description = "proxy: hostile upstream, random clients, one terminal response"
    watchdog = False  # requests carry their own timeouts; SIGALRM in the middle of httpx would leak sockets

    def __init__(self) -> None:
        super().__init__()
        self._upstream: HostileUpstream | None = None
        self._served: dict[str, _Served] = {}
        self._client: Any = None
        self._trap = _LogTrap()
        self._case = 0

    def unavailable(self) -> str | None:
        reason = component("toolguard.proxy", "create_app")[1] or hypothesis_missing()
        if reason is not None:
            return reason
        try:
            from toolguard.proxy import create_app  # noqa: F401
        except Exception as exc:
            return f"toolguard.proxy.create_app cannot be imported ({describe_exception(exc)})"
        return None

    def open(self) -> None:
        import httpx

        self._upstream = HostileUpstream()
        self._upstream.start()
        for name in ("toolguard.proxy", "uvicorn.error", "uvicorn"):
            logging.getLogger(name).addHandler(self._trap)
        for mode in ("hold", "pass"):
            self._served[mode] = self._serve(mode)
        self._client = httpx.Client(
            timeout=httpx.Timeout(PROXY_OPTIONS["deadline"] + CLIENT_MARGIN, connect=2.0)
        )

    def _serve(self, mode: str) -> _Served:
        import uvicorn

        from toolguard.proxy import create_app

        assert self._upstream is not None
        app = create_app(upstream=f"http://127.0.0.1:{self._upstream.port}/v1", mode=mode, **PROXY_OPTIONS)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", log_config=None, lifespan="on", access_log=False)
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name=f"proxy-{mode}", daemon=True
        )
        thread.start()
        started = time.monotonic()
        while not server.started:
            if time.monotonic() - started > 15 or not thread.is_alive():
                raise RuntimeError(f"the {mode} proxy did not start")
            time.sleep(0.01)
        return _Served(app, server, thread, port)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        for served in self._served.values():
            served.server.should_exit = True
        for served in self._served.values():
            served.thread.join(10)
        self._served = {}
        if self._upstream is not None:
            self._upstream.stop()
            self._upstream = None
        for name in ("toolguard.proxy", "uvicorn.error", "uvicorn"):
            logging.getLogger(name).removeHandler(self._trap)

    def generate(self, rng: random.Random) -> dict[str, Any]:
        count = 1 if rng.random() < 0.8 else rng.randint(2, 4)
        tag = f"fz{rng.randrange(16**8):08x}"
        return {"requests": [make_request(rng, f"{tag}-{i}") for i in range(count)]}

    # checking ---------------------------------------------------------------------------------------------
    def check(self, case: dict[str, Any]) -> list[Violation]:
        if self._upstream is None:
            self.open()
        assert self._upstream is not None
        self._case += 1
        suffix = f"-r{self._case}"  # fresh script ids per replay, so attempts count from zero
        requests = [{**r, "script": r["script"] + suffix} for r in case["requests"]]
        for r in requests:
            self._upstream.load(r["script"], r["responses"])
        self._trap.drain()
        if len(requests) == 1:
            results = [self._send(requests[0])]
        else:
            with ThreadPoolExecutor(len(requests)) as pool:
                results = list(pool.map(self._send, requests))
        out: list[Violation] = []
        for request, result in zip(requests, results, strict=True):
            out += self._judge(request, result)
        out += self._after(requests)
        for r in requests:
            self._upstream.forget(r["script"])
        return out

    def _send(self, request: dict[str, Any]) -> dict[str, Any]:
        import httpx

        served = self._served[request["mode"]]
        url = f"http://127.0.0.1:{served.port}{request['path']}"
        headers = {**request["headers"], "x-fuzz-script": request["script"]}
        body = base64.b64decode(request["body_b64"])
        started = time.monotonic()
        result: dict[str, Any] = {"status": None, "headers": {}, "body": b"", "error": None, "left": False}
        try:
            with self._client.stream(
                request["method"], url, headers=headers, content=body or None
            ) as response:
                result["status"] = response.status_code
                result["headers"] = {k.lower(): v for k, v in response.headers.items()}
                data = b""
                for chunk in response.iter_raw():
                    data += chunk
                    if request.get("read_limit") is not None and len(data) >= request["read_limit"]:
                        result["left"] = True
                        break
                result["body"] = data
        except httpx.TimeoutException as exc:
            result["error"] = f"timeout: {describe_exception(exc)}"
            result["timeout"] = True
        except httpx.HTTPError as exc:
            result["error"] = describe_exception(exc)
        result["elapsed"] = time.monotonic() - started
        return result

    def _judge(self, request: dict[str, Any], result: dict[str, Any]) -> list[Violation]:
        where = f"{request['method']} {request['path']} ({request['mode']} mode)"
        script = " | ".join(steps_to_text(r, 200) for r in request["responses"])
        limit = PROXY_OPTIONS["deadline"] + CLIENT_MARGIN
        if result.get("timeout") or result["elapsed"] > limit:
            return [
                Violation(
                    "no-hang",
                    f"{where} answers within {limit:g} s",
                    f"{result['error'] or 'took'} after {result['elapsed']:.1f} s; upstream: {script}"[:3000],
                )
            ]
        if result["error"] is not None:
            self.stats["client transport error"] += 1
            return [
                Violation(
                    "one-terminal-response",
                    f"{where}: a complete HTTP response",
                    f"client error {result['error']}; upstream: {script}"[:3000],
                    signature=f"one-terminal-response:transport:{result['error'].split(':')[0]}",
                )
            ]
        status, body = result["status"], result["body"]
        self.stats[f"status {status}"] += 1
        if result["left"]:
            self.stats["client left mid-stream"] += 1
            return []
        content_type = result["headers"].get("content-type", "")
        if status == 500 and b"proxy_error" in body:
            return [
                Violation(
                    "proxy-internal-error",
                    f"{where}: no unhandled exception in the proxy",
                    f"500 proxy_error: {body[:500]!r}; upstream: {script}"[:3000],
                )
            ]
        if request["path"] != "/v1/chat/completions":
            return []
        if content_type.startswith("text/event-stream"):
            return self._judge_stream(request, body, where, script)
        return self._judge_json(request, status, body, where, script)

    def _judge_stream(self, request: dict[str, Any], body: bytes, where: str, script: str) -> list[Violation]:
        events = reference_decode(body)
        if events is None:
            return [Violation("one-terminal-response", f"{where}: a UTF-8 SSE stream", f"{body[:800]!r}")]
        datas = [data for data, name in events if name in (None, "message")]
        problems = []
        if not datas or datas[-1] != "[DONE]":
            problems.append("the stream does not end with data: [DONE]")
        if datas.count("[DONE]") > 1:
            problems.append("[DONE] sent more than once")
        errors = [i for i, d in enumerate(datas) if d.startswith('{"error"') or d.startswith('{"error":')]
        parsed: list[Any] = []
        for d in datas:
            if d == "[DONE]":
                continue
            try:
                parsed.append(strict_loads(d))
            except ValueError:
                problems.append(f"an event is not JSON: {d[:100]!r}")
                break
        errors = [i for i, p in enumerate(parsed) if isinstance(p, dict) and "error" in p]
        if len(errors) > 1 or (errors and errors[0] != len(parsed) - 1):
            problems.append(f"error events at {errors} of {len(parsed)} events (one, last, expected)")
        if problems:
            return [
                Violation(
                    "one-terminal-response",
                    f"{where}: one terminal SSE ending",
                    "; ".join(problems) + f"\nclient got: {body[-600:]!r}\nupstream: {script}"[:3000],
                    signature="one-terminal-response:" + problems[0][:40],
                )
            ]
        if errors:
            self.stats["stream ended with an error event"] += 1
            return []
        calls: dict[int, dict[str, Any]] = {}
        finish = None
        for chunk in parsed:
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                for tc in delta.get("tool_calls") or []:
                    entry = calls.setdefault(tc.get("index", 0), {"name": "", "arguments": ""})
                    fn = tc.get("function") or {}
                    entry["name"] += fn.get("name") or ""
                    entry["arguments"] += fn.get("arguments") or ""
                finish = choice.get("finish_reason") or finish
        return self._judge_calls(request, list(calls.values()), finish, where, script, f"{body[-800:]!r}")

    def _judge_json(
        self, request: dict[str, Any], status: int, body: bytes, where: str, script: str
    ) -> list[Violation]:
        try:
            payload = json.loads(body)
        except ValueError:
            return [
                Violation(
                    "one-terminal-response",
                    f"{where}: a JSON body",
                    f"status {status}, body {body[:500]!r}; upstream: {script}"[:3000],
                    signature="one-terminal-response:json-body",
                )
            ]
        if status >= 400:
            error = payload.get("error") if isinstance(payload, dict) else None
            if not isinstance(error, dict) or not isinstance(error.get("message"), str):
                return [
                    Violation(
                        "one-terminal-response",
                        f"{where}: an OpenAI-format error body",
                        f"status {status}, body {body[:500]!r}",
                        signature="one-terminal-response:error-shape",
                    )
                ]
            return []
        if status != 200 or not isinstance(payload, dict):
            return []
        choices = payload.get("choices") or []
        if not choices:
            return []
        message = choices[0].get("message") or {}
        calls = [
            {
                "name": (tc.get("function") or {}).get("name", ""),
                "arguments": (tc.get("function") or {}).get("arguments", ""),
            }
            for tc in message.get("tool_calls") or []
        ]
        finish = choices[0].get("finish_reason")
        if finish == "length" and calls:
            return [
                Violation(
                    "guarded-output",
                    f"{where}: a truncated answer carries no tool calls",
                    f"finish_reason length with calls {calls}"[:2000],
                )
            ]
        return self._judge_calls(request, calls, finish, where, script, f"{body[:800]!r}")

    def _judge_calls(
        self,
        request: dict[str, Any],
        calls: list[dict[str, Any]],
        finish: Any,
        where: str,
        script: str,
        shown: str,
    ) -> list[Violation]:
        if not calls:
            return []
        try:
            tools = {
                t["function"]["name"]: t["function"].get("parameters", {})
                for t in json.loads(base64.b64decode(request["body_b64"]))["tools"]
            }
        except (ValueError, KeyError, TypeError):
            return []
        bad = []
        for call in calls:
            if call["name"] not in tools:
                bad.append(f"unknown tool {call['name']!r}")
                continue
            try:
                value = strict_loads(call["arguments"])
            except ValueError:
                bad.append(f"{call['name']}: arguments are not JSON: {call['arguments'][:200]!r}")
                continue
            if reference_valid(tools[call["name"]], value, check_schema=False) is False:
                bad.append(f"{call['name']}: arguments violate the schema: {call['arguments'][:200]!r}")
        if not bad:
            self.stats["valid tool calls delivered"] += 1
            return []
        if finish == "length":
            return []  # a truncated call, honestly labelled
        return [
            Violation(
                "guarded-output",
                f"{where}: only valid calls of requested tools reach the client",
                f"{'; '.join(bad)} (finish_reason {finish!r})\nclient got: {shown}\nupstream: {script}"[
                    :3000
                ],
            )
        ]

    def _after(self, requests: list[dict[str, Any]]) -> list[Violation]:
        assert self._upstream is not None
        out: list[Violation] = []
        deadline = time.monotonic() + LEAK_GRACE
        while time.monotonic() < deadline:
            leaked = self._upstream.active()
            gauges = {m: s.app.metrics.streams_open for m, s in self._served.items()}
            if not leaked and not any(gauges.values()):
                break
            time.sleep(0.02)
        else:
            scripts = " | ".join(steps_to_text(r, 120) for q in requests for r in q["responses"])
            if leaked:
                out.append(
                    Violation(
                        "no-leak",
                        "upstream connections closed once the client has its answer",
                        f"still open: {leaked}; upstream: {scripts}"[:3000],
                        signature="no-leak:upstream",
                    )
                )
            if any(gauges.values()):
                out.append(
                    Violation(
                        "no-leak",
                        "streams_open back to 0",
                        f"streams_open {gauges}",
                        signature="no-leak:gauge",
                    )
                )
        for mode, served in self._served.items():
            try:
                health = self._client.get(f"http://127.0.0.1:{served.port}/healthz", timeout=3.0)
                ok = health.status_code == 200
            except Exception as exc:
                ok, health = False, exc
            if not ok or not served.thread.is_alive():
                out.append(Violation("no-crash", f"the {mode} proxy still answers /healthz", f"{health!r}"))
        errors = self._trap.drain()
        if errors:
            out.append(
                Violation(
                    "proxy-internal-error",
                    "no error logged by the proxy or uvicorn",
                    "\n".join(errors)[-3000:],
                    signature="proxy-internal-error:" + errors[0].splitlines()[0][:60],
                )
            )
        return out

    def shrink(self, case: dict[str, Any]) -> Any:
        requests = case["requests"]
        if len(requests) > 1:
            for i in range(len(requests)):
                yield {"requests": requests[:i] + requests[i + 1 :]}
        for i, r in enumerate(requests):
            if len(r["responses"]) > 1:
                for j in range(len(r["responses"])):
                    smaller = {**r, "responses": r["responses"][:j] + r["responses"][j + 1 :]}
                    yield {"requests": [*requests[:i], smaller, *requests[i + 1 :]]}


register("proxy", ProxyTarget)
