"""Decisions of the MCP guard as data: one record each, one log line, Prometheus counters, ``on_event``.

Every ``tools/call`` the guard answers produces exactly one ``McpDecision`` (``forwarded``,
``invalid_arguments``, ``unknown_tool``, ``policy_refused``, ``bad_schema``, ``output_invalid``,
``result_too_large``, ``tool_error``, ``server_error``, ``timeout``, ``transport_failure``, ``duplicate``,
``cancelled``); listings and connection events add ``bad_schema`` (per tool, when listed), ``restarted`` and
``protocol_error``. ``Reporter.report`` is the one place a decision leaves the guard; ``McpDecision.record()``
is the same decision as the shared record of every door (``toolguard._decisions.Decision``). The log line
keeps its own field names (``decision=<kind> tool=... id=... attempts=... reached_server=...``), which
operators' filters already read.

Log lines carry no arguments and no result text (they may hold secrets); reasons are sanitised.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .._decisions import Decision
from .._sanitize import sanitize

__all__ = ["DecisionKind", "McpDecision", "Reporter"]

logger = logging.getLogger("toolguard.mcp")

DecisionKind: TypeAlias = Literal[
    "forwarded",
    "invalid_arguments",
    "unknown_tool",
    "policy_refused",
    "bad_schema",
    "output_invalid",
    "result_too_large",
    "tool_error",
    "server_error",
    "timeout",
    "transport_failure",
    "duplicate",
    "cancelled",
    "restarted",
    "protocol_error",
]

_LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0)


@dataclass(frozen=True, slots=True)
class McpDecision:
    """What the guard decided about one call (or one connection event).

    ``kind``: see the module docstring. ``tool`` and ``request_id`` name the call (None for connection
    events); ``attempts`` counts sends to the server (0: never sent); ``reached_server`` is False when the
    guard answered alone; ``reason`` is a sanitised sentence; ``duration`` is seconds from request to answer.
    """

    kind: DecisionKind
    tool: str | None = None
    request_id: str | int | None = None
    attempts: int = 0
    reached_server: bool = False
    reason: str | None = None
    duration: float = 0.0
    session: str | None = None

    def record(self) -> Decision:
        """The same decision as the shared record of every door (``toolguard._decisions.Decision``):
        ``forwarded`` stays the action, every other kind is the verdict of an ``answered`` call."""
        detail: dict[str, Any] = {"reached_server": self.reached_server}
        if self.session is not None:
            detail["session"] = self.session
        return Decision(
            "forwarded" if self.kind == "forwarded" else "answered", self.kind, "mcp", attempt=self.attempts,
            tool=self.tool, request_id=self.request_id, latency=self.duration,
            message=sanitize(self.reason, max_chars=300) if self.reason else None, detail=detail,
        )


class Reporter:
    """Sends each decision to the log, the counters and the optional ``on_event`` callback."""

    def __init__(self, on_event: Callable[[McpDecision], Any] | None = None) -> None:
        self.on_event = on_event
        self.counts: defaultdict[str, int] = defaultdict(int)
        self.sessions_open = 0
        self._latency = [0] * (len(_LATENCY_BUCKETS) + 1)
        self._latency_sum = 0.0

    def report(self, decision: McpDecision) -> None:
        self.counts[decision.kind] += 1
        if decision.tool is not None and decision.kind not in ("bad_schema",):
            slot = next(
                (i for i, b in enumerate(_LATENCY_BUCKETS) if decision.duration <= b), len(_LATENCY_BUCKETS)
            )
            self._latency[slot] += 1
            self._latency_sum += decision.duration
        level = logging.INFO if decision.kind in ("forwarded", "duplicate", "tool_error") else logging.WARNING
        if logger.isEnabledFor(level):
            reason = f" reason={sanitize(decision.reason, max_chars=300)!r}" if decision.reason else ""
            logger.log(
                level,
                "decision=%s tool=%s id=%s attempts=%d reached_server=%s duration_ms=%.1f%s",
                decision.kind,
                decision.tool,
                decision.request_id,
                decision.attempts,
                decision.reached_server,
                decision.duration * 1000,
                reason,
            )
        if self.on_event is not None:
            try:
                self.on_event(decision)
            except Exception:  # an observer's bug must not break the guard
                logger.exception("the on_event callback raised; the decision was %s", decision.kind)

    def render_metrics(self) -> str:
        """The Prometheus text exposition (0.0.4) of the counters, for ``GET /metrics``."""
        lines = [
            "# HELP toolguard_mcp_decisions_total Decisions of the MCP guard, by kind.",
            "# TYPE toolguard_mcp_decisions_total counter",
        ]
        lines += [f'toolguard_mcp_decisions_total{{kind="{k}"}} {v}' for k, v in sorted(self.counts.items())]
        lines += [
            "# HELP toolguard_mcp_sessions_open Client sessions being guarded.",
            "# TYPE toolguard_mcp_sessions_open gauge",
            f"toolguard_mcp_sessions_open {self.sessions_open}",
            "# HELP toolguard_mcp_call_seconds Seconds from a tools/call request to its answer.",
            "# TYPE toolguard_mcp_call_seconds histogram",
        ]
        cumulative = 0
        for bound, count in zip(_LATENCY_BUCKETS, self._latency, strict=False):
            cumulative += count
            lines.append(f'toolguard_mcp_call_seconds_bucket{{le="{bound}"}} {cumulative}')
        total = sum(self._latency)
        lines += [
            f'toolguard_mcp_call_seconds_bucket{{le="+Inf"}} {total}',
            f"toolguard_mcp_call_seconds_sum {self._latency_sum}",
            f"toolguard_mcp_call_seconds_count {total}",
        ]
        return "\n".join(lines) + "\n"
