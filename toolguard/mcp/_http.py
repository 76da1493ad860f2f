"""The guard served over Streamable HTTP: an ASGI app with one ``GuardSession`` per MCP session.

Theory of operation
-------------------
``/mcp`` is served by the SDK's ``StreamableHTTPServerTransport``, one per ``Mcp-Session-Id``, as the SDK's
own session manager does for a server: a POST without a session id opens a session (its guard task starts
first, then the transport answers the request); a known id is routed to its transport; an unknown one gets
404, as the spec says. A session whose opening request was refused (not an ``initialize``) is dropped again.
Each session task runs ``GuardSession`` between the transport's streams and a fresh upstream connection.

``/metrics`` (Prometheus text) and ``/healthz`` sit beside it. With ``auth_token`` every route needs
``Authorization: Bearer <token>`` (compared in constant time); without one, bind to 127.0.0.1 only (the
default), where DNS-rebinding protection (Host/Origin checks) is on.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Message, Receive, Scope, Send

if TYPE_CHECKING:
    from ._guard import McpGuard

__all__ = ["HttpFront"]

logger = logging.getLogger("toolguard.mcp")

DEFAULT_MAX_SESSIONS = 1000
DEFAULT_IDLE_TIMEOUT = 30 * 60.0  # seconds without a request before a session is closed


def _json(status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> Callable[..., Any]:
    async def respond(scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), *(headers or [])],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return respond


def _rpc_error(status: int, code: int, message: str) -> Callable[..., Any]:
    import json

    return _json(
        status,
        json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode(),
    )


class HttpFront:
    """ASGI app: ``/mcp`` guarded, ``/metrics``, ``/healthz``. Serve it with uvicorn (it has a lifespan)."""

    def __init__(
        self,
        guard: McpGuard,
        *,
        path: str = "/mcp",
        auth_token: str | None = None,
        host: str = "127.0.0.1",
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.guard = guard
        self.path = path
        self._token = f"Bearer {auth_token}".encode("latin-1") if auth_token else None
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.security = (
            TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            )
            if host in ("127.0.0.1", "localhost", "::1")
            else None
        )
        self._sessions: dict[str, StreamableHTTPServerTransport] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Hold the task group the sessions run in (the ASGI lifespan enters it)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
                self._tg = None
                self._sessions.clear()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if not self._authorised(scope):
            await _rpc_error(401, -32001, "missing or wrong bearer token")(
                scope, receive, _with_header(send, (b"www-authenticate", b"Bearer"))
            )
            return
        path = scope["path"].rstrip("/") or "/"
        if path == "/healthz":
            await _json(200, b'{"status": "ok"}')(scope, receive, send)
        elif path == "/metrics":
            body = self.guard.reporter.render_metrics().encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/plain; version=0.0.4")],
                }
            )
            await send({"type": "http.response.body", "body": body})
        elif path == self.path.rstrip("/"):
            await self._mcp(scope, receive, send)
        else:
            await _rpc_error(404, -32601, f"no route {path}; MCP is served at {self.path}")(
                scope, receive, send
            )

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        async with self.running():
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
        await send({"type": "lifespan.shutdown.complete"})

    def _authorised(self, scope: Scope) -> bool:
        if self._token is None:
            return True
        for key, value in scope["headers"]:
            if key == b"authorization":
                return hmac.compare_digest(value, self._token)
        return False

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._tg is None:
            raise RuntimeError(
                "HttpFront needs its lifespan: serve it with uvicorn, or enter front.running()"
            )
        session_id = next(
            (v.decode("latin-1") for k, v in scope["headers"] if k == MCP_SESSION_ID_HEADER.encode()), None
        )
        if session_id is not None:
            transport = self._sessions.get(session_id)
            if transport is None:
                await _rpc_error(404, -32600, "Session not found")(scope, receive, send)
                return
            await transport.handle_request(scope, receive, send)
            if transport.is_terminated:
                self._sessions.pop(session_id, None)
            return
        if scope["method"] != "POST":
            await _rpc_error(400, -32600, "Bad Request: open a session with a POST of initialize")(
                scope, receive, send
            )
            return
        if len(self._sessions) >= self.max_sessions:
            await _rpc_error(503, -32603, "Too many open sessions")(scope, receive, send)
            return
        await self._open_session(scope, receive, send)

    async def _open_session(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = uuid.uuid4().hex
        transport = StreamableHTTPServerTransport(
            mcp_session_id=session_id, security_settings=self.security, idle_timeout=self.idle_timeout
        )
        self._sessions[session_id] = transport

        async def run_session(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            try:
                async with transport.connect() as (read, write):
                    task_status.started()
                    scope_ = transport.idle_scope or anyio.CancelScope()
                    with scope_:
                        await self.guard.serve(read, write, session_id=session_id)
            except Exception:
                logger.exception("guarded session %s failed", session_id)
            finally:
                self._sessions.pop(session_id, None)
                if not transport.is_terminated:
                    with anyio.CancelScope(shield=True):
                        await transport.terminate()

        status: list[int] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        established = False
        try:
            assert self._tg is not None
            await self._tg.start(run_session)
            await transport.handle_request(scope, receive, watch)
            established = bool(status) and status[0] < 400
        finally:
            if not established:
                self._sessions.pop(session_id, None)
                with anyio.CancelScope(shield=True):
                    await transport.terminate()


def _with_header(send: Send, header: tuple[bytes, bytes]) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), header]}
        await send(message)

    return wrapped
