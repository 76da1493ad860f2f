"""What every attempt of one chat request shares, and how failures are told to the client.

``Exchange`` holds what one request needs and nothing more: the upstream transport, the config, the
metrics, the forwarded headers, the deadline, the structured-output hint and the engine plan (never the app).
It opens upstream attempts (one HTTP request each: retries are the flow's decision, never the transport's;
a Messages or Responses request's attempt goes through its ``NativeHop``, which reads as chat either way),
turns an upstream error status into ``UpstreamFailure`` and drives the re-ask flow (``drive``: ``Attempt``
actions through a driver's coroutine, ``Backoff`` actions as sleeps bounded by the deadline). The error
bodies are OpenAI-shaped, so the openai SDK raises them as its own exception types. O(1) per attempt beyond
the bytes moved.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from .._drive import adrive
from .._exceptions import UpstreamError, UpstreamStatusError, UpstreamTimeout
from .._guard import GuardVerdict
from .._openai import error_body, parse_retry_after
from .._reask import Attempt, Backoff, FlowResult, RetryFlow, UpstreamFailure
from ._upstream import Deadline, filter_response_headers

if TYPE_CHECKING:
    from ._config import ProxyConfig
    from ._engine import EnginePlan
    from ._metrics import Metrics
    from ._native import NativeHop
    from ._upstream import Upstream

__all__ = ["ERROR_BODY_LIMIT", "QUOTE_CHARS", "Exchange", "upstream_error_body", "violation_body"]

#: Bytes of an upstream error body kept to forward to the client.
ERROR_BODY_LIMIT = 64 * 1024
#: Characters of offending text quoted in an error event.
QUOTE_CHARS = 500

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class _StatusError(UpstreamStatusError):
    """An upstream error status, with the headers worth handing to the client (``retry-after``...)."""

    def __init__(
        self, message: str, *, status_code: int, body: Any, headers: list[tuple[bytes, bytes]]
    ) -> None:
        super().__init__(message, status_code=status_code, body=body)
        self.headers = headers


def violation_body(verdict: GuardVerdict, *, attempts: int) -> dict[str, Any]:
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


def upstream_error_body(exc: UpstreamError) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]:
    """(status, OpenAI-format body, headers) telling the client what the upstream did."""
    if isinstance(exc, UpstreamStatusError):
        body = exc.body if isinstance(exc.body, dict) and isinstance(exc.body.get("error"), dict) else None
        if body is None:
            body = error_body(
                f"upstream answered HTTP {exc.status_code}", status=exc.status_code, code="upstream_error"
            )
        headers = exc.headers if isinstance(exc, _StatusError) else []
        return exc.status_code, body, headers
    code = "upstream_timeout" if isinstance(exc, UpstreamTimeout) else "upstream_error"
    return exc.status_hint, error_body(str(exc), status=exc.status_hint, code=code), []


class Exchange:
    """What every attempt of one request shares: the app, forwarded headers, deadline, hint."""

    __slots__ = ("config", "deadline", "engine", "headers", "hint", "metrics", "native", "upstream", "url")

    def __init__(
        self,
        upstream: Upstream,
        config: ProxyConfig,
        metrics: Metrics,
        headers: list[tuple[str, str]],
        deadline: Deadline,
        hint: dict[str, Any] | None,
        engine: EnginePlan | None = None,
        native: NativeHop | None = None,
    ) -> None:
        self.upstream = upstream
        self.config = config
        self.metrics = metrics
        self.headers = headers
        self.deadline = deadline
        self.hint = hint
        self.engine = engine  # the engine constraint and its fallbacks (``_engine``)
        self.native = native  # a Messages/Responses request's hop (``_native``): its own endpoint, or chat
        self.url = upstream.chat_url

    async def open(self, body: dict[str, Any]) -> httpx.Response:
        payload = {**body, **self.hint} if self.hint else body
        if self.engine is not None:
            return await self.engine.open(self, payload)
        return await self.send(payload)

    async def send(self, payload: dict[str, Any]) -> httpx.Response:
        """One upstream request with ``payload`` as it is: over chat completions, or through the request's
        native hop (which answers as chat whatever the upstream spoke)."""
        if self.native is not None:
            return await self.native.send(self, payload)
        return await self.send_chat(payload)

    async def send_chat(self, payload: dict[str, Any]) -> httpx.Response:
        """One chat-completions request with ``payload`` as it is."""
        return await self.upstream.open(
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
            raw = await self.upstream.read_body(response, limit=ERROR_BODY_LIMIT)
            parsed: Any = json.loads(raw) if raw else None
        except (UpstreamError, ValueError):
            parsed = None
        keep = [
            (k, v)
            for k, v in filter_response_headers(response.headers.multi_items())
            if k in (b"retry-after", b"retry-after-ms", b"x-request-id")
        ]
        exc = _StatusError(
            f"the upstream answered HTTP {response.status_code}",
            status_code=response.status_code,
            body=parsed,
            headers=keep,
        )
        return UpstreamFailure(exc, response.status_code, parse_retry_after(response.headers))

    async def drive(self, flow: RetryFlow, attempt: Any) -> FlowResult:
        """Run the flow to its end: attempts through ``attempt(action)``, backoffs as sleeps."""
        last: UpstreamFailure | None = None

        async def aperform(action: Attempt | Backoff) -> Any:
            nonlocal last
            if isinstance(action, Backoff):
                if action.seconds >= self.deadline.remaining():
                    error = last.error if last is not None else None
                    raise (
                        error
                        if isinstance(error, UpstreamError)
                        else UpstreamTimeout("the request deadline leaves no time to retry the upstream")
                    )
                await anyio.sleep(action.seconds)
                return None
            outcome = await attempt(action)
            last = outcome if isinstance(outcome, UpstreamFailure) else None
            return outcome

        result: FlowResult = await adrive(flow.run(), aperform)
        return result
