"""Executor and AsyncExecutor against real tools: files, a local HTTP server, flaky, slow and leaky tools."""

from __future__ import annotations

import asyncio
import datetime
import http.server
import json
import runpy
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from toolguard import (
    AsyncExecutor,
    ConfigError,
    ExecutionRecord,
    Executor,
    RemoteRefRefused,
    RetryPolicy,
    Tool,
    ToolCall,
    ToolError,
    ToolSet,
    tool,
)
from toolguard._sanitize import sanitize


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def no_sleep_policy(attempts: int = 3, log: list[float] | None = None) -> RetryPolicy:
    return RetryPolicy(
        attempts=attempts, backoff=0.2, random=lambda: 0.5, sleep=(log if log is not None else []).append
    )


# --- real tools -----------------------------------------------------------------------------------
def file_tools(root: Path) -> ToolSet:
    def inside(path: str) -> Path:
        target = (root / path).resolve()
        if not target.is_relative_to(root.resolve()):
            raise PermissionError(f"{path!r} is outside the workspace")
        return target

    @tool(idempotent=True)
    def read_file(path: str) -> str:
        """Read a text file in the workspace."""
        return inside(path).read_text()

    @tool
    def write_file(path: str, content: str, overwrite: bool = False) -> dict[str, Any]:
        """Write a text file in the workspace."""
        target = inside(path)
        if target.exists() and not overwrite:
            raise FileExistsError(f"{path} exists; pass overwrite=true to replace it")
        target.write_text(content)
        return {"path": path, "bytes": len(content.encode())}

    return ToolSet([read_file, write_file])


class _Handler(http.server.BaseHTTPRequestHandler):
    posts = 0

    def do_GET(self) -> None:
        body = json.dumps({"path": self.path, "ok": True}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        type(self).posts += 1
        if self.path == "/drop":  # the request arrived; the answer never does (ambiguous for the client)
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.send_response(201)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def local_server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture
def server(local_server: str) -> str:
    """A real HTTP server on 127.0.0.1 (a random port), in a thread."""
    _Handler.posts = 0
    return local_server


@tool(idempotent=True)
def http_get(url: str) -> dict[str, Any]:
    """GET a URL."""
    response = httpx.get(url, timeout=5, verify=False)  # plain http; skip loading CA certificates
    return {"status": response.status_code, "json": response.json()}


@tool
def http_post(url: str, body: dict[str, Any]) -> int:
    """POST JSON (not idempotent)."""
    return httpx.post(url, json=body, timeout=5, verify=False).status_code


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


class Flaky:
    """Fails ``failures`` times with ``error``, then succeeds."""

    def __init__(self, failures: int, error: BaseException) -> None:
        self.failures, self.error, self.calls = failures, error, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "done"


# --- files ----------------------------------------------------------------------------------------
def test_file_tools_in_a_temp_dir(tmp_path: Path) -> None:
    ex = Executor(file_tools(tmp_path), retry=no_sleep_policy())
    written = ex.execute(ToolCall("write_file", '{"path": "notes.txt", "content": "héllo"}', "w1"))
    assert written.status == "ok" and written.result == {"path": "notes.txt", "bytes": 6}
    assert json.loads(written.content) == {"path": "notes.txt", "bytes": 6}
    assert (tmp_path / "notes.txt").read_text() == "héllo"
    read = ex.execute(ToolCall("read_file", '{"path": "notes.txt"}', "r1"))
    assert read.to_message() == {"role": "tool", "tool_call_id": "r1", "content": "héllo"}

    again = ex.execute(ToolCall("write_file", '{"path": "notes.txt", "content": "x"}', "w2"))
    assert again.status == "error" and again.attempts == 1
    assert again.error == "FileExistsError: notes.txt exists; pass overwrite=true to replace it"
    escape = ex.execute(ToolCall("read_file", '{"path": "../../etc/passwd"}', "r2"))
    assert escape.status == "error" and "outside the workspace" in (escape.error or "")
    missing = ex.execute(ToolCall("read_file", '{"path": "nope.txt"}', "r3"))
    assert missing.status == "error" and missing.attempts == 1  # FileNotFoundError is not transient


# --- validation before anything runs --------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("nope", "{}", "there is no tool named 'nope'; the available tools are: add"),
        ("add", '{"a": 1, "b": ', "not valid JSON"),
        ("add", '{"a": "one", "b": 2}', "/a: 'one' is not of type 'integer'"),
        ("add", '{"a": 1}', "(root): 'b' is a required property"),
        ("add", '{"a": 1, "b": 2, "c": 3}', "Additional properties are not allowed ('c' was unexpected)"),
        ("add", '{"a": 1, "b": 2} {"a": 3}', "trailing data"),
        ("add", "[1, 2]", "(root): [1, 2] is not of type 'object'"),
    ],
)
def test_invalid_proposals_are_refused_before_running(name: str, arguments: str, fragment: str) -> None:
    ran: list[int] = []

    @tool
    def add(a: int, b: int) -> int:
        ran.append(1)
        return a + b

    record = Executor([add]).execute(ToolCall(name, arguments, "c1"))
    assert record.status == "invalid" and record.attempts == 0 and ran == []
    assert fragment in (record.error or "")
    assert record.to_message()["content"].startswith(f"Invalid call to {name!r}:")


