"""The OpenAI chat-completions wire shape, in one place: what comes in, what goes out, how errors read.

Theory of operation. Every door speaks OpenAI's chat-completions shape on at least one side; this module is
the only one that knows it, so a field read or written differently by two doors cannot happen. It is sans-IO
and imports no SDK: values are either dicts (decoded JSON, ``LocalGenerator`` chunks) or the openai SDK's
objects (read by attribute).

In (wire -> Guard events):

- ``choice_events(choice)``: one streamed ``choices[i]`` (dict or SDK ``Choice``) as ``ContentDelta`` /
  ``ToolCallDelta`` events and its ``finish_reason``; ``read_chunk(obj)`` reads a whole decoded chunk the
  proxy received (choice 0's events, a ``Finish``, the reasoning/refusal deltas the Guard does not judge,
  usage, an in-stream error, the chunk's meta). Defensive: a hostile upstream's odd types are skipped, never
  raised.
- ``message_events(message, finish_reason)``: a whole assistant message as events (non-stream answers).
- ``first_choice(completion)``: ``(message, finish_reason)`` of choice 0 of a completion, dict or SDK object;
  ``reply_message(completion)`` the same as one plain dict (content parts joined, a legacy ``function_call``
  read as a tool call) for the agent loop; ``completion_tokens(usage)``.

Out (released pieces -> wire):

- ``ChunkWriter``: the canonical client stream as SSE bytes (role once, each call's ``id``/``type``/``name``
  once, argument fragments, a truthful ``finish_reason``, the usage chunk); ``closing_chunk(template,
  reason)`` the finishing chunk shaped like a chunk already seen (dict or SDK object); ``sum_usage`` adds the
  usage of every attempt (the client pays for all of them). What the release gate (``toolguard._release``)
  lets out becomes chunks here too: ``ChunkWriter.pieces`` (SSE bytes, the proxy) and ``pieces_chunk`` (a
  chunk shaped like the upstream's own, the SDK and ``LocalGenerator`` streams).
- ``error_body(message, status=..., code=...)``: the one error shape, ``{"error": {"message", "type",
  "param", "code"}}`` that the openai SDK raises as its own ``APIError`` types; ``code`` is always snake_case
  (``ERROR_CODES``: a verdict kind, ``invalid_request``, ``unsupported_keyword``, ``upstream_error``...);
  ``exception_code(exc)`` names toolguard's exceptions that way.
- ``parse_retry_after(headers)``: seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP
  date), for the proxy's upstream and the SDK's.

Cost: O(size of the chunk or message) for every function; ``ChunkWriter`` pre-encodes the constant head of
its chunks, so a content or argument chunk costs one ``json.dumps`` of the fragment.
"""

from __future__ import annotations

import email.utils
import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

from ._events import ContentDelta, Finish, GuardEvent, ToolCallDelta
from ._exceptions import (
    ConfigError,
    GrammarCompileTimeout,
    GrammarError,
    GuardError,
    RemoteRefRefused,
    RunawayGeneration,
    SchemaError,
    SchemaLimitExceeded,
    ToolCallRejected,
    ToolError,
    TruncatedToolCall,
    UnsupportedKeyword,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamTimeout,
    UsageError,
)
from ._release import CallArguments, CallStart, Piece, Text

__all__ = [
    "ERROR_CODES",
    "ChunkWriter",
    "UpstreamChunk",
    "call_id",
    "choice_events",
    "closing_chunk",
    "completion_tokens",
    "error_body",
    "exception_code",
    "first_choice",
    "message_events",
    "parse_retry_after",
    "pieces_chunk",
    "read_chunk",
    "reply_message",
    "sum_usage",
]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# Delta keys forwarded as they are: the Guard does not judge them.
_PASSTHROUGH_DELTA_KEYS = ("reasoning_content", "reasoning", "refusal")

#: Every ``code`` an error body from toolguard may carry (the verdict kinds first). snake_case only.
ERROR_CODES = frozenset(
    {
        # verdicts left after the retries (422, or the error event that ends a stream)
        "rejected", "unknown_tool", "invalid_arguments", "runaway", "fabricated", "truncated",
        "call_in_content", "missing_call",
        # the request (400)
        "invalid_request", "invalid_json", "invalid_tool_schema", "unsupported_keyword", "remote_ref_refused",
        "schema_limit_exceeded", "grammar_error", "grammar_compile_timeout", "config_error",
        "model_not_found", "body_too_large", "method_not_allowed", "not_found", "invalid_api_key",
        # the upstream and the service
        "upstream_error", "upstream_timeout", "upstream_protocol_error", "deadline", "proxy_error",
        "server_error",
    }
)

