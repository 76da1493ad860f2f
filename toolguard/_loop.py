"""AgentLoop and AsyncAgentLoop: a model proposes, the executor disposes, until the model answers.

Theory of operation
-------------------
The loop is written once, as a generator (``_AgentFlow.run``, httpx ``Auth.auth_flow`` style) that does no
I/O: it yields a ``ModelRequest`` and receives the model's reply, yields ``ExecuteCalls`` and receives the
execution records, and returns a ``LoopResult``. ``AgentLoop`` drives it with a sync client and an
``Executor``; ``AsyncAgentLoop`` with an async client and an ``AsyncExecutor`` (tool calls of one turn run
concurrently).

Rules the flow enforces:

* **Results come only from records.** Each proposal gets exactly one tool message, produced by
  ``ExecutionRecord.to_message()``; with ``text_format`` set, calls written as text are parsed
  (``toolguard.formats``) and anything the model wrote after them (a fake ``<tool_response>``) is cut.
* **Invalid proposals are re-asked**: the record's error goes back as the tool message; after
  ``max_invalid_per_tool`` invalid proposals for one tool the run stops with ``"invalid_calls"``.
* **Loops are stopped**: a call (same name, same arguments) that already ran ``max_identical_calls`` times is
  not run again; the run stops with ``"repeated_calls"``.
* **Bounded**: at most ``max_turns`` model requests; calls proposed in the last one are not executed (nobody
  would read their results) and the run stops with ``"max_turns"``.

When a run stops with calls left unanswered, the transcript ends with the assistant message that proposed them
and ``LoopResult.unanswered`` lists them: answer or drop them before sending the transcript to a model again.
Cost per turn: one model request, one execution per proposal, O(size of the reply) parsing.
"""

from __future__ import annotations

import inspect
import json
import secrets
from collections import Counter
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ._drive import adrive, drive
from ._exceptions import UsageError
from ._executor import AsyncExecutor, Executor
from ._openai import reply_message
from ._records import ExecutionRecord
from ._tools import ToolCall, ToolSet
from .formats import Format, parse

# Public names; the DEFAULT_* caps and the StopReason literal stay importable from here.
__all__ = ["AgentLoop", "AsyncAgentLoop", "LoopResult"]

DEFAULT_MAX_TURNS = 10  # model requests per run
DEFAULT_MAX_INVALID_PER_TOOL = 3  # invalid proposals per tool before the run stops
DEFAULT_MAX_IDENTICAL_CALLS = 2  # runs of one identical call (name + arguments) per run

StopReason: TypeAlias = Literal[
    "final", "max_turns", "repeated_calls", "invalid_calls", "truncated", "content_filter"
]


@dataclass(frozen=True, slots=True)
class LoopResult:
    """How a run ended.

    ``stop_reason``: ``"final"`` (the model answered without calling a tool), ``"max_turns"``,
    ``"repeated_calls"``, ``"invalid_calls"``, ``"truncated"`` (the reply was cut off, e.g. by max tokens) or
    ``"content_filter"``; ``detail`` says why in words. ``final`` is the last assistant message, ``messages``
    the whole transcript (input included), ``records`` every execution record in order, ``unanswered`` the
    calls proposed but not executed when the run stopped, ``notes`` what was cut or refused along the way.
    """

    stop_reason: StopReason
    detail: str
    final: dict[str, Any] | None
    messages: list[dict[str, Any]]
    records: list[ExecutionRecord]
    turns: int
    unanswered: list[ToolCall] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def content(self) -> str | None:
        """The text of the final assistant message."""
        return None if self.final is None else self.final.get("content")


# the flow's requests ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ModelRequest:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    tool_choice: Any


@dataclass(frozen=True, slots=True)
class ExecuteCalls:
    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class _Reply:
    """A model reply, normalised from an OpenAI ChatCompletion (pydantic object or dict)."""

    content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None


def _normalise_reply(response: Any) -> _Reply:
    """Read choice 0 of a ChatCompletion (``toolguard._openai.reply_message``); raise
    ``UpstreamProtocolError`` for anything else."""
    message, finish_reason = reply_message(response)
    calls = [ToolCall.from_openai(tc) for tc in message.get("tool_calls") or []]
    return _Reply(content=message.get("content"), tool_calls=tuple(calls), finish_reason=finish_reason)


