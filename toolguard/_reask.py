"""The re-ask / retry flow, written once as a generator and driven by every front door.

Theory of operation
-------------------
httpx's ``Auth.auth_flow`` shape: ``RetryFlow(body, policy=...).run()`` is a generator that *yields actions*
and *receives outcomes*; it never touches the network or an event loop (its only clock, injectable, times
the decisions). Drivers (the SDK's sync and async clients, the proxy) do the I/O through
``toolguard._drive``::

    def perform(action):
        if isinstance(action, Backoff):
            time.sleep(action.seconds)                  # or, with adrive: await anyio.sleep(...)
            return None
        return send_and_feed(action)                    # an Attempt: send action.body upstream, feed
                                                        # what comes back into action.guard
    result = drive(RetryFlow(body, policy=policy).run(), perform)   # a FlowResult

An ``Attempt`` carries the request body to send and a fresh ``Guard`` to feed. The driver answers
``Completed(...)`` once the guard saw the generation to its end (``Finish``, or a stop the guard asked for),
or ``UpstreamFailure(...)`` when the upstream failed first (HTTP error, dropped connection, broken SSE).
The flow then reads ``guard.close()`` and decides:

- usable verdict: return ``FlowResult`` (the last response, the guard, every attempt);
- invalid call (``rejected``, ``unknown_tool``, ``call_in_content``, ``missing_call``): re-ask with the
  failed assistant turn plus the violation as a ``tool`` message (``user`` when the turn has no call);
- ``runaway``: the same messages with changed sampling (``RunawayPolicy.retry_params``), unless the loop
  is already in the prompt;
- ``truncated``: the same messages with ``max_tokens`` grown, when there is a limit to grow;
- upstream failure: ``Backoff`` (``Retry-After`` honoured) then the same request;
- budget spent: raise ``ToolCallRejected`` / ``RunawayGeneration`` / ``TruncatedToolCall`` (with the
  verdict and the attempts) or re-raise the upstream error.

Each step is also reported as a ``FlowEvent`` to ``on_event`` and appended to ``flow.events``. The flow is
O(attempts); re-asks carry only the latest failed turn, so the prompt grows by one turn at most.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from ._choice import parse_tool_choice
from ._decisions import Action as DecisionAction
from ._decisions import Decision
from ._exceptions import GuardError, RunawayGeneration, ToolCallRejected, TruncatedToolCall
from ._guard import Guard, GuardVerdict
from ._policy import DEFAULT_POLICY, Policy
from ._runaway import RunawayDetector
from ._telemetry import FlowTrace, flow_trace
from ._tools import ToolSet

__all__ = ["AttemptRecord", "FlowEvent"]

Reason: TypeAlias = Literal["initial", "reask", "runaway", "truncated", "upstream"]
FlowEventKind: TypeAlias = Literal[
    "attempt", "verdict", "upstream_error", "backoff", "retry", "give_up", "done"
]

#: HTTP statuses worth retrying (the same set the OpenAI SDK retries).
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
#: Default upstream retries when neither the policy nor the wrapped client says.
DEFAULT_UPSTREAM_RETRIES = 2

#: The source of backoff jitter (``Policy.backoff_jitter``); not for anything secret.
_JITTER = random.Random()
_REASK_KINDS = frozenset({"rejected", "unknown_tool", "call_in_content", "missing_call", "fabricated"})


@dataclass(frozen=True, slots=True)
class Attempt:
    """Action: send ``body`` upstream and feed the generation into ``guard``."""

    number: int
    reason: Reason
    body: dict[str, Any]
    guard: Guard


@dataclass(frozen=True, slots=True)
class Backoff:
    """Action: wait ``seconds``, then send ``None`` back."""

    seconds: float
    number: int


@dataclass(frozen=True, slots=True)
class Completed:
    """Outcome: the guard saw the attempt to its end. ``response`` is whatever the driver returns on success
    (a ``ChatCompletion``, chunks, ...); ``completion_tokens`` sizes a grown ``max_tokens`` when the request
    had none."""

    response: Any = None
    completion_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class UpstreamFailure:
    """Outcome: the upstream failed before the generation ended. ``status`` is the HTTP status (``None`` for
    a transport or protocol error); ``retryable=None`` lets the flow decide from the status."""

    error: BaseException
    status: int | None = None
    retry_after: float | None = None
    retryable: bool | None = None


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    """One attempt of a request: why it was made, what changed, how it ended."""

    number: int
    reason: Reason
    verdict: GuardVerdict | None = None
    status: int | None = None
    error: str | None = None
    changes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FlowEvent:
    """An observable step of the flow (``on_event`` callback, ``flow.events``)."""

    kind: FlowEventKind
    attempt: int
    reason: Reason | None = None
    verdict: GuardVerdict | None = None
    status: int | None = None
    delay: float | None = None
    changes: Mapping[str, Any] = field(default_factory=dict)
    detail: str = ""
    #: Set on the steps that decide (``done``, ``retry``, ``give_up``): the shared record every door reports.
    decision: Decision | None = None


@dataclass(frozen=True, slots=True)
class FlowResult:
    response: Any
    guard: Guard
    body: dict[str, Any]
    attempts: tuple[AttemptRecord, ...]
    events: tuple[FlowEvent, ...]


Action: TypeAlias = Attempt | Backoff
Outcome: TypeAlias = Completed | UpstreamFailure | None


class RetryFlow:
    """One request's re-ask/retry flow (see the module docstring). ``body`` is the chat-completions request
    (``messages``, ``tools``, ``tool_choice``, sampling options...); it is copied, never mutated."""

    def __init__(
        self,
        body: Mapping[str, Any],
        *,
        policy: Policy = DEFAULT_POLICY,
        tools: ToolSet | None = None,
        on_event: Callable[[FlowEvent], None] | None = None,
        upstream_retries: int | None = None,
        door: str = "sdk",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.body = dict(body)
        self.door = door
        self._clock = clock
        self._started = clock()
        self.policy = policy
        if tools is None:
            raw = self.body.get("tools")
            tools = ToolSet.from_openai(raw) if raw else ToolSet()
        self.tools = tools
        self.tool_choice = self.body.get("tool_choice")
        #: Read once, before anything goes upstream: ``UsageError`` for a choice the tools cannot keep.
        self.choice = parse_tool_choice(self.tool_choice, tools)
        self.on_event = on_event
        if policy.max_upstream_retries is not None:
            upstream_retries = policy.max_upstream_retries
        self.upstream_retries = DEFAULT_UPSTREAM_RETRIES if upstream_retries is None else upstream_retries
        self.events: list[FlowEvent] = []
        self.attempts: list[AttemptRecord] = []
        self._trace: FlowTrace | None = None

    def new_guard(self) -> Guard:
        config = self.policy.detector
        factory = None
        if config is not None:

            def factory() -> RunawayDetector:
                return RunawayDetector(config=config)

        policy = self.policy
        return Guard(
            self.tools,
            tool_choice=self.choice,
            detector=factory,
            limits=policy.limits,
            repair=policy.repair_calls,
            call_format=policy.call_format,
        )

    def _emit(self, event: FlowEvent) -> None:
        self.events.append(event)
        trace = self._trace
        if trace is not None:
            if event.kind == "attempt":
                trace.attempt(event.attempt, event.reason or "initial")
            elif event.kind == "verdict" and event.verdict is not None:
                trace.verdict(event.verdict.kind)
            if event.decision is not None:
                trace.decision(event.decision)
        if self.on_event is not None:
            self.on_event(event)

    def run(self) -> Generator[Action, Outcome, FlowResult]:
        """The flow (see the module docstring), traced with OpenTelemetry when it is importable."""
        trace = self._trace = flow_trace(self.door, self.body)
        if trace is None:
            return (yield from self._run())
        try:
            result = yield from self._run()
        except GeneratorExit:  # the driver stopped early (a client went away)
            trace.end()
            raise
        except BaseException as exc:
            trace.end(exc)
            raise
        trace.end()
        return result

    def _run(self) -> Generator[Action, Outcome, FlowResult]:
        policy = self.policy
        body = self.body
        reason: Reason = "initial"
        changes: dict[str, Any] = {}
        used = {"reask": 0, "runaway": 0, "truncated": 0, "upstream": 0}
        number = 0
        while True:
            number += 1
            guard = self.new_guard()
            self._emit(FlowEvent("attempt", number, reason, changes=changes))
            outcome = yield Attempt(number, reason, body, guard)
            if isinstance(outcome, UpstreamFailure):
                self.attempts.append(
                    AttemptRecord(number, reason, None, outcome.status, _describe(outcome.error), changes)
                )
                self._emit(
                    FlowEvent(
                        "upstream_error", number, status=outcome.status, detail=_describe(outcome.error)
                    )
                )
                retryable = outcome.retryable
                if retryable is None:
                    retryable = outcome.status is None or outcome.status in RETRY_STATUSES
                delay = self._delay(outcome, used["upstream"] + 1)
                if (
                    not retryable
                    or used["upstream"] >= self.upstream_retries
                    or number >= policy.max_attempts
                ):
                    gave_up = self._decision("gave-up", number, "upstream", status=outcome.status)
                    self._emit(
                        FlowEvent("give_up", number, "upstream", status=outcome.status, decision=gave_up)
                    )
                    raise outcome.error
                if delay is None:
                    gave_up = self._decision("gave-up", number, "upstream", status=outcome.status)
                    self._emit(
                        FlowEvent("give_up", number, "upstream", status=outcome.status, detail="retry-after",
                                  decision=gave_up)
                    )
                    raise outcome.error
                used["upstream"] += 1
                self._emit(FlowEvent("backoff", number, "upstream", status=outcome.status, delay=delay))
                yield Backoff(delay, number)
                reason, changes = "upstream", {}
                retried = self._decision("retried", number, reason, status=outcome.status)
                self._emit(FlowEvent("retry", number, reason, decision=retried))
                continue
            verdict = guard.close()
            self.attempts.append(AttemptRecord(number, reason, verdict, None, None, changes))
            self._emit(FlowEvent("verdict", number, reason, verdict=verdict, detail=verdict.message))
            completed = outcome if isinstance(outcome, Completed) else Completed()
            if verdict.usable and not (verdict.kind == "fabricated" and policy.on_fabricated == "reask"):
                action: DecisionAction = "cut" if verdict.kind == "fabricated" else "released"
                done = self._decision(action, number, None, verdict)
                if guard.repaired:  # the calls were written as text and delivered as tool calls
                    done = replace(done, detail={**done.detail, "repaired": "tool_calls"})
                self._emit(FlowEvent("done", number, reason, verdict=verdict, decision=done))
                return FlowResult(completed.response, guard, body, tuple(self.attempts), tuple(self.events))
            next_body: dict[str, Any] | None = None
            if verdict.kind in _REASK_KINDS:
                reason, budget = "reask", policy.max_reasks
                if used["reask"] < budget:
                    base = {**body, "messages": self.body.get("messages", [])}
                    next_body, changes = reask_body(base, guard, verdict), {}
            elif verdict.kind == "runaway":
                reason, budget = "runaway", policy.max_runaway_retries
                retry = used["runaway"] + 1
                runaway = verdict.runaway
                if retry <= budget and (
                    runaway is None
                    or policy.runaway.should_retry(runaway, retry, prompt=prompt_texts(self.body))
                ):
                    changes = policy.runaway.retry_params(sampling_params(self.body), retry)
                    next_body = {**body, **changes}
            else:  # truncated
                reason, budget = "truncated", policy.max_truncation_retries
                if used["truncated"] < budget:
                    grown = grown_max_tokens(body, completed.completion_tokens, policy)
                    if grown is not None:
                        changes = grown
                        next_body = {**body, **changes}
            if next_body is None or number >= policy.max_attempts:
                gave_up = self._decision("gave-up", number, reason, verdict)
                self._emit(
                    FlowEvent(
                        "give_up", number, reason, verdict=verdict, detail=verdict.message, decision=gave_up
                    )
                )
                raise _exhausted(verdict, self.attempts)
            used[reason] += 1
            body = next_body
            retried = self._decision("re-asked" if reason == "reask" else "retried", number, reason, verdict)
            self._emit(FlowEvent("retry", number, reason, verdict=verdict, changes=changes, decision=retried))

    @property
    def last_decision(self) -> Decision | None:
        """The most recent decision of the flow (the final one once the flow ended)."""
        for event in reversed(self.events):
            if event.decision is not None:
                return event.decision
        return None

    def give_up(self, verdict: GuardVerdict | None = None, *, status: int | None = None) -> Decision:
        """Record that the driver ended the request itself (a retry could no longer be invisible): a
        ``give_up`` event with its decision, as the flow's own give-ups have."""
        number = self.events[-1].attempt if self.events else 1
        decision = self._decision("gave-up", number, None, verdict, status=status)
        self._emit(FlowEvent("give_up", number, None, verdict=verdict, status=status, decision=decision))
        return decision

    def _decision(
        self,
        action: DecisionAction,
        number: int,
        reason: str | None,
        verdict: GuardVerdict | None = None,
        *,
        status: int | None = None,
    ) -> Decision:
        """The record of one decision (``toolguard._decisions``): the verdict's where, never its text."""
        latency = self._clock() - self._started
        if verdict is None:
            return Decision(action, "upstream_error", self.door, number, number - 1, reason, status=status,
                            latency=latency)
        return Decision(
            action, verdict.kind, self.door, number, number - 1, reason, tool=verdict.tool,
            where=verdict.where, keyword=verdict.keyword, offset=verdict.offset, path=verdict.path,
            message=verdict.message, status=status, latency=latency,
        )

    def _delay(self, failure: UpstreamFailure, retry: int) -> float | None:
        policy = self.policy
        if failure.retry_after is not None:
            if failure.retry_after > policy.max_retry_after:
                return None
            return max(0.0, failure.retry_after)
        return policy.backoff(retry, _JITTER.random)


