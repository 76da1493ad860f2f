"""A guarded ``create`` for an SDK endpoint of another protocol (Anthropic Messages, OpenAI Responses).

Theory of operation. Nothing is decided here: the one re-ask flow (``toolguard._reask.RetryFlow``) runs on
the chat request the protocol's sans-IO translation makes of the caller's request (``to_chat``). Each chat
request the flow wants sent (the first, a re-ask, a runaway or truncation retry) is turned back into the
protocol's request (``to_protocol``: the caller's turns as they came, the flow's additions in the protocol's
own terms) and sent with the real endpoint's ``create``; what comes back is read by the attempt's Guard as a
chat completion (``chat_completion``). The accepted answer, with the Guard's repairs (``sdk._delivered``),
is translated back (``answer``) and validated into the SDK's own type, its ``GuardReport`` attached. A
field the SDK's ``create`` does not take (the 2026 anthropic SDK has no ``temperature``) rides in
``extra_body``, so a retry's sampling still reaches the server. ``create(stream=True)`` and ``.stream()``
are ``sdk._translated_stream``'s: the same flow and requests, each upstream stream read through the
protocol's reader and the release gate, the SDK's own events and stream managers returned. The sync and
async twins differ only in their ``perform``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import _messages, _messages_back, _responses, _responses_back
from .._drive import adrive, drive
from .._exceptions import ToolguardError, UpstreamProtocolError, UsageError
from .._openai import parse_retry_after
from .._reask import Attempt, Backoff, FlowResult, Outcome, RetryFlow, UpstreamFailure
from ._delivered import delivered
from ._drivers import GuardReport, _attach, _feed_completion
from ._translated_stream import AsyncGuardedEventStream, GuardedEventStream, _Base, _Session

__all__ = ["MESSAGES", "RESPONSES", "AsyncTranslated", "Protocol", "SyncTranslated"]

#: ``create`` arguments of the SDK itself, not of the request: passed on to every attempt as given.
_SDK_OPTIONS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})


@dataclass(frozen=True, slots=True)
class Protocol:
    """One protocol's translations, both ways, and the SDK's error mapping."""

    name: str
    to_chat: Callable[[dict[str, Any]], dict[str, Any]]
    to_protocol: Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]]
    chat_completion: Callable[[dict[str, Any]], dict[str, Any]]
    answer: Callable[[dict[str, Any], dict[str, Any]], Any]
    failure: Callable[[BaseException], UpstreamFailure | None]


def _message(completion: dict[str, Any], request: dict[str, Any]) -> Any:
    from anthropic.types import Message

    return Message.model_validate(_messages.from_chat(completion))


def _response(completion: dict[str, Any], request: dict[str, Any]) -> Any:
    from openai.types.responses import Response

    return Response.model_validate(_responses.from_chat(completion, request))


def _anthropic_failure(exc: BaseException) -> UpstreamFailure | None:
    """The flow's ``UpstreamFailure`` for an anthropic SDK error, else ``None`` (raised as it is)."""
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        if exc.status_code == 200:  # an ``error`` event inside a stream (overloaded...): retried
            return UpstreamFailure(exc)
        return UpstreamFailure(exc, exc.status_code, parse_retry_after(exc.response.headers))
    if isinstance(exc, anthropic.APIConnectionError):
        return UpstreamFailure(exc)
    if type(exc).__module__.split(".")[0] in ("httpx", "httpx2"):  # a stream's transport error, raised raw
        return UpstreamFailure(exc)
    if isinstance(exc, ValueError) and not isinstance(exc, ToolguardError):  # a malformed SSE payload
        error = UpstreamProtocolError(f"the upstream sent a malformed stream event: {exc}")
        error.__cause__ = exc
        return UpstreamFailure(error)
    return None


def _openai_failure(exc: BaseException) -> UpstreamFailure | None:
    from ._pump import upstream_failure

    return upstream_failure(exc)


MESSAGES = Protocol(
    "Messages",
    _messages.to_chat,
    _messages_back.to_messages,
    _messages_back.chat_completion,
    _message,
    _anthropic_failure,
)
RESPONSES = Protocol(
    "Responses",
    _responses.to_chat,
    _responses_back.to_responses,
    _responses_back.chat_completion,
    _response,
    _openai_failure,
)


def _parameters(create: Any) -> frozenset[str] | None:
    """The keyword arguments ``create`` takes (``None``: it takes any)."""
    try:
        params = inspect.signature(create).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params)


