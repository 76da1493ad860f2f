"""``wrap(client)``: the same ``chat.completions.create`` surface, guarded.

``wrap`` returns a facade whose ``chat.completions.create(...)`` runs the re-ask flow around the wrapped
client's own ``create`` and returns the SDK's own types (``ChatCompletion``; a ``GuardedStream`` /
``AsyncGuardedStream`` yielding the SDK's ``ChatCompletionChunk`` objects). Every other attribute is the
wrapped client's (``wrapped.models.list()``, ``wrapped.base_url``...). The openai package is only imported
when an openai client is wrapped, so ``import toolguard`` works without it.

The wrapped client's own retries are switched off (``with_options(max_retries=0)``) and its ``max_retries``
becomes the flow's upstream budget, unless ``Policy.max_upstream_retries`` says otherwise: retries are
counted once, honour ``Retry-After`` and show up as ``FlowEvent``s.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .._exceptions import UsageError
from .._policy import DEFAULT_POLICY, Policy
from .._reask import FlowEvent, RetryFlow
from ._anthropic import AsyncGuardedAnthropic, GuardedAnthropic, is_anthropic
from ._drivers import AsyncGuardedStream, GuardedStream, create_async, create_sync
from ._engine import ClientEngines
from ._translated import RESPONSES, AsyncTranslated, SyncTranslated

__all__ = ["wrap"]


def wrap(
    client: Any,
    *,
    policy: Policy = DEFAULT_POLICY,
    on_event: Callable[[FlowEvent], None] | None = None,
    engine: str = "auto",
    engine_constraints: str = "auto",
    engine_call_format: str = "hermes",
) -> Any:
    """Guard every chat completion made through ``client``.

    ``client``: an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` (any OpenAI-compatible endpoint: vLLM,
    llama.cpp, Ollama, OpenAI), a ``toolguard.local.LocalGenerator``, or an ``anthropic.Anthropic`` /
    ``anthropic.AsyncAnthropic`` (``messages.create``, non-stream, returns ``anthropic.types.Message``). An
    openai client's ``responses.create`` (non-stream) is guarded too and returns the SDK's ``Response``.
    ``policy``: retries and stream mode (``toolguard.Policy``). ``on_event``: called with each
    ``FlowEvent`` (attempts, verdicts, backoffs, retries, give-ups). ``engine`` (``"auto"``: detected
    once with ``client.models.list()``), ``engine_constraints`` (``"auto"`` | ``"off"``) and
    ``engine_call_format``: vLLM and SGLang get the whole-turn structural tag, a refused one is dropped, a
    vLLM without a tool parser is served anyway (see
    ``toolguard.engines.EngineMemory``).

    The result's ``chat.completions.create(..., tools=..., stream=...)`` returns what the SDK returns; it
    raises ``ToolCallRejected``, ``RunawayGeneration`` or ``TruncatedToolCall`` when the policy's retries are
    spent, and the SDK's own errors for upstream failures it could not retry away.
    """
    if isinstance(client, GuardedClient | AsyncGuardedClient | GuardedAnthropic):
        raise UsageError("this client is already wrapped by toolguard")
    if is_anthropic(client):
        cls_a = AsyncGuardedAnthropic if type(client).__name__.startswith("Async") else GuardedAnthropic
        return cls_a(client, policy=policy, on_event=on_event)
    if _is_local_generator(client):
        from ._local import LocalCompletions

        return GuardedClient(client, LocalCompletions(client), policy=policy, on_event=on_event, retries=0)
    chat = getattr(client, "chat", None)
    completions = getattr(chat, "completions", None)
    create = getattr(completions, "create", None)
    if create is None:
        raise UsageError(
            f"toolguard.wrap needs an openai.OpenAI / openai.AsyncOpenAI client or a LocalGenerator, "
            f"got {type(client).__name__}"
        )
    retries = getattr(client, "max_retries", None)
    raw = client.with_options(max_retries=0) if hasattr(client, "with_options") else client
    engines = ClientEngines(
        raw, engine=engine, constraints=engine_constraints, call_format=engine_call_format
    )
    cls = AsyncGuardedClient if _is_async(client, create) else GuardedClient
    wrapped = cls(client, raw.chat.completions, policy=policy, on_event=on_event, retries=retries)
    wrapped.engines = engines
    if getattr(client, "responses", None) is not None:
        endpoint = AsyncTranslated if cls is AsyncGuardedClient else SyncTranslated
        wrapped.responses = endpoint(wrapped, raw.responses, client.responses, RESPONSES)
    return wrapped


def _is_async(client: Any, create: Any) -> bool:
    """``create`` is a coroutine function (the SDK decorates it: look through ``functools.wraps``)."""
    target = inspect.unwrap(getattr(create, "__func__", create))
    return inspect.iscoroutinefunction(target) or type(client).__name__.startswith("Async")


def _is_local_generator(client: Any) -> bool:
    cls = type(client)
    return cls.__name__ == "LocalGenerator" and cls.__module__.startswith("toolguard.local")


class _Delegate:
    """Attribute access falls through to the wrapped object."""

    _wrapped: Any

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wrapped, name)


class _Completions(_Delegate):
    def __init__(self, owner: Any, raw: Any) -> None:
        self._owner = owner
        self._raw = raw
        self._wrapped = raw

    def _flow(self, kwargs: dict[str, Any]) -> RetryFlow:
        n = kwargs.get("n")
        if isinstance(n, int) and n > 1:
            raise UsageError("toolguard guards one choice per request: use n=1 (or leave n unset)")
        owner = self._owner
        return RetryFlow(kwargs, policy=owner.policy, on_event=owner.on_event, upstream_retries=owner.retries)


class _SyncCompletions(_Completions):
    def create(self, **kwargs: Any) -> Any:
        """``chat.completions.create`` guarded: same arguments, same return types (see ``wrap``)."""
        flow = self._flow(kwargs)
        create = self._raw.create
        engines = self._owner.engines
        if engines is not None:
            create = engines.sync_create(create, kwargs, flow.tools)
        if kwargs.get("stream"):
            return GuardedStream(create, flow)
        return create_sync(create, flow)


class _AsyncCompletions(_Completions):
    async def create(self, **kwargs: Any) -> Any:
        """``await chat.completions.create`` guarded: same arguments, same return types (see ``wrap``)."""
        flow = self._flow(kwargs)
        create = self._raw.create
        engines = self._owner.engines
        if engines is not None:
            create = await engines.async_create(create, kwargs, flow.tools)
        if kwargs.get("stream"):
            return AsyncGuardedStream(create, flow)
        return await create_async(create, flow)


class _Chat(_Delegate):
    def __init__(self, wrapped_chat: Any, completions: _Completions) -> None:
        self._wrapped = wrapped_chat
        self.completions = completions


class GuardedClient(_Delegate):
    """What ``wrap`` returns for a sync client: ``chat.completions.create`` guarded, the rest delegated."""

    responses: Any  # an openai client's, guarded (``wrap`` sets it); else the wrapped client's, if any

    def __init__(
        self,
        client: Any,
        raw_completions: Any,
        *,
        policy: Policy,
        on_event: Callable[[FlowEvent], None] | None,
        retries: int | None,
    ) -> None:
        self._wrapped = client
        self.policy = policy
        self.on_event = on_event
        self.retries = retries
        self.engines: ClientEngines | None = None  # an OpenAI-compatible client's (``wrap`` sets it)
        self.chat = _Chat(getattr(client, "chat", None), self._completions(raw_completions))

    def _completions(self, raw: Any) -> _Completions:
        return _SyncCompletions(self, raw)

    @property
    def wrapped(self) -> Any:
        """The client this one guards."""
        return self._wrapped

    def __repr__(self) -> str:
        return f"<toolguard.wrap({type(self._wrapped).__name__})>"


class AsyncGuardedClient(GuardedClient):
    """What ``wrap`` returns for an async client."""

    def _completions(self, raw: Any) -> _Completions:
        return _AsyncCompletions(self, raw)
