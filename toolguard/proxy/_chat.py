"""``POST /v1/chat/completions``: parse and check the request, then guard it, streamed or not.

Theory of operation. The proxy decides nothing about the model's output itself: every rule lives in the
``Guard`` (one per attempt) and every retry decision in the re-ask flow (``toolguard._reask.RetryFlow``, a
generator yielding ``Attempt``/``Backoff`` actions, with the ``Policy`` the config gives). This module checks
the request (limits, ``n``, tool schemas compiled once per distinct ``tools`` JSON so a remote ``$ref`` or an
oversized pattern is a 400 before any upstream call), adds the optional structured-output hint, and hands the
flow to a driver: ``StreamRelay`` (``_relay``) for streams, ``_complete`` here for plain requests.

Non-stream: each attempt's completion is fed to its Guard as a whole message; the repaired completion comes
back with ``x-toolguard-retries`` and ``x-toolguard-verdict``; a violation left after the retries is a 422
(the openai SDK does not retry it again), a truncation a 200 with ``finish_reason="length"`` and no tool
calls, a runaway a 200 with ``finish_reason="repetition"`` and the text cut after one copy of the loop (or a
422 with ``runaway_action="error"``). Work per request: O(bytes moved) plus the Guard's linear work, times at
most ``max_attempts`` attempts.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import anyio

from .._choice import parse_tool_choice
from .._decisions import log_decision
from .._exceptions import GuardError, SchemaError, ToolError, UpstreamError, UpstreamProtocolError, UsageError
from .._guard import GuardVerdict
from .._openai import sum_usage
from .._reask import Attempt, Completed, FlowEvent, RetryFlow, UpstreamFailure
from .._runaway import FINISH_REASON_REPETITION
from .._tools import ToolSet
from .._types import ParsedToolChoice
from ._engine import engine_headers
from ._exchange import Exchange, upstream_error_body, violation_body
from ._limits import RequestLimits, check_chat_request, check_tools
from ._relay import StreamRelay
from ._repaired import repair_headers, request_policy
from ._respond import send_error, send_json
from ._upstream import Deadline

if TYPE_CHECKING:
    from ._app import ProxyApp
    from ._native import NativeHop
    from ._respond import Send

__all__ = ["TOOLSET_CACHE_SIZE", "handle_chat", "structured_output_hint"]

log = logging.getLogger("toolguard.proxy")

#: Parsed tool sets kept per distinct ``tools`` JSON (agents send the same tools on every turn).
TOOLSET_CACHE_SIZE = 256

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class _Refused(Exception):
    """The request's tools break a limit (a 400 naming the limit)."""


def _toolset(cache: OrderedDict[str, ToolSet], tools: Any, limits: RequestLimits) -> ToolSet:
    """The request's tools: checked against the limits, parsed and their schemas compiled, once per distinct
    ``tools`` JSON (``cache`` is the app's). Raises ``_Refused``, ``SchemaError`` or ``ToolError``."""
    if not tools:
        return ToolSet()
    key = _dumps(tools)
    cached = cache.get(key)
    if cached is not None:
        cache.move_to_end(key)
        return cached
    problem = check_tools(tools, limits)
    if problem is not None:
        raise _Refused(problem)
    from .._stream import StreamValidator

    toolset = ToolSet.from_openai(tools)
    for t in toolset:
        # Compile now: a remote $ref or an oversized pattern is a 400 here, never a failure mid-stream.
        try:
            StreamValidator(t.parameters)
        except SchemaError as exc:
            if exc.tool is None:
                exc.tool = t.name
            raise
    cache[key] = toolset
    if len(cache) > TOOLSET_CACHE_SIZE:
        cache.popitem(last=False)
    return toolset