def test_duplicate_keys_are_ambiguous() -> None:
    record = Executor([Tool("f", {"type": "object"}, fn=lambda **kw: kw)]).execute(
        ToolCall("f", '{"a": 1, "a": 2}')
    )
    assert record.status == "invalid" and "duplicate key 'a'" in (record.error or "")


def test_every_violation_is_listed_for_one_retry() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    record = Executor([add]).execute(ToolCall("add", '{"a": "one", "b": "two", "c": 3}'))
    assert record.error is not None
    assert record.error.index("/a:") < record.error.index("/b:") and "'c' was unexpected" in record.error


def test_schemas_the_stream_validator_cannot_run() -> None:
    recursive = {
        "$schema": "https://json-schema.org/draft/2019-09/schema",
        "$recursiveAnchor": True,
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$recursiveRef": "#"}},
        },
    }
    ex = Executor([Tool("tree", recursive, fn=lambda **kw: "ok")])
    assert ex.execute(ToolCall("tree", '{"children": [{"name": "a"}]}')).status == "ok"
    bad = ex.execute(ToolCall("tree", '{"children": [{"name": 1}]}'))
    assert bad.status == "invalid" and "/children/0/name: 1 is not of type 'string'" in (bad.error or "")
    remote = {"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json"}}}
    with pytest.raises(RemoteRefRefused, match="tool 'fetchy'"):
        Executor([Tool("fetchy", remote, fn=lambda **kw: None)])


def test_pydantic_coerces_validated_arguments() -> None:
    seen: list[Any] = []

    class Slot(BaseModel):
        room: str
        seats: int = 2

    @tool
    def book(when: datetime.datetime, slot: Slot) -> str:
        seen.extend([when, slot])
        return "booked"

    record = Executor([book]).execute(
        ToolCall("book", '{"when": "2030-01-02T10:00:00Z", "slot": {"room": "A"}}')
    )
    assert record.status == "ok"
    assert seen[0] == datetime.datetime(2030, 1, 2, 10, tzinfo=datetime.UTC)
    assert seen[1] == Slot(room="A")


def test_json_tools_are_validated_against_their_schema() -> None:
    entries = json.loads((Path(__file__).parent.parent / "schemas/tools/weather.json").read_text())
    ex = Executor(
        ToolSet.from_openai(entries).bind(
            {"get_weather": lambda city, unit="celsius": f"{city}: 20", "get_forecast": lambda **kw: []}
        )
    )
    assert ex.execute(ToolCall("get_weather", '{"city": "Paris"}')).content == "Paris: 20"
    bad = ex.execute(ToolCall("get_weather", '{"city": "Paris", "unit": "kelvin"}'))
    assert bad.status == "invalid" and "/unit: 'kelvin' is not one of ['celsius', 'fahrenheit']" in (
        bad.error or ""
    )
    with pytest.raises(ToolError, match="without an implementation"):
        Executor(ToolSet.from_openai(entries))


# --- network: a real local server -----------------------------------------------------------------
def test_network_tool_against_a_local_server(server: str) -> None:
    record = Executor([http_get]).execute(ToolCall("http_get", json.dumps({"url": server + "/items?x=1"})))
    assert record.status == "ok"
    assert record.result == {"status": 200, "json": {"path": "/items?x=1", "ok": True}}


