"""``POST /v1/chat/completions``: the guarded flow, streamed and not.

Theory of operation. The proxy decides nothing about the model's output itself: every rule lives in the
``Guard`` (one per attempt) and every retry decision in the re-ask flow (``toolguard._reask.RetryFlow``, a
generator yielding ``Attempt``/``Backoff`` actions). This module is that flow's asyncio driver over HTTP:

- an ``Attempt`` is one upstream request; its answer is translated into Guard events (``_chunks``), fed to the
  attempt's Guard, and answered to the flow as ``Completed`` (the Guard saw the end, or asked to stop: the
  upstream response is then closed at once, so no more tokens are paid for) or ``UpstreamFailure`` (HTTP
  error, timeout, dropped connection, malformed SSE);
- a ``Backoff`` is a sleep, refused when it would outlive the request's deadline;
- the flow returns a usable result, or raises ``GuardError`` / the upstream error once its budgets are spent.

Streaming has two modes (``ProxyConfig.mode``). **hold**: content deltas go out as they pass the Guard,
tool-call deltas are held until the attempt ends with a usable verdict, so a failed call is retried upstream
and the client never sees it (content of a retry is dropped when content was already sent: the client has its
text). **pass**: every delta goes out as soon as the Guard accepted it; once anything of an attempt is visible
a failure cannot be retried invisibly, so it ends the stream. A retry is also refused when it could not be
invisible in hold mode: a loop in content already sent, or an upstream failure after content was sent. Endings
are truthful: a truncated call ends with ``finish_reason="length"`` (its held fragments are not released), a
runaway with ``"repetition"`` (or an error event, per ``runaway_action``), any other violation with an
OpenAI-format error event (``data: {"error": {...}}``, which the openai SDK raises as ``APIError``).

Non-stream: the repaired completion comes back with ``x-toolguard-retries`` and ``x-toolguard-verdict``; a
violation left after the retries is a 422 (the SDK does not retry it again), a truncation a 200 with
``finish_reason="length"`` and no tool calls. Work per request: O(bytes moved) plus the Guard's linear work,
times at most ``max_attempts`` attempts.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from .._events import ContentDelta, Finish, ToolCallDelta
from .._exceptions import (
    GuardError,
    SchemaError,
    ToolError,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamStatusError,
    UpstreamTimeout,
)
from .._guard import GuardVerdict
from .._reask import Attempt, Backoff, Completed, FlowEvent, FlowResult, RetryFlow, UpstreamFailure
from .._runaway import FINISH_REASON_REPETITION
from .._tools import ToolSet
from ._chunks import ChunkWriter, read_chunk, sum_usage
from ._limits import check_chat_request
from ._respond import SSE_HEADERS, error_body, send_error, send_json
from ._sse import DONE, SSEDecoder, encode_data
from ._upstream import Deadline, filter_response_headers, parse_retry_after, translate

if TYPE_CHECKING:
    from ._app import ProxyApp
    from ._respond import Send

__all__ = ["TOOLSET_CACHE_SIZE", "handle_chat", "structured_output_hint"]

#: Parsed tool sets kept per distinct ``tools`` JSON (agents send the same tools on every turn).
TOOLSET_CACHE_SIZE = 256
#: Bytes of an upstream error body kept to forward to the client.
ERROR_BODY_LIMIT = 64 * 1024
#: Bytes read after ``[DONE]`` so a keep-alive connection is reused rather than closed.
DRAIN_LIMIT = 64 * 1024
#: Characters of offending text quoted in an error event.
QUOTE_CHARS = 500

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_toolsets: OrderedDict[str, ToolSet] = OrderedDict()


class _Terminal(Exception):
    """The driver ends the response itself: a retry could not be invisible to the client."""

    def __init__(self, verdict: GuardVerdict | None = None, error: UpstreamError | None = None) -> None:
        self.verdict = verdict
        self.error = error
        super().__init__(verdict.message if verdict else str(error))


def _toolset(tools: Any) -> ToolSet:
    """The request's tools, parsed and their schemas compiled once per distinct JSON (raises SchemaError)."""
    if not tools:
        return ToolSet()
    key = _dumps(tools)
    cached = _toolsets.get(key)
    if cached is not None:
        _toolsets.move_to_end(key)
        return cached
    from .._stream import StreamValidator

    toolset = ToolSet.from_openai(tools)
    for t in toolset:
        try:
            StreamValidator(
                t.parameters
            )  # refuses remote $ref, oversized patterns...: a 400, not a mid-stream crash
        except SchemaError as exc:
            if exc.tool is None:
                exc.tool = t.name
            raise
    _toolsets[key] = toolset
    if len(_toolsets) > TOOLSET_CACHE_SIZE:
        _toolsets.popitem(last=False)
    return toolset


