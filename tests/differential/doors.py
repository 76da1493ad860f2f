"""The doors of the differential suite: one scripted behaviour, read the way each door's client reads it.

Every door is driven by its real client over real HTTP: ``toolguard.wrap(openai.OpenAI)`` and
``wrap(openai.AsyncOpenAI)`` straight against the ``ScriptedUpstream`` (the fake model server, the only fake),
and the official openai client in front of the real proxy (uvicorn in a thread), each stream and non-stream,
hold and pass. A door's answer is folded into an ``Outcome``: what its client ends up with (text, refusal,
calls, finish reason) and, when the request ended in an error, the verdict kind the error carries.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai

import toolguard
from toolguard import GuardError, Policy

__all__ = ["DOORS", "Door", "Outcome", "fold"]

#: Fast backoff on both sides, so retries cost milliseconds.
FAST = {"backoff_initial": 0.01, "backoff_max": 0.02}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a door's client saw. ``calls``: ``(name, arguments)`` in index order; ``error``: the verdict kind
    (``"rejected"``, ``"runaway"``...) or the error code when the request ended in an error, else None."""

    text: str = ""
    calls: tuple[tuple[str, str], ...] = ()
    finish: str | None = None
    error: str | None = None
    refusal: str = ""


class _Fold:
    def __init__(self) -> None:
        self.text = ""
        self.refusal = ""
        self.calls: dict[int, list[str]] = {}
        self.finish: str | None = None

    def add(self, chunk: Any) -> None:
        for choice in chunk.choices:
            delta = choice.delta
            self.text += delta.content or ""
            self.refusal += getattr(delta, "refusal", None) or ""
            for tc in delta.tool_calls or ():
                slot = self.calls.setdefault(tc.index, ["", ""])
                if tc.function is not None:
                    slot[0] += tc.function.name or ""
                    slot[1] += tc.function.arguments or ""
            self.finish = choice.finish_reason or self.finish

    def outcome(self, error: str | None = None) -> Outcome:
        calls = tuple((n, a) for n, a in (self.calls[i] for i in sorted(self.calls)))
        return Outcome(self.text, calls, self.finish, error, self.refusal)


def fold(completion: Any) -> Outcome:
    """The ``Outcome`` of a ``ChatCompletion``."""
    choice = completion.choices[0]
    message = choice.message
    calls = tuple((c.function.name, c.function.arguments) for c in message.tool_calls or ())
    return Outcome(message.content or "", calls, choice.finish_reason, None, message.refusal or "")


def _error_kind(exc: BaseException) -> str:
    if isinstance(exc, GuardError):
        return exc.violation.kind
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            detail = inner.get("toolguard")
            if isinstance(detail, dict) and detail.get("kind"):
                return str(detail["kind"])
            return str(inner.get("code") or type(exc).__name__)
    return type(exc).__name__


@dataclass(frozen=True, slots=True)
class Door:
    """One way in: ``name`` (e.g. ``"proxy-stream-hold"``), ``kind`` (``sdk`` | ``async`` | ``proxy``),
    ``stream`` and ``mode``; ``tags`` name the groups a scenario's documented difference can apply to."""

    name: str
    kind: str
    stream: bool
    mode: str

    @property
    def tags(self) -> tuple[str, ...]:
        shape = "stream" if self.stream else "plain"
        side = "proxy" if self.kind == "proxy" else "sdk"
        tags = [self.name, f"{side}-{shape}-{self.mode}", f"{side}-{shape}", side, shape]
        if self.stream:
            tags.insert(2, f"{shape}-{self.mode}")
        return tuple(tags)

    def ask(self, base_url: str, proxy_url: str | None, body: dict[str, Any], repair: bool) -> Outcome:
        if self.kind == "async":
            return _RUNNER.run(self._ask_async(base_url, body, repair))
        if self.kind == "proxy":
            assert proxy_url is not None
            client = _client(proxy_url, 0)
        else:
            policy = Policy(stream=self.mode, repair_calls=repair, **FAST)  # type: ignore[arg-type]
            client = toolguard.wrap(_client(base_url, 2), policy=policy)
        if not self.stream:
            try:
                return fold(client.chat.completions.create(**body))
            except (GuardError, openai.APIError) as exc:
                return Outcome(error=_error_kind(exc))
        seen = _Fold()
        try:
            for chunk in client.chat.completions.create(stream=True, **body):
                seen.add(chunk)
        except (GuardError, openai.APIError) as exc:
            return seen.outcome(_error_kind(exc))
        return seen.outcome()

    async def _ask_async(self, base_url: str, body: dict[str, Any], repair: bool) -> Outcome:
        policy = Policy(stream=self.mode, repair_calls=repair, **FAST)  # type: ignore[arg-type]
        raw = _ASYNC.get(base_url)
        if raw is None:
            raw = _ASYNC[base_url] = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=2)
        client = toolguard.wrap(raw, policy=policy)
        if not self.stream:
            try:
                return fold(await client.chat.completions.create(**body))
            except (GuardError, openai.APIError) as exc:
                return Outcome(error=_error_kind(exc))
        seen = _Fold()
        try:
            async for chunk in await client.chat.completions.create(stream=True, **body):
                seen.add(chunk)
        except (GuardError, openai.APIError) as exc:
            return seen.outcome(_error_kind(exc))
        return seen.outcome()


# Clients are made once per server (a fresh client per request would dominate the suite's time), and the async
# door runs on one event loop for the whole session, the loop its client's connections belong to.
_CLIENTS: dict[tuple[str, int], Any] = {}
_ASYNC: dict[str, Any] = {}
_RUNNER = asyncio.Runner()


def _client(base_url: str, retries: int) -> Any:
    client = _CLIENTS.get((base_url, retries))
    if client is None:
        client = _CLIENTS[(base_url, retries)] = openai.OpenAI(
            base_url=base_url, api_key="sk-test", max_retries=retries, timeout=20
        )
    return client


DOORS: tuple[Door, ...] = (
    Door("sdk-plain", "sdk", False, "hold"),
    Door("async-plain", "async", False, "hold"),
    Door("proxy-plain", "proxy", False, "hold"),
    Door("sdk-stream-hold", "sdk", True, "hold"),
    Door("async-stream-hold", "async", True, "hold"),
    Door("proxy-stream-hold", "proxy", True, "hold"),
    Door("sdk-stream-pass", "sdk", True, "pass"),
    Door("async-stream-pass", "async", True, "pass"),
    Door("proxy-stream-pass", "proxy", True, "pass"),
)


def args(value: Any) -> str:
    return json.dumps(value)


Ask = Callable[[Door, dict[str, Any]], Outcome]