def test_refused_connection_is_retried_even_for_a_non_idempotent_tool() -> None:
    log: list[float] = []
    ex = Executor([http_post], retry=no_sleep_policy(log=log))
    url = f"http://127.0.0.1:{closed_port()}/x"
    record = ex.execute(ToolCall("http_post", json.dumps({"url": url, "body": {}})))
    assert record.status == "error" and record.attempts == 3  # nothing was sent, so trying again is safe
    assert record.error is not None and record.error.startswith("ConnectError")
    assert log == [0.1, 0.2]


def test_ambiguous_failure_is_not_repeated_for_a_non_idempotent_tool(server: str) -> None:
    ex = Executor([http_post], retry=no_sleep_policy())
    record = ex.execute(ToolCall("http_post", json.dumps({"url": server + "/drop", "body": {"n": 1}})))
    assert record.status == "error" and record.attempts == 1
    assert _Handler.posts == 1  # the server got it once; re-sending could have done it twice
    assert "not retried" in (record.error or "")
    assert ex.execute(ToolCall("http_post", json.dumps({"url": server + "/ok", "body": {}}))).result == 201


# --- retries --------------------------------------------------------------------------------------
def test_flaky_idempotent_tool_is_retried_with_backoff_and_jitter() -> None:
    flaky = Flaky(2, ConnectionResetError("connection reset by peer"))
    log: list[float] = []
    ex = Executor([Tool("flaky", fn=flaky, idempotent=True)], retry=no_sleep_policy(log=log))
    record = ex.execute(ToolCall("flaky", "{}"))
    assert (record.status, record.result, record.attempts, flaky.calls) == ("ok", "done", 3, 3)
    assert log == [0.1, 0.2]  # 0.2 * 2**(n-1), scaled by (1 - jitter * random()) = 0.5


def test_flaky_tool_gives_up_after_the_attempts() -> None:
    flaky = Flaky(5, ConnectionResetError("reset"))
    record = Executor([Tool("flaky", fn=flaky, idempotent=True)], retry=no_sleep_policy()).execute(
        ToolCall("flaky", "{}")
    )
    assert record.status == "error" and record.attempts == 3 and flaky.calls == 3
    assert record.error == "ConnectionResetError: reset (after 3 attempts)"


def test_ambiguous_failure_of_non_idempotent_tool_runs_once() -> None:
    flaky = Flaky(1, ConnectionResetError("reset"))
    record = Executor([Tool("flaky", fn=flaky)], retry=no_sleep_policy()).execute(ToolCall("flaky", "{}"))
    assert record.status == "error" and flaky.calls == 1


def test_permanent_errors_are_not_retried() -> None:
    flaky = Flaky(1, ValueError("bad input"))
    record = Executor([Tool("flaky", fn=flaky, idempotent=True)], retry=no_sleep_policy()).execute(
        ToolCall("flaky", "{}")
    )
    assert (record.status, record.attempts, record.error) == ("error", 1, "ValueError: bad input")


def test_custom_transient_exceptions() -> None:
    flaky = Flaky(1, KeyError("busy"))
    policy = RetryPolicy(transient=(KeyError,), sleep=lambda s: None)
    record = Executor([Tool("flaky", fn=flaky, idempotent=True)], retry=policy).execute(
        ToolCall("flaky", "{}")
    )
    assert record.status == "ok" and record.attempts == 2


def test_retry_policy_values() -> None:
    policy = RetryPolicy(backoff=1, multiplier=3, max_backoff=5, jitter=0)
    assert [policy.delay(n) for n in (1, 2, 3)] == [1, 3, 5]
    with pytest.raises(ConfigError):
        RetryPolicy(attempts=0)
    with pytest.raises(ConfigError):
        RetryPolicy(jitter=2)


# --- timeouts -------------------------------------------------------------------------------------
def test_slow_tool_times_out_and_is_not_rerun() -> None:
    release, started = threading.Event(), []

    def slow() -> str:
        started.append(time.perf_counter())
        release.wait(10)
        return "late"

    ex = Executor([Tool("slow", fn=slow)], retry=no_sleep_policy(), timeout=0.2)
    record = ex.execute(ToolCall("slow", "{}"))
    release.set()
    assert record.status == "timeout" and record.attempts == 1 and len(started) == 1
    assert 0.15 < record.duration < 2
    assert "outcome is unknown" in (record.error or "") and "not marked idempotent" in (record.error or "")


