"""MCP servers for the guard's tests, written with the official SDK's low-level ``Server``.

The low-level ``Server`` validates nothing (no argument checks against ``inputSchema``, no output checks), so
whatever reaches it shows what the guard let through. Every ``tools/call`` it receives is appended to the
JSON-lines file named by ``$TOOLGUARD_TEST_CALL_LOG`` before it runs: a test reads it to prove a call never
reached the server, or ran exactly once.

Tools: ``get_weather`` (read-only, output schema), ``add`` (read-only, output schema), ``write_note`` (not
idempotent, not destructive), ``delete_all`` (no annotations: destructive by the spec's defaults),
``flaky_read`` / ``flaky_write`` (kill the server process on their first call, as a crash would; read-only /
not idempotent), ``slow`` (sleeps), ``bad_output`` (violates its output schema), ``leaky_error`` (an error
text with a secret and a traceback), ``big`` (a large result), ``progress`` (sends two progress
notifications), ``add_tool`` (adds ``late_tool`` and sends ``notifications/tools/list_changed``).

Run: ``python tests/mcp/servers.py stdio`` (stdio) or, in-process, ``http_app()`` (Streamable HTTP).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "unit": {"enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER_OUT = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}, "unit": {"type": "string"}},
    "required": ["city", "temperature", "unit"],
}
NUMBERS = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
EMPTY = {"type": "object", "properties": {}}
READ_ONLY = {"readOnlyHint": True}


def _tool(
    name: str, schema: dict[str, Any], annotations: dict[str, Any] | None = None, **extra: Any
) -> types.Tool:
    entry: dict[str, Any] = {"name": name, "description": f"test tool {name}", "inputSchema": schema, **extra}
    if annotations is not None:
        entry["annotations"] = annotations
    return types.Tool.model_validate(entry)


TOOLS = [
    _tool("get_weather", WEATHER, READ_ONLY, outputSchema=WEATHER_OUT),
    _tool(
        "add",
        NUMBERS,
        READ_ONLY,
        outputSchema={"type": "object", "properties": {"result": {"type": "number"}}},
    ),
    _tool("write_note", TEXT, {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False}),
    _tool("delete_all", EMPTY),
    _tool("flaky_read", TEXT, READ_ONLY),
    _tool("flaky_write", TEXT, {"destructiveHint": False}),
    _tool("slow", {"type": "object", "properties": {"seconds": {"type": "number"}}}, READ_ONLY),
    _tool(
        "bad_output",
        EMPTY,
        READ_ONLY,
        outputSchema={"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]},
    ),
    _tool("leaky_error", EMPTY, READ_ONLY),
    _tool("big", {"type": "object", "properties": {"size": {"type": "integer"}}}, READ_ONLY),
    _tool("progress", EMPTY, READ_ONLY),
    _tool("add_tool", EMPTY, {"destructiveHint": False}),
]
LATE_TOOL = _tool("late_tool", EMPTY, READ_ONLY)


def _log_call(name: str, arguments: Any) -> None:
    path = os.environ.get("TOOLGUARD_TEST_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"name": name, "arguments": arguments, "pid": os.getpid()}) + "\n")


def _first_time(name: str) -> bool:
    """True the first time ``name`` runs for this call log (a marker file beside it)."""
    log = os.environ.get("TOOLGUARD_TEST_CALL_LOG")
    if not log:
        return False
    marker = Path(f"{log}.{name}.crashed")
    if marker.exists():
        return False
    marker.write_text("1")
    return True


def _text(text: str, **extra: Any) -> types.CallToolResult:
    return types.CallToolResult.model_validate({"content": [{"type": "text", "text": text}], **extra})


def make_server() -> Server[Any]:
    tools = list(TOOLS)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tools))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, args = params.name, dict(params.arguments or {})
        _log_call(name, args)
        if name == "get_weather":
            out = {"city": args.get("city"), "temperature": 21.5, "unit": args.get("unit", "celsius")}
            return _text(json.dumps(out), structuredContent=out)
        if name == "add":
            out = {"result": args["a"] + args["b"]}
            return _text(json.dumps(out), structuredContent=out)
        if name in ("write_note", "delete_all", "late_tool"):
            return _text(f"{name} done")
        if name in ("flaky_read", "flaky_write"):
            if _first_time(name):
                os._exit(3)  # a crash in the middle of the call: no answer, the process is gone
            return _text(f"{name}: {args.get('text')}")
        if name == "slow":
            await anyio.sleep(float(args.get("seconds", 1)))
            return _text("slept")
        if name == "bad_output":
            return _text('{"count": "many"}', structuredContent={"count": "many"})
        if name == "leaky_error":
            text = (
                'Traceback (most recent call last):\n  File "/srv/app.py", line 3, in run\n    connect()\n'
                "ConnectionError: could not reach https://admin:hunter2@db.internal with "
                "api_key=sk-live1234567890abcdefXYZ"
            )
            return _text(text, isError=True)
        if name == "big":
            return _text("x" * int(args.get("size", 10)))
        if name == "progress":
            await ctx.session.report_progress(1, 2, "half")
            await ctx.session.report_progress(2, 2, "done")
            return _text("progressed")
        if name == "add_tool":
            if LATE_TOOL not in tools:
                tools.append(LATE_TOOL)
            await ctx.session.send_tool_list_changed()
            return _text("added late_tool")
        raise ValueError(f"Unknown tool: {name}")

    return Server("toolguard-test-server", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = make_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app() -> Any:
    """A Starlette app serving a fresh test server at ``/mcp`` (Streamable HTTP, stateful sessions)."""
    return make_server().streamable_http_app()


if __name__ == "__main__":
    if sys.argv[1:2] == ["stdio"]:
        anyio.run(_serve_stdio)
    else:
        sys.exit("usage: python tests/mcp/servers.py stdio")
