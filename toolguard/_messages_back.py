"""Anthropic Messages the other way round: the flow's chat requests as Messages requests, a Messages
upstream's answers and streams as the chat the Guard reads.

Theory of operation. ``toolguard._messages`` serves a Messages client over a chat upstream; the SDK wrapper
(``toolguard.wrap(anthropic.Anthropic())``) needs the reverse around the same flow: the caller's Messages
request runs as the chat request ``_messages.to_chat`` makes; ``to_messages`` turns each chat request the
flow sends (the first, a re-ask, a runaway or truncation retry) back into a Messages request;
``chat_completion`` turns a ``message`` into the chat completion the Guard reads, and ``MessagesReader``
turns a Messages stream, event by event, into the chat chunks the Guard reads (the reverse of
``_messages.MessagesStream``, which writes the released chunks back as Messages events). Thinking passes
through unjudged: a ``thinking`` block is ``reasoning_content`` (its ``signature`` rides as
``thinking_signature``, a ``redacted_thinking`` block's data as ``redacted_thinking``), never a call.
Decides nothing; O(1) per event beyond the bytes it carries.
"""

from __future__ import annotations

import json
from typing import Any

from ._exceptions import UpstreamError, UpstreamProtocolError
from ._messages import _count, _dumps

__all__ = ["FINISH_REASONS", "MessagesReader", "chat_completion", "to_messages"]

#: Messages ``stop_reason`` -> chat ``finish_reason`` (for a Messages upstream's answer read by the Guard).
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


def to_messages(original: dict[str, Any], chat: dict[str, Any], sent: int) -> dict[str, Any]:
    """The Messages request for the flow's chat request ``chat``, made from the caller's ``original``.

    ``sent``: how many chat messages ``to_chat(original)`` made. The caller's own turns are kept as they came;
    only the turns the flow appended (a re-ask's failed assistant turn and its violation) are translated:
    ``tool_calls`` become ``tool_use`` blocks, ``role: tool`` messages ``tool_result`` blocks with
    ``is_error: true`` (every tool message a re-ask adds is an error), a user message a text block; a call
    whose arguments were no JSON object (streamed, cut) is a ``tool_use`` with an empty ``input``. The
    flow's ``max_tokens`` (grown for a truncation) and ``temperature`` (a runaway retry, clamped to
    Messages' 0..1) replace the original's; a chat-only ``seed`` has no Messages field and is not sent.
    """
    body = {k: v for k, v in original.items() if k != "stream"}
    added: list[dict[str, Any]] = []
    for m in chat.get("messages", ())[sent:]:
        role = m.get("role")
        if role == "assistant":
            blocks: list[dict[str, Any]] = []
            if isinstance(m.get("content"), str) and m["content"]:
                blocks.append({"type": "text", "text": m["content"]})
            for call in m.get("tool_calls") or ():
                fn = call.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = None
                if not isinstance(args, dict):  # not JSON (streamed): the tool_result says what was wrong
                    args = {}
                blocks.append({"type": "tool_use", "id": call["id"], "name": fn.get("name"), "input": args})
            new: dict[str, Any] = {"role": "assistant", "content": blocks or "(no answer)"}
        elif role == "tool":
            new = {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": m.get("tool_call_id"),
                        "content": m.get("content") or "",
                        "is_error": True,
                    }
                ],
            }
        else:
            new = {"role": "user", "content": [{"type": "text", "text": m.get("content") or ""}]}
        if added and added[-1]["role"] == new["role"] == "user":
            added[-1]["content"] = [*added[-1]["content"], *new["content"]]  # one turn answers every call
        else:
            added.append(new)
    body["messages"] = [*original.get("messages", ()), *added]
    if isinstance(chat.get("max_tokens"), int):
        body["max_tokens"] = chat["max_tokens"]
    temperature = chat.get("temperature")
    if isinstance(temperature, int | float) and temperature != original.get("temperature"):
        body["temperature"] = min(1.0, max(0.0, float(temperature)))
    return body


