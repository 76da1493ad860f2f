"""``toolguard.mcp``: a guard between agents and MCP servers (needs ``toolguard[mcp]``, the official SDK).

``toolguard mcp -- CMD ...`` (stdio) and ``toolguard mcp --upstream URL`` (Streamable HTTP) put ``McpGuard``
between a client and a server: ``tools/call`` arguments are validated against the server's own
``inputSchema`` before anything is sent, unknown tools get -32602, results are checked against
``outputSchema``, capped and sanitised, calls time out and are retried only when the tool is read-only or
idempotent, a repeated request runs once, and every decision is reported (``McpDecision``). Everything else
is forwarded unchanged.
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.mcp needs the official MCP SDK: pip install 'toolguard[mcp]'", name=exc.name
    ) from exc

from ._config import McpPolicy, load_policy
from ._decisions import McpDecision
from ._guard import McpGuard, http_connector, stdio_connector
from ._run import run

__all__ = ["McpDecision", "McpGuard", "McpPolicy", "http_connector", "load_policy", "run", "stdio_connector"]
