"""``run``: what ``toolguard mcp`` calls. Picks the client-side transport and serves until stopped.

``serve="auto"`` speaks stdio to the client when the server is a command (the usual way an agent launches a
local server: the agent launches ``toolguard mcp -- CMD`` instead) and Streamable HTTP when the server is a
URL. Logs go to stderr: on stdio, stdout carries the protocol.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Literal

from .._exceptions import ConfigError
from ._config import McpPolicy
from ._guard import McpGuard

__all__ = ["DEFAULT_PORT", "run"]

DEFAULT_PORT = 8788


def run(
    *,
    command: Sequence[str] | None = None,
    upstream: str | None = None,
    serve: Literal["auto", "stdio", "http"] = "auto",
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    path: str = "/mcp",
    auth_token: str | None = None,
    upstream_token: str | None = None,
    policy: McpPolicy | None = None,
    log_level: str = "info",
) -> None:
    """Serve the guard in front of ``command`` (stdio server) or ``upstream`` (Streamable HTTP URL)."""
    if (command is None) == (upstream is None):
        raise ConfigError(
            "give either a server command (toolguard mcp -- CMD ...) or --upstream URL, not both"
        )
    logging.basicConfig(
        stream=sys.stderr, level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    guard = McpGuard(command=command, upstream=upstream, policy=policy, upstream_token=upstream_token)
    transport = serve if serve != "auto" else ("stdio" if command is not None else "http")
    if transport == "stdio":
        import anyio

        anyio.run(guard.serve_stdio)
        return
    if host not in ("127.0.0.1", "localhost", "::1") and not auth_token:
        logging.getLogger("toolguard.mcp").warning(
            "serving on %s without --auth-token: anyone who can reach it can call the server's tools", host
        )
    import uvicorn

    uvicorn.run(
        guard.http_app(path=path, auth_token=auth_token, host=host),
        host=host,
        port=port,
        log_level=log_level.lower(),
    )
