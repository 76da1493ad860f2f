"""The Responses API the other way round: the flow's chat requests as Responses requests, answers as chat.

Theory of operation. ``toolguard._responses`` serves a Responses client over a chat upstream; the SDK
wrapper (``toolguard.wrap(openai.OpenAI()).responses.create``) needs the reverse around the same flow: the
caller's Responses request runs as the chat request ``_responses.to_chat`` makes; ``to_responses`` turns each
chat request the flow sends (the first, a re-ask, a runaway or truncation retry) back into a Responses
request (the caller's input items as they came, the flow's additions as ``function_call`` and
``function_call_output`` items, its ``max_tokens``/``temperature`` as ``max_output_tokens``/``temperature``;
a chat ``seed`` has no Responses field: not sent), ``chat_completion`` turns a ``response`` object into
the chat completion the Guard reads, and ``ResponsesReader`` turns a Responses stream, event by event, into
the chat chunks the Guard reads (the reverse of ``_responses.ResponsesStream``, which writes the released
chunks back as Responses events). Reasoning (``reasoning_text`` deltas) is ``reasoning_content``: passed
through unjudged, never a call. Decides nothing; O(size of the request or response), O(1) per stream
event beyond the bytes it carries.
"""

from __future__ import annotations

import json
from typing import Any

from ._exceptions import UpstreamError, UpstreamProtocolError
from ._messages import _count
from ._messages_back import _get
from ._responses import REASONING_ITEM_KEY


def _plain(item: Any) -> dict[str, Any]:
    """An output item as a dict: as it came, or an SDK object's fields."""
    if isinstance(item, dict):
        return dict(item)
    dump = getattr(item, "model_dump", None)
    return dump(exclude_none=True, mode="json") if callable(dump) else {}

__all__ = ["ResponsesReader", "chat_completion", "to_responses"]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def to_responses(original: dict[str, Any], chat: dict[str, Any], sent: int) -> dict[str, Any]:
    """The Responses request for the flow's chat request ``chat``; ``sent``: how many chat messages
    ``to_chat(original)`` made (only those after them are the flow's and are translated)."""
    body = {k: v for k, v in original.items() if k != "stream"}
    added = chat.get("messages", ())[sent:]
    items: Any = original.get("input")
    if added:  # a string input stays a string until the flow appends to it
        items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items or ())
    for m in added:
        role = m.get("role")
        if role == "assistant":
            if isinstance(m.get("content"), str) and m["content"]:
                items.append({"type": "message", "role": "assistant", "content": m["content"]})
            for call in m.get("tool_calls") or ():
                fn = call.get("function") or {}
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.get("id"),
                        "name": fn.get("name") or "",
                        "arguments": fn.get("arguments") or "",
                    }
                )
        elif role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": m.get("tool_call_id"), "output": m.get("content")}
            )
        else:
            items.append({"type": "message", "role": "user", "content": m.get("content") or ""})
    if added:
        body["input"] = items
    if isinstance(chat.get("max_tokens"), int):
        body["max_output_tokens"] = chat["max_tokens"]
    if isinstance(chat.get("temperature"), int | float):
        body["temperature"] = chat["temperature"]
    return body


