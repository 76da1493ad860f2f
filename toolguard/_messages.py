"""Anthropic Messages over Chat Completions: the request, the answer and the stream, translated both ways.

Theory of operation. This module decides nothing: it is a sans-IO translation so that a ``POST /v1/messages``
runs through the one guarded chat flow (the Guard, the re-ask flow and the release gate) unchanged.
``to_chat(body)`` turns a Messages request into the chat request that flow runs (``tools`` with
``input_schema`` become function tools, ``tool_choice`` ``auto``/``any``/``tool``/``none`` become ``auto``/
``required``/named/``none``, ``tool_use`` blocks become ``tool_calls``, ``tool_result`` blocks ``role: tool``
messages); anything it cannot carry faithfully is a ``ProtocolRefusal`` (a 400 naming the field), never
dropped in silence, except the fields ``DROPPED`` lists (documented in the README's mapping table).
``from_chat(completion)`` turns the released chat completion back into a ``message`` (``tool_calls`` ->
``tool_use`` blocks, ``finish_reason`` -> ``stop_reason``, usage -> ``input_tokens``/``output_tokens``).
Reasoning (``reasoning_content``) becomes a ``thinking`` block, passed through unjudged as the chat path
passes it. ``MessagesStream`` turns the released chat chunks, one at a time, into Messages stream events
(``message_start``, ``content_block_start``/``delta``/``stop`` with ``text_delta`` and ``input_json_delta``,
``message_delta``, ``message_stop``); an OpenAI-format error event becomes the ``error`` event. ``error_body``
gives Anthropic's error shape, so the official ``anthropic`` SDK raises its own typed exceptions. Work: O(1)
per chunk beyond the bytes translated. The SDK wrapper (``toolguard.wrap(anthropic.Anthropic())``) runs the
other way round: ``toolguard._messages_back``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from json.encoder import encode_basestring as _escape
from typing import Any

__all__ = [
    "DROPPED",
    "STOP_REASONS",
    "MessagesStream",
    "ProtocolRefusal",
    "encode_event",
    "error_body",
    "from_chat",
    "to_chat",
]

#: Request fields accepted and not carried to the chat upstream (the README's table lists them).
DROPPED = frozenset({"metadata", "thinking", "service_tier", "top_k", "cache_control"})
_CARRIED = frozenset(
    {
        "model",
        "max_tokens",
        "messages",
        "system",
        "stop_sequences",
        "stream",
        "temperature",
        "top_p",
        "tools",
        "tool_choice",
    }
)

#: Chat ``finish_reason`` -> Messages ``stop_reason`` (a runaway cut reads as ``max_tokens``: not finished).
STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "repetition": "max_tokens",
    "content_filter": "refusal",
}

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class ProtocolRefusal(ValueError):
    """A request the translation cannot carry faithfully: a 400 naming ``param``."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


# ------------------------------------------------------------------------------------------------- request
def to_chat(body: Any) -> dict[str, Any]:
    """The chat-completions request for a Messages request. Raises ``ProtocolRefusal``."""
    if not isinstance(body, dict):
        raise ProtocolRefusal("the request body must be a JSON object")
    unknown = sorted(set(body) - _CARRIED - DROPPED)
    if unknown:
        raise ProtocolRefusal(
            f"field {unknown[0]!r} is not supported by toolguard's Messages translation", unknown[0]
        )
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            raise ProtocolRefusal(f"{name}: field required", name)
    if not isinstance(body["max_tokens"], int) or isinstance(body["max_tokens"], bool):
        raise ProtocolRefusal("max_tokens must be an integer", "max_tokens")
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system is not None:
        messages.append({"role": "system", "content": _text_of(system, "system")})
    if not isinstance(body["messages"], list):
        raise ProtocolRefusal("messages must be an array", "messages")
    for i, m in enumerate(body["messages"]):
        messages.extend(_message(m, f"messages.{i}"))
    chat: dict[str, Any] = {"model": body["model"], "messages": messages, "max_tokens": body["max_tokens"]}
    for src, dst in (("temperature", "temperature"), ("top_p", "top_p"), ("stop_sequences", "stop")):
        if body.get(src) is not None:
            chat[dst] = body[src]
    _stream_and_tools(body, chat, _tool)
    choice = body.get("tool_choice")
    if choice is not None:
        chat.update(_tool_choice(choice))
    return chat