def _describe(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}"[:500]


def _exhausted(verdict: GuardVerdict, attempts: list[AttemptRecord]) -> GuardError:
    n = len(attempts)
    tail = f" after {n} attempt{'s' * (n != 1)}"
    if verdict.kind == "runaway":
        return RunawayGeneration(f"{verdict.message}{tail}", violation=verdict, attempts=attempts)
    if verdict.kind == "truncated":
        return TruncatedToolCall(f"{verdict.message}{tail}", violation=verdict, attempts=attempts)
    return ToolCallRejected(f"{verdict.message}{tail}", violation=verdict, attempts=attempts)


# ------------------------------------------------------------------------------------------------ re-asks
#: Characters of the rejected arguments quoted back to the model before the offending one.
FEEDBACK_CONTEXT_CHARS = 24


def feedback(verdict: GuardVerdict) -> str:
    """The text a re-ask sends the model about ``verdict``."""
    message = verdict.message
    if verdict.kind == "rejected" and verdict.text is not None and verdict.offset is not None:
        start = max(0, verdict.offset - FEEDBACK_CONTEXT_CHARS)
        message += (
            f" (it goes wrong at character {verdict.offset}: ...{verdict.text[start : verdict.offset + 1]!r})"
        )
    if verdict.kind == "rejected":
        tool = verdict.tool or "the tool"
        return (
            f"Error: the call was not run: {message}. Call {tool} again with arguments that match its schema."
        )
    if verdict.kind == "unknown_tool":
        return f"Error: the call was not run: {message}. Call one of the available tools instead."
    if verdict.kind == "call_in_content":
        return f"Error: {message}. To call a tool, use the tool-calling interface, not the message text."
    if verdict.kind == "missing_call":
        return f"Error: {message}. Call one of the available tools."
    if verdict.kind == "fabricated":
        return (
            f"Error: {message}. Wait for the tool results; do not write them yourself. Call the tools again."
        )
    return f"Error: {message}."


