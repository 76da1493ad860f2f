"""OpenTelemetry spans for the re-ask flow, when ``opentelemetry-api`` is importable; nothing otherwise.

Theory of operation. ``FlowTrace`` follows one ``RetryFlow`` (the SDK's and the proxy's requests): a
``toolguard.request`` span from the first attempt to the end (ok, or the error that ended it), a child
``toolguard.attempt`` span per attempt (number, reason, verdict kind), and each decision
(``toolguard._decisions.Decision``) as a ``toolguard.decision`` event on the attempt span, with the same
fields the log line carries (never an argument value). Spans go to whatever tracer provider the application
set up (``opentelemetry.trace.set_tracer_provider``); with the API's default no-op provider they cost almost
nothing. Without the package ``FlowTrace`` is never made (``flow_trace`` returns ``None``) and the flow pays
one ``None`` check per step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

try:  # an optional dependency: tracing is on when the application has the API
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - exercised where opentelemetry is not installed
    _trace = None  # type: ignore[assignment]

from ._decisions import Decision

__all__ = ["FlowTrace", "flow_trace"]

_TRACER_NAME = "toolguard"


def flow_trace(door: str, body: Mapping[str, Any]) -> FlowTrace | None:
    """A ``FlowTrace`` for one request, or ``None`` when OpenTelemetry is not importable."""
    if _trace is None:
        return None
    return FlowTrace(door, body)


def _attribute(value: Any) -> Any:
    if isinstance(value, bool | int | float | str):
        return value
    return str(value)


class FlowTrace:
    """The spans of one request (see the module docstring)."""

    __slots__ = ("_attempt", "_request", "_tracer")

    def __init__(self, door: str, body: Mapping[str, Any]) -> None:
        assert _trace is not None
        self._tracer = _trace.get_tracer(_TRACER_NAME)
        attributes: dict[str, Any] = {"toolguard.door": door, "toolguard.stream": bool(body.get("stream"))}
        model = body.get("model")
        if isinstance(model, str):
            attributes["gen_ai.request.model"] = model
        tools = body.get("tools")
        attributes["toolguard.tools"] = len(tools) if isinstance(tools, list) else 0
        self._request = self._tracer.start_span("toolguard.request", attributes=attributes)
        self._attempt: Any = None

    def attempt(self, number: int, reason: str) -> None:
        """A new attempt began (the previous one, if any, ends)."""
        self._end_attempt()
        context = _trace.set_span_in_context(self._request)
        self._attempt = self._tracer.start_span(
            "toolguard.attempt",
            context=context,
            attributes={"toolguard.attempt": number, "toolguard.reason": reason},
        )

    def verdict(self, kind: str) -> None:
        if self._attempt is not None:
            self._attempt.set_attribute("toolguard.verdict", kind)

    def decision(self, decision: Decision) -> None:
        """A decision as an event on the current attempt (the request span when there is none)."""
        span = self._attempt if self._attempt is not None else self._request
        fields = {f"toolguard.{k}": _attribute(v) for k, v in decision.fields().items()}
        span.add_event("toolguard.decision", attributes=fields)
        if decision.action in ("released", "cut", "gave-up"):
            self._request.set_attribute("toolguard.verdict", decision.verdict or "")
            self._request.set_attribute("toolguard.action", decision.action)
            self._request.set_attribute("toolguard.retries", decision.retries)

    def end(self, error: BaseException | None = None) -> None:
        """The request ended: with ``error`` when the flow raised (retries spent, an upstream failure)."""
        self._end_attempt()
        if error is not None:
            self._request.record_exception(error)
            self._request.set_status(_trace.Status(_trace.StatusCode.ERROR, type(error).__name__))
        self._request.end()

    def _end_attempt(self) -> None:
        if self._attempt is not None:
            self._attempt.end()
            self._attempt = None