def _stream_and_tools(body: dict[str, Any], chat: dict[str, Any], tool: Callable[[Any, str], Any]) -> None:
    """What every protocol's chat view shares: ``stream`` with usage asked, and the ``tools`` array, each
    tool in chat's form by ``tool(spec, where)`` (Messages and Responses each read their own tool form)."""
    if body.get("stream"):
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}
    tools = body.get("tools")
    if tools:
        if not isinstance(tools, list):
            raise ProtocolRefusal("tools must be an array", "tools")
        chat["tools"] = [tool(t, f"tools.{i}") for i, t in enumerate(tools)]


def _text_of(value: Any, where: str) -> str:
    """A string, or an array of text blocks joined (``system``, a ``tool_result``'s content)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for j, block in enumerate(value):
            if (
                not isinstance(block, dict)
                or block.get("type") != "text"
                or not isinstance(block.get("text"), str)
            ):
                kind = block.get("type") if isinstance(block, dict) else type(block).__name__
                raise ProtocolRefusal(
                    f"{where}.{j}: only text blocks are translated here, not {kind!r}", where
                )
            parts.append(block["text"])
        return "\n".join(parts)
    raise ProtocolRefusal(f"{where} must be a string or an array of text blocks", where)


def _message(m: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
        raise ProtocolRefusal(f"{where}: a message needs role 'user' or 'assistant'", where)
    content = m.get("content")
    if isinstance(content, str):
        return [{"role": m["role"], "content": content}]
    if not isinstance(content, list):
        raise ProtocolRefusal(f"{where}.content must be a string or an array of blocks", where)
    if m["role"] == "assistant":
        return [_assistant(content, where)]
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for j, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        at = f"{where}.content.{j}"
        if kind == "tool_result":
            result = block.get("content", "")
            text = _text_of(result, at + ".content") if result is not None else ""
            if block.get("is_error"):
                text = "Error: " + text
            if not isinstance(block.get("tool_use_id"), str):
                raise ProtocolRefusal(f"{at}.tool_use_id: a string is required", at)
            out.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": text})
        elif kind == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
        elif (
            kind == "image"
            and isinstance(block.get("source"), dict)
            and block["source"].get("type") == "base64"
        ):
            src = block["source"]
            url = f"data:{src.get('media_type')};base64,{src.get('data')}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            raise ProtocolRefusal(f"{at}: a {kind!r} block is not translated to chat completions", at)
    if parts:
        if all(p["type"] == "text" for p in parts):
            out.append({"role": "user", "content": "\n".join(p["text"] for p in parts)})
        else:
            out.append({"role": "user", "content": parts})
    return out


def _assistant(content: list[Any], where: str) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        at = f"{where}.content.{j}"
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise ProtocolRefusal(f"{at}: a tool_use block needs a string id and name", at)
            calls.append(
                {
                    "id": block["id"],
                    "type": "function",
                    "function": {"name": block["name"], "arguments": _dumps(block.get("input", {}))},
                }
            )
        elif kind in ("thinking", "redacted_thinking"):
            continue  # the chat upstream has no field for them; never validated as calls
        else:
            raise ProtocolRefusal(f"{at}: a {kind!r} block is not translated to chat completions", at)
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _tool(t: Any, where: str) -> dict[str, Any]:
    if not isinstance(t, dict) or not isinstance(t.get("name"), str):
        raise ProtocolRefusal(f"{where}: a tool needs a string name", where)
    if t.get("type") not in (None, "custom"):
        raise ProtocolRefusal(
            f"{where}: the server tool {t.get('type')!r} is not translated to chat completions", where
        )
    function: dict[str, Any] = {"name": t["name"], "parameters": t.get("input_schema", {"type": "object"})}
    if isinstance(t.get("description"), str):
        function["description"] = t["description"]
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> dict[str, Any]:
    kind = choice.get("type") if isinstance(choice, dict) else None
    out: dict[str, Any]
    if kind == "auto":
        out = {"tool_choice": "auto"}
    elif kind == "any":
        out = {"tool_choice": "required"}
    elif kind == "none":
        out = {"tool_choice": "none"}
    elif kind == "tool" and isinstance(choice.get("name"), str):
        out = {"tool_choice": {"type": "function", "function": {"name": choice["name"]}}}
    else:
        raise ProtocolRefusal("tool_choice must be auto, any, none or {type: tool, name}", "tool_choice")
    if choice.get("disable_parallel_tool_use") and kind != "none":
        out["parallel_tool_calls"] = False
    return out


# -------------------------------------------------------------------------------------------------- answer
def _usage(usage: Any) -> dict[str, int]:
    usage = usage if isinstance(usage, dict) else {}
    return {
        "input_tokens": _count(usage.get("prompt_tokens")),
        "output_tokens": _count(usage.get("completion_tokens")),
    }


def _count(value: Any) -> int:
    """A token count from the upstream's usage (0 for anything that is not a non-negative integer)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def from_chat(completion: dict[str, Any], *, model: str | None = None) -> dict[str, Any]:
    """The Messages ``message`` for a released chat completion."""
    choice = completion["choices"][0]
    message = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    thinking = _reasoning(message)
    if thinking:
        signature = message.get("thinking_signature")
        signature = signature if isinstance(signature, str) else ""
        content.append({"type": "thinking", "thinking": thinking, "signature": signature})
    if isinstance(message.get("redacted_thinking"), str):
        content.append({"type": "redacted_thinking", "data": message["redacted_thinking"]})
    if isinstance(message.get("content"), str) and message["content"]:
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or ():
        fn = call.get("function") or {}
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id") or _id("toolu_"),
                "name": fn.get("name"),
                "input": json.loads(fn.get("arguments") or "{}"),
            }
        )
    reason = choice.get("finish_reason")
    stop = "tool_use" if message.get("tool_calls") else STOP_REASONS.get(reason or "stop", "end_turn")
    return {
        "id": _message_id(completion.get("id")),
        "type": "message",
        "role": "assistant",
        "model": model or completion.get("model") or "",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _usage(completion.get("usage")),
    }