class _Translated:
    def __init__(self, owner: Any, raw: Any, wrapped: Any, protocol: Protocol) -> None:
        self._owner = owner
        self._raw = raw
        self._wrapped = wrapped
        self._protocol = protocol

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wrapped, name)

    def _start(
        self, kwargs: dict[str, Any]
    ) -> tuple[RetryFlow, Callable[[Attempt], dict[str, Any]], dict[str, Any]]:
        p = self._protocol
        kwargs = {k: v for k, v in kwargs.items() if k != "stream"}
        options = {k: v for k, v in kwargs.items() if k in _SDK_OPTIONS}
        original = {k: v for k, v in kwargs.items() if k not in _SDK_OPTIONS}
        try:
            chat = p.to_chat(original)
        except _messages.ProtocolRefusal as exc:
            raise UsageError(f"toolguard cannot guard this {p.name} request: {exc}") from exc
        sent = len(chat["messages"])
        owner = self._owner
        flow = RetryFlow(chat, policy=owner.policy, on_event=owner.on_event, upstream_retries=owner.retries)
        accepted = _parameters(self._raw.create)

        def request(action: Attempt) -> dict[str, Any]:
            out = {**options, **p.to_protocol(original, action.body, sent)}
            extra = {k: out.pop(k) for k in list(out) if accepted is not None and k not in accepted}
            if extra:
                out["extra_body"] = {**(out.get("extra_body") or {}), **extra}
            return out

        return flow, request, original

    def _events(self, kwargs: dict[str, Any], cls: type[_Base]) -> Any:
        """The guarded stream of the SDK's own events for ``create(stream=True)``."""
        flow, request, original = self._start(kwargs)
        session = _Session(flow, self._protocol.name, original)
        return cls(self._raw.create, request, self._protocol.failure, session)

    def _manager(self, kwargs: dict[str, Any], api_request: Any) -> Any:
        """The SDK's own stream manager (``.stream()``) around ``api_request``."""
        if self._protocol.name == "Messages":
            from anthropic.lib.streaming import AsyncMessageStreamManager, MessageStreamManager

            messages: Any = (
                AsyncMessageStreamManager if isinstance(self, AsyncTranslated) else MessageStreamManager
            )
            return messages(api_request, output_format=anthropic_not_given())
        import openai
        from openai.lib.streaming.responses import AsyncResponseStreamManager, ResponseStreamManager

        responses: Any = (
            AsyncResponseStreamManager if isinstance(self, AsyncTranslated) else ResponseStreamManager
        )
        return responses(
            api_request,
            text_format=openai.omit,
            input_tools=kwargs.get("tools") or openai.omit,
            starting_after=None,
        )

    def _stream_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        for name in ("text_format", "output_format", "stream"):
            if kwargs.get(name) is not None:
                raise UsageError(f"toolguard's guarded {self._protocol.name} stream() takes no {name}")
        return {k: v for k, v in kwargs.items() if k not in ("text_format", "output_format", "stream")}

    def _read(self, action: Attempt, answer: Any) -> Outcome:
        data = answer if isinstance(answer, dict) else answer.model_dump()
        return _feed_completion(action, self._protocol.chat_completion(data))

    def _answer(self, result: FlowResult, original: dict[str, Any]) -> Any:
        out = self._protocol.answer(delivered(result.response, result.guard), original)
        _attach(out, GuardReport.of(result))
        return out


class SyncTranslated(_Translated):
    def create(self, **kwargs: Any) -> Any:
        """``create`` guarded: same arguments, the SDK's own return type (see ``toolguard.wrap``)."""
        import time

        if kwargs.get("stream"):
            return self._events(kwargs, GuardedEventStream)
        flow, request, original = self._start(kwargs)

        def perform(action: Attempt | Backoff) -> Outcome:
            if isinstance(action, Backoff):
                time.sleep(action.seconds)
                return None
            try:
                answer = self._raw.create(**request(action))
            except Exception as exc:
                failure = self._protocol.failure(exc)
                if failure is None:
                    raise
                return failure
            return self._read(action, answer)

        return self._answer(drive(flow.run(), perform), original)

    def stream(self, **kwargs: Any) -> Any:
        """``.stream()`` guarded: the SDK's own ``MessageStreamManager`` / ``ResponseStreamManager``."""
        kwargs = self._stream_kwargs(kwargs)
        return self._manager(kwargs, lambda: self._events(kwargs, GuardedEventStream))


class AsyncTranslated(_Translated):
    async def create(self, **kwargs: Any) -> Any:
        """``await create`` guarded: the async twin, only ``aperform`` differs."""
        import anyio

        if kwargs.get("stream"):
            return self._events(kwargs, AsyncGuardedEventStream)
        flow, request, original = self._start(kwargs)

        async def aperform(action: Attempt | Backoff) -> Outcome:
            if isinstance(action, Backoff):
                await anyio.sleep(action.seconds)
                return None
            try:
                answer = await self._raw.create(**request(action))
            except Exception as exc:
                failure = self._protocol.failure(exc)
                if failure is None:
                    raise
                return failure
            return self._read(action, answer)

        return self._answer(await adrive(flow.run(), aperform), original)

    def stream(self, **kwargs: Any) -> Any:
        """``.stream()`` guarded: the SDK's own async stream manager (``async with``)."""
        kwargs = self._stream_kwargs(kwargs)
        return self._manager(kwargs, self.create(**kwargs, stream=True))


def anthropic_not_given() -> Any:
    import anthropic

    return anthropic.NOT_GIVEN