_STATUS_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    502: "upstream_error",
    503: "upstream_error",
    504: "timeout_error",
}

# Most specific first: the first class ``exc`` is an instance of names its code.
_EXCEPTION_CODES: tuple[tuple[type[BaseException], str], ...] = (
    (UnsupportedKeyword, "unsupported_keyword"),
    (RemoteRefRefused, "remote_ref_refused"),
    (SchemaLimitExceeded, "schema_limit_exceeded"),
    (SchemaError, "invalid_tool_schema"),
    (GrammarCompileTimeout, "grammar_compile_timeout"),
    (GrammarError, "grammar_error"),
    (ToolError, "invalid_tool_schema"),
    (ConfigError, "config_error"),
    (UsageError, "invalid_request"),
    (UpstreamTimeout, "upstream_timeout"),
    (UpstreamProtocolError, "upstream_protocol_error"),
    (UpstreamError, "upstream_error"),
    (ToolCallRejected, "rejected"),
    (RunawayGeneration, "runaway"),
    (TruncatedToolCall, "truncated"),
)


# ------------------------------------------------------------------------------------------------- in
def choice_events(choice: Any) -> tuple[list[ContentDelta | ToolCallDelta], str | None]:
    """The Guard events of one streamed choice (a dict or an SDK ``Choice``) and its ``finish_reason``."""
    if type(choice) is not dict:
        delta = choice.delta
        events: list[ContentDelta | ToolCallDelta] = []
        if delta is not None:
            content = delta.content
            if content:
                events.append(ContentDelta(content))
            for tc in delta.tool_calls or ():
                fn = tc.function
                if fn is None:
                    events.append(ToolCallDelta(tc.index, tc.id))
                else:
                    events.append(ToolCallDelta(tc.index, tc.id, fn.name, fn.arguments or ""))
        return events, choice.finish_reason
    events = []
    delta = choice.get("delta")
    if type(delta) is dict and delta:
        content = delta.get("content")
        if content and type(content) is str:
            events.append(ContentDelta(content))
        calls = delta.get("tool_calls")
        if calls and type(calls) is list:
            for i, tc in enumerate(calls):
                if type(tc) is not dict:
                    continue
                fn = tc.get("function")
                if type(fn) is not dict:
                    fn = {}
                index = tc.get("index", i)
                name = fn.get("name")
                arguments = fn.get("arguments")
                events.append(
                    ToolCallDelta(
                        index if type(index) is int else i,
                        tc.get("id") or None,
                        name if name and type(name) is str else None,
                        arguments if type(arguments) is str else "",
                    )
                )
    finish = choice.get("finish_reason")
    return events, finish if finish and type(finish) is str else None


