"""Fuzz target ``mcp``: random and hostile JSON-RPC through ``toolguard mcp`` over stdio.

Setup (``open``): one ``python -m toolguard mcp -- python -m toolguard._fuzz._targets._mcp_server`` process
(the real command, a real SDK server behind it that records every call it receives), initialised once. Each
case writes one to twelve frames, some of them concurrently in flight: valid and invalid ``tools/call``s
(wrong types, out-of-range values, extra keys, unknown tools, non-object arguments), huge strings, deep
nesting, unknown methods, notifications, a reused request id, and malformed frames (not JSON, truncated JSON,
a JSON array, a wrong ``jsonrpc``, binary bytes, an empty line). Invariants:

- ``one-response-per-request``: every frame that is a JSON-RPC request gets exactly one well-formed answer
  with its id (``result`` xor ``error``, an integer code and a message); a frame too deep to parse may be
  answered with a parse error (id null) instead;
- ``no-hang``: every answer arrives within ``ANSWER_TIMEOUT`` seconds;
- ``no-crash``: the guard process is alive after the case and still answers ``ping``;
- ``nothing-invalid-forwarded``: every call the server recorded names one of its tools and has arguments
  ``jsonschema`` accepts for that tool's ``inputSchema``.

Cost per case: a few round trips over pipes (milliseconds), plus up to a few MB for the huge-string cases.
"""

from __future__ import annotations

import json
import os
import queue
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .._core import Target, Violation, register
from ._mcp_server import TOOLS

__all__ = ["McpTarget"]

ANSWER_TIMEOUT = 10.0


def _valid_args(rng: random.Random, name: str) -> dict[str, Any]:
    if name == "echo":
        return {"text": "".join(rng.choice('abcxyz é"\\\n') for _ in range(rng.randint(0, 64)))}
    if name == "add":
        return {"a": rng.choice([0, -1.5, 1e300, 7]), "b": rng.randint(0, 100)}
    if name == "tag":
        return {
            "tags": rng.sample(["red", "green", "blue"], rng.randint(0, 3)),
            "meta": {"depth": rng.randint(-9, 9)},
        }
    return {"anything": [1, {"x": None}]}


def _invalid_args(rng: random.Random, name: str) -> Any:
    choices: dict[str, list[Any]] = {
        "echo": [{"text": "x" * 65}, {"text": 5}, {}, {"text": "a", "extra": 1}],
        "add": [{"a": "1", "b": 2}, {"a": 1, "b": 101}, {"a": 1, "b": 2.5}, {"a": 1}, {"a": True, "b": 1}],
        "tag": [
            {"tags": ["purple"]},
            {"tags": ["red"] * 4},
            {"tags": "red"},
            {"tags": [], "meta": {"depth": "x"}},
        ],
        "free": [[1, 2], "text", 3],
    }
    return rng.choice(choices[name])


