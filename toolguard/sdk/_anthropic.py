"""``wrap(anthropic.Anthropic(...))``: ``messages.create`` guarded by the one re-ask flow.

Theory of operation. The facade's ``messages`` is a ``sdk._translated`` endpoint with the Messages
translations (``toolguard._messages``: ``to_chat``, ``from_chat``; ``toolguard._messages_back``:
``to_messages``, ``chat_completion``); it returns ``anthropic.types.Message``. The client's own retries are
switched off and its ``max_retries`` becomes the flow's upstream budget, as for openai clients;
``sdk._translated`` maps the SDK's errors onto the flow's ``UpstreamFailure`` (a status, ``Retry-After``, a
dropped connection). Everything else is the wrapped client's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._policy import Policy
from .._reask import FlowEvent
from ._translated import MESSAGES, AsyncTranslated, SyncTranslated

__all__ = ["AsyncGuardedAnthropic", "GuardedAnthropic", "is_anthropic"]


def is_anthropic(client: Any) -> bool:
    """``client`` is an ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic`` (by class, no import)."""
    return any(
        c.__module__.startswith("anthropic") and c.__name__ in ("Anthropic", "AsyncAnthropic")
        for c in type(client).__mro__
    )


class _Delegate:
    _wrapped: Any

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wrapped, name)


class GuardedAnthropic(_Delegate):
    """What ``wrap`` returns for an ``anthropic.Anthropic``: ``messages.create`` guarded, the rest its own."""

    _endpoint: type[SyncTranslated | AsyncTranslated] = SyncTranslated

    def __init__(self, client: Any, *, policy: Policy, on_event: Callable[[FlowEvent], None] | None) -> None:
        self._wrapped = client
        self.policy = policy
        self.on_event = on_event
        self.retries = getattr(client, "max_retries", None)
        raw = client.with_options(max_retries=0)
        self.messages = self._endpoint(self, raw.messages, client.messages, MESSAGES)

    @property
    def wrapped(self) -> Any:
        """The client this one guards."""
        return self._wrapped

    def __repr__(self) -> str:
        return f"<toolguard.wrap({type(self._wrapped).__name__})>"


class AsyncGuardedAnthropic(GuardedAnthropic):
    """What ``wrap`` returns for an ``anthropic.AsyncAnthropic``."""

    _endpoint = AsyncTranslated