class UpstreamChunk:
    """What one upstream chunk carried for choice 0: Guard events, unjudged extras, usage, an error, meta."""

    __slots__ = ("error", "events", "extra", "meta", "usage")

    def __init__(
        self,
        events: list[ContentDelta | ToolCallDelta | Finish],
        extra: dict[str, Any] | None = None,
        usage: dict[str, Any] | None = None,
        error: Any = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.events = events
        self.extra = extra  # reasoning/refusal deltas, forwarded unjudged
        self.usage = usage
        self.error = error
        self.meta = meta  # the chunk itself: id, created, model, system_fingerprint


def read_chunk(obj: Any) -> UpstreamChunk:
    """Translate a decoded upstream chunk. Raises ``ValueError`` for a chunk that is not an object."""
    if type(obj) is not dict:
        raise ValueError("an upstream chunk must be a JSON object")
    error = obj.get("error")
    if error:
        return UpstreamChunk([], error=error)
    usage = obj.get("usage")
    events: list[ContentDelta | ToolCallDelta | Finish] = []
    extra: dict[str, Any] | None = None
    for choice in obj.get("choices") or ():
        if type(choice) is not dict or choice.get("index", 0) != 0:
            continue
        found, finish = choice_events(choice)
        events.extend(found)
        delta = choice.get("delta")
        if type(delta) is dict and len(delta) > ("content" in delta) + ("tool_calls" in delta) + (
            "role" in delta
        ):
            for key in _PASSTHROUGH_DELTA_KEYS:
                value = delta.get(key)
                if value:
                    extra = extra or {}
                    extra[key] = value
        if finish:
            events.append(Finish(finish))
    return UpstreamChunk(events, extra, usage if type(usage) is dict else None, None, obj)


def _getter(obj: Any) -> Any:
    return obj.get if isinstance(obj, Mapping) else lambda k, d=None: getattr(obj, k, d)


def message_events(message: Mapping[str, Any] | Any, finish_reason: str | None) -> list[GuardEvent]:
    """The events of a whole assistant message (a dict or an SDK ``ChatCompletionMessage``) and ``Finish``."""
    get = _getter(message)
    events: list[GuardEvent] = []
    content = get("content")
    if isinstance(content, str) and content:
        events.append(ContentDelta(content))
    for i, call in enumerate(get("tool_calls") or ()):
        cget = _getter(call)
        fget = _getter(cget("function"))
        events.append(ToolCallDelta(i, cget("id"), fget("name") or "", fget("arguments") or ""))
    events.append(Finish(finish_reason))
    return events


def first_choice(completion: Any) -> tuple[Any, str | None]:
    """``(message, finish_reason)`` of choice 0 of a completion (dict or SDK object); ``({"content": None},
    None)`` when it has no choice."""
    choices = completion.get("choices") if isinstance(completion, Mapping) else completion.choices
    choice = choices[0] if choices else None
    if choice is None:
        return {"content": None}, None
    if isinstance(choice, Mapping):
        return choice.get("message") or {}, choice.get("finish_reason")
    return choice.message, choice.finish_reason


def completion_tokens(usage: Any) -> int | None:
    """``usage.completion_tokens`` of a dict or an SDK ``CompletionUsage`` (``None`` when absent)."""
    if isinstance(usage, Mapping):
        tokens = usage.get("completion_tokens")
    else:
        tokens = getattr(usage, "completion_tokens", None)
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None


def reply_message(response: Any) -> tuple[dict[str, Any], str | None]:
    """Choice 0 of a ChatCompletion (SDK object or dict) as ``(message dict, finish_reason)``: content parts
    joined into one string, a legacy ``function_call`` read as the one tool call. Raises
    ``UpstreamProtocolError`` for anything that is not a completion."""
    dump = getattr(response, "model_dump", None)
    data = dump() if callable(dump) else response
    if not isinstance(data, Mapping):
        raise UpstreamProtocolError(
            f"the model client returned {type(response).__name__}; "
            "expected a ChatCompletion or an equivalent dict"
        )
    choices = data.get("choices") or []
    if not choices or not isinstance(choices[0], Mapping):
        raise UpstreamProtocolError("the model's reply has no choices")
    message = dict(choices[0].get("message") or {})
    content = message.get("content")
    if isinstance(content, list):  # content parts
        message["content"] = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    legacy = message.get("function_call")
    if not message.get("tool_calls") and isinstance(legacy, Mapping):
        message["tool_calls"] = [{"function": legacy}]
    return message, choices[0].get("finish_reason")


# ------------------------------------------------------------------------------------------------ out
def sum_usage(total: dict[str, Any] | None, usage: dict[str, Any] | None) -> dict[str, Any] | None:
    """Add the integer counters of ``usage`` into ``total`` (the client pays for every attempt)."""
    if usage is None:
        return total
    if total is None:
        return dict(usage)
    out = dict(total)
    for key, value in usage.items():
        if isinstance(value, int) and isinstance(out.get(key), int):
            out[key] += value
        elif key not in out:
            out[key] = value
    return out


class ChunkWriter:
    """Encodes the canonical client stream for one response (one ``id``, ``created`` and ``model``)."""

    __slots__ = ("_head", "_prefix")

    def __init__(self, *, id: str, created: int, model: str, system_fingerprint: str | None = None) -> None:
        head: dict[str, Any] = {
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
        }
        if system_fingerprint:
            head["system_fingerprint"] = system_fingerprint
        self._head = head
        self._prefix = b"data: " + _dumps(head)[:-1].encode() + b',"choices":[{"index":0,"delta":'

    def delta(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        finish = b"null" if finish_reason is None else _dumps(finish_reason).encode()
        return (
            self._prefix + _dumps(delta).encode() + b',"logprobs":null,"finish_reason":' + finish + b"}]}\n\n"
        )

    def role(self) -> bytes:
        return self.delta({"role": "assistant", "content": ""})

    def content(self, text: str) -> bytes:
        return (
            self._prefix
            + b'{"content":'
            + _dumps(text).encode()
            + b'},"logprobs":null,"finish_reason":null}]}\n\n'
        )

    def call_start(self, index: int, id: str, name: str, arguments: str = "") -> bytes:
        call = {
            "index": index,
            "id": id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        return self.delta({"tool_calls": [call]})

    def call_arguments(self, index: int, fragment: str) -> bytes:
        return self.delta({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})

    def finish(self, reason: str, summary: dict[str, Any] | None = None) -> bytes:
        """The finishing chunk; ``summary`` (the final decision, ``Decision.summary()``) goes in its delta
        as ``toolguard``, where the vLLM door puts it too."""
        return self.delta({"toolguard": summary} if summary else {}, reason)

    def usage(self, usage: dict[str, Any]) -> bytes:
        return b"data: " + _dumps({**self._head, "choices": [], "usage": usage}).encode() + b"\n\n"

    def pieces(self, pieces: list[Piece]) -> list[bytes]:
        """The SSE chunks of what the release gate released (a call start without an id gets one)."""
        out: list[bytes] = []
        for piece in pieces:
            kind = type(piece)
            if kind is Text:
                out.append(self.content(piece.text))  # type: ignore[union-attr]
            elif kind is CallStart:
                p: CallStart = piece  # type: ignore[assignment]
                out.append(self.call_start(p.index, p.id or call_id(), p.name, p.arguments))
            elif kind is CallArguments:
                out.append(self.call_arguments(piece.index, piece.arguments))  # type: ignore[union-attr]
        return out


def call_id() -> str:
    """A fresh tool-call id, OpenAI-shaped (``call_`` and 24 hex digits)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def pieces_chunk(template: Any, pieces: list[Piece]) -> Any:
    """One chunk shaped like ``template`` (SDK object or dict) carrying ``pieces``, no finish reason."""
    text = "".join(p.text for p in pieces if isinstance(p, Text))
    calls: list[dict[str, Any]] = []
    for p in pieces:
        if isinstance(p, CallStart):
            start = p
            calls.append(
                {
                    "index": start.index,
                    "id": start.id or call_id(),
                    "type": "function",
                    "function": {"name": start.name, "arguments": start.arguments},
                }
            )
        elif isinstance(p, CallArguments):
            calls.append({"index": p.index, "function": {"arguments": p.arguments}})
    delta: dict[str, Any] = {}
    if text:
        delta["content"] = text
    if calls:
        delta["tool_calls"] = calls
    if isinstance(template, dict):
        choice = {"index": 0, "delta": delta, "finish_reason": None, "logprobs": None}
        return {**template, "choices": [choice]}
    from openai.types.chat.chat_completion_chunk import Choice, ChoiceDelta

    return template.model_copy(
        update={
            "choices": [Choice(index=0, delta=ChoiceDelta.model_validate(delta), finish_reason=None)],
            "usage": None,
        }
    )


def closing_chunk(template: Any, finish_reason: Any) -> Any:
    """A copy of ``template`` (a ``ChatCompletionChunk`` or a dict): empty delta, ``finish_reason``."""
    if isinstance(template, dict):
        choice = {"index": 0, "delta": {}, "finish_reason": finish_reason, "logprobs": None}
        return {**template, "choices": [choice]}
    from openai.types.chat.chat_completion_chunk import Choice, ChoiceDelta

    return template.model_copy(
        update={"choices": [Choice(index=0, delta=ChoiceDelta(), finish_reason=finish_reason)], "usage": None}
    )


def error_body(
    message: str,
    *,
    status: int | None = None,
    code: str | None = None,
    type: str | None = None,
    param: str | None = None,
) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}``: the shape the openai SDK makes an ``APIError``.

    ``type`` defaults from ``status`` (``invalid_request_error``, ``rate_limit_error``, ``upstream_error``).
    """
    if type is None:
        status = status or 400
        type = _STATUS_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def exception_code(exc: BaseException) -> str:
    """The snake_case error ``code`` for one of toolguard's exceptions (``server_error`` for any other)."""
    if isinstance(exc, GuardError) and getattr(exc.violation, "kind", None) in ERROR_CODES:
        return str(exc.violation.kind)
    for cls, code in _EXCEPTION_CODES:
        if isinstance(exc, cls):
            return code
    return "server_error"


def parse_retry_after(headers: Any, *, now: float | None = None) -> float | None:
    """Seconds to wait per ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), else ``None``.

    ``headers``: anything with ``.get`` (httpx/openai headers, a dict); a malformed value reads as absent."""
    try:
        ms = headers.get("retry-after-ms")
        value = headers.get("retry-after")
    except AttributeError:
        return None
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except (TypeError, ValueError):
            pass
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