def _frame(rng: random.Random, rid: str) -> dict[str, Any]:
    """A frame: ``text`` to write, ``id`` when it is a request, ``deep`` when it may be too deep to parse."""
    kind = rng.choice(
        [
            "valid",
            "valid",
            "invalid",
            "invalid",
            "unknown_tool",
            "bad_params",
            "huge",
            "deep",
            "method",
            "notification",
            "malformed",
        ]
    )
    name = rng.choice([t["name"] for t in TOOLS])
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": "tools/call"}
    if kind == "valid":
        message["params"] = {"name": name, "arguments": _valid_args(rng, name)}
    elif kind == "invalid":
        message["params"] = {"name": name, "arguments": _invalid_args(rng, name)}
    elif kind == "unknown_tool":
        message["params"] = {"name": rng.choice(["", "nope", "echo ", "ECHO", "../echo"]), "arguments": {}}
    elif kind == "bad_params":
        message["params"] = rng.choice([{"name": 5}, {}, {"arguments": {}}, {"name": None, "arguments": []}])
    elif kind == "huge":
        size = rng.choice([10_000, 300_000, 2_000_000])
        message["params"] = {"name": rng.choice(["echo", "free"]), "arguments": {"text": "y" * size}}
    elif kind == "deep":  # written as text: json.dumps would recurse past Python's limit
        depth = rng.choice([50, 200, 2000, 20_000])
        nested = '{"n":' * depth + "0" + "}" * depth
        params = f'{{"name": "free", "arguments": {{"d": {nested}}}}}'
        text = f'{{"jsonrpc": "2.0", "id": {json.dumps(rid)}, "method": "tools/call", "params": {params}}}'
        return {"text": text, "id": rid, "deep": depth > 100}
    elif kind == "method":
        message["method"] = rng.choice(
            ["ping", "no/such", "resources/list", "prompts/list", "tools/list", "x" * 300]
        )
    elif kind == "notification":
        note: dict[str, Any] = {
            "jsonrpc": "2.0",
            "method": rng.choice(["notifications/cancelled", "notifications/whatever"]),
        }
        if rng.random() < 0.5:
            note["params"] = {"requestId": "nobody"}
        return {"text": json.dumps(note), "id": None, "deep": False}
    else:
        text = rng.choice(
            [
                "{",
                "not json",
                "[]",
                '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
                '{"jsonrpc":"1.0","id":1}',
                '{"id": 5}',
                "\u0000\u0001garbage",
                '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
                '{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
                " ",
            ]
        )
        return {"text": text, "id": None, "deep": False}
    return {"text": json.dumps(message), "id": rid, "deep": False}


def _well_formed(answer: Any) -> bool:
    if (
        not isinstance(answer, dict)
        or answer.get("jsonrpc") != "2.0"
        or ("result" in answer) == ("error" in answer)
    ):
        return False
    if "error" in answer:
        error = answer["error"]
        return (
            isinstance(error, dict)
            and isinstance(error.get("code"), int)
            and isinstance(error.get("message"), str)
        )
    return isinstance(answer["result"], dict)