def _reasoning(message: Any) -> str | None:
    """The reasoning text of a chat message or delta (vLLM's ``reasoning_content``, or ``reasoning``)."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key) if isinstance(message, dict) else None
        if isinstance(value, str) and value:
            return value
    return None


def error_body(status: int, openai_body: Any) -> dict[str, Any]:
    """Anthropic's ``{"type": "error", "error": {"type", "message"}}`` for an OpenAI-format error body.

    The OpenAI ``code`` and toolguard's verdict detail (``error.toolguard``) ride along in ``error``."""
    err = openai_body.get("error") if isinstance(openai_body, dict) else None
    err = err if isinstance(err, dict) else {}
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 or status == 0 else "invalid_request_error")
    out: dict[str, Any] = {"type": kind, "message": str(err.get("message") or f"HTTP {status}")}
    for key in ("code", "param", "toolguard"):
        if err.get(key) is not None:
            out[key] = err[key]
    return {"type": "error", "error": out}


#: The two delta events, one per released chunk, written from a template: the same bytes as the generic
#: encoding (tests/test_protocol_wires.py), at a fraction of its CPU.
_DELTAS = {
    "text_delta": b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,'
    b'"delta":{"type":"text_delta","text":%s}}\n\n',
    "input_json_delta": b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,'
    b'"delta":{"type":"input_json_delta","partial_json":%s}}\n\n',
}


def encode_event(name: str, data: dict[str, Any]) -> bytes:
    """One Messages SSE event: ``event: <name>`` and its ``data`` line."""
    if name == "content_block_delta":
        delta = data["delta"]
        template = _DELTAS.get(delta["type"])
        if template is not None and len(delta) == 2:
            value = delta["text" if delta["type"] == "text_delta" else "partial_json"]
            return template % (data["index"], _escape(value).encode())
    return b"event: " + name.encode() + b"\ndata: " + _dumps(data).encode("utf-8") + b"\n\n"


def _id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def _message_id(chat_id: Any) -> str:
    return "msg_" + chat_id.removeprefix("chatcmpl-") if isinstance(chat_id, str) and chat_id else _id("msg_")