def _signature(call: ToolCall) -> tuple[str, str]:
    try:
        return call.name, json.dumps(call.parsed_arguments(), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return call.name, call.arguments


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


class _AgentFlow:
    """The sans-IO loop shared by both drivers. One instance per run."""

    def __init__(self, owner: _LoopOptions, messages: list[dict[str, Any]], nonce: str) -> None:
        self.o = owner
        self.transcript = messages
        self.records: list[ExecutionRecord] = []
        self.notes: list[str] = []
        self.nonce = nonce
        self.ids = 0
        self.seen_ids: set[str] = set()
        self.invalid: Counter[str] = Counter()
        self.executed: Counter[tuple[str, str]] = Counter()

    def _result(
        self, reason: StopReason, detail: str, turns: int, unanswered: Sequence[ToolCall] = ()
    ) -> LoopResult:
        final = next((m for m in reversed(self.transcript) if m.get("role") == "assistant"), None)
        return LoopResult(
            stop_reason=reason,
            detail=detail,
            final=final,
            messages=self.transcript,
            records=self.records,
            turns=turns,
            unanswered=list(unanswered),
            notes=self.notes,
        )

    def _with_id(self, call: ToolCall, turn: int) -> ToolCall:
        """Give the call an id unique in this run: the executor runs an id once, templates need unique ids."""
        if call.id and call.id not in self.seen_ids:
            self.seen_ids.add(call.id)
            return call
        self.ids += 1
        new_id = f"call_{self.nonce}_{self.ids}"
        if call.id:
            self.notes.append(
                f"turn {turn}: the model reused the call id {call.id!r}; it was renamed {new_id!r}"
            )
        self.seen_ids.add(new_id)
        return ToolCall(call.name, call.arguments, new_id)

    def run(self) -> Generator[ModelRequest | ExecuteCalls, Any, LoopResult]:
        o = self.o
        for turn in range(1, o.max_turns + 1):
            reply: _Reply = yield ModelRequest(list(self.transcript), o.tools_json, o.tool_choice)
            content, calls, reask = reply.content, list(reply.tool_calls), None
            if not calls and content and o.text_format is not None:
                parsed = parse(content, format=o.text_format)
                calls, content = parsed.tool_calls, parsed.content
                self.notes.extend(f"turn {turn}: {note}" for note in parsed.notes)
                if not parsed.complete:
                    self.transcript.append({"role": "assistant", "content": reply.content})
                    return self._result(
                        "truncated", "the model's tool call was cut off before it closed", turn
                    )
                malformed = [p for p in parsed.problems if p.kind == "malformed"]
                if malformed and not calls:
                    reask = malformed[0].message
            calls = [self._with_id(c, turn) for c in calls]
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = [c.to_openai() for c in calls]
            self.transcript.append(message)
            if reask is not None:
                self.invalid["(unreadable call)"] += 1
                if self.invalid["(unreadable call)"] > o.max_invalid_per_tool:
                    return self._result(
                        "invalid_calls", f"the model's tool calls stayed unreadable: {reask}", turn
                    )
                self.transcript.append(
                    {
                        "role": "user",
                        "content": f"Your tool call could not be read: {reask}. "
                        "Write the call again, complete and valid.",
                    }
                )
                continue
            if not calls:
                if reply.finish_reason == "length":
                    return self._result(
                        "truncated", "the model's reply was cut off (finish_reason 'length')", turn
                    )
                if reply.finish_reason == "content_filter":
                    return self._result("content_filter", "the reply was stopped by a content filter", turn)
                return self._result("final", "the model answered without calling a tool", turn)
            for call in calls:
                runs = self.executed[_signature(call)]
                if runs >= o.max_identical_calls:
                    return self._result(
                        "repeated_calls",
                        f"the model proposed {call.name}({call.arguments}) a {_ordinal(runs + 1)} time; "
                        "an identical "
                        f"call may run at most {o.max_identical_calls} time(s) per run",
                        turn,
                        calls,
                    )
            if turn == o.max_turns:
                return self._result(
                    "max_turns",
                    f"reached max_turns={o.max_turns} with {len(calls)} call(s) still proposed; "
                    "they were not run",
                    turn,
                    calls,
                )
            records: Sequence[ExecutionRecord] = yield ExecuteCalls(tuple(calls))
            for call, record in zip(calls, records, strict=True):
                self.records.append(record)
                self.transcript.append(record.to_message())
                if record.status == "invalid":
                    self.invalid[call.name] += 1
                else:
                    self.executed[_signature(call)] += 1
            over = [name for name, n in self.invalid.items() if n > o.max_invalid_per_tool]
            if over:
                last = next(r for r in reversed(self.records) if r.status == "invalid")
                return self._result(
                    "invalid_calls",
                    f"more than {o.max_invalid_per_tool} invalid proposals for {', '.join(over)}; "
                    "last error: "
                    f"{last.error}",
                    turn,
                )
        return self._result("max_turns", f"reached max_turns={o.max_turns}", o.max_turns)  # pragma: no cover


class _LoopOptions:
    """What both loops share: one constructor (the twins differ only in the executor they take, ``_executor``)
    and the request each turn sends."""

    executor: Any

    def __init__(
        self,
        client: Any,
        tools: ToolSet | Executor | AsyncExecutor | Iterable[Any],
        *,
        model: str | None = None,
        tool_choice: Any = "auto",
        max_turns: int = DEFAULT_MAX_TURNS,
        max_invalid_per_tool: int = DEFAULT_MAX_INVALID_PER_TOOL,
        max_identical_calls: int = DEFAULT_MAX_IDENTICAL_CALLS,
        text_format: Format | None = None,
        create_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if max_turns < 1 or max_invalid_per_tool < 0 or max_identical_calls < 1:
            raise UsageError("need max_turns >= 1, max_invalid_per_tool >= 0 and max_identical_calls >= 1")
        self.client = client
        self.model = model
        self.tool_choice = tool_choice
        self.max_turns = max_turns
        self.max_invalid_per_tool = max_invalid_per_tool
        self.max_identical_calls = max_identical_calls
        self.text_format = text_format
        self.create_kwargs = dict(create_kwargs or {})
        self.executor = self._executor(tools)
        self.tools_json: list[dict[str, Any]] = self.executor.toolset.to_openai()

    def _executor(self, tools: Any) -> Any:
        raise NotImplementedError

    def _request_kwargs(self, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = dict(self.create_kwargs)
        if self.model is not None:
            kwargs["model"] = self.model
        kwargs["messages"] = request.messages
        if request.tools:
            kwargs["tools"] = request.tools
            if request.tool_choice is not None:
                kwargs["tool_choice"] = request.tool_choice
        return kwargs


def _start(messages: str | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


class AgentLoop(_LoopOptions):
    """Drive a model and tools until the model answers. See the module docstring for the rules.

    ``client`` is anything with the OpenAI surface ``client.chat.completions.create(model=..., messages=...,
    tools=..., tool_choice=...)`` returning a ChatCompletion (or an equivalent dict); ``tools`` is a
    ``ToolSet`` (or functions/tools to build one) or a configured ``Executor``. ``text_format`` (e.g.
    ``"hermes"``) parses tool calls the model wrote as text when the reply carries no structured ones.
    ``run(messages)`` returns a ``LoopResult``; infrastructure errors from the client propagate.
    """

    def _executor(self, tools: Any) -> Executor:
        if isinstance(tools, AsyncExecutor):
            raise UsageError("AgentLoop needs an Executor; use AsyncAgentLoop with an AsyncExecutor")
        return tools if isinstance(tools, Executor) else Executor(tools)

    def run(self, messages: str | Iterable[Mapping[str, Any]]) -> LoopResult:
        """Run until the model answers or a bound stops the run."""
        flow = _AgentFlow(self, _start(messages), secrets.token_hex(4)).run()

        def perform(request: ModelRequest | ExecuteCalls) -> Any:
            if isinstance(request, ModelRequest):
                return _normalise_reply(self.client.chat.completions.create(**self._request_kwargs(request)))
            return self.executor.execute_all(request.calls)

        result: LoopResult = drive(flow, perform)
        return result


class AsyncAgentLoop(_LoopOptions):
    """The asyncio twin of ``AgentLoop``: ``await run(messages)``; the calls of one turn run concurrently.

    ``client.chat.completions.create`` may be a coroutine function (``openai.AsyncOpenAI``) or a plain one.
    """

    def _executor(self, tools: Any) -> AsyncExecutor:
        if isinstance(tools, Executor):
            raise UsageError("AsyncAgentLoop needs an AsyncExecutor; use AgentLoop with an Executor")
        return tools if isinstance(tools, AsyncExecutor) else AsyncExecutor(tools)

    async def run(self, messages: str | Iterable[Mapping[str, Any]]) -> LoopResult:
        """Run until the model answers or a bound stops the run."""
        flow = _AgentFlow(self, _start(messages), secrets.token_hex(4)).run()

        async def aperform(request: ModelRequest | ExecuteCalls) -> Any:
            if isinstance(request, ModelRequest):
                response = self.client.chat.completions.create(**self._request_kwargs(request))
                if inspect.isawaitable(response):
                    response = await response
                return _normalise_reply(response)
            return await self.executor.execute_all(request.calls)

        result: LoopResult = await adrive(flow, aperform)
        return result
