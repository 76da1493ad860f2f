"""The proxy as a pure ASGI application.

Theory of operation. ``ProxyApp.__call__`` routes on the path: ``/healthz``, ``/metrics`` and
``/openapi.json`` (the OpenAPI description of these routes, ``openapi.json`` beside this module) answer
locally, ``POST /v1/chat/completions`` goes through the guarded flow (``_chat``), any other ``/v1/*`` request
is passed through (body streamed both ways, hop-by-hop headers dropped). Every request runs inside
``_Responder``: a class wrapping ``send`` that records the status (for metrics), whether the response started
and whether it finished, and a watcher task that waits on ``receive`` for ``http.disconnect`` and cancels the
work when the client leaves; cancelling closes the upstream response, which closes the upstream connection,
which stops the generation. The finally-clause guarantees one terminal response per request: a JSON error if
nothing was sent yet, an OpenAI-format error event if an SSE stream was open. Text/event-stream bodies are
never buffered or compressed. Per request the proxy does O(1) work beyond the bytes it moves and the Guard's
own (linear) work.

``POST /v1/messages`` and ``POST /v1/responses`` (``_protocols.ROUTES``): the same guarded flow translated.
"""

from __future__ import annotations

import functools
import hmac
import importlib.resources
import logging
from collections import OrderedDict
from typing import Any

import anyio
import httpx

from .._exceptions import UpstreamError
from .._tools import ToolSet
from ._config import ProxyConfig
from ._engine import Engines
from ._metrics import Metrics
from ._native import ProtocolMemory
from ._respond import Receive, Scope, Send, error_body, send_bytes, send_error, send_json
from ._sse import DONE, encode_data
from ._upstream import Deadline, Upstream, filter_request_headers, filter_response_headers, translate

__all__ = ["ProxyApp", "create_app"]

log = logging.getLogger("toolguard.proxy")


class _ClientGone(Exception):
    """The client disconnected before its request body arrived."""


class _Responder:
    """Wraps ``send`` for one request: records status, start, end, and whether the body is an SSE stream."""

    __slots__ = ("_send", "complete", "sse", "started", "status")

    def __init__(self, send: Send) -> None:
        self._send = send
        self.status = 0
        self.started = False
        self.complete = False
        self.sse = False

    async def __call__(self, message: Any) -> None:
        if message["type"] == "http.response.start":
            self.started = True
            self.status = int(message["status"])
            for k, v in message.get("headers", ()):
                if k.lower() == b"content-type" and v.startswith(b"text/event-stream"):
                    self.sse = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.complete = True
        await self._send(message)


