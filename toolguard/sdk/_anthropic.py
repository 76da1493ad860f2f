"""``wrap(anthropic.Anthropic(...))``: ``messages.create`` guarded by the one re-ask flow.

Theory of operation. Nothing is decided here. The caller's Messages request becomes the chat request the
flow runs (``toolguard._messages.to_chat``); each chat request the flow wants sent (the first, a re-ask, a
runaway or truncation retry) is turned back into a Messages request (``to_messages``: the caller's turns as
they came, the flow's additions as ``tool_use``/``tool_result`` blocks) and sent with the real client's
``messages.create``; the ``Message`` that comes back is read by the attempt's Guard as a chat completion
(``chat_completion``). The accepted answer (with the Guard's repairs, ``sdk._delivered``) is translated back
(``from_chat``) and validated into the SDK's own ``anthropic.types.Message``, its ``GuardReport`` attached.
The client's own retries are switched off and its ``max_retries`` becomes the flow's upstream budget, as
for openai clients. Non-stream only: ``stream=True`` is refused with a ``UsageError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _messages
from .._drive import adrive, drive
from .._exceptions import UsageError
from .._openai import parse_retry_after
from .._policy import Policy
from .._reask import Attempt, Backoff, FlowEvent, FlowResult, Outcome, RetryFlow, UpstreamFailure
from ._delivered import delivered
from ._drivers import GuardReport, _attach, _feed_completion

__all__ = ["AsyncGuardedAnthropic", "GuardedAnthropic", "is_anthropic"]


def is_anthropic(client: Any) -> bool:
    """``client`` is an ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic`` (by class, no import)."""
    return any(
        c.__module__.startswith("anthropic") and c.__name__ in ("Anthropic", "AsyncAnthropic")
        for c in type(client).__mro__
    )


def anthropic_failure(exc: BaseException) -> UpstreamFailure | None:
    """The flow's ``UpstreamFailure`` for an anthropic SDK error, else ``None`` (raised as it is)."""
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        return UpstreamFailure(exc, exc.status_code, parse_retry_after(exc.response.headers))
    if isinstance(exc, anthropic.APIConnectionError):
        return UpstreamFailure(exc)
    return None


#: ``create`` arguments of the SDK itself, not of the Messages request: passed on to every attempt as given.
_SDK_OPTIONS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})


def _parameters(create: Any) -> frozenset[str] | None:
    """The keyword arguments ``create`` takes (``None``: it takes any)."""
    import inspect

    try:
        params = inspect.signature(create).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params)


class _Delegate:
    _wrapped: Any

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wrapped, name)


class _Messages(_Delegate):
    def __init__(self, owner: GuardedAnthropic, raw: Any) -> None:
        self._owner = owner
        self._raw = raw
        self._wrapped = owner.wrapped.messages

    def _start(self, kwargs: dict[str, Any]) -> tuple[RetryFlow, Callable[[dict[str, Any]], dict[str, Any]]]:
        if kwargs.get("stream"):
            raise UsageError("toolguard guards anthropic messages.create without stream=True only (so far)")
        options = {k: v for k, v in kwargs.items() if k in _SDK_OPTIONS}
        protocol = {k: v for k, v in kwargs.items() if k not in _SDK_OPTIONS}
        try:
            chat = _messages.to_chat(protocol)
        except _messages.ProtocolRefusal as exc:
            raise UsageError(f"toolguard cannot guard this Messages request: {exc}") from exc
        sent = len(chat["messages"])
        owner = self._owner
        flow = RetryFlow(chat, policy=owner.policy, on_event=owner.on_event, upstream_retries=owner.retries)
        accepted = _parameters(self._raw.create)

        def request(body: dict[str, Any]) -> dict[str, Any]:
            out = {**options, **_messages.to_messages(protocol, body, sent)}
            # a field this SDK's create does not take (its 2026 releases dropped ``temperature``) rides
            # in ``extra_body``, so a runaway retry's sampling still reaches the server
            extra = {k: out.pop(k) for k in list(out) if accepted is not None and k not in accepted}
            if extra:
                out["extra_body"] = {**(out.get("extra_body") or {}), **extra}
            return out

        return flow, request

    def _answer(self, result: FlowResult) -> Any:
        from anthropic.types import Message

        completion = delivered(result.response, result.guard)
        message = Message.model_validate(_messages.from_chat(completion))
        _attach(message, GuardReport.of(result))
        return message


def _read(action: Attempt, message: Any) -> Outcome:
    data = message if isinstance(message, dict) else message.model_dump()
    return _feed_completion(action, _messages.chat_completion(data))


class _SyncMessages(_Messages):
    def create(self, **kwargs: Any) -> Any:
        """``messages.create`` guarded: same arguments, returns ``anthropic.types.Message`` (see ``wrap``)."""
        import time

        flow, request = self._start(kwargs)

        def perform(action: Attempt | Backoff) -> Outcome:
            if isinstance(action, Backoff):
                time.sleep(action.seconds)
                return None
            try:
                message = self._raw.create(**request(action.body))
            except Exception as exc:
                failure = anthropic_failure(exc)
                if failure is None:
                    raise
                return failure
            return _read(action, message)

        return self._answer(drive(flow.run(), perform))


class _AsyncMessages(_Messages):
    async def create(self, **kwargs: Any) -> Any:
        """``await messages.create`` guarded: the async twin, only ``aperform`` differs."""
        import anyio

        flow, request = self._start(kwargs)

        async def aperform(action: Attempt | Backoff) -> Outcome:
            if isinstance(action, Backoff):
                await anyio.sleep(action.seconds)
                return None
            try:
                message = await self._raw.create(**request(action.body))
            except Exception as exc:
                failure = anthropic_failure(exc)
                if failure is None:
                    raise
                return failure
            return _read(action, message)

        return self._answer(await adrive(flow.run(), aperform))


class GuardedAnthropic(_Delegate):
    """What ``wrap`` returns for an ``anthropic.Anthropic``: ``messages.create`` guarded, the rest its own."""

    _messages_type: type[_Messages] = _SyncMessages

    def __init__(self, client: Any, *, policy: Policy, on_event: Callable[[FlowEvent], None] | None) -> None:
        self._wrapped = client
        self.policy = policy
        self.on_event = on_event
        self.retries = getattr(client, "max_retries", None)
        raw = client.with_options(max_retries=0)
        self.messages = self._messages_type(self, raw.messages)

    @property
    def wrapped(self) -> Any:
        """The client this one guards."""
        return self._wrapped

    def __repr__(self) -> str:
        return f"<toolguard.wrap({type(self._wrapped).__name__})>"


class AsyncGuardedAnthropic(GuardedAnthropic):
    """What ``wrap`` returns for an ``anthropic.AsyncAnthropic``."""

    _messages_type = _AsyncMessages