def chat_completion(message: dict[str, Any]) -> dict[str, Any]:
    """The chat completion the Guard reads for a Messages ``message`` (a ``model_dump()`` of the SDK's)."""
    texts: list[str] = []
    thinking: list[str] = []
    signatures: list[str] = []
    redacted: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in message.get("content") or ():
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "thinking":
            thinking.append(block.get("thinking") or "")
            if block.get("signature"):
                signatures.append(block["signature"])
        elif kind == "redacted_thinking" and isinstance(block.get("data"), str):
            redacted.append(block["data"])
        elif kind == "tool_use":
            calls.append(
                {
                    "id": block.get("id"),
                    "type": "function",
                    "function": {"name": block.get("name"), "arguments": _dumps(block.get("input", {}))},
                }
            )
    chat_message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        chat_message["tool_calls"] = calls
    if thinking:
        chat_message["reasoning_content"] = "".join(thinking)
    if signatures:
        chat_message["thinking_signature"] = signatures[-1]
    if redacted:
        chat_message["redacted_thinking"] = redacted[0]
    usage = message.get("usage") or {}
    prompt, completion = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
    return {
        "id": "chatcmpl-" + str(message.get("id") or "").removeprefix("msg_"),
        "object": "chat.completion",
        "model": message.get("model"),
        "choices": [
            {
                "index": 0,
                "message": chat_message,
                "finish_reason": FINISH_REASONS.get(message.get("stop_reason") or "end_turn", "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _get(obj: Any, name: str) -> Any:
    """A field of a stream event: a dict's (the wire form) or an SDK object's attribute."""
    return obj.get(name) if type(obj) is dict else getattr(obj, name, None)


class MessagesReader:
    """A Messages upstream's stream events in (dicts, or the anthropic SDK's event objects), chat chunks out.

    ``feed(event)`` returns the chat chunks (dicts) the event makes, often none (``message_start`` only
    sets the id and the input tokens): a ``tool_use`` block's start the call's first chunk (chat call
    indices count the ``tool_use`` blocks), each ``text_delta``/``input_json_delta``/``thinking_delta``/
    ``signature_delta`` one chunk, ``message_delta`` the finish chunk and the usage chunk. ``done`` turns
    true at ``message_stop``. An ``error`` event raises ``UpstreamError``; a delta of a block never
    started, or a block kind the chat view cannot carry, ``UpstreamProtocolError``."""

    __slots__ = ("_blocks", "_calls", "_id", "_input", "done")

    def __init__(self) -> None:
        self._id = "chatcmpl-messages"
        self._blocks: dict[int, int] = {}  # upstream index of a tool_use block -> its chat call index
        self._calls = 0
        self._input = 0
        self.done = False

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": self._id, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def feed(self, event: Any) -> list[dict[str, Any]]:
        kind = _get(event, "type")
        if kind == "content_block_delta":
            delta = _get(event, "delta")
            dkind = _get(delta, "type")
            if dkind == "text_delta":
                text = _get(delta, "text")
                return [self._chunk({"content": text})] if text else []
            if dkind == "input_json_delta":
                call = self._blocks.get(_get(event, "index"))
                if call is None:
                    raise UpstreamProtocolError(
                        "an input_json_delta for a block that is not a started tool_use"
                    )
                fragment = _get(delta, "partial_json")
                if not fragment:
                    return []
                return [self._chunk({"tool_calls": [{"index": call, "function": {"arguments": fragment}}]})]
            if dkind == "thinking_delta":
                thinking = _get(delta, "thinking")
                return [self._chunk({"reasoning_content": thinking})] if thinking else []
            if dkind == "signature_delta":
                signature = _get(delta, "signature")
                return [self._chunk({"thinking_signature": signature})] if signature else []
            return []  # citations and the like: nothing the Guard judges
        if kind == "content_block_start":
            return self._start(_get(event, "index"), _get(event, "content_block"))
        if kind == "message_start":
            message = _get(event, "message")
            message_id = _get(message, "id")
            if isinstance(message_id, str):
                self._id = "chatcmpl-" + message_id.removeprefix("msg_")
            self._input = _count(_get(_get(message, "usage"), "input_tokens"))
            return []  # nothing to judge: the caller's stream starts with what is released first
        if kind == "message_delta":
            reason = _get(_get(event, "delta"), "stop_reason")
            output = _count(_get(_get(event, "usage"), "output_tokens"))
            usage = {
                "prompt_tokens": self._input,
                "completion_tokens": output,
                "total_tokens": self._input + output,
            }
            return [
                self._chunk({}, FINISH_REASONS.get(reason or "end_turn", "stop")),
                {"id": self._id, "choices": [], "usage": usage},
            ]
        if kind == "message_stop":
            self.done = True
            return []
        if kind == "error":
            error = _get(event, "error")
            raise UpstreamError(
                f"the upstream's stream failed: {_get(error, 'type')}: {_get(error, 'message')}"
            )
        return []  # ping, content_block_stop, events of later versions

    def _start(self, index: Any, block: Any) -> list[dict[str, Any]]:
        kind = _get(block, "type")
        if kind == "text":
            text = _get(block, "text")
            return [self._chunk({"content": text})] if text else []
        if kind == "tool_use":
            call = self._calls
            self._calls += 1
            self._blocks[index] = call
            initial = _get(block, "input")
            arguments = _dumps(initial) if initial else ""
            start = {"name": _get(block, "name"), "arguments": arguments}
            return [
                self._chunk(
                    {
                        "tool_calls": [
                            {"index": call, "id": _get(block, "id"), "type": "function", "function": start}
                        ]
                    }
                )
            ]
        if kind == "thinking":
            out = []
            if _get(block, "thinking"):
                out.append(self._chunk({"reasoning_content": _get(block, "thinking")}))
            if _get(block, "signature"):
                out.append(self._chunk({"thinking_signature": _get(block, "signature")}))
            return out
        if kind == "redacted_thinking":
            return [self._chunk({"redacted_thinking": _get(block, "data") or ""})]
        raise UpstreamProtocolError(f"a {kind!r} content block has no chat form to be guarded in")