def structured_output_hint(body: dict[str, Any], tools: ToolSet, *, style: str) -> dict[str, Any] | None:
    """The upstream's structured-output parameter for a named or ``required`` ``tool_choice`` (else ``None``).

    The schemas follow vLLM's own: the named tool's parameters, or an array of ``{name, parameters}`` objects
    for ``required``. ``style`` ``structured_outputs`` gives ``{"structured_outputs": {"json": schema}}``
    (vLLM >= 0.10.2), ``guided_json`` gives ``{"guided_json": schema}`` (older vLLM).
    """
    if not len(tools) or "structured_outputs" in body or "guided_json" in body:
        return None
    choice = body.get("tool_choice")
    schema: Any = None
    if choice == "required":
        schema = {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "anyOf": [
                    {
                        "properties": {
                            "name": {"type": "string", "enum": [t.name]},
                            "parameters": t.parameters,
                        },
                        "required": ["name", "parameters"],
                    }
                    for t in tools
                ],
            },
        }
    elif isinstance(choice, dict):
        fn = choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else None
        tool = tools.get(name) if isinstance(name, str) else None
        if tool is not None:
            schema = tool.parameters
    if schema is None:
        return None
    if style == "guided_json":
        return {"guided_json": schema}
    return {"structured_outputs": {"json": schema}}


def _violation_body(verdict: GuardVerdict, *, attempts: int) -> dict[str, Any]:
    detail = verdict.to_dict()
    if isinstance(detail.get("text"), str) and len(detail["text"]) > QUOTE_CHARS:
        detail["text"] = detail["text"][:QUOTE_CHARS] + "..."
    body = error_body(
        f"toolguard: {verdict.message} (after {attempts} attempt{'s' * (attempts != 1)})",
        status=422,
        code=verdict.kind,
        type="invalid_tool_call" if verdict.kind != "runaway" else "runaway_generation",
    )
    body["error"]["toolguard"] = detail
    return body


def _upstream_error_body(exc: UpstreamError) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]:
    """(status, OpenAI-format body, headers) telling the client what the upstream did."""
    if isinstance(exc, UpstreamStatusError):
        body = exc.body if isinstance(exc.body, dict) and isinstance(exc.body.get("error"), dict) else None
        if body is None:
            body = error_body(
                f"upstream answered HTTP {exc.status_code}", status=exc.status_code, code="upstream"
            )
        headers = getattr(exc, "headers", None) or []
        return exc.status_code, body, headers
    code = "upstream_timeout" if isinstance(exc, UpstreamTimeout) else "upstream_error"
    return exc.status_hint, error_body(str(exc), status=exc.status_hint, code=code), []


