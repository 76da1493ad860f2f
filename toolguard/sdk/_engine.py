"""The SDK wrapper's door to engine-side enforcement (the rules: ``toolguard.engines._requests``).

``ClientEngines`` is the wrapped client's ``EngineMemory``: the engine is ``wrap(..., engine=...)`` or
detected once with the client's own ``models.list()`` (``owned_by``; ``generic`` when that fails).
``sync_create`` / ``async_create`` give the driver a ``create`` that sends the plan's changes (the structural
tag for vLLM and SGLang, ``tool_choice`` as the plan says) and, when the upstream answers
``openai.BadRequestError`` to them (a refused tag, a vLLM without a tool parser), sends the request again once
as the plan then says; any other 400 is raised as it came. O(1) per request beyond the SDK's own work.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from .._exceptions import UsageError
from .._tools import ToolSet
from ..engines._requests import ENGINES, EngineMemory, RequestPlan, engine_of_models

__all__ = ["ClientEngines"]

DETECT_TIMEOUT = 1.5


def _text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    try:
        return f"{exc} {json.dumps(body)}"
    except (TypeError, ValueError):
        return str(exc)


class ClientEngines(EngineMemory):
    """The wrapped client's engine memory (see the module docstring)."""

    def __init__(self, client: Any, *, engine: str, constraints: str, call_format: str) -> None:
        if engine != "auto" and engine not in ENGINES:
            raise UsageError(f"engine must be 'auto' or one of {', '.join(ENGINES)}, not {engine!r}")
        if constraints not in ("auto", "off"):
            raise UsageError(f"engine_constraints must be 'auto' or 'off', not {constraints!r}")
        super().__init__(
            engine=None if engine == "auto" else engine,
            enabled=constraints == "auto",
            call_format=call_format,
        )
        self.client = client

    def _detector(self) -> Any:
        client = self.client
        if hasattr(client, "with_options"):
            client = client.with_options(timeout=DETECT_TIMEOUT, max_retries=0)
        return client.models

    @staticmethod
    def _named(page: Any) -> str:
        data = [m.model_dump() if hasattr(m, "model_dump") else m for m in getattr(page, "data", None) or ()]
        return engine_of_models({"data": data})

    def _plan(self, kwargs: dict[str, Any], tools: ToolSet) -> RequestPlan | None:
        key = json.dumps(kwargs.get("tools"), sort_keys=True, default=str)
        return self.plan(kwargs, tools, self.engine, tools_key=key)

    def _needs_engine(self, kwargs: dict[str, Any], tools: ToolSet) -> bool:
        return self.enabled and self.engine is None and len(tools) > 0 and kwargs.get("tool_choice") != "none"

    def sync_create(
        self, create: Callable[..., Any], kwargs: dict[str, Any], tools: ToolSet
    ) -> Callable[..., Any]:
        """``create`` for one request, with the plan's changes and fallback."""
        if self._needs_engine(kwargs, tools):
            try:
                self.engine = self._named(self._detector().list())
            except Exception:
                self.engine = "generic"
        plan = self._plan(kwargs, tools)
        if plan is None:
            return create

        def guarded(**body: Any) -> Any:
            import openai

            try:
                return create(**plan.apply(body))
            except openai.BadRequestError as exc:
                if not plan.may_fall_back() or not plan.after_400(_text(exc)):
                    raise
            out = create(**plan.apply(body))
            plan.confirm_refusal(200)
            return out

        return guarded

    async def async_create(
        self, create: Callable[..., Awaitable[Any]], kwargs: dict[str, Any], tools: ToolSet
    ) -> Callable[..., Awaitable[Any]]:
        """The async twin of ``sync_create``."""
        if self._needs_engine(kwargs, tools):
            try:
                self.engine = self._named(await self._detector().list())
            except Exception:
                self.engine = "generic"
        plan = self._plan(kwargs, tools)
        if plan is None:
            return create

        async def guarded(**body: Any) -> Any:
            import openai

            try:
                return await create(**plan.apply(body))
            except openai.BadRequestError as exc:
                if not plan.may_fall_back() or not plan.after_400(_text(exc)):
                    raise
            out = await create(**plan.apply(body))
            plan.confirm_refusal(200)
            return out

        return guarded
