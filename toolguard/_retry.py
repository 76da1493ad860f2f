"""RetryPolicy: how often, how long to wait, and which failures may be retried at all.

Three kinds of failure, three answers:

* **not executed** (the connection was refused, the name did not resolve): the action certainly did not
  happen,
  so any tool may be tried again;
* **transient but ambiguous** (a dropped connection, a timeout): the action may or may not have happened, so
  only
  a tool marked ``idempotent`` is tried again; for the others the outcome is reported as unknown;
* **anything else** (a ``ValueError``, a permission error): retrying would fail the same way; it is reported.

Delays grow exponentially with jitter (``backoff * multiplier**(n-1)``, capped, then scaled by a random factor
in ``[1 - jitter, 1]``). The random source and the sleep function are injectable so tests never sleep for
real.
"""

from __future__ import annotations

import errno
import random as _random
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from ._exceptions import ConfigError

__all__ = [
    "DEFAULT_ATTEMPTS",
    "ExceptionMatcher",
    "RetryPolicy",
    "default_not_executed",
    "default_transient",
    "exponential_backoff",
]

DEFAULT_ATTEMPTS = 3
DEFAULT_BACKOFF = 0.2  # seconds before the second attempt
DEFAULT_MAX_BACKOFF = 10.0

ExceptionMatcher: TypeAlias = tuple[type[BaseException], ...] | Callable[[BaseException], bool]

_TRANSIENT_ERRNOS = frozenset(
    getattr(errno, name)
    for name in (
        "EAGAIN",
        "EBUSY",
        "ECONNABORTED",
        "ECONNREFUSED",
        "ECONNRESET",
        "EHOSTDOWN",
        "EHOSTUNREACH",
        "ENETDOWN",
        "ENETRESET",
        "ENETUNREACH",
        "EPIPE",
        "ETIMEDOUT",
    )
    if hasattr(errno, name)
)


def _httpx_class(exc: BaseException, *names: str) -> bool:
    """Is ``exc`` an httpx exception of one of these classes? (No import: httpx may not be loaded.)"""
    return any(c.__module__.startswith("httpx") and c.__name__ in names for c in type(exc).__mro__)


def default_transient(exc: BaseException) -> bool:
    """Connection problems, timeouts and OS errors that go away by themselves (EAGAIN, ECONNRESET, ...)."""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    if isinstance(exc, socket.gaierror):
        return exc.errno == getattr(socket, "EAI_AGAIN", None)
    reason = getattr(exc, "reason", None)  # urllib.error.URLError wraps the socket error
    if isinstance(reason, BaseException) and reason is not exc:
        return default_transient(reason)
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS:
        return True
    return _httpx_class(exc, "TransportError")


def default_not_executed(exc: BaseException) -> bool:
    """Failures that prove the action never reached its target: refused connections, unresolvable names."""
    if isinstance(exc, (ConnectionRefusedError, socket.gaierror)):
        return True
    reason = getattr(exc, "reason", None)
    if isinstance(reason, BaseException) and reason is not exc:
        return default_not_executed(reason)
    return _httpx_class(exc, "ConnectError")


def exponential_backoff(
    retry: int,
    *,
    initial: float,
    cap: float,
    jitter: float,
    multiplier: float = 2.0,
    random: Callable[[], float] = _random.random,
) -> float:
    """Seconds before retry number ``retry`` (1-based): ``initial * multiplier**(retry-1)`` capped at ``cap``,
    times a random factor in ``[1 - jitter, 1]``. The one backoff formula of toolguard: tool runs
    (``RetryPolicy``), the re-ask flow's upstream retries (``Policy.backoff``) and the proxy's pass-through
    requests all wait by it."""
    base = min(cap, initial * multiplier ** (retry - 1))
    return float(base * (1.0 - jitter * random()))


def _matches(matcher: ExceptionMatcher, exc: BaseException) -> bool:
    if isinstance(matcher, tuple):
        return isinstance(exc, matcher)
    return bool(matcher(exc))


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how a failed tool run is tried again. See the module docstring for the three kinds of failure.

    ``attempts`` counts every run (1 = never retry). ``transient`` and ``not_executed`` are exception classes
    or predicates. ``random`` returns a float in [0, 1); ``sleep`` replaces ``time.sleep`` (sync) or
    ``asyncio.sleep`` (async; a coroutine function or a plain function both work). Raises ``ConfigError`` for
    impossible values.
    """

    attempts: int = DEFAULT_ATTEMPTS
    backoff: float = DEFAULT_BACKOFF
    multiplier: float = 2.0
    max_backoff: float = DEFAULT_MAX_BACKOFF
    jitter: float = 1.0
    transient: ExceptionMatcher = default_transient
    not_executed: ExceptionMatcher = default_not_executed
    random: Callable[[], float] = _random.random
    sleep: Callable[[float], Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.attempts, int) or self.attempts < 1:
            raise ConfigError(f"RetryPolicy.attempts must be an integer >= 1, got {self.attempts!r}")
        if self.backoff < 0 or self.max_backoff < 0 or self.multiplier < 1:
            raise ConfigError("RetryPolicy needs backoff >= 0, max_backoff >= 0 and multiplier >= 1")
        if not 0 <= self.jitter <= 1:
            raise ConfigError(f"RetryPolicy.jitter must be within [0, 1], got {self.jitter!r}")

    def delay(self, failed_attempt: int) -> float:
        """Seconds to wait after attempt number ``failed_attempt`` (1-based) failed."""
        return exponential_backoff(
            failed_attempt,
            initial=self.backoff,
            cap=self.max_backoff,
            jitter=self.jitter,
            multiplier=self.multiplier,
            random=self.random,
        )

    def is_transient(self, exc: BaseException) -> bool:
        return _matches(self.transient, exc)

    def proves_not_executed(self, exc: BaseException) -> bool:
        return _matches(self.not_executed, exc)

    def should_retry(self, exc: BaseException | None, *, idempotent: bool, attempt: int) -> bool:
        """Retry after attempt ``attempt`` failed with ``exc`` (``None``: the executor's timeout)?"""
        if attempt >= self.attempts:
            return False
        if exc is None:  # timed out: outcome unknown
            return idempotent
        if not self.is_transient(exc):
            return False
        return idempotent or self.proves_not_executed(exc)
