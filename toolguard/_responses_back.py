"""The Responses API the other way round: the flow's chat requests as Responses requests, answers as chat.

Theory of operation. ``toolguard._responses`` serves a Responses client over a chat upstream; the SDK
wrapper (``toolguard.wrap(openai.OpenAI()).responses.create``) needs the reverse around the same flow: the
caller's Responses request runs as the chat request ``_responses.to_chat`` makes; ``to_responses`` turns each
chat request the flow sends (the first, a re-ask, a runaway or truncation retry) back into a Responses
request (the caller's input items as they came, the flow's additions as ``function_call`` and
``function_call_output`` items, its ``max_tokens``/``temperature`` as ``max_output_tokens``/``temperature``;
a chat ``seed`` has no Responses field: not sent), and ``chat_completion`` turns a ``response`` object into
the chat completion the Guard reads. Decides nothing; O(size of the request or response).
"""

from __future__ import annotations

import json
from typing import Any

from ._messages import _count

__all__ = ["chat_completion", "to_responses"]

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