# -------------------------------------------------------------------------------------------------- stream
class MessagesStream:
    """Released chat chunks in, Messages stream events out: ``feed(chunk)``, then ``close()``.

    Each returns a list of ``(event name, data)``. One content block is open at a time: text, or the
    ``tool_use`` of one chat call index; a new kind or index stops the open block and starts the next."""

    __slots__ = ("_blocks", "_calls", "_ended", "_model", "_open", "_started", "_stop", "_usage")

    def __init__(self, *, model: str) -> None:
        self._model = model
        self._started = False
        self._ended = False
        self._blocks = 0  # content blocks started
        self._open: tuple[str, int] | None = None  # ("text", -1) or ("tool", chat index)
        self._calls: set[int] = set()
        self._stop: str | None = None
        self._usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}

    def feed(self, chunk: Any) -> list[tuple[str, dict[str, Any]]]:
        if self._ended or not isinstance(chunk, dict):
            return []
        if isinstance(chunk.get("error"), dict):
            return self.error(200, chunk)
        out = self._start(chunk.get("id"))
        if isinstance(chunk.get("usage"), dict):
            self._usage = _usage(chunk["usage"])
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            thinking = _reasoning(delta)  # passed through as a thinking block, never judged
            if thinking:
                if self._open != ("thinking", -1):
                    out.extend(
                        self._begin(("thinking", -1), {"type": "thinking", "thinking": "", "signature": ""})
                    )
                out.append(self._delta({"type": "thinking_delta", "thinking": thinking}))
            signature = delta.get("thinking_signature")  # a Messages upstream's, read by _messages_back
            if isinstance(signature, str) and signature:
                if self._open != ("thinking", -1):
                    out.extend(
                        self._begin(("thinking", -1), {"type": "thinking", "thinking": "", "signature": ""})
                    )
                out.append(self._delta({"type": "signature_delta", "signature": signature}))
            redacted = delta.get("redacted_thinking")
            if isinstance(redacted, str) and redacted:
                out.extend(
                    self._begin(("redacted", self._blocks), {"type": "redacted_thinking", "data": redacted})
                )
            text = delta.get("content")
            if isinstance(text, str) and text:
                out.extend(self._text(text))
            for call in delta.get("tool_calls") or ():
                index = call.get("index", 0)
                fn = call.get("function") or {}
                if self._open != ("tool", index):
                    if index in self._calls:  # a call resumed after another block: not a Messages stream
                        continue
                    self._calls.add(index)
                    block: dict[str, Any] = {
                        "type": "tool_use",
                        "id": call.get("id") or _id("toolu_"),
                        "name": fn.get("name") or "",
                        "input": {},
                    }
                    out.extend(self._begin(("tool", index), block))
                fragment = fn.get("arguments")
                if isinstance(fragment, str) and fragment:
                    out.append(self._delta({"type": "input_json_delta", "partial_json": fragment}))
            if choice.get("finish_reason"):
                self._stop = choice["finish_reason"]
        return out

    def text_sse(self, text: str) -> bytes:
        """The encoded events (``encode_event``'s bytes) of a chunk whose delta is ``{"content": text}``
        alone: the proxy's fast path, an open text block's delta written from its template (no event dict)."""
        if self._ended or not text:
            return b""
        if self._open != ("text", -1):
            return b"".join([encode_event(*e) for e in self._start(None) + self._text(text)])
        return _DELTAS["text_delta"] % (self._blocks - 1, _escape(text).encode())

    def arguments_sse(self, index: int, fragment: str) -> bytes:
        """The same for a chunk whose delta continues call ``index``'s arguments alone."""
        if self._ended or self._open != ("tool", index) or not fragment:
            call = {"index": index, "function": {"arguments": fragment}}
            return b"".join(
                [encode_event(*e) for e in self.feed({"choices": [{"delta": {"tool_calls": [call]}}]})]
            )
        return _DELTAS["input_json_delta"] % (self._blocks - 1, _escape(fragment).encode())

    def _text(self, text: str) -> list[tuple[str, dict[str, Any]]]:
        out = [] if self._open == ("text", -1) else self._begin(("text", -1), {"type": "text", "text": ""})
        out.append(self._delta({"type": "text_delta", "text": text}))
        return out

    def close(self) -> list[tuple[str, dict[str, Any]]]:
        """The chat stream's end (``[DONE]``): stop the open block, ``message_delta``, ``message_stop``."""
        if self._ended:
            return []
        out = self._start(None) + self._end_block()
        self._ended = True
        stop = "tool_use" if self._calls else STOP_REASONS.get(self._stop or "stop", "end_turn")
        out.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": dict(self._usage),
                },
            )
        )
        out.append(("message_stop", {"type": "message_stop"}))
        return out

    def error(self, status: int, openai_body: Any) -> list[tuple[str, dict[str, Any]]]:
        """The ``error`` event for an OpenAI-format error body; nothing follows it."""
        if self._ended:
            return []
        self._ended = True
        return [("error", error_body(status, openai_body))]

    def _start(self, chat_id: Any) -> list[tuple[str, dict[str, Any]]]:
        if self._started:
            return []
        self._started = True
        message: dict[str, Any] = {
            "id": _message_id(chat_id),
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return [("message_start", {"type": "message_start", "message": message})]

    def _begin(self, key: tuple[str, int], block: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        out = self._end_block()
        self._open = key
        out.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": self._blocks, "content_block": block},
            )
        )
        self._blocks += 1
        return out

    def _delta(self, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return (
            "content_block_delta",
            {"type": "content_block_delta", "index": self._blocks - 1, "delta": delta},
        )

    def _end_block(self) -> list[tuple[str, dict[str, Any]]]:
        if self._open is None:
            return []
        self._open = None
        return [("content_block_stop", {"type": "content_block_stop", "index": self._blocks - 1})]
