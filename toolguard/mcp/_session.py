"""One guarded MCP session: the client's streams on one side, an ``Upstream`` on the other.

Theory of operation
-------------------
Two pumps move JSON-RPC messages. Everything but ``tools/call`` (and the answers to ``tools/list``) is
forwarded unchanged, in order, with its id: ``initialize``, capabilities, pings, resources, prompts,
notifications, progress, cancellation, and the server's own requests (sampling, elicitation, roots) with the
client's answers. The guard remembers which client requests are in flight on which connection, so when the
server exits (or the HTTP connection fails) each of them is answered with an error instead of hanging.

Each ``tools/call`` runs in its own task:

1. a reused request id (or a repeated ``_meta`` idempotency key) gets the first answer again, without running;
2. the ``Catalog`` judges the call: unknown tool -> JSON-RPC -32602; invalid arguments, a policy refusal or a
   broken server schema -> a tool result with ``isError: true`` the model can act on; none reaches the server;
3. the call is sent with the tool's timeout; a timeout or a lost connection means the outcome is unknown, so
   it is retried (after backoff, on a restarted server) only when the tool is ``readOnlyHint`` or
   ``idempotentHint``; a call that provably never left is retried for any tool (``RetryPolicy``);
4. the answer is checked (``outputSchema``, size cap, sanitised error text) and sent, and one ``McpDecision``
   is reported.

The guard speaks the ``initialize`` handshake (protocol versions up to 2025-11-25): it answers
``server/discover`` with -32601 so clients that probe the per-request era first fall back to the handshake
(the SDK's ``Client(mode="auto")`` does), and it can replay that handshake to a restarted server.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

from .._sanitize import sanitize
from ._calls import GuardedCall, KeyStore, Slot, call_fingerprint, error_reply, idempotency_key, result_reply
from ._catalog import Allowed, Catalog, Refused, ToolEntry, Unknown, tool_result
from ._config import McpPolicy
from ._decisions import McpDecision, Reporter
from ._upstream import Connector, Upstream, UpstreamLost

__all__ = ["GuardSession"]

logger = logging.getLogger("toolguard.mcp")

DECISION_META_KEY = "io.toolguard/decision"
LISTING_TIMEOUT = 30.0  # seconds to read the server's tool list before a call is answered with an error
MAX_LIST_PAGES = 100


class GuardSession:
    """Guard one client session until the client closes its stream. See the module docstring."""

    def __init__(
        self,
        client_read: Any,
        client_write: Any,
        connect: Connector,
        *,
        policy: McpPolicy,
        reporter: Reporter,
        keys: KeyStore,
        session_id: str | None = None,
        restartable: bool = True,
    ) -> None:
        self._read = client_read
        self._write = client_write
        self._connect = connect
        self.policy = policy
        self.reporter = reporter
        self.keys = keys
        self.session_id = session_id
        self.restartable = restartable
        self.catalog = Catalog(policy)
        self.upstream: Upstream
        self._tg: anyio.abc.TaskGroup
        # id -> [(method, generation, first page)], oldest first: a reused id is answered once per request
        self._forwarded: dict[Any, list[tuple[str, int, bool]]] = {}
        self._calls: dict[Any, GuardedCall] = {}
        self._answered: OrderedDict[Any, tuple[str, Any]] = OrderedDict()
        self._progress: dict[Any, Any] = {}  # progressToken -> client request id (HTTP routing)
        self._has_tools: bool | None = None  # from the server's initialize answer
        self._listing: anyio.Event | None = None
        self._relist = False
        self._listing_error: str | None = None

    # running -----------------------------------------------------------------------------------------
    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self.upstream = Upstream(
                self._connect,
                tg,
                on_message=self._from_server,
                on_lost=self._lost,
                on_restart=self._restarted,
            )
            try:
                await self.upstream.start()
            except UpstreamLost as exc:
                logger.error("%s", exc)
            try:
                async with self._read:
                    async for item in self._read:
                        await self._from_client(item)
            finally:
                self.upstream.close()
                tg.cancel_scope.cancel()
                with anyio.CancelScope(shield=True):
                    await self._write.aclose()  # ends the client transport's writer: a stdio guard exits

    async def _to_client(self, message: Any, related: Any = None) -> None:
        metadata = ServerMessageMetadata(related_request_id=related) if related is not None else None
        try:
            await self._write.send(SessionMessage(message, metadata))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("the client left before a message could be delivered")

    def _report(self, kind: Any, **fields: Any) -> None:
        self.reporter.report(McpDecision(kind, session=self.session_id, **fields))

    # client -> server --------------------------------------------------------------------------------
    async def _from_client(self, item: Any) -> None:
        if isinstance(item, Exception):
            reason = sanitize(str(item), max_chars=300)
            self._report("protocol_error", reason=f"unreadable message from the client: {reason}")
            await self._to_client(error_reply(None, PARSE_ERROR, f"Parse error: {reason}"))
            return
        message = item.message
        if isinstance(message, JSONRPCRequest):
            await self._client_request(message)
        elif isinstance(message, JSONRPCNotification):
            await self._client_notification(message)
        else:  # the client's answer to a server request
            await self._forward(message)

    async def _client_request(self, request: JSONRPCRequest) -> None:
        method, params = request.method, request.params or {}
        if method == "tools/call":
            self._start_call(request)
            return
        if method == "server/discover":
            await self._to_client(
                error_reply(
                    request.id,
                    METHOD_NOT_FOUND,
                    "toolguard mcp speaks the initialize handshake (protocol versions up to 2025-11-25); "
                    "send initialize",
                )
            )
            return
        if method == "initialize":
            self.upstream.init_params = dict(params)
        token = (
            params.get("_meta", {}).get("progressToken") if isinstance(params.get("_meta"), Mapping) else None
        )
        if token is not None:
            self._progress[token] = request.id
        first = method == "tools/list" and not params.get("cursor")
        try:
            generation = await self.upstream.send(request)
        except UpstreamLost as exc:
            await self._to_client(error_reply(request.id, INTERNAL_ERROR, f"toolguard: {exc}"))
            return
        self._forwarded.setdefault(request.id, []).append((method, generation, first))

    async def _client_notification(self, note: JSONRPCNotification) -> None:
        params = note.params or {}
        if note.method == "notifications/initialized":
            self.upstream.initialized = True
        elif note.method == "notifications/cancelled":
            call = self._calls.get(params.get("requestId"))
            if call is not None:
                call.scope.cancel()  # the call's task tells the server and answers nothing (as the spec says)
                return
        await self._forward(note)
        if note.method == "notifications/initialized" and self._has_tools:
            self._schedule_listing()

    async def _forward(self, message: Any) -> None:
        try:
            await self.upstream.send(message)
        except UpstreamLost as exc:
            logger.warning("could not forward a %s to the server: %s", type(message).__name__, exc)

    # server -> client --------------------------------------------------------------------------------
    async def _from_server(self, item: Any) -> None:
        if isinstance(item, Exception):
            self._report(
                "protocol_error", reason=f"unreadable message from the server: {sanitize(str(item))}"
            )
            return
        message = item.message
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            call = self._calls.get(message.id)
            if call is not None and call.slot is not None:
                call.slot.answer = message
                call.slot.event.set()
                return
            waiting = self._forwarded.get(message.id)
            if not waiting:
                logger.debug("dropped an answer to %r, which nobody is waiting for", message.id)
                return
            method, _generation, first = waiting.pop(0)
            if not waiting:
                del self._forwarded[message.id]
            if isinstance(message, JSONRPCResponse):
                if method == "initialize":
                    self._initialized(message.result)
                elif method == "tools/list":
                    self._absorb(message.result, first=first)
                    message = result_reply(message.id, self.catalog.visible(message.result))
            await self._to_client(message)
            return
        related = None
        if isinstance(message, JSONRPCNotification):
            params = message.params or {}
            if message.method == "notifications/tools/list_changed":
                self._schedule_listing()
            elif message.method == "notifications/progress":
                related = self._progress.get(params.get("progressToken"))
        await self._to_client(message, related)

    def _initialized(self, result: Mapping[str, Any]) -> None:
        capabilities = result.get("capabilities")
        self._has_tools = isinstance(capabilities, Mapping) and "tools" in capabilities
        version = result.get("protocolVersion")
        self.upstream.protocol_version = version if isinstance(version, str) else None
        info = result.get("serverInfo")
        if isinstance(info, Mapping) and isinstance(info.get("name"), str):
            self.catalog.server = info["name"]

    def _absorb(self, result: Mapping[str, Any], *, first: bool) -> None:
        for problem in self.catalog.absorb(result, first=first):
            self._report("bad_schema", reason=problem)

    async def _lost(self, generation: int, reason: str) -> None:
        """The connection of ``generation`` ended: answer what was waiting on it."""
        for rid, waiting in list(self._forwarded.items()):
            lost = [entry for entry in waiting if entry[1] == generation]
            waiting[:] = [entry for entry in waiting if entry[1] != generation]
            if not waiting:
                del self._forwarded[rid]
            for method, _sent_on, _first in lost:
                message = (
                    f"toolguard: the MCP server connection was lost before it answered {method} ({reason})"
                )
                await self._to_client(error_reply(rid, INTERNAL_ERROR, message))
        for call in self._calls.values():
            slot = call.slot
            if slot is not None and slot.generation == generation and not slot.event.is_set():
                slot.answer = UpstreamLost(reason, sent=True)
                slot.event.set()

    def _restarted(self, generation: int) -> None:
        self._report("restarted", reason=f"the MCP server connection was reopened (connection {generation})")
        if self._has_tools:
            self._schedule_listing()

    # the tool listing --------------------------------------------------------------------------------
    def _schedule_listing(self) -> None:
        if self._listing is not None and not self._listing.is_set():
            self._relist = True
            return
        self._listing = anyio.Event()
        self._tg.start_soon(self._list_tools, self._listing)

    async def _list_tools(self, done: anyio.Event) -> None:
        try:
            while True:
                self._relist = False
                cursor: Any = None
                for _page in range(MAX_LIST_PAGES):
                    try:
                        answer = await self.upstream.request(
                            "tools/list", {"cursor": cursor} if cursor else None, timeout=LISTING_TIMEOUT
                        )
                    except UpstreamLost as exc:
                        answer = exc
                    if not isinstance(answer, JSONRPCResponse):
                        why = (
                            answer.error.message
                            if isinstance(answer, JSONRPCError)
                            else str(answer or "no answer")
                        )
                        self._listing_error = (
                            f"the server did not list its tools ({sanitize(why, max_chars=300)})"
                        )
                        self._report("protocol_error", reason=self._listing_error)
                        return
                    self._absorb(answer.result, first=cursor is None)
                    cursor = answer.result.get("nextCursor")
                    if not cursor:
                        break
                self._listing_error = None
                if not self._relist:
                    return
        finally:
            done.set()

    async def _ready_catalog(self) -> str | None:
        """Wait for a tool listing; the reason when there is none."""
        if self.catalog.complete and (self._listing is None or self._listing.is_set()):
            return None
        if self._listing is None:
            self._schedule_listing()
        assert self._listing is not None
        await self._listing.wait()
        if self.catalog.complete:
            return None
        return self._listing_error or "the server's tool list could not be read"

    # tools/call ----------------------------------------------------------------------------------------
    def _start_call(self, request: JSONRPCRequest) -> None:
        params = request.params or {}
        fingerprint = call_fingerprint(params)
        previous = self._calls.get(request.id)
        remembered = self._answered.get(request.id)
        if previous is not None or remembered is not None:
            self._tg.start_soon(self._repeated_id, request, fingerprint, previous, remembered)
            return
        call = GuardedCall(params.get("name"), fingerprint)
        self._calls[request.id] = call
        self._tg.start_soon(self._call, request, call)

    async def _repeated_id(
        self, request: JSONRPCRequest, fingerprint: str, previous: Any, remembered: Any
    ) -> None:
        if previous is not None:
            await previous.done.wait()
            remembered = (previous.fingerprint, previous.reply)
        if remembered is None or remembered[1] is None:
            return  # the first one was cancelled: nothing to repeat
        first_fingerprint, reply = remembered
        name = (request.params or {}).get("name")
        if first_fingerprint != fingerprint:
            self._report("protocol_error", tool=str(name), request_id=request.id, reason="request id reused")
            await self._to_client(
                error_reply(
                    request.id,
                    INVALID_REQUEST,
                    f"the request id {request.id!r} was already used for another call",
                )
            )
            return
        self._report(
            "duplicate", tool=str(name), request_id=request.id, reason="repeated request id; not run again"
        )
        await self._to_client(reply.model_copy(update={"id": request.id}))

    async def _call(self, request: JSONRPCRequest, call: GuardedCall) -> None:
        start = time.perf_counter()
        params = request.params or {}
        key = idempotency_key(params)
        decision: dict[str, Any] = {}
        try:
            with call.scope:
                if key is not None:
                    reply, decision = await self._call_once_per_key(request, call, key)
                else:
                    reply, decision = await self._judge_and_run(request, call)
            if call.scope.cancelled_caught:
                reply = None
                decision = {"kind": "cancelled", "reason": "the client cancelled the call", **decision}
                if call.slot is not None:
                    await self._cancel_upstream(request.id, "the client cancelled the request")
            call.reply = reply
            decision.setdefault("kind", "forwarded")
            self._report(
                tool=str(call.name), request_id=request.id, duration=time.perf_counter() - start, **decision
            )
            if reply is not None:
                self._answered[request.id] = (call.fingerprint, reply)
                while len(self._answered) > self.policy.max_remembered:
                    self._answered.popitem(last=False)
                await self._to_client(reply)
        finally:
            self._calls.pop(request.id, None)
            call.done.set()

    async def _call_once_per_key(
        self, request: JSONRPCRequest, call: GuardedCall, key: str
    ) -> tuple[Any, dict[str, Any]]:
        store = self.keys
        while (running := store._running.get(key)) is not None:
            await running[1].wait()
        done = store._done.get(key)
        if done is not None:
            fingerprint, result = done
            if fingerprint != call.fingerprint:
                message = f"the idempotency key {key!r} was already used for a different call; use a new key"
                return error_reply(request.id, INVALID_PARAMS, message), {
                    "kind": "protocol_error",
                    "reason": message,
                }
            return result_reply(request.id, result), {
                "kind": "duplicate",
                "reason": "idempotency key seen; not run again",
            }
        event = anyio.Event()
        store._running[key] = (call.fingerprint, event)
        try:
            reply, decision = await self._judge_and_run(request, call)
            if isinstance(reply, JSONRPCResponse) and decision.get("reached_server"):
                store.remember(key, call.fingerprint, reply.result)
            return reply, decision
        finally:
            del store._running[key]
            event.set()

    async def _judge_and_run(self, request: JSONRPCRequest, call: GuardedCall) -> tuple[Any, dict[str, Any]]:
        params = request.params or {}
        name = params.get("name")
        if self._has_tools is False:  # no tools capability: nothing to check against; the server answers
            return await self._plain(request, call)
        problem = await self._ready_catalog()
        if problem is not None:
            message = f"toolguard: {problem}; the call was not sent"
            reply = error_reply(request.id, INTERNAL_ERROR, message)
            return reply, {"kind": "protocol_error", "reason": message}
        check = self.catalog.check_call(name, params.get("arguments"))
        if isinstance(check, Unknown):
            error = error_reply(request.id, INVALID_PARAMS, check.message)
            return error, {"kind": "unknown_tool", "reason": check.message}
        if isinstance(check, Refused):
            info = {"kind": check.kind, "path": check.path, "offset": check.offset}
            result = tool_result(
                check.message, meta={DECISION_META_KEY: {k: v for k, v in info.items() if v is not None}}
            )
            return result_reply(request.id, result), {"kind": check.kind, "reason": check.message}
        assert isinstance(check, Allowed)
        return await self._run(request, call, check.entry, check.timeout)

    async def _plain(self, request: JSONRPCRequest, call: GuardedCall) -> tuple[Any, dict[str, Any]]:
        slot = call.slot = Slot()
        try:
            slot.generation = await self.upstream.send(request)
        except UpstreamLost as exc:
            return error_reply(request.id, INTERNAL_ERROR, f"toolguard: {exc}"), {"kind": "transport_failure"}
        await slot.event.wait()
        if isinstance(slot.answer, UpstreamLost):
            return error_reply(request.id, INTERNAL_ERROR, f"toolguard: {slot.answer}"), {
                "kind": "transport_failure"
            }
        return slot.answer, {"attempts": 1, "reached_server": True}

    async def _run(
        self, request: JSONRPCRequest, call: GuardedCall, entry: ToolEntry, timeout: float | None
    ) -> tuple[Any, dict[str, Any]]:
        retry = self.policy.retry
        attempt = 0
        failures: list[str] = []
        while True:
            attempt += 1
            slot = call.slot = Slot()
            failure: BaseException | None
            try:
                slot.generation = await self.upstream.send(request)
            except UpstreamLost as exc:
                failure = ConnectionRefusedError(str(exc))  # never written: nothing can have happened
            else:
                with anyio.move_on_after(timeout):
                    await slot.event.wait()
                answer = slot.answer
                if isinstance(answer, JSONRPCResponse | JSONRPCError):
                    return self._checked(request, entry, answer, attempt, failures)
                if answer is None:
                    failure = None  # timed out: outcome unknown
                    await self._cancel_upstream(request.id, f"toolguard: no answer within {timeout:g} s")
                else:
                    failure = ConnectionResetError(str(answer))
            failures.append("timeout" if failure is None else type(failure).__name__)
            if retry.should_retry(failure, idempotent=entry.retry_safe, attempt=attempt):
                await anyio.sleep(retry.delay(attempt))
                continue
            return self._unknown_outcome(request, entry, failure, timeout, attempt)

    def _unknown_outcome(
        self,
        request: JSONRPCRequest,
        entry: ToolEntry,
        failure: BaseException | None,
        timeout: float | None,
        attempts: int,
    ) -> tuple[Any, dict[str, Any]]:
        name = entry.name
        sent = not isinstance(failure, ConnectionRefusedError)
        if failure is None:
            kind, what = "timeout", f"the server gave no answer to {name!r} within {timeout:g} s"
        elif sent:
            kind, what = (
                "transport_failure",
                f"the connection to the MCP server was lost while {name!r} was running ({failure})",
            )
        else:
            kind, what = "transport_failure", f"{failure}; {name!r} was not sent"
        if not sent:
            tail = "nothing was run; try again later"
        elif attempts > 1:
            tail = (
                f"the outcome is unknown (the action may or may not have happened) after {attempts} attempts"
            )
        elif entry.retry_safe:
            tail = "the outcome is unknown (the action may or may not have happened); retries were used up"
        else:
            tail = (
                "the outcome is unknown (the action may or may not have happened), and it was not retried "
                "because the tool is not marked readOnlyHint or idempotentHint"
            )
        text = f"toolguard: {what}; {tail}."
        if sent and failure is not None and self.restartable:
            text += " The server is restarted for the next call."
        meta = {
            DECISION_META_KEY: {
                "kind": kind,
                "attempts": attempts,
                "outcome": "unknown" if sent else "not_run",
            }
        }
        decision = {"kind": kind, "attempts": attempts, "reached_server": sent, "reason": text}
        return result_reply(request.id, tool_result(text, meta=meta)), decision

    def _checked(
        self, request: JSONRPCRequest, entry: ToolEntry, answer: Any, attempts: int, failures: list[str]
    ) -> tuple[Any, dict[str, Any]]:
        retried = f"retried after {', '.join(failures)}" if failures else None
        base = {"attempts": attempts, "reached_server": True, "reason": retried}
        if isinstance(answer, JSONRPCError):
            error = answer.error
            message = sanitize(error.message, max_chars=self.policy.max_error_chars)
            data = (
                sanitize(error.data, max_chars=self.policy.max_error_chars)
                if isinstance(error.data, str)
                else error.data
            )
            if message != error.message or data is not error.data:
                answer = error_reply(answer.id, error.code, message, data)
            return answer, {**base, "kind": "server_error", "reason": message}
        result = answer.result
        if not self.policy.check_output and result.get("isError") is not True:
            return answer, {**base, "kind": "forwarded"}
        size = len(json.dumps(result, ensure_ascii=False, default=str))
        checked = self.catalog.check_result(entry, result, size)
        if checked.kind == "ok":
            return answer, {**base, "kind": "forwarded"}
        if checked.kind in ("output_invalid", "result_too_large"):
            meta = {DECISION_META_KEY: {"kind": checked.kind}}
            replaced = {**checked.result, "_meta": meta}
            return result_reply(answer.id, replaced), {**base, "kind": checked.kind, "reason": checked.reason}
        reply = answer if checked.result is result else result_reply(answer.id, checked.result)
        return reply, {**base, "kind": checked.kind}

    async def _cancel_upstream(self, rid: Any, reason: str) -> None:
        note = JSONRPCNotification(
            jsonrpc="2.0", method="notifications/cancelled", params={"requestId": rid, "reason": reason}
        )
        with anyio.CancelScope(shield=True):
            await self.upstream.notify_if_connected(note)