class McpTarget(Target):
    name = "mcp"
    description = "hostile JSON-RPC through toolguard mcp (stdio) in front of a recording SDK server"
    watchdog = False

    def __init__(self) -> None:
        super().__init__()
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._case = 0

    def unavailable(self) -> str | None:
        try:
            import mcp  # noqa: F401
        except ImportError:
            return "the MCP SDK is not installed (pip install 'toolguard[mcp]')"
        return None

    @property
    def _log(self) -> Path:
        assert self._dir is not None
        return Path(self._dir.name) / "calls.jsonl"

    def open(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="toolguard-fuzz-mcp-")
        self._start()

    def _start(self) -> None:
        env = {**os.environ, "TOOLGUARD_FUZZ_MCP_LOG": str(self._log)}
        root = Path(__file__).resolve().parents[3]
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
        server = [sys.executable, "-m", "toolguard._fuzz._targets._mcp_server"]
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "toolguard", "mcp", "--log-level", "error", "--", *server],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._lines = queue.Queue()
        threading.Thread(target=self._read, args=(self._proc, self._lines), daemon=True).start()
        self._write(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "fuzz", "version": "0"},
                },
            }
        )
        self._answers({"init": 1}, time.monotonic() + 60)
        self._write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    @staticmethod
    def _read(proc: subprocess.Popen[bytes], lines: queue.Queue[bytes | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def _write(self, message: dict[str, Any] | str) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        text = message if isinstance(message, str) else json.dumps(message)
        self._proc.stdin.write(text.encode("utf-8", "surrogatepass") + b"\n")
        self._proc.stdin.flush()

    def _answers(
        self, wanted: dict[Any, int], deadline: float, deep: set[Any] | frozenset[Any] = frozenset()
    ) -> tuple[dict[Any, list[Any]], list[Any]]:
        """Answers by id (and the id-null ones) until each wanted id has one (a parse error may stand for a
        ``deep`` one) or the deadline passes."""
        by_id: dict[Any, list[Any]] = {}
        nulls: list[Any] = []
        while True:
            missing = [i for i, n in wanted.items() if len(by_id.get(i, ())) < n]
            if not missing or (set(missing) <= deep and len(nulls) >= len(missing)):
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                break
            if line is None:
                break
            try:
                answer = json.loads(line)
            except ValueError:
                nulls.append(line.decode("utf-8", "replace"))
                continue
            if isinstance(answer, dict) and "method" in answer:
                continue  # a notification or a server request (none expected here)
            rid = answer.get("id") if isinstance(answer, dict) else None
            if rid is None:
                nulls.append(answer)
            else:
                by_id.setdefault(rid, []).append(answer)
        return by_id, nulls

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
            self._proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def generate(self, rng: random.Random) -> dict[str, Any]:
        frames = [_frame(rng, f"r{i}") for i in range(rng.randint(1, 12))]
        requests = [f for f in frames if f["id"] is not None]
        if requests and rng.random() < 0.3:
            frames.append(dict(rng.choice(requests)))  # the same request id again
        return {"frames": frames}

    def check(self, case: dict[str, Any]) -> list[Violation]:
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        self._case += 1
        prefix = f"c{self._case}-"
        frames = case["frames"]
        expected: dict[Any, int] = {}
        deep: set[Any] = set()
        self._log.write_text("")
        for frame in frames:
            text = frame["text"]
            if frame["id"] is not None:
                rid = prefix + frame["id"]
                text = text.replace(json.dumps(frame["id"]), json.dumps(rid), 1)
                expected[rid] = expected.get(rid, 0) + 1
                if frame["deep"]:
                    deep.add(rid)
            self._write(text)
        self._write({"jsonrpc": "2.0", "id": prefix + "ping", "method": "ping"})
        wanted = {**expected, prefix + "ping": 1}
        by_id, nulls = self._answers(wanted, time.monotonic() + ANSWER_TIMEOUT, deep)
        more, more_nulls = self._answers({"(extra answers)": 1}, time.monotonic() + 0.1)  # none should come
        for rid, answers in more.items():
            by_id.setdefault(rid, []).extend(answers)
        nulls += more_nulls
        violations: list[Violation] = []
        assert self._proc is not None
        if self._proc.poll() is not None:
            return [
                Violation("no-crash", "the guard keeps running", f"it exited with {self._proc.returncode}")
            ]
        if prefix + "ping" not in by_id:
            violations.append(Violation("no-hang", "ping answered after the case", "no answer"))
        parse_errors = [n for n in nulls if isinstance(n, dict) and n.get("error", {}).get("code") == -32700]
        spare = len(parse_errors)
        for rid, count in expected.items():
            got = by_id.get(rid, [])
            if rid in deep and len(got) < count and spare:
                spare -= count - len(got)
                continue
            if len(got) != count:
                violations.append(
                    Violation(
                        "one-response-per-request",
                        f"{count} answer(s) to {rid}",
                        f"{len(got)}: {str(got)[:300]}",
                        signature=f"count:{len(got) > count}",
                    )
                )
            elif not all(_well_formed(a) for a in got):
                violations.append(
                    Violation(
                        "one-response-per-request",
                        "well-formed answers",
                        str(got)[:300],
                        signature="malformed-answer",
                    )
                )
        violations += self._forwarded_violations()
        return violations

    def _forwarded_violations(self) -> list[Violation]:
        from jsonschema import Draft202012Validator

        schemas = {t["name"]: t["inputSchema"] for t in TOOLS}
        out = []
        for line in self._log.read_text().splitlines():
            call = json.loads(line)
            schema = schemas.get(call["name"])
            if schema is None or not Draft202012Validator(schema).is_valid(call["arguments"] or {}):
                out.append(
                    Violation(
                        "nothing-invalid-forwarded",
                        "only valid calls reach the server",
                        json.dumps(call)[:300],
                        signature=f"forwarded:{call['name']}",
                    )
                )
        return out


register("mcp", McpTarget)
