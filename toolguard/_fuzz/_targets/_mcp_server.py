"""The MCP server behind the ``mcp`` fuzz target: the SDK's low-level ``Server`` (which validates nothing),
with a few tools whose schemas have bounds, and a record of every ``tools/call`` it receives (JSON lines
appended to ``$TOOLGUARD_FUZZ_MCP_LOG``), so the target can prove that nothing invalid was forwarded.

Run: ``python -m toolguard._fuzz._targets._mcp_server`` (stdio).
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["TOOLS"]

TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 64}},
            "required": ["text"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "add",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "integer", "minimum": 0, "maximum": 100}},
            "required": ["a", "b"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "tag",
        "inputSchema": {
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
                "meta": {"type": "object", "properties": {"depth": {"type": "integer"}}},
            },
            "required": ["tags"],
        },
    },
    {"name": "free", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
]


def _main() -> None:
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in TOOLS])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        path = os.environ.get("TOOLGUARD_FUZZ_MCP_LOG")
        if path:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"name": params.name, "arguments": params.arguments}) + "\n")
        return types.CallToolResult.model_validate({"content": [{"type": "text", "text": "ok"}]})

    server = Server("toolguard-fuzz-server", on_list_tools=list_tools, on_call_tool=call_tool)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    _main()
