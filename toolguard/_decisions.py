"""What a door decided, as one record every door reports the same way.

Theory of operation. Each time toolguard acts on a generation (releases it, cuts text after the calls,
re-asks, retries, gives up) or on an MCP call, the door makes one ``Decision``: the attempt, the verdict kind,
where it happened (tool, offset, keyword; the JSON pointer and message only for in-process observers and
``--log-arguments``), the action, the upstream status, the latency since the request began and the retries
so far. The same value goes

- to ``on_event`` (the SDK's ``FlowEvent.decision``, the MCP guard's callback),
- to the log, one line per decision (``log_decision``: logfmt or JSON, never an argument value, key or
  message text unless ``arguments=True``, and never a header),
- onto streamed answers (``Decision.summary()``: the ``toolguard`` field of the last chunk's delta),
- to OpenTelemetry (``toolguard._telemetry``) as span events.

``RetryFlow`` makes the decisions of the SDK and the proxy from its own steps (``flow_decision``); the vLLM
plugin and the MCP guard make theirs with the same constructor. Pure data and formatting: O(fields).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ._sanitize import sanitize

__all__ = ["Action", "Decision", "LogFormat", "format_decision", "log_decision"]

#: What the door did. ``released``: the answer went to the client as it is; ``held``: kept back while the
#: verdict was pending; ``cut``: released with text after the calls (or a loop) cut; ``re-asked``: the model
#: was asked again with the violation; ``retried``: sent again with changed sampling, more room or after an
#: upstream failure; ``gave-up``: the retries ran out and the client got the failure; ``withheld``,
#: ``stopped``, ``refused``: the vLLM door's answers; ``forwarded``/``answered``: the MCP guard's.
Action: TypeAlias = Literal[
    "released", "held", "cut", "re-asked", "retried", "gave-up", "withheld", "stopped", "refused",
    "forwarded", "answered",
]
LogFormat: TypeAlias = Literal["logfmt", "json"]

# Fields that may hold argument keys, values or model text: logged only with ``arguments=True``.
_PRIVATE = ("path", "message")


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision of a door (see the module docstring).

    ``action``: ``Action``; ``verdict``: the verdict kind (``ok``, ``rejected``, ``runaway``...) or the MCP
    decision kind; ``door``: ``sdk``, ``proxy``, ``serve``, ``vllm``, ``mcp``; ``attempt``: 1-based;
    ``retries``: attempts after the first so far; ``reason``: why a retry was made (``reask``, ``runaway``,
    ``truncated``, ``upstream``); ``status``: the upstream HTTP status; ``latency``: seconds since the request
    began; ``detail``: door-specific facts (engine constraint, call count...), never argument values.
    """

    action: Action
    verdict: str | None = None
    door: str = ""
    attempt: int = 1
    retries: int = 0
    reason: str | None = None
    tool: str | None = None
    where: str | None = None
    keyword: str | None = None
    offset: int | None = None
    path: str | None = None
    message: str | None = None
    status: int | None = None
    latency: float | None = None
    request_id: str | int | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    def fields(self, *, arguments: bool = False) -> dict[str, Any]:
        """The set fields as a flat dict (``detail`` merged in); ``path``/``message`` only with
        ``arguments``."""
        out: dict[str, Any] = {}
        for name in ("door", "attempt", "action", "verdict", "reason", "retries", "tool", "where", "keyword",
                     "offset", "status", "request_id"):
            value = getattr(self, name)
            if value is not None and value != "":
                out[name] = value
        if self.latency is not None:
            out["latency_ms"] = round(self.latency * 1000, 1)
        if arguments:
            for name in _PRIVATE:
                value = getattr(self, name)
                if value:
                    out[name] = value
        for key, value in self.detail.items():
            out.setdefault(key, value)
        return out

    def summary(self) -> dict[str, Any]:
        """What a streamed answer carries in its last chunk (``toolguard``): verdict, action, retries,
        attempts, and where a failure happened (no argument values)."""
        out: dict[str, Any] = {"verdict": self.verdict, "action": self.action}
        out.update(retries=self.retries, attempts=self.attempt)
        for name in ("reason", "tool", "keyword", "offset", "status"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


def _logfmt_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if not isinstance(value, str):
        value = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    text = sanitize(value, max_chars=300)
    if text and all(c.isalnum() or c in "-_./:@+" for c in text):
        return text
    return json.dumps(text, ensure_ascii=False)


def format_decision(decision: Decision, fmt: LogFormat = "logfmt", *, arguments: bool = False) -> str:
    """One log line: ``decision=<action> door=... verdict=...`` (logfmt) or one JSON object."""
    values = decision.fields(arguments=arguments)
    if fmt == "json":
        return json.dumps({"event": "toolguard.decision", **values}, sort_keys=False, ensure_ascii=False)
    action = values.pop("action")
    return " ".join([f"decision={action}", *(f"{k}={_logfmt_value(v)}" for k, v in values.items())])


def log_decision(
    logger: logging.Logger, decision: Decision, fmt: LogFormat = "logfmt", *, arguments: bool = False
) -> None:
    """Log ``decision`` on ``logger`` (INFO when released, WARNING otherwise)."""
    quiet = decision.action in ("released", "forwarded", "answered", "held")
    level = logging.INFO if quiet else logging.WARNING
    if logger.isEnabledFor(level):
        logger.log(level, "%s", format_decision(decision, fmt, arguments=arguments))