def chat_completion(response: dict[str, Any]) -> dict[str, Any]:
    """The chat completion the Guard reads for a ``response`` object (a ``model_dump()`` of the SDK's)."""
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in response.get("output") or ():
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or ():
                if part.get("type") == "output_text":
                    texts.append(part.get("text") or "")
        elif kind == "reasoning":
            reasoning.extend(p.get("text") or "" for p in item.get("content") or ())
        elif kind == "function_call":
            calls.append(
                {
                    "id": item.get("call_id"),
                    "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""},
                }
            )
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    incomplete = (response.get("incomplete_details") or {}).get("reason")
    # a cut is a cut even with a call in it: the flow retries a truncated call with more room
    finish = {"max_output_tokens": "length", "content_filter": "content_filter"}.get(
        incomplete or "", "tool_calls" if calls else "stop"
    )
    usage = response.get("usage") or {}
    prompt, completion = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
    return {
        "id": "chatcmpl-" + str(response.get("id") or "").removeprefix("resp_"),
        "object": "chat.completion",
        "created": response.get("created_at"),
        "model": response.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


#: ``incomplete_details.reason`` -> chat ``finish_reason`` (a cut is a cut even with a call in it).
_CUT = {"max_output_tokens": "length", "content_filter": "content_filter"}


class ResponsesReader:
    """A Responses upstream's stream events in (dicts, or the openai SDK's event objects), chat chunks out.

    ``feed(event)`` returns the chat chunks (dicts) the event makes, often none (``response.created`` only
    sets the ids), a ``function_call`` item's ``output_item.added`` the call's first chunk (chat call indices
    count the function calls), each ``output_text.delta``/``function_call_arguments.delta``/
    ``reasoning_text.delta`` one chunk, ``response.completed``/``response.incomplete`` the finish chunk and
    the usage chunk (``done`` turns true). ``response.failed`` and ``error`` raise ``UpstreamError``; an
    arguments delta of no started call, or an output item the chat view cannot carry,
    ``UpstreamProtocolError``. ``response_id`` is the upstream's, once known."""

    __slots__ = ("_calls", "_id", "_items", "done", "response_id")

    def __init__(self) -> None:
        self._id = "chatcmpl-responses"
        self._items: dict[Any, int] = {}  # a function_call item's id -> its chat call index
        self._calls = 0
        self.done = False
        self.response_id: str | None = None

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": self._id, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def feed(self, event: Any) -> list[dict[str, Any]]:
        kind = _get(event, "type")
        if kind == "response.output_text.delta":
            text = _get(event, "delta")
            return [self._chunk({"content": text})] if text else []
        if kind == "response.function_call_arguments.delta":
            call = self._items.get(_get(event, "item_id"))
            if call is None:
                raise UpstreamProtocolError(
                    "an arguments delta for an item that is not a started function call"
                )
            fragment = _get(event, "delta")
            if not fragment:
                return []
            return [self._chunk({"tool_calls": [{"index": call, "function": {"arguments": fragment}}]})]
        if kind == "response.reasoning_text.delta":
            thinking = _get(event, "delta")
            return [self._chunk({"reasoning_content": thinking})] if thinking else []
        if kind == "response.output_item.added":
            return self._added(_get(event, "item"))
        if kind == "response.output_item.done" and _get(_get(event, "item"), "type") == "reasoning":
            return [self._chunk({REASONING_ITEM_KEY: _plain(_get(event, "item"))})]
        if kind == "response.created":
            response = _get(event, "response")
            rid = _get(response, "id")
            if isinstance(rid, str):
                self.response_id = rid
                self._id = "chatcmpl-" + rid.removeprefix("resp_")
            return []
        if kind in ("response.completed", "response.incomplete"):
            return self._end(_get(event, "response"))
        if kind in ("response.failed", "error"):
            error = _get(_get(event, "response"), "error") if kind == "response.failed" else event
            code, message = _get(error, "code"), _get(error, "message")
            raise UpstreamError(f"the upstream's stream failed: {code}: {message}")
        return []  # in_progress, the .done events, content parts, events of later versions

    def _added(self, item: Any) -> list[dict[str, Any]]:
        kind = _get(item, "type")
        if kind == "function_call":
            call = self._calls
            self._calls += 1
            self._items[_get(item, "id")] = call
            start = {"name": _get(item, "name"), "arguments": _get(item, "arguments") or ""}
            first = {"index": call, "id": _get(item, "call_id"), "type": "function", "function": start}
            return [self._chunk({"tool_calls": [first]})]
        if kind == "reasoning":  # its id, for the client's item (REASONING_ITEM_KEY)
            return [self._chunk({REASONING_ITEM_KEY: _plain(item)})]
        if kind == "message":
            return []
        raise UpstreamProtocolError(f"a {kind!r} output item has no chat form to be guarded in")

    def _end(self, response: Any) -> list[dict[str, Any]]:
        self.done = True
        reason = _get(_get(response, "incomplete_details"), "reason")
        finish = _CUT.get(reason or "", "tool_calls" if self._calls else "stop")
        usage = _get(response, "usage")
        prompt, completion = _count(_get(usage, "input_tokens")), _count(_get(usage, "output_tokens"))
        chat_usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        return [self._chunk({}, finish), {"id": self._id, "choices": [], "usage": chat_usage}]