_NOT_RUN = (
    "Not run: another tool call in this turn was invalid, so none of them ran. Send all the calls again."
)


def reask_body(body: Mapping[str, Any], guard: Guard, verdict: GuardVerdict) -> dict[str, Any]:
    """``body`` with the failed assistant turn and the violation appended to its messages."""
    assistant = guard.message()
    if verdict.kind == "call_in_content" and verdict.text and not assistant.get("content"):
        assistant["content"] = verdict.text
    if verdict.kind == "fabricated" and guard.fabricated:
        assistant["content"] = (assistant.get("content") or "") + guard.fabricated
    added: list[dict[str, Any]] = [assistant]
    calls = assistant.get("tool_calls") or []
    text = feedback(verdict)
    if calls:
        target = verdict.call_index
        if target is None or not any(i == target for i in range(len(calls))):
            target = 0
        for i, call in enumerate(calls):
            added.append(
                {"role": "tool", "tool_call_id": call["id"], "content": text if i == target else _NOT_RUN}
            )
    else:
        added.append({"role": "user", "content": text})
    return {**body, "messages": [*body.get("messages", ()), *added]}


# ----------------------------------------------------------------------------------------- runaway retries
def prompt_texts(body: Mapping[str, Any]) -> list[str]:
    """The text parts of the request's messages (for ``loop_in_prompt``)."""
    texts: list[str] = []
    for message in body.get("messages", ()):
        if isinstance(message, Mapping):
            content = message.get("content")
        else:
            content = getattr(message, "content", None)
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for part in content:
                text = part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
                if isinstance(text, str):
                    texts.append(text)
    return texts


