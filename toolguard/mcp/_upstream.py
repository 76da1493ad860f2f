"""One connection to the guarded MCP server, reopened when it drops.

Theory of operation
-------------------
A *connector* is a zero-argument callable returning the SDK's transport context (``stdio_client(...)``, which
spawns the server, or ``streamable_http_client(url)``); entering it yields ``(read_stream, write_stream)`` of
``SessionMessage``. The connection lives in its own task (an anyio context is entered and left by one task):
it reads until the stream ends (the process exited, the HTTP transport failed), then leaves the context, which
stops the process, and tells the session (``on_lost(generation)``) so requests in flight are answered.

Reconnection is lazy: ``send`` reopens a dropped connection before writing, with exponential backoff between
failed attempts (``RetryPolicy.delay``) and at most ``max_connects`` attempts. A reopened connection is a new
server session, so ``send`` first replays the client's ``initialize`` (kept from the first handshake) and
``notifications/initialized``; the client never sees that exchange. ``request`` sends the guard's own requests
(``tools/list``, the replayed ``initialize``) under ids no client uses and waits for their answers.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, suppress
from typing import Any, TypeAlias

import anyio
import anyio.abc
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from .._retry import RetryPolicy

__all__ = ["Connector", "Upstream", "UpstreamLost"]

logger = logging.getLogger("toolguard.mcp")

Connector: TypeAlias = Callable[[], AbstractAsyncContextManager[tuple[Any, Any]]]

DEFAULT_MAX_CONNECTS = 4  # attempts to (re)open the connection before a request is answered with an error
DEFAULT_HANDSHAKE_TIMEOUT = 30.0  # seconds for a replayed initialize


class UpstreamLost(Exception):
    """The server connection is gone. ``sent`` says whether the message had been written before it went."""

    def __init__(self, message: str, *, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


class Upstream:
    """The server side of one guarded session. See the module docstring."""

    def __init__(
        self,
        connect: Connector,
        task_group: anyio.abc.TaskGroup,
        *,
        on_message: Callable[[SessionMessage | Exception], Awaitable[None]],
        on_lost: Callable[[int, str], Awaitable[None]],
        on_restart: Callable[[int], None] | None = None,
        backoff: RetryPolicy | None = None,
        max_connects: int = DEFAULT_MAX_CONNECTS,
    ) -> None:
        self._connect = connect
        self._tg = task_group
        self._on_message = on_message
        self._on_lost = on_lost
        self._on_restart = on_restart
        self._backoff = backoff or RetryPolicy(backoff=0.1, max_backoff=2.0)
        self._max_connects = max_connects
        self._write: Any = None
        self._lock = anyio.Lock()
        self._prefix = f"toolguard-{uuid.uuid4().hex[:12]}-"
        self._ids = itertools.count(1)
        self._own: dict[str, tuple[anyio.Event, list[Any]]] = {}
        self.generation = 0  # number of connections opened so far
        self.init_params: dict[str, Any] | None = (
            None  # the client's initialize params, replayed on reconnect
        )
        self.initialized = False  # the client sent notifications/initialized
        self.protocol_version: str | None = None  # from the server's initialize answer (HTTP header)
        self.closed = False

    # the connection task -----------------------------------------------------------------------------
    async def _connection(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        generation = self.generation
        started = False
        reason = "the server closed the connection"
        try:
            async with self._connect() as (read, write):
                self._write = write
                started = True
                task_status.started()
                async for item in read:
                    if isinstance(item, SessionMessage) and self._own_answer(item.message):
                        continue
                    await self._on_message(item)
        except Exception as exc:
            if not started:
                raise
            reason = f"the connection failed ({type(exc).__name__}: {exc})"
            logger.warning("upstream connection %d ended: %s", generation, reason)
        finally:
            if started:
                self._write = None
                for event, box in self._own.values():
                    box.append(None)
                    event.set()
                if not self.closed:
                    with anyio.CancelScope(shield=True):
                        await self._on_lost(generation, reason)

    def _own_answer(self, message: Any) -> bool:
        if not isinstance(message, JSONRPCResponse | JSONRPCError) or not isinstance(message.id, str):
            return False
        slot = self._own.pop(message.id, None) if message.id.startswith(self._prefix) else None
        if slot is None:
            return False
        slot[1].append(message)
        slot[0].set()
        return True

    async def start(self) -> None:
        """Open the first connection (a stdio server starts at once, so the client's handshake reaches it)."""
        async with self._lock:
            if self._write is None:
                await self._open()

    async def _open(self) -> None:
        last: BaseException | None = None
        for attempt in range(1, self._max_connects + 1):
            try:
                self.generation += 1
                await self._tg.start(self._connection)
            except Exception as exc:
                last = exc
                logger.warning("could not connect to the MCP server (attempt %d): %s", attempt, exc)
                if attempt < self._max_connects:
                    await anyio.sleep(self._backoff.delay(attempt))
                continue
            if self.generation > 1 and self.init_params is not None and not await self._replay_handshake():
                continue
            if self.generation > 1 and self._on_restart is not None:
                self._on_restart(self.generation)
            return
        raise UpstreamLost(
            f"the MCP server could not be (re)started after {self._max_connects} attempts ({last})",
            sent=False,
        )

    async def _replay_handshake(self) -> bool:
        answer = await self._request_now("initialize", self.init_params, timeout=DEFAULT_HANDSHAKE_TIMEOUT)
        if not isinstance(answer, JSONRPCResponse):
            logger.warning("the restarted MCP server refused the replayed initialize: %s", answer)
            return False
        if self.initialized and self._write is not None:
            note = JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
            await self._write.send(SessionMessage(note, self._metadata()))
        return True

    def _metadata(self) -> ClientMessageMetadata | None:
        if self.protocol_version is None:
            return None
        from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

        return ClientMessageMetadata(headers={MCP_PROTOCOL_VERSION_HEADER: self.protocol_version})

    # sending -----------------------------------------------------------------------------------------
    async def send(self, message: Any) -> int:
        """Write one JSON-RPC message, reconnecting first if needed; returns the connection's generation.

        Raises ``UpstreamLost`` (``sent=False``) when no connection could be opened or the write failed.
        """
        if self._write is None:
            async with self._lock:
                if self._write is None:
                    await self._open()
        write = self._write
        if write is None:
            raise UpstreamLost(
                "the MCP server connection dropped before the message could be written", sent=False
            )
        try:
            await write.send(SessionMessage(message, self._metadata()))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise UpstreamLost(
                f"the MCP server connection is closed ({type(exc).__name__})", sent=False
            ) from exc
        return self.generation

    async def notify_if_connected(self, message: Any) -> None:
        """Write a notification on the current connection only (a cancellation for a dead server is moot)."""
        write = self._write
        if write is None:
            return
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await write.send(SessionMessage(message, self._metadata()))

    async def request(self, method: str, params: dict[str, Any] | None, *, timeout: float | None) -> Any:
        """Send the guard's own request; the answer (``JSONRPCResponse``/``JSONRPCError``), or None when the
        connection dropped or ``timeout`` passed first."""
        if self._write is None:
            async with self._lock:
                if self._write is None:
                    await self._open()
        return await self._request_now(method, params, timeout=timeout)

    async def _request_now(self, method: str, params: dict[str, Any] | None, *, timeout: float | None) -> Any:
        rid = f"{self._prefix}{next(self._ids)}"
        event = anyio.Event()
        box: list[Any] = []
        self._own[rid] = (event, box)
        request = JSONRPCRequest(jsonrpc="2.0", id=rid, method=method, params=params)
        try:
            write = self._write
            if write is None:
                return None
            await write.send(SessionMessage(request, self._metadata()))
            with anyio.move_on_after(timeout):
                await event.wait()
            return box[0] if box else None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return None
        finally:
            self._own.pop(rid, None)

    def close(self) -> None:
        self.closed = True
