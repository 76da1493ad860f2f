"""``Policy``: how a front door reacts when the Guard fails a generation.

One frozen record, shared by the SDK wrapper and the proxy (both drive the same re-ask flow, ``_reask``).
Every budget is counted per request; ``max_attempts`` caps them all together.
"""

from __future__ import annotations

import random as _random
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Literal, TypeAlias

from ._exceptions import ConfigError
from ._retry import exponential_backoff
from ._runaway import MAX_RUNAWAY_RETRIES, RunawayConfig, RunawayPolicy
from ._verdict import GuardLimits

__all__ = ["Policy", "StreamMode"]

StreamMode: TypeAlias = Literal["hold", "pass"]

DEFAULT_GUARD_LIMITS: GuardLimits = GuardLimits()
#: Sampling changes for runaway retries; the retry budget is ``Policy.max_runaway_retries``.
DEFAULT_RUNAWAY_POLICY = RunawayPolicy(max_retries=MAX_RUNAWAY_RETRIES)


@dataclass(frozen=True, slots=True)
class Policy:
    """What to do about a failed generation. Defaults in brackets.

    - ``max_reasks`` [2]: re-asks after an invalid call (arguments rejected, unknown tool, a call written into
      the content, a required call missing). The re-ask repeats the request with the failed assistant turn and
      the violation as a ``tool`` message (a ``user`` message when the turn holds no call).
    - ``max_runaway_retries`` [1]: retries after a repetition loop, each with changed sampling (lower
      temperature, new seed; never the identical request) as ``runaway`` (a ``RunawayPolicy``) computes it.
      No retry when the loop is already in the prompt.
    - ``max_truncation_retries`` [1]: retries after a call cut by the token limit, with ``max_tokens``
      grown by ``max_tokens_growth`` [2.0] up to ``max_tokens_cap`` [32768]. Without a known limit to grow
      the truncated call is raised at once.
    - ``max_upstream_retries`` [None]: retries after HTTP 408/409/429/5xx, a dropped connection or a broken
      stream. ``None`` takes the wrapped client's own ``max_retries`` (whose retries are switched off so they
      are not counted twice), else 2. Waits honour ``Retry-After`` up to ``max_retry_after`` [60 s] (a longer
      demand is not waited for: the error is raised), else ``backoff_initial`` [0.5 s] doubled per retry up
      to ``backoff_max`` [8 s], times a random factor in ``[1 - backoff_jitter, 1]`` [0.5] so that clients
      failed by one outage do not all come back at the same instant.
    - ``max_attempts`` [6]: all attempts of one request together.
    - ``stream`` ["hold"]: in a stream, ``"hold"`` keeps tool-call deltas back until the attempt ended with a
      usable verdict, so a retry is invisible to the caller (content deltas are released as they arrive);
      ``"pass"`` releases every delta as soon as the Guard accepted it, and a retry then shows as a
      ``FlowEvent(kind="retry")`` (the caller must drop what it accumulated: the failed call just ends, the
      retry's calls follow at the next indices). What is released, and when, is ``toolguard._release``'s.
    - ``on_fabricated`` ["cut"]: text after a tool call is cut and reported (``"cut"``) or re-asked.
    - ``repair_calls`` [True]: a call the server left in the message text (``<tool_call>{...}``,
      ``[TOOL_CALLS]``, ``<|python_tag|>``, a bare JSON call naming an offered tool) is parsed in
      ``call_format`` [``"auto"``: detected] and, when valid, delivered as a tool call on the first attempt
      (``toolguard._repair``); ``False`` re-asks it as ``call_in_content``.
    - ``limits``: the Guard's caps (``GuardLimits``); ``detector``: the ``RunawayConfig`` of the Guard's
      detectors (``None``: the defaults).
    """

    max_reasks: int = 2
    max_runaway_retries: int = 1
    max_truncation_retries: int = 1
    max_upstream_retries: int | None = None
    max_attempts: int = 6
    stream: StreamMode = "hold"
    on_fabricated: Literal["cut", "reask"] = "cut"
    max_tokens_growth: float = 2.0
    max_tokens_cap: int = 32_768
    backoff_initial: float = 0.5
    backoff_max: float = 8.0
    backoff_jitter: float = 0.5
    max_retry_after: float = 60.0
    repair_calls: bool = True
    call_format: str = "auto"
    limits: GuardLimits = DEFAULT_GUARD_LIMITS
    detector: RunawayConfig | None = None
    runaway: RunawayPolicy = DEFAULT_RUNAWAY_POLICY

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
                raise ConfigError(f"Policy.{f.name} must not be negative, got {value!r}")
        if self.backoff_jitter > 1:
            raise ConfigError(f"Policy.backoff_jitter must be within [0, 1], got {self.backoff_jitter!r}")
        if self.max_attempts < 1:
            raise ConfigError("Policy.max_attempts must be at least 1")
        if self.stream not in ("hold", "pass"):
            raise ConfigError(f"Policy.stream must be 'hold' or 'pass', got {self.stream!r}")
        if self.on_fabricated not in ("cut", "reask"):
            raise ConfigError(f"Policy.on_fabricated must be 'cut' or 'reask', got {self.on_fabricated!r}")
        if self.max_runaway_retries > self.runaway.max_retries:
            raise ConfigError(
                f"Policy.max_runaway_retries={self.max_runaway_retries} exceeds "
                f"runaway.max_retries={self.runaway.max_retries}"
            )
        from ._repair import repair_format

        repair_format(self.call_format)
        if self.max_tokens_growth <= 1:
            raise ConfigError("Policy.max_tokens_growth must be greater than 1")

    def backoff(self, retry: int, random: Callable[[], float] | None = None) -> float:
        """Seconds before upstream retry number ``retry`` (1-based) when no ``Retry-After`` says otherwise:
        ``toolguard._retry.exponential_backoff`` of ``backoff_initial``, ``backoff_max`` and the jitter."""
        return exponential_backoff(
            retry,
            initial=self.backoff_initial,
            cap=self.backoff_max,
            jitter=self.backoff_jitter,
            random=random or _random.random,
        )


DEFAULT_POLICY = Policy()