def sampling_params(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request's ``temperature`` (a finite number) and ``seed`` (an integer), those it has, for
    ``RunawayPolicy.retry_params``. A value of another type is the upstream's to refuse, never ours to compute
    with: it is left out, so the retry sets its own (a string or list ``seed`` would otherwise be repeated a
    million times)."""
    out: dict[str, Any] = {}
    temperature = body.get("temperature")
    if isinstance(temperature, (int, float)) and type(temperature) is not bool and math.isfinite(temperature):
        out["temperature"] = temperature
    seed = body.get("seed")
    if type(seed) is int:
        out["seed"] = seed
    return out


# ------------------------------------------------------------------------------------------------ truncation
def grown_max_tokens(
    body: Mapping[str, Any], completion_tokens: int | None, policy: Policy
) -> dict[str, Any] | None:
    """``{"max_tokens": n}`` (or ``max_completion_tokens``) grown for a truncation retry.

    ``None`` when there is nothing to grow (no limit in the request and no usage to size one) or the cap is
    reached."""
    key = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    current = body.get(key)
    if not isinstance(current, int) or current <= 0:
        current = completion_tokens
    if not isinstance(current, int) or current <= 0:
        return None
    grown = min(policy.max_tokens_cap, math.ceil(current * policy.max_tokens_growth))
    if grown <= current:
        return None
    return {key: grown}