def test_slow_idempotent_tool_is_retried_then_reported() -> None:
    release, started = threading.Event(), []

    def slow() -> str:
        started.append(1)
        release.wait(10)
        return "late"

    ex = Executor([Tool("slow", fn=slow, idempotent=True, timeout=0.1)], retry=no_sleep_policy(attempts=2))
    record = ex.execute(ToolCall("slow", "{}"))
    release.set()
    assert record.status == "timeout" and record.attempts == 2 and len(started) == 2


def test_async_tool_in_the_sync_executor_is_cancelled_at_the_timeout() -> None:
    cancelled = threading.Event()

    @tool(timeout=0.1)
    async def sleepy() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    record = Executor([sleepy]).execute(ToolCall("sleepy", "{}"))
    assert record.status == "timeout"
    assert cancelled.wait(2)


# --- secrets --------------------------------------------------------------------------------------
SECRETS = [
    "hunter2",
    "sk-proj-AbCdEf0123456789xyzXYZ",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.c2ln",
]


def test_secrets_in_exception_text_never_reach_the_model() -> None:
    def leaky() -> None:
        try:
            raise ConnectionError("upstream said no")
        except ConnectionError as exc:
            raise RuntimeError(
                f"login failed for postgres://app:{SECRETS[0]}@db:5432 with key {SECRETS[1]}; "
                f"aws={SECRETS[2]} Authorization: Bearer {SECRETS[3]}\n" + "x" * 5000
            ) from exc

    record = Executor([Tool("leaky", fn=leaky)]).execute(ToolCall("leaky", "{}", "c1"))
    message = json.dumps(record.to_message())
    assert record.status == "error"
    for secret in SECRETS:
        assert secret not in message and secret not in (record.error or "")
    assert "Traceback" not in message and "upstream said no" not in message
    assert len(record.error or "") <= 500
    assert record.error is not None and record.error.startswith(
        "RuntimeError: login failed for postgres://[REDACTED]@"
    )
    assert SECRETS[0] in str(record.exception)  # the developer still has the original


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2 user=bob", "password=[REDACTED] user=bob"),
        ('{"api_key": "abc 123"}', '{"api_key": "[REDACTED]"}'),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "token [REDACTED]"),
        ("sig 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "sig [REDACTED]"),
        ("AWS secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok", "AWS secret [REDACTED] ok"),
        (
            "No such file: '/tmp/pytest-of-root/pytest-12/test_x0/data.txt'",
            "No such file: '/tmp/pytest-of-root/pytest-12/test_x0/data.txt'",
        ),
        (
            'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n    f()\nValueError: x',
            "ValueError: x",
        ),
        ("\x1b[31mred\x1b[0m", "red"),
    ],
)
def test_sanitize(text: str, expected: str) -> None:
    assert sanitize(text) == expected


# --- once per call id, results --------------------------------------------------------------------
def test_repeated_call_id_executes_once() -> None:
    runs: list[int] = []

    @tool
    def charge(amount: int) -> str:
        runs.append(amount)
        return f"charged {amount}"

    ex = Executor([charge])
    first = ex.execute(ToolCall("charge", '{"amount": 5}', "call_9"))
    second = ex.execute(ToolCall("charge", '{"amount": 5}', "call_9"))
    assert second is first and runs == [5]
    clash = ex.execute(ToolCall("charge", '{"amount": 500}', "call_9"))
    assert clash.status == "invalid" and "already used" in (clash.error or "") and runs == [5]
    ex.execute(ToolCall("charge", '{"amount": 5}'))  # no id: no memory
    assert runs == [5, 5]


