"""``McpGuard``: the guard between MCP clients and one MCP server, and the ways to serve it.

One ``McpGuard`` holds what every session shares: the server to connect to (a command to spawn over stdio, a
Streamable HTTP URL, or any connector), the ``McpPolicy``, the decision ``Reporter`` (log lines, counters,
``on_event``) and the idempotency-key memory. ``serve(read, write)`` guards one client session over any pair
of SDK streams; ``serve_stdio()`` does it on this process's stdin/stdout; ``http_app()`` returns an ASGI app
that serves Streamable HTTP, one session per ``Mcp-Session-Id``. Client side and server side are independent,
so a stdio client can be put in front of an HTTP server and the other way round.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from .._exceptions import ConfigError
from ._calls import KeyStore
from ._config import McpPolicy
from ._decisions import McpDecision, Reporter
from ._http import HttpFront
from ._session import GuardSession
from ._upstream import Connector

__all__ = ["McpGuard", "http_connector", "stdio_connector"]


def stdio_connector(
    command: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None
) -> Connector:
    """Spawn ``command`` (argv) as a stdio MCP server for each connection; its stderr goes to ours.

    The server gets this process's whole environment (plus ``env``), as if it had been launched directly: the
    agent host that launches ``toolguard mcp -- CMD`` chose that environment for the server.
    """
    if not command:
        raise ConfigError("a stdio MCP server needs a command, e.g. toolguard mcp -- uvx mcp-server-time")
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=command[0], args=list(command[1:]), env={**os.environ, **(env or {})}, cwd=cwd
    )

    def connect() -> AbstractAsyncContextManager[tuple[Any, Any]]:
        return stdio_client(params, errlog=sys.stderr)

    return connect


def http_connector(
    url: str, *, headers: Mapping[str, str] | None = None, token: str | None = None
) -> Connector:
    """Connect to a Streamable HTTP MCP server at ``url`` (``token``: sent as ``Authorization: Bearer``)."""
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"the upstream must be an http:// or https:// URL, got {url!r}")
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    sent = dict(headers or {})
    if token:
        sent["Authorization"] = f"Bearer {token}"

    def connect() -> AbstractAsyncContextManager[tuple[Any, Any]]:
        return _http_streams(url, sent, streamable_http_client, create_mcp_http_client)

    return connect


class _http_streams:
    """``streamable_http_client`` with its own httpx client, closed with it."""

    def __init__(self, url: str, headers: dict[str, str], factory: Any, make_client: Any) -> None:
        self._client = make_client(headers=headers or None)
        self._cm = factory(url, http_client=self._client)

    async def __aenter__(self) -> tuple[Any, Any]:
        await self._client.__aenter__()
        try:
            streams: tuple[Any, Any] = await self._cm.__aenter__()
            return streams
        except BaseException:
            await self._client.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self._cm.__aexit__(*exc)
        finally:
            await self._client.__aexit__(None, None, None)


class McpGuard:
    """Guard MCP sessions in front of one server.

    ``McpGuard(command=["uvx", "mcp-server-time"])``, ``McpGuard(upstream="http://127.0.0.1:8000/mcp")`` or
    ``McpGuard(connect=...)`` (a zero-argument callable returning an SDK transport context). ``policy``: an
    ``McpPolicy``; ``on_event``: called with every ``McpDecision``. Raises ``ConfigError`` unless exactly one
    server is given.
    """

    def __init__(
        self,
        *,
        command: Sequence[str] | None = None,
        upstream: str | None = None,
        connect: Connector | None = None,
        policy: McpPolicy | None = None,
        on_event: Callable[[McpDecision], Any] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        upstream_headers: Mapping[str, str] | None = None,
        upstream_token: str | None = None,
    ) -> None:
        given = [x is not None for x in (command, upstream, connect)]
        if sum(given) != 1:
            raise ConfigError(
                "give McpGuard exactly one server: command=[...], upstream='http://...' or connect=..."
            )
        if command is not None:
            self.connect = stdio_connector(command, env=env, cwd=cwd)
            self.restartable = True
        elif upstream is not None:
            self.connect = http_connector(upstream, headers=upstream_headers, token=upstream_token)
            self.restartable = True
        else:
            assert connect is not None
            self.connect = connect
            self.restartable = True
        self.policy = policy or McpPolicy()
        self.reporter = Reporter(on_event)
        self.keys = KeyStore(self.policy.max_remembered)

    async def serve(self, read_stream: Any, write_stream: Any, *, session_id: str | None = None) -> None:
        """Guard one client session over SDK streams until the client's read stream ends."""
        self.reporter.sessions_open += 1
        try:
            await GuardSession(
                read_stream,
                write_stream,
                self.connect,
                policy=self.policy,
                reporter=self.reporter,
                keys=self.keys,
                session_id=session_id,
                restartable=self.restartable,
            ).run()
        finally:
            self.reporter.sessions_open -= 1

    async def serve_stdio(self) -> None:
        """Guard the session on this process's stdin/stdout (what ``toolguard mcp -- CMD`` runs)."""
        from ._stdio import stdio_streams

        async with stdio_streams() as (read, write):
            await self.serve(read, write, session_id="stdio")

    def http_app(
        self, *, path: str = "/mcp", auth_token: str | None = None, host: str = "127.0.0.1"
    ) -> HttpFront:
        """An ASGI app: the guard over Streamable HTTP at ``path``, plus ``/metrics`` and ``/healthz``."""
        return HttpFront(self, path=path, auth_token=auth_token, host=host)
