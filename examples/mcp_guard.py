"""``toolguard mcp`` in front of the reference time server (``mcp-server-time`` from PyPI), over stdio.

The official MCP ``ClientSession`` launches ``toolguard mcp -- python -m mcp_server_time``, exactly as an
agent host would launch the server itself, and makes three calls: a valid one (passed through unchanged), one
with arguments outside the tool's ``inputSchema`` (answered by toolguard with ``isError: true``; the server
never sees it) and one to a tool that does not exist (-32602, as the reference servers answer). The guard's
decision log (its stderr) is printed at the end. Offline; run from the repository root:

    .venv/bin/python examples/mcp_guard.py
"""

from __future__ import annotations

import sys
import tempfile

import anyio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]


async def main() -> None:
    guard = StdioServerParameters(command=sys.executable, args=["-m", "toolguard", "mcp", "--", *SERVER])
    with tempfile.TemporaryFile("w+") as log:
        async with stdio_client(guard, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            print("tools:", ", ".join(t.name for t in tools.tools))

            args = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
            ok = await session.call_tool("convert_time", args)
            target = ok.structured_content["target"]
            print(f"convert_time 12:00 UTC -> Tokyo: {target['datetime'][11:]} (isError={ok.is_error})")

            bad = await session.call_tool("convert_time", {"time": "12:00"})
            print(f"convert_time without timezones: isError={bad.is_error}\n  {bad.content[0].text}")

            try:
                await session.call_tool("get_weather", {"city": "Paris"})
            except MCPError as exc:
                print(f"get_weather: JSON-RPC error {exc.error.code}: {exc.error.message}")
        log.seek(0)
        print("guard log:")
        for line in log:
            if "decision=" in line:
                print("  " + line.split("toolguard.mcp: ", 1)[-1].rstrip())


if __name__ == "__main__":
    anyio.run(main)