class ProxyApp:
    """The toolguard proxy (see the module docstring). Build it with ``create_app``."""

    def __init__(
        self, config: ProxyConfig, *, upstream_transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.config = config
        self.policy = config.policy
        #: Parsed, checked and compiled tool sets by their ``tools`` JSON (see ``_chat``).
        self.toolsets: OrderedDict[str, ToolSet] = OrderedDict()
        self.metrics = Metrics()
        self.engines = Engines(self)
        #: The Messages/Responses endpoints the upstream was found to lack (``_native``).
        self.protocols = ProtocolMemory()
        self._transport = upstream_transport
        self._upstream: Upstream | None = None

    @property
    def upstream(self) -> Upstream:
        if self._upstream is None:
            self._upstream = Upstream(self.config, metrics=self.metrics, transport=self._transport)
        return self._upstream

    async def aclose(self) -> None:
        """Close the upstream connection pool (lifespan shutdown does this under uvicorn)."""
        if self._upstream is not None:
            upstream, self._upstream = self._upstream, None
            await upstream.aclose()

    async def __aenter__(self) -> ProxyApp:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ASGI -------------------------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets are not proxied; the server closes the connection
        exchange = _Responder(send)
        route = "other"
        try:
            route = await self._route(scope, receive, exchange)
        except _ClientGone:
            self.metrics.client_disconnects += 1
        except Exception:
            log.exception("toolguard proxy: unhandled error on %s %s", scope.get("method"), scope.get("path"))
            await _terminal(exchange, 500, "internal error in the toolguard proxy", code="proxy_error")
        finally:
            self.metrics.request(route, exchange.status or 499)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _route(self, scope: Scope, receive: Receive, send: _Responder) -> str:
        path: str = scope["path"]
        method: str = scope["method"]
        if path == "/healthz":
            await send_bytes(send, 200, b'{"status":"ok"}', content_type=b"application/json")
            return "healthz"
        if path == "/metrics":
            text = self.metrics.render().encode()
            await send_bytes(send, 200, text, content_type=b"text/plain; version=0.0.4; charset=utf-8")
            return "metrics"
        if path == "/openapi.json":
            await send_bytes(send, 200, _openapi(), content_type=b"application/json")
            return "openapi"
        if not (path == "/v1" or path.startswith("/v1/")):
            await send_error(
                send,
                404,
                f"no route {path}; the proxy serves /v1/*, /healthz, /metrics and /openapi.json",
                code="not_found",
            )
            return "other"
        from ._protocols import ROUTES, serve

        wire = ROUTES.get(path)

        async def refuse(
            status: int, message: str, *, code: str, headers: list[tuple[bytes, bytes]] | None = None
        ) -> None:
            """An error before the request is read, in the route's own shape (Anthropic's on /v1/messages)."""
            body = error_body(message, status=status, code=code)
            await send_json(
                send, status, body if wire is None else wire.error_body(status, body), headers=headers
            )

        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        if not self._authorized(headers):
            await refuse(
                401,
                "missing or wrong bearer token for this proxy",
                code="invalid_api_key",
                headers=[(b"www-authenticate", b"Bearer")],
            )
            return "unauthorized"
        body = await _read_body(scope, receive, self.config.max_body_bytes)
        if body is None:
            await refuse(
                413,
                f"request body exceeds {self.config.max_body_bytes} bytes (max_body_bytes)",
                code="body_too_large",
            )
            return "too_large"
        upstream_headers = filter_request_headers(
            headers, authorization=self._upstream_authorization(headers)
        )
        deadline = Deadline(self.config.deadline)
        if path == "/v1/chat/completions":
            if method != "POST":
                await send_error(send, 405, "use POST for /v1/chat/completions", code="method_not_allowed")
                return "chat"
            from ._chat import handle_chat

            async def work() -> None:
                await handle_chat(self, body, upstream_headers, deadline, send)

            await self._until_disconnect(receive, send, work)
            return "chat"

        if wire is not None:  # another protocol, guarded over the chat flow (``_protocols``)
            if method != "POST":
                await refuse(405, f"use POST for {path}", code="method_not_allowed")
                return wire.route
            await serve(self, wire, body, upstream_headers, deadline, receive, send)
            return wire.route

        async def passthrough() -> None:
            await self._passthrough(scope, body, upstream_headers, deadline, send)

        await self._until_disconnect(receive, send, passthrough)
        return "passthrough"

    def _authorized(self, headers: list[tuple[str, str]]) -> bool:
        token = self.config.auth_token
        if not token:
            return True
        expected = f"Bearer {token}".encode()
        for k, v in headers:
            if k.lower() == "authorization":
                return hmac.compare_digest(v.encode("latin-1"), expected)
        return False

    def _upstream_authorization(self, headers: list[tuple[str, str]]) -> str | None:
        if self.config.upstream_api_key:
            return f"Bearer {self.config.upstream_api_key}"
        if self.config.auth_token:
            return None  # the client's header holds the proxy's token, not an upstream key
        for k, v in headers:
            if k.lower() == "authorization":
                return v
        return None

    async def _until_disconnect(self, receive: Receive, send: _Responder, work: Any) -> None:
        """Run ``work``; cancel it when the client disconnects; always leave one terminal response."""
        left = False
        error: Exception | None = None
        timed_out = False
        with anyio.move_on_after(self.config.deadline) as deadline_scope:
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    nonlocal left
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    if not send.complete:
                        left = True
                        tg.cancel_scope.cancel()

                tg.start_soon(watch)
                try:
                    await work()
                except Exception as exc:  # re-raised below, outside the task group (no ExceptionGroup)
                    error = exc
                finally:
                    tg.cancel_scope.cancel()
        timed_out = deadline_scope.cancelled_caught
        if isinstance(error, UpstreamError):
            await _terminal(send, error.status_hint, str(error), code="upstream_error")
            return
        if error is not None:
            raise error
        if timed_out and not left:
            await _terminal(
                send, 504, f"request deadline of {self.config.deadline:g}s passed", code="deadline"
            )
            return
        if left:
            self.metrics.client_disconnects += 1
            return
        if not send.complete:  # work returned without finishing its answer: a bug, but never leave it open
            await _terminal(send, 500, "the proxy ended a response early", code="proxy_error")

    async def _passthrough(
        self, scope: Scope, body: bytes, headers: list[tuple[str, str]], deadline: Deadline, send: _Responder
    ) -> None:
        upstream = self.upstream
        url = upstream.url(scope["path"], scope.get("query_string", b""))
        response = await upstream.open(
            scope["method"], url, headers=headers, content=body, deadline=deadline, idempotent=False
        )
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": filter_response_headers(response.headers.multi_items()),
                }
            )
            try:
                async for chunk in response.aiter_bytes():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except httpx.HTTPError as exc:
                raise translate(exc) from exc
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()


@functools.cache
def _openapi() -> bytes:
    """The OpenAPI description of what the proxy serves (``openapi.json`` beside this module), read once."""
    return (importlib.resources.files("toolguard.proxy") / "openapi.json").read_bytes()


async def _read_body(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    for k, v in scope["headers"]:
        if k.lower() == b"content-length":
            try:
                if int(v) > limit:
                    return None
            except ValueError:
                return None
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


async def _terminal(send: _Responder, status: int, message: str, *, code: str) -> None:
    """End the response with an error, whatever state it is in (the one terminal response)."""
    if send.complete:
        return
    if not send.started:
        await send_error(send, status, message, code=code)
        return
    if send.sse:
        payload = error_body(message, status=status, code=code)
        await send({"type": "http.response.body", "body": encode_data(payload) + DONE, "more_body": False})
    else:
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def create_app(
    config: ProxyConfig | None = None,
    *,
    upstream: str | None = None,
    upstream_transport: httpx.AsyncBaseTransport | None = None,
    **options: Any,
) -> ProxyApp:
    """Build the proxy ASGI app from a ``ProxyConfig``, or from ``upstream=`` and option keywords.

    ``upstream_transport`` replaces the network transport to the upstream (an ``httpx.ASGITransport`` to serve
    an in-process upstream). Raises ``ConfigError`` for an invalid option.
    """
    from ._config import load_config

    if config is None:
        config = load_config(overrides={"upstream": upstream, **options})
    elif upstream is not None or options:
        from dataclasses import asdict

        config = load_config(overrides={**asdict(config), **options, "upstream": upstream or config.upstream})
    return ProxyApp(config, upstream_transport=upstream_transport)
