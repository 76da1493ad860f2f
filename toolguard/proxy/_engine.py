"""The proxy's door to engine-side enforcement (the rules: ``toolguard.engines._requests``).

``Engines`` (one per proxy) is the upstream's ``EngineMemory`` plus the I/O: the engine comes from the config
(``engine``) or is detected once from ``GET /v1/models`` (``owned_by``, else the ``server`` header; a
detection that failed or found nothing counts as ``generic`` and is tried again after
``DETECT_RETRY_SECONDS``). ``EnginePlan.open`` sends one attempt with the plan's changes and, when the
upstream answers 400 to them (a refused tag, or a vLLM without a tool parser), sends it again once as the plan
then says; any other 400 reaches the client as it came. ``engine_headers`` gives each answer to a request
with tools ``x-toolguard-engine-constraint`` and counts its first attempt's validity
(``toolguard_first_attempts_total``). O(1) per request beyond the bytes moved.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from .._exceptions import UpstreamError
from .._tools import ToolSet
from ..engines._requests import EngineMemory, RequestPlan, engine_of_models
from ._upstream import Deadline

if TYPE_CHECKING:
    from ._app import ProxyApp
    from ._exchange import Exchange

__all__ = [
    "DETECT_RETRY_SECONDS",
    "EnginePlan",
    "Engines",
    "constraint_header",
    "count_first_attempt",
    "engine_headers",
]

log = logging.getLogger("toolguard.proxy")

#: How long a failed (or ``generic``) engine detection stands before it is tried again.
DETECT_RETRY_SECONDS = 60.0
DETECT_TIMEOUT = 1.5  # seconds; an engine answers /v1/models in milliseconds
ERROR_BODY_LIMIT = 64 * 1024


class EnginePlan:
    """One request's ``RequestPlan`` and its I/O: ``open`` sends an attempt, falling back once on a 400."""

    __slots__ = ("plan",)

    def __init__(self, plan: RequestPlan) -> None:
        self.plan = plan

    @property
    def tag(self) -> dict[str, Any] | None:
        return self.plan.tag

    @property
    def constraint(self) -> str:
        return self.plan.constraint

    async def open(self, ex: Exchange, body: dict[str, Any]) -> httpx.Response:
        plan = self.plan
        response = await ex.send(plan.apply(body))
        if response.status_code != 400 or not plan.may_fall_back():
            return response
        try:
            raw = await ex.upstream.read_body(response, limit=ERROR_BODY_LIMIT)
        except UpstreamError:
            raw = b""
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
        text = raw.decode("utf-8", "replace")
        had_parser, had_tag = not plan.no_parser, plan.tag is not None
        if not plan.after_400(text):  # a 400 about something else: the client gets it as it was
            headers = [
                (k, v)
                for k, v in response.headers.multi_items()
                if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
            ]
            return httpx.Response(400, headers=headers, content=raw, request=response.request)
        if had_parser and plan.no_parser:
            log.warning(
                "toolguard proxy: the upstream has no tool parser (vLLM without --enable-auto-tool-choice);"
                " tools now go with tool_choice='none' and calls are repaired from the text"
            )
        elif had_tag:
            log.warning("toolguard proxy: the engine refused the structural tag (%s); sent again", text[:300])
        again = await ex.send(plan.apply(body))
        plan.confirm_refusal(again.status_code)
        return again


class Engines(EngineMemory):
    """The upstream's engine memory, with detection (see the module docstring)."""

    def __init__(self, app: ProxyApp) -> None:
        config = app.config
        configured = None if config.engine == "auto" else config.engine
        super().__init__(
            engine=configured,
            enabled=config.engine_constraints == "auto",
            call_format=config.engine_call_format,
        )
        self.app = app
        self._configured = configured
        self._detected_at = 0.0
        self._lock = anyio.Lock()

    async def kind(self, headers: list[tuple[str, str]]) -> str:
        """The upstream's engine: configured, or detected (once; again a while after finding nothing)."""
        if self._configured is not None:
            return self._configured
        if self._stale():
            async with self._lock:
                if self._stale():
                    self.engine = await self._detect(headers)
                    self._detected_at = time.monotonic()
                    log.info("toolguard proxy: upstream engine %s", self.engine)
        assert self.engine is not None
        return self.engine

    def _stale(self) -> bool:
        return self.engine is None or (
            self.engine == "generic" and time.monotonic() - self._detected_at >= DETECT_RETRY_SECONDS
        )

    async def _detect(self, headers: list[tuple[str, str]]) -> str:
        upstream = self.app.upstream
        try:
            response = await upstream.open(
                "GET",
                upstream.url("/v1/models"),
                headers=[(k, v) for k, v in headers if k.lower() not in ("content-type", "content-length")],
                content=b"",
                deadline=Deadline(DETECT_TIMEOUT),
                idempotent=True,
                retries=0,
            )
        except UpstreamError:
            return "generic"
        try:
            server = response.headers.get("server", "")
            if response.status_code != 200:
                return engine_of_models(None, server)
            raw = await upstream.read_body(response, limit=1024 * 1024)
            return engine_of_models(json.loads(raw), server)
        except (UpstreamError, ValueError):
            return "generic"
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()

    async def plan_for(
        self, body: dict[str, Any], tools: ToolSet, headers: list[tuple[str, str]]
    ) -> EnginePlan | None:
        """The plan for one request (``None``: send it as it came)."""
        if not len(tools) or body.get("tool_choice") == "none":
            return None
        engine = await self.kind(headers) if self.enabled else None
        plan = self.plan(body, tools, engine)
        return EnginePlan(plan) if plan is not None else None


def engine_headers(ex: Exchange, attempts: Sequence[Any]) -> list[tuple[bytes, bytes]]:
    """``x-toolguard-engine-constraint`` for a request with tools (none otherwise), and the first attempt's
    validity counted by the constraint it went with."""
    count_first_attempt(ex, attempts)
    return constraint_header(ex)


def constraint_header(ex: Exchange) -> list[tuple[bytes, bytes]]:
    """``x-toolguard-engine-constraint: structural_tag|none|refused`` for a request with tools, else none."""
    plan = ex.engine
    return [] if plan is None else [(b"x-toolguard-engine-constraint", plan.constraint.encode())]


def count_first_attempt(ex: Exchange, attempts: Sequence[Any]) -> None:
    """Count the request's first attempt (usable as it came, or not) by its engine constraint."""
    plan = ex.engine
    first = attempts[0].verdict if plan is not None and attempts else None
    if plan is not None and first is not None:
        ex.metrics.first_attempt(plan.constraint, first.kind in ("ok", "fabricated"))