async def handle_chat(
    app: ProxyApp, raw: bytes, headers: list[tuple[str, str]], deadline: Deadline, send: Send
) -> None:
    """Answer one chat-completions request (see the module docstring)."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        await send_error(send, 400, "the request body is not valid JSON", code="invalid_json")
        return
    problem = check_chat_request(body, app.config.limits)
    if problem is None and body.get("n") not in (None, 1):
        problem = "the toolguard proxy guards one choice per request: send n=1 (or several requests)"
    if problem is not None:
        await send_error(send, 400, problem, code="invalid_request")
        return
    try:
        tools = _toolset(body.get("tools"))
    except (SchemaError, ToolError) as exc:
        await send_error(send, 400, f"invalid tools: {exc}", code="invalid_tool_schema")
        return

    metrics = app.metrics

    def on_event(event: FlowEvent) -> None:
        if event.kind == "verdict" and event.verdict is not None:
            metrics.verdict(event.verdict.kind)
        elif event.kind == "retry" and event.reason is not None:
            metrics.retry(event.reason)

    flow = RetryFlow(body, policy=app.policy, tools=tools, on_event=on_event)
    hint = (
        structured_output_hint(body, tools, style=app.config.hint_style)
        if app.config.structured_output_hints
        else None
    )
    exchange = _Exchange(app, headers, deadline, hint)
    if body.get("stream"):
        await _Stream(exchange, body).run(flow, send)
    else:
        await _complete(exchange, flow, send)


class _Exchange:
    """What every attempt of one request shares: the app, forwarded headers, deadline, hint."""

    __slots__ = ("app", "deadline", "headers", "hint", "url")

    def __init__(
        self, app: ProxyApp, headers: list[tuple[str, str]], deadline: Deadline, hint: dict[str, Any] | None
    ) -> None:
        self.app = app
        self.headers = headers
        self.deadline = deadline
        self.hint = hint
        self.url = app.upstream.url("/v1/chat/completions")

    async def open(self, body: dict[str, Any]) -> httpx.Response:
        payload = {**body, **self.hint} if self.hint else body
        return await self.app.upstream.open(
            "POST",
            self.url,
            headers=self.headers,
            content=_dumps(payload).encode("utf-8"),
            deadline=self.deadline,
            idempotent=True,
            retries=0,  # the flow decides retries
        )

    async def status_failure(self, response: httpx.Response) -> UpstreamFailure:
        try:
            raw = await self.app.upstream.read_body(response, limit=ERROR_BODY_LIMIT)
            parsed: Any = json.loads(raw) if raw else None
        except (UpstreamError, ValueError):
            parsed = None
        exc = UpstreamStatusError(
            f"the upstream answered HTTP {response.status_code}",
            status_code=response.status_code,
            body=parsed,
        )
        keep = [
            (k, v)
            for k, v in filter_response_headers(response.headers.multi_items())
            if k in (b"retry-after", b"retry-after-ms", b"x-request-id")
        ]
        exc.headers = keep  # type: ignore[attr-defined]
        return UpstreamFailure(exc, response.status_code, parse_retry_after(response.headers))

    async def drive(self, flow: RetryFlow, attempt: Any) -> FlowResult:
        """Run the flow to its end: attempts through ``attempt(action)``, backoffs as sleeps."""
        gen = flow.run()
        last: UpstreamFailure | None = None
        try:
            action: Attempt | Backoff = next(gen)
            while True:
                if isinstance(action, Backoff):
                    if action.seconds >= self.deadline.remaining():
                        error = last.error if last is not None else None
                        raise (
                            error
                            if isinstance(error, UpstreamError)
                            else UpstreamTimeout("the request deadline leaves no time to retry the upstream")
                        )
                    await anyio.sleep(action.seconds)
                    outcome: Any = None
                else:
                    outcome = await attempt(action)
                    last = outcome if isinstance(outcome, UpstreamFailure) else None
                try:
                    action = gen.send(outcome)
                except StopIteration as stop:
                    result: FlowResult = stop.value
                    return result
        finally:
            gen.close()


# ---------------------------------------------------------------------------------------------- non-stream
async def _complete(ex: _Exchange, flow: RetryFlow, send: Send) -> None:
    app = ex.app
    usage: dict[str, Any] | None = None
    last: dict[str, Any] | None = None

    async def attempt(action: Attempt) -> Completed | UpstreamFailure:
        nonlocal usage, last
        try:
            response = await ex.open(action.body)
        except UpstreamError as exc:
            return UpstreamFailure(exc)
        try:
            if response.status_code != 200:
                return await ex.status_failure(response)
            raw = await app.upstream.read_body(response, limit=app.config.max_upstream_body_bytes)
        except UpstreamError as exc:
            return UpstreamFailure(exc)
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
        try:
            obj = json.loads(raw)
            choice = obj["choices"][0]
            message = choice["message"]
            if not isinstance(message, dict):
                raise TypeError
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            return UpstreamFailure(
                UpstreamProtocolError(f"the upstream answer is not a chat completion: {exc!r}")
            )
        usage = sum_usage(usage, obj.get("usage") if isinstance(obj.get("usage"), dict) else None)
        last = obj
        action.guard.feed_message(message, choice.get("finish_reason"))
        tokens = (obj.get("usage") or {}).get("completion_tokens")
        return Completed(obj, tokens if isinstance(tokens, int) else None)

    try:
        result = await ex.drive(flow, attempt)
    except GuardError as exc:
        verdict: GuardVerdict = exc.violation
        attempts = len(exc.attempts)
        headers = _toolguard_headers(attempts, verdict.kind)
        if (
            verdict.kind in ("truncated", "runaway")
            and not (verdict.kind == "runaway" and app.config.runaway_action == "error")
            and last is not None
        ):
            await send_json(send, 200, _cut_response(last, verdict, usage), headers=headers)
            return
        await send_json(send, 422, _violation_body(verdict, attempts=attempts), headers=headers)
        return
    except UpstreamError as exc:
        status, body, headers = _upstream_error_body(exc)
        await send_json(
            send, status, body, headers=headers + _toolguard_headers(len(flow.attempts), "upstream")
        )
        return
    obj = result.response
    choice = obj["choices"][0]
    message = {k: v for k, v in choice["message"].items() if k not in ("content", "tool_calls")}
    message.update(result.guard.message())
    choice = {**choice, "message": message}
    if message.get("tool_calls"):
        choice["finish_reason"] = "tool_calls"
    out = {**obj, "choices": [choice]}
    if usage is not None:
        out["usage"] = usage
    await send_json(
        send, 200, out, headers=_toolguard_headers(len(result.attempts), result.guard.verdict.kind)
    )


def _toolguard_headers(attempts: int, verdict: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"x-toolguard-retries", str(max(0, attempts - 1)).encode()),
        (b"x-toolguard-verdict", verdict.encode()),
    ]


def _cut_response(obj: dict[str, Any], verdict: GuardVerdict, usage: dict[str, Any] | None) -> dict[str, Any]:
    """A completion ended honestly: no tool calls, ``length`` or ``repetition``, a loop cut after one copy."""
    choice = dict(obj["choices"][0])
    message = {k: v for k, v in (choice.get("message") or {}).items() if k != "tool_calls"}
    content = message.get("content")
    if verdict.kind == "runaway":
        r = verdict.runaway
        if verdict.where == "content" and isinstance(content, str) and r is not None:
            message["content"] = content[: r.offset + r.period]
        elif verdict.where != "content":
            message["content"] = content or None
        choice["finish_reason"] = FINISH_REASON_REPETITION
    else:
        choice["finish_reason"] = "length"
    choice["message"] = message
    out = {**obj, "choices": [choice]}
    if usage is not None:
        out["usage"] = usage
    return out


# ---------------------------------------------------------------------------------------------- stream
class _Stream:
    """One streamed request: the client-facing SSE response across every attempt."""

    def __init__(self, ex: _Exchange, body: dict[str, Any]) -> None:
        self.ex = ex
        self.config = ex.app.config
        self.mode = self.config.mode
        options = body.get("stream_options")
        self.include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        choice = body.get("tool_choice")
        # A call is required: any text is a prelude to a violation, so hold it too.
        self.hold_content = self.mode == "hold" and (choice == "required" or isinstance(choice, dict))
        self.writer: ChunkWriter | None = None
        self.started = False  # the response's headers went out
        self._prefix: list[bytes] = []  # queued for the last write (a role chunk made at the end)
        self.send: Send | None = None
        self.content_sent = False  # some content reached the client (in any attempt)
        self.suppressed = False  # the current attempt's content was held back (a retry after visible text)
        self.usage: dict[str, Any] | None = None
        self.next_index = 0

    # output -------------------------------------------------------------------------------------------
    def _writer(self, meta: dict[str, Any] | None, out: list[bytes]) -> ChunkWriter:
        """The response's writer, made from the first upstream chunk; queues the role chunk."""
        meta = meta or {}
        created = meta.get("created")
        fingerprint = meta.get("system_fingerprint")
        self.writer = ChunkWriter(
            id=str(meta.get("id") or f"chatcmpl-{uuid.uuid4().hex[:24]}"),
            created=created if isinstance(created, int) else int(time.time()),
            model=str(meta.get("model") or ""),
            system_fingerprint=fingerprint if isinstance(fingerprint, str) else None,
        )
        out.append(self.writer.role())
        return self.writer

    def _final_writer(self) -> ChunkWriter:
        """The writer for the last write; made now (its role chunk queued in ``_prefix``) if none came yet."""
        if self.writer is None:
            self._writer(None, self._prefix)
        assert self.writer is not None
        return self.writer

    def _headers(self) -> list[tuple[bytes, bytes]]:
        return [*SSE_HEADERS, (b"x-toolguard-mode", self.mode.encode())]

    async def _end(self, tail: bytes) -> None:
        """The last write: ``tail`` (finish chunk or error event), the usage chunk when asked, ``[DONE]``."""
        assert self.send is not None
        writer = self._final_writer()
        out, self._prefix = [*self._prefix, tail], []
        if self.include_usage and self.usage is not None:
            out.append(writer.usage(self.usage))
        out.append(DONE)
        if not self.started:
            self.started = True
            self.ex.app.metrics.streams_open += 1
            await self.send({"type": "http.response.start", "status": 200, "headers": self._headers()})
        await self.send({"type": "http.response.body", "body": b"".join(out), "more_body": False})

    # the flow -----------------------------------------------------------------------------------------
    async def run(self, flow: RetryFlow, send: Send) -> None:
        self.send = send
        try:
            await self._run(flow)
        finally:
            if self.started:
                self.ex.app.metrics.streams_open -= 1

    async def _run(self, flow: RetryFlow) -> None:
        try:
            result = await self.ex.drive(flow, self._attempt)
        except _Terminal as term:
            if term.verdict is not None:
                self.ex.app.metrics.verdict(term.verdict.kind)
                await self._violation(term.verdict, len(flow.attempts) + 1)
            else:
                assert term.error is not None
                await self._upstream_error(term.error)
            return
        except GuardError as exc:
            await self._violation(exc.violation, len(exc.attempts))
            return
        except UpstreamError as exc:
            await self._upstream_error(exc)
            return
        guard = result.guard
        writer = self._final_writer()
        tail = b""
        calls = guard.tool_calls
        # Text held back: always with a required call; after a retry, only when the answer turned out to be
        # text alone (the client then reads both attempts' text rather than lose the answer).
        if guard.content and (self.hold_content or (self.suppressed and not calls)):
            tail += writer.content(guard.content)
        if self.mode == "hold":
            for call in calls:
                index = self.next_index
                self.next_index += 1
                tail += writer.call_start(index, call.id or _call_id(), call.name)
                tail += writer.call_arguments(index, call.arguments)
        reason = "tool_calls" if calls else (guard.finish_reason or "stop")
        await self._end(tail + writer.finish(reason))

    async def _violation(self, verdict: GuardVerdict, attempts: int) -> None:
        writer = self._final_writer()
        if verdict.kind == "truncated":
            await self._end(writer.finish("length"))
        elif verdict.kind == "runaway" and self.config.runaway_action != "error":
            await self._end(writer.finish(FINISH_REASON_REPETITION))
        else:
            await self._end(encode_data(_violation_body(verdict, attempts=attempts)))

    async def _upstream_error(self, exc: UpstreamError) -> None:
        status, body, headers = _upstream_error_body(exc)
        if not self.started:  # nothing sent yet: a plain HTTP error, as the upstream gave it
            assert self.send is not None
            await send_json(self.send, status, body, headers=headers)
            return
        await self._end(encode_data(body))

    async def _attempt(self, action: Attempt) -> Completed | UpstreamFailure:
        self.suppressed = False
        try:
            response = await self.ex.open(action.body)
        except UpstreamError as exc:
            return UpstreamFailure(exc)
        state = _AttemptState()
        try:
            if response.status_code != 200:
                return await self.ex.status_failure(response)
            try:
                await self._relay(action, response, state)
            except (httpx.HTTPError, UpstreamError) as exc:
                err = translate(exc)
                if state.visible_content or state.visible_calls:
                    raise _Terminal(error=err) from exc
                return UpstreamFailure(err)
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
        if state.usage is not None:
            self.usage = sum_usage(self.usage, state.usage)
        verdict = action.guard.close()
        if verdict.failed and (
            state.visible_calls
            or (self.mode == "pass" and state.visible_content)
            or (verdict.kind == "runaway" and verdict.where == "content" and state.visible_content)
        ):
            raise _Terminal(verdict)
        tokens = (state.usage or {}).get("completion_tokens")
        return Completed(None, tokens if isinstance(tokens, int) else None)

    async def _relay(self, action: Attempt, response: httpx.Response, state: _AttemptState) -> None:
        """Feed the upstream stream into the Guard, forwarding what the mode allows; stop at the verdict.

        What one network read of the upstream yields is sent to the client as one write (fewer syscalls than a
        write per event, and never later than the read that carried it)."""
        decoder = SSEDecoder()
        encoding = response.headers.get("content-encoding", "identity").lower()
        chunks = response.aiter_raw() if encoding in ("", "identity") else response.aiter_bytes()
        async for raw in chunks:
            out: list[bytes] = []
            try:
                stop = self._consume(decoder.feed(raw), action, state, out)
            finally:
                if out:
                    await self._flush(out)
            if stop is _DONE:
                await _drain(chunks)
                return
            if stop is _STOP:
                return
        for event in decoder.close():
            if event.data == "[DONE]":
                state.done = True
        if not state.done and not action.guard.verdict.done:
            raise UpstreamProtocolError("the upstream closed the stream before it finished")

    async def _flush(self, out: list[bytes]) -> None:
        assert self.send is not None
        if not self.started:
            self.started = True
            self.ex.app.metrics.streams_open += 1
            await self.send({"type": "http.response.start", "status": 200, "headers": self._headers()})
        await self.send({"type": "http.response.body", "body": b"".join(out), "more_body": True})

    def _consume(self, events: list[Any], action: Attempt, state: _AttemptState, out: list[bytes]) -> object:
        """Judge the SSE events of one read; append what may go out. Returns ``_DONE``, ``_STOP`` or None."""
        feed = action.guard.feed
        pass_mode = self.mode == "pass"
        suppress = self.content_sent and action.number > 1  # the client already has text from an attempt
        for event in events:
            data = event.data
            if data == "[DONE]":
                state.done = True
                return _DONE
            if not data:
                continue
            try:
                chunk = read_chunk(json.loads(data))
            except ValueError as exc:
                raise UpstreamProtocolError(
                    "the upstream sent an SSE event that is not a JSON chunk"
                ) from exc
            if chunk.error is not None:
                message = chunk.error.get("message") if isinstance(chunk.error, dict) else str(chunk.error)
                raise UpstreamError(f"the upstream reported an error mid-stream: {message}")
            if chunk.usage is not None:
                state.usage = chunk.usage
            if state.done:
                continue  # after finish_reason only the usage chunk matters
            writer = self.writer or self._writer(chunk.meta, out)
            if chunk.extra and not suppress:
                out.append(writer.delta(chunk.extra))
            for ev in chunk.events:
                verdict = feed(ev)
                if not verdict.ok:
                    return _STOP  # failed, or text after the calls (cut): close the upstream now
                kind = type(ev)
                if kind is ContentDelta:
                    if suppress:
                        self.suppressed = True
                    elif not self.hold_content:
                        out.append(writer.content(ev.text))  # type: ignore[union-attr]
                        state.visible_content = True
                        self.content_sent = True
                elif kind is ToolCallDelta:
                    if pass_mode:
                        self._pass_call(ev, state, writer, out)  # type: ignore[arg-type]
                elif kind is Finish:
                    state.done = True  # read on to [DONE] (usage, and the connection goes back to the pool)
        return None

    def _pass_call(
        self, ev: ToolCallDelta, state: _AttemptState, writer: ChunkWriter, out: list[bytes]
    ) -> None:
        call = state.calls.get(ev.index)
        if call is None:
            call = state.calls[ev.index] = _PassCall()
        if ev.name and call.index is None:
            call.name += ev.name
        if ev.id and not call.id:
            call.id = ev.id
        if not ev.arguments:
            return
        if call.index is None:  # the name is whole once arguments start: send id, type and name once
            call.index = self.next_index
            self.next_index += 1
            out.append(writer.call_start(call.index, call.id or _call_id(), call.name, ev.arguments))
        else:
            out.append(writer.call_arguments(call.index, ev.arguments))
        state.visible_calls = True


async def _drain(chunks: Any) -> None:
    """Read what follows ``[DONE]`` (the chunked terminator) so the connection can go back to the pool."""
    left = DRAIN_LIMIT
    async for raw in chunks:
        left -= len(raw)
        if left < 0:
            return  # an upstream still talking after [DONE]: let the close drop the connection


_DONE = object()  # [DONE] seen
_STOP = object()  # the Guard stopped the attempt


class _PassCall:
    """A call being forwarded in pass mode: its index for the client (once sent), id and name."""

    __slots__ = ("id", "index", "name")

    def __init__(self) -> None:
        self.index: int | None = None
        self.id: str | None = None
        self.name = ""


class _AttemptState:
    __slots__ = ("calls", "done", "usage", "visible_calls", "visible_content")

    def __init__(self) -> None:
        self.done = False
        self.visible_content = False
        self.visible_calls = False
        self.usage: dict[str, Any] | None = None
        self.calls: dict[int, _PassCall] = {}  # pass mode: the upstream's call index -> what was sent


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"
