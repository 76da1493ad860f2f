"""Wire shapes of chat completions: upstream chunks in, Guard events out; canonical chunks back out.

``read_chunk`` turns one upstream ``chat.completion.chunk`` into the Guard's events (``ContentDelta``,
``ToolCallDelta``, ``Finish``) plus what the Guard does not judge (usage, reasoning deltas). ``ChunkWriter``
writes the canonical OpenAI stream the client reads: the role once, each call's ``id``/``type``/``name`` once
per index, argument fragments, a truthful ``finish_reason``, the usage chunk, ``[DONE]``. The writer
pre-encodes the constant head of every chunk, so a content or argument chunk costs one ``json.dumps`` of the
fragment. Both are sans-IO and O(size of the chunk).
"""

from __future__ import annotations

import json
from typing import Any

from .._events import ContentDelta, Finish, ToolCallDelta

__all__ = ["ChunkWriter", "UpstreamChunk", "read_chunk", "sum_usage"]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# Delta keys forwarded as they are: the Guard does not judge them.
_PASSTHROUGH_DELTA_KEYS = ("reasoning_content", "reasoning", "refusal")


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
        delta = choice.get("delta")
        if type(delta) is dict and delta:
            content = delta.get("content")
            if content and type(content) is str:
                events.append(ContentDelta(content))
            calls = delta.get("tool_calls")
            if calls:
                for i, tc in enumerate(calls):
                    if type(tc) is not dict:
                        continue
                    fn = tc.get("function") or {}
                    index = tc.get("index", i)
                    events.append(
                        ToolCallDelta(
                            index if type(index) is int else i,
                            tc.get("id") or None,
                            fn.get("name") or None,
                            fn.get("arguments") or "",
                        )
                    )
            if len(delta) > (content is not None) + (calls is not None) + ("role" in delta):
                for key in _PASSTHROUGH_DELTA_KEYS:
                    value = delta.get(key)
                    if value:
                        extra = extra or {}
                        extra[key] = value
        finish = choice.get("finish_reason")
        if finish:
            events.append(Finish(finish))
    return UpstreamChunk(events, extra, usage if type(usage) is dict else None, None, obj)


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

    def finish(self, reason: str) -> bytes:
        return self.delta({}, reason)

    def usage(self, usage: dict[str, Any]) -> bytes:
        return b"data: " + _dumps({**self._head, "choices": [], "usage": usage}).encode() + b"\n\n"
