"""The ``chat.completions`` face of a ``toolguard.local.LocalGenerator``, for ``wrap``.

``LocalCompletions.create(**openai_kwargs)`` maps the OpenAI request onto ``LocalGenerator.chat``
(``max_tokens`` / ``max_completion_tokens`` become ``max_new_tokens``; ``stream_options.include_usage``
becomes ``include_usage``; ``model`` is ignored) and returns what the generator returns: ``chat.completion``
dicts, or an iterator of ``chat.completion.chunk`` dicts with a ``close()``. The generator never shows a
truncated call as a call (its own Guard judged it truncated; it reports the open call's name and arguments so
far under ``toolguard.truncated_call``); so that the wrapper's Guard sees it too and retries with more room,
that open call is put back as a partial tool call into the message (or a chunk) the Guard reads. Those are
only ever seen by the Guard: a truncated attempt is retried or raised, never returned.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["LocalCompletions"]

_OPTIONS = ("tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p", "seed")


class LocalCompletions:
    """``create`` over ``LocalGenerator.chat`` (see the module docstring)."""

    def __init__(self, generator: Any) -> None:
        self.generator = generator

    def create(self, **kwargs: Any) -> Any:
        messages = kwargs.get("messages") or []
        options: dict[str, Any] = {k: kwargs[k] for k in _OPTIONS if kwargs.get(k) is not None}
        limit = kwargs.get("max_completion_tokens") or kwargs.get("max_tokens")
        if limit:
            options["max_new_tokens"] = int(limit)
        if kwargs.get("stream"):
            usage = bool((kwargs.get("stream_options") or {}).get("include_usage"))
            chunks = self.generator.chat(list(messages), stream=True, include_usage=usage, **options)
            return _LocalStream(chunks)
        completion = self.generator.chat(list(messages), **options)
        truncated = _truncated(completion)
        if truncated is not None:
            choice = completion["choices"][0]
            message = dict(choice.get("message") or {})
            calls = list(message.get("tool_calls") or [])
            calls.append(_partial_call(truncated, len(calls)))
            message["tool_calls"] = calls
            completion = {**completion, "choices": [{**choice, "message": message}]}
        return completion


def _truncated(result: dict[str, Any]) -> dict[str, Any] | None:
    """The open call a result reports as cut by the length limit (``{"name", "arguments"}``), if any; a call
    whose name was still being written comes back nameless (the Guard then reads it as truncated too)."""
    info = result.get("toolguard") or {}
    if not info.get("truncated"):
        return None
    return info.get("truncated_call") or {"name": "", "arguments": ""}


def _partial_call(call: dict[str, Any], index: int) -> dict[str, Any]:
    """A tool-call entry for the open ``call`` cut by the length limit."""
    name, arguments = call["name"], call["arguments"]
    return {
        "id": f"truncated_{index}",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


class _LocalStream:
    """The generator's chunks with ``close()``; a truncated call comes back as a partial call chunk."""

    def __init__(self, chunks: Iterator[dict[str, Any]]) -> None:
        self._chunks = chunks
        self._iterator = self._run()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._iterator

    def _run(self) -> Iterator[dict[str, Any]]:
        calls = 0
        for chunk in self._chunks:
            choices = chunk.get("choices") or []
            if choices:
                delta = choices[0].get("delta") or {}
                for tc in delta.get("tool_calls") or ():
                    calls = max(calls, tc.get("index", 0) + 1)
                truncated = _truncated(chunk)
                if truncated is not None and choices[0].get("finish_reason"):
                    partial = _partial_call(truncated, calls)
                    partial["index"] = calls
                    yield {**chunk, "choices": [{"index": 0, "delta": {"tool_calls": [partial]}}]}
            yield chunk

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()