def test_concurrent_duplicates_wait_for_the_first() -> None:
    runs: list[int] = []
    gate = threading.Event()

    def slow_charge() -> str:
        runs.append(1)
        gate.wait(5)
        return "ok"

    ex = Executor([Tool("charge", fn=slow_charge)])
    records: list[ExecutionRecord] = []
    threads = [
        threading.Thread(target=lambda: records.append(ex.execute(ToolCall("charge", "{}", "same"))))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    time.sleep(0.1)
    gate.set()
    for t in threads:
        t.join(5)
    assert runs == [1] and len(records) == 4 and all(r is records[0] for r in records)


def test_results_are_serialised_and_bounded() -> None:
    class Out(BaseModel):
        when: datetime.date

    tools = [
        Tool("model", fn=lambda: Out(when=datetime.date(2030, 1, 2))),
        Tool("big", fn=lambda: "y" * 50),
        Tool("odd", fn=lambda: {"s": {1}, "t": (1, 2)}),
    ]
    ex = Executor(tools, max_result_chars=30)
    assert ex.execute(ToolCall("model", "{}")).content == '{"when": "2030-01-02"}'
    assert ex.execute(ToolCall("big", "{}")).content == "y" * 30 + "… [truncated: 20 more characters]"
    assert ex.execute(ToolCall("odd", "{}")).content == '{"s": [1], "t": [1, 2]}'


# --- async ----------------------------------------------------------------------------------------
@pytest.mark.anyio
async def test_async_executor_runs_async_and_sync_tools_concurrently(tmp_path: Path) -> None:
    @tool
    async def nap(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "rested"

    def block(seconds: float) -> str:
        time.sleep(seconds)
        return "blocked"

    ex = AsyncExecutor([nap, Tool("block", {"type": "object"}, fn=block)])
    start = time.perf_counter()
    records = await ex.execute_all(
        [ToolCall("nap", '{"seconds": 0.3}'), ToolCall("block", '{"seconds": 0.3}'), ToolCall("nap", "{bad")]
    )
    assert time.perf_counter() - start < 0.55
    assert [r.status for r in records] == ["ok", "ok", "invalid"]
    assert [r.result for r in records[:2]] == ["rested", "blocked"]


@pytest.mark.anyio
async def test_async_timeout_cancels_the_coroutine() -> None:
    cancelled = asyncio.Event()

    @tool(timeout=0.1)
    async def sleepy() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    record = await AsyncExecutor([sleepy]).execute(ToolCall("sleepy", "{}"))
    assert record.status == "timeout" and cancelled.is_set()


@pytest.mark.anyio
async def test_async_sync_tool_timeout_does_not_block_shutdown() -> None:
    release = threading.Event()
    record = await AsyncExecutor([Tool("stuck", fn=lambda: release.wait(10))], timeout=0.1).execute(
        ToolCall("stuck", "{}")
    )
    release.set()
    assert record.status == "timeout"


@pytest.mark.anyio
async def test_async_retries_use_the_injected_sleep_and_dedupe_ids(server: str) -> None:
    naps: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        naps.append(seconds)

    flaky = Flaky(2, TimeoutError("read timed out"))
    ex = AsyncExecutor(
        [Tool("flaky", fn=flaky, idempotent=True), http_get],
        retry=RetryPolicy(random=lambda: 0.0, sleep=fake_sleep),
    )
    first, second = await asyncio.gather(
        ex.execute(ToolCall("flaky", "{}", "a")), ex.execute(ToolCall("flaky", "{}", "a"))
    )
    assert first is second and first.status == "ok" and first.attempts == 3 and flaky.calls == 3
    assert naps == [0.2, 0.4]
    got = await ex.execute(ToolCall("http_get", json.dumps({"url": server + "/a"})))
    assert got.result["json"]["path"] == "/a"


@pytest.mark.anyio
async def test_async_secret_is_sanitised() -> None:
    @tool
    async def leaky() -> None:
        raise PermissionError(f"denied: api_key={SECRETS[1]}")

    record = await AsyncExecutor([leaky]).execute(ToolCall("leaky", "{}"))
    assert record.status == "error" and SECRETS[1] not in record.content
    assert record.error == "PermissionError: denied: api_key=[REDACTED]"


def test_example_script_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(Path(__file__).parent.parent / "examples" / "tools_executor.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "cut 67 characters: they contain a fabricated tool result ('<tool_response>')" in out
    for line in [
        "call_2 read_file    invalid  attempts=0",
        "call_5 fetch_rates  ok       attempts=3",
        "call_6 charge_card  timeout  attempts=1",
        "call_7 deploy       error    attempts=1",
        "token=[REDACTED]",
    ]:
        assert line in out
    assert "sk-live" not in out