def structured_output_hint(
    body: dict[str, Any], tools: ToolSet, *, style: str, choice: ParsedToolChoice | None = None
) -> dict[str, Any] | None:
    """The upstream's structured-output parameter for a named or ``required`` ``tool_choice`` (else ``None``).

    The schemas follow vLLM's own: the named tool's parameters, or an array of ``{name, parameters}`` objects
    for ``required``. ``style`` ``structured_outputs`` gives ``{"structured_outputs": {"json": schema}}``
    (vLLM >= 0.10.2), ``guided_json`` gives ``{"guided_json": schema}`` (older vLLM).
    """
    if not len(tools) or "structured_outputs" in body or "guided_json" in body:
        return None
    if choice is None:
        choice = parse_tool_choice(body.get("tool_choice"), tools)
    schema: Any = None
    if choice.named is not None:
        schema = tools[choice.named].parameters
    elif choice.required:
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
                    if t.name in choice.names
                ],
            },
        }
    if schema is None:
        return None
    if style == "guided_json":
        return {"guided_json": schema}
    return {"structured_outputs": {"json": schema}}


async def handle_chat(
    app: ProxyApp,
    raw: bytes,
    headers: list[tuple[str, str]],
    deadline: Deadline,
    send: Send,
    native: NativeHop | None = None,
) -> None:
    """Answer one chat-completions request (see the module docstring); ``native``: the hop of a Messages or
    Responses request (``_native``), which sends each attempt in the protocol's own terms. A native attempt
    carries no structured-output hint (a chat-completions field), and the engine constraint only where the
    hop can carry it (``NativeHop.carries_engine``)."""
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
        tools = _toolset(app.toolsets, body.get("tools"), app.config.limits)
    except _Refused as exc:
        await send_error(send, 400, str(exc), code="invalid_request")
        return
    except (SchemaError, ToolError) as exc:
        await send_error(send, 400, f"invalid tools: {exc}", code="invalid_tool_schema")
        return

    metrics = app.metrics

    config = app.config

    def on_event(event: FlowEvent) -> None:
        if event.kind == "verdict" and event.verdict is not None:
            metrics.verdict(event.verdict.kind)
        elif event.kind == "retry" and event.reason is not None:
            metrics.retry(event.reason)
        if event.decision is not None:
            log_decision(log, event.decision, config.log_format, arguments=config.log_arguments)  # type: ignore[arg-type]

    policy = request_policy(app.policy, app.config, body)
    try:
        flow = RetryFlow(body, policy=policy, tools=tools, on_event=on_event, door="proxy")
    except UsageError as exc:  # a tool_choice the tools cannot keep: nothing went upstream
        await send_error(send, 400, str(exc), code="invalid_request", param="tool_choice")
        return
    chat_hop = native is None or not native.native
    carried = native is None or native.carries_engine
    engine = await app.engines.plan_for(body, tools, headers) if carried else None
    hint = (
        structured_output_hint(body, tools, style=app.config.hint_style, choice=flow.choice)
        if chat_hop and app.config.structured_output_hints and (engine is None or engine.tag is None)
        else None
    )
    exchange = Exchange(app.upstream, app.config, app.metrics, headers, deadline, hint, engine, native)
    if body.get("stream"):
        await StreamRelay(exchange, body, call_required=flow.choice.required).run(flow, send)
    else:
        await _complete(exchange, flow, send)


# ---------------------------------------------------------------------------------------------- non-stream
async def _complete(ex: Exchange, flow: RetryFlow, send: Send) -> None:
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
            raw = await ex.upstream.read_body(response, limit=ex.config.max_upstream_body_bytes)
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
        headers = _toolguard_headers(attempts, verdict.kind) + engine_headers(ex, exc.attempts)
        if (
            verdict.kind in ("truncated", "runaway")
            and not (verdict.kind == "runaway" and ex.config.runaway_action == "error")
            and last is not None
        ):
            await send_json(send, 200, _cut_response(last, verdict, usage), headers=headers)
            return
        await send_json(send, 422, violation_body(verdict, attempts=attempts), headers=headers)
        return
    except UpstreamError as exc:
        status, body, headers = upstream_error_body(exc)
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
    headers = _toolguard_headers(len(result.attempts), result.guard.verdict.kind)
    headers += repair_headers(ex.metrics, result.guard) + engine_headers(ex, result.attempts)
    await send_json(send, 200, out, headers=headers)


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
