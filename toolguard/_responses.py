"""The OpenAI Responses API over Chat Completions: request, answer and stream, translated both ways.

Theory of operation. Like ``toolguard._messages``, this module decides nothing: it is a sans-IO translation so
that a ``POST /v1/responses`` runs through the one guarded chat flow (the Guard, the re-ask flow, the release
gate) unchanged. ``to_chat(body)`` turns a Responses request into the chat request that flow runs:
``instructions`` and ``developer``/``system`` items become system messages, ``function`` tools (``{"type":
"function", "name", "parameters", "strict"}``) become chat function tools, ``tool_choice``
``auto``/``none``/``required``/``{"type": "function", "name"}`` the chat forms, ``function_call`` items
``tool_calls`` and ``function_call_output`` items ``role: tool`` messages; ``max_output_tokens`` is the chat
``max_tokens``. What it cannot carry faithfully is a ``ProtocolRefusal`` (a 400 naming the field), never
dropped in silence, except the fields ``DROPPED`` lists (the README's mapping table). ``from_chat`` turns the
released chat completion into a ``response`` object (``output`` items ``message`` with ``output_text`` and
``function_call``; a cut is ``status: "incomplete"``). ``ResponsesStream`` turns the released chat chunks, one
at a time, into Responses stream events (``response.created``, ``response.output_item.added``,
``response.output_text.delta``, ``response.function_call_arguments.delta``/``.done``,
``response.output_item.done``, ``response.completed``); reasoning (``reasoning_content``) is a ``reasoning``
item, passed through unjudged; an error after the stream began is ``response.failed``, nothing after it.
Errors before it are OpenAI-format bodies already (the chat path's), so the openai SDK raises its typed
exceptions. Work: O(1) per chunk beyond the bytes translated.
"""

from __future__ import annotations

import json
import time
import uuid
from json.encoder import encode_basestring as _escape
from typing import Any

from ._messages import ProtocolRefusal, _count, _reasoning, _stream_and_tools

__all__ = ["DROPPED", "REASONING_ITEM_KEY", "ResponsesStream", "encode_event", "from_chat", "to_chat"]

#: The chat delta key carrying a Responses upstream's reasoning item as it came (``ResponsesReader`` writes
#: it when the item begins and when it finishes; ``ResponsesStream`` gives the client's item its id,
#: ``encrypted_content`` and summary): the chat view has no field for them.
REASONING_ITEM_KEY = "toolguard_reasoning_item"
#: The fields of that item the client's reasoning item takes when it finishes.
_KEPT_REASONING = ("encrypted_content", "summary")

#: Request fields accepted and not carried to the chat upstream (the README's table lists them).
DROPPED = frozenset(
    {
        "store",
        "metadata",
        "reasoning",
        "truncation",
        "service_tier",
        "include",
        "prompt_cache_key",
        "safety_identifier",
        "top_logprobs",
        "stream_options",
    }
)
_CARRIED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "max_output_tokens",
        "temperature",
        "top_p",
        "stream",
        "user",
        "text",
        "background",
    }
)
#: Chat finish reasons that end a response ``incomplete`` (a runaway cut reads as ``max_output_tokens``).
_INCOMPLETE = {
    "length": "max_output_tokens",
    "repetition": "max_output_tokens",
    "content_filter": "content_filter",
}

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


# ------------------------------------------------------------------------------------------------- request
def to_chat(body: Any) -> dict[str, Any]:
    """The chat-completions request for a Responses request. Raises ``ProtocolRefusal``."""
    if not isinstance(body, dict):
        raise ProtocolRefusal("the request body must be a JSON object")
    unknown = sorted(set(body) - _CARRIED - DROPPED)
    if unknown:
        hint = (
            " (the proxy keeps no state: send the whole input)"
            if unknown[0] in ("previous_response_id", "conversation")
            else ""
        )
        raise ProtocolRefusal(
            f"field {unknown[0]!r} is not supported by toolguard's Responses translation{hint}", unknown[0]
        )
    if "model" not in body:
        raise ProtocolRefusal("model: field required", "model")
    if body.get("background"):
        raise ProtocolRefusal("background responses are not supported by the proxy", "background")
    text = body.get("text")
    text_format = text.get("format") or {"type": "text"} if isinstance(text, dict) else None
    if text is not None and (
        not isinstance(text_format, dict)
        or text_format.get("type") != "text"
        or set(text) - {"format", "verbosity"}
    ):
        raise ProtocolRefusal("text: only the plain text format is translated", "text")
    messages: list[dict[str, Any]] = []
    if body.get("instructions") is not None:
        if not isinstance(body["instructions"], str):
            raise ProtocolRefusal("instructions must be a string", "instructions")
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
    elif isinstance(items, list):
        for i, item in enumerate(items):
            _item(item, f"input.{i}", messages)
    else:
        raise ProtocolRefusal("input must be a string or an array of items", "input")
    chat: dict[str, Any] = {"model": body["model"], "messages": messages}
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    for name in ("temperature", "top_p", "parallel_tool_calls", "user"):
        if body.get(name) is not None:
            chat[name] = body[name]
    _stream_and_tools(body, chat, _tool)
    if body.get("tool_choice") is not None:
        chat["tool_choice"] = _tool_choice(body["tool_choice"])
    return chat


def _content(content: Any, where: str) -> Any:
    """A message item's content: a string, or chat content parts (text joined when all text)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ProtocolRefusal(f"{where}.content must be a string or an array of parts", where)
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            parts.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        else:
            raise ProtocolRefusal(f"{where}.content.{j}: a {kind!r} part is not translated", where)
    if all(p["type"] == "text" for p in parts):
        return "".join(p["text"] for p in parts)
    return parts


def _item(item: Any, where: str, messages: list[dict[str, Any]]) -> None:
    if not isinstance(item, dict):
        raise ProtocolRefusal(f"{where}: an input item must be an object", where)
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        if role not in ("user", "assistant", "system", "developer"):
            raise ProtocolRefusal(f"{where}.role must be user, assistant, system or developer", where)
        messages.append(
            {
                "role": "system" if role == "developer" else role,
                "content": _content(item.get("content"), where),
            }
        )
    elif kind == "function_call":
        if not all(isinstance(item.get(k), str) for k in ("call_id", "name", "arguments")):
            raise ProtocolRefusal(f"{where}: a function_call needs string call_id, name and arguments", where)
        call = {
            "id": item["call_id"],
            "type": "function",
            "function": {"name": item["name"], "arguments": item["arguments"]},
        }
        last = messages[-1] if messages else None
        if (
            last is not None
            and last["role"] == "assistant"
            and isinstance(last.get("content"), (str, type(None)))
        ):
            last.setdefault("tool_calls", []).append(call)  # one assistant turn: its text and its calls
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    elif kind == "function_call_output":
        if not isinstance(item.get("call_id"), str):
            raise ProtocolRefusal(f"{where}: a function_call_output needs a string call_id", where)
        output = item.get("output")
        text = output if isinstance(output, str) else _content(output, where)
        if not isinstance(text, str):
            raise ProtocolRefusal(f"{where}.output: only text is translated", where)
        messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": text})
    elif kind == "reasoning":
        return  # the chat upstream has no field for it; never validated as a call
    else:
        raise ProtocolRefusal(f"{where}: a {kind!r} item is not translated to chat completions", where)


def _tool(t: Any, where: str) -> dict[str, Any]:
    if not isinstance(t, dict) or t.get("type") != "function":
        kind = t.get("type") if isinstance(t, dict) else None
        raise ProtocolRefusal(f"{where}: the {kind!r} tool is not translated (function tools only)", where)
    if not isinstance(t.get("name"), str):
        raise ProtocolRefusal(f"{where}: a function tool needs a string name", where)
    function: dict[str, Any] = {"name": t["name"], "parameters": t.get("parameters") or {"type": "object"}}
    for key in ("description", "strict"):
        if t.get(key) is not None:
            function[key] = t[key]
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise ProtocolRefusal("tool_choice must be auto, none, required or {type: function, name}", "tool_choice")


# -------------------------------------------------------------------------------------------------- answer
def _usage(usage: Any) -> dict[str, Any]:
    usage = usage if isinstance(usage, dict) else {}
    i, o = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    return {
        "input_tokens": i,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": o,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": i + o,
    }


def _id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def _skeleton(request: dict[str, Any], response_id: str, created: int) -> dict[str, Any]:
    """The ``response`` object's fields that echo the request."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": "in_progress",
        "model": str(request.get("model") or ""),
        "output": [],
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "metadata": request.get("metadata") or {},
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "temperature": request.get("temperature"),
        "top_p": request.get("top_p"),
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "max_output_tokens": request.get("max_output_tokens"),
        "text": {"format": {"type": "text"}},
        "usage": None,
    }


def _message_item(text: str, item_id: str, status: str = "completed") -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": [part]}


def _reasoning_item(text: str, item_id: str, status: str = "completed") -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": item_id,
        "status": status,
        "summary": [],
        "content": [{"type": "reasoning_text", "text": text}],
    }


def _call_item(
    call_id: str, name: str, arguments: str, item_id: str, status: str = "completed"
) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


def _end(out: dict[str, Any], finish: str | None, called: bool) -> dict[str, Any]:
    reason = None if called else _INCOMPLETE.get(finish or "stop")
    out["status"] = "incomplete" if reason else "completed"
    out["incomplete_details"] = {"reason": reason} if reason else None
    return out


def from_chat(completion: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The ``response`` object for a released chat completion of ``request`` (the Responses request)."""
    choice = completion["choices"][0]
    message = choice.get("message") or {}
    chat_id = completion.get("id")
    rid = (
        "resp_" + chat_id.removeprefix("chatcmpl-") if isinstance(chat_id, str) and chat_id else _id("resp_")
    )
    out = _skeleton(request, rid, int(completion.get("created") or time.time()))
    thinking = _reasoning(message)
    if thinking:
        out["output"].append(_reasoning_item(thinking, _id("rs_")))
    if isinstance(message.get("content"), str) and message["content"]:
        out["output"].append(_message_item(message["content"], _id("msg_")))
    for call in message.get("tool_calls") or ():
        fn = call.get("function") or {}
        out["output"].append(
            _call_item(
                call.get("id") or _id("call_"), fn.get("name") or "", fn.get("arguments") or "{}", _id("fc_")
            )
        )
    out["usage"] = _usage(completion.get("usage"))
    return _end(out, choice.get("finish_reason"), bool(message.get("tool_calls")))


#: The delta events, one per released chunk, written from a template: the same bytes as the generic
#: encoding (tests/test_protocol_wires.py), at a fraction of its CPU. ``_template`` fills in the item's part
#: (once per item: the stream keeps it); ``% (sequence_number, delta JSON)`` completes an event.
_TEXT_DELTA = (
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":%%d,'
    b'"item_id":%s,"output_index":%d,"content_index":0,"delta":%%s,"logprobs":[]}\n\n'
)
_ARGUMENTS_DELTA = (
    b"event: response.function_call_arguments.delta\ndata: "
    b'{"type":"response.function_call_arguments.delta","sequence_number":%%d,"item_id":%s,"output_index":%d,'
    b'"delta":%%s}\n\n'
)


def _template(template: bytes, item_id: str, output_index: int) -> bytes:
    return template % (_dumps(item_id).encode().replace(b"%", b"%%"), output_index)


def encode_event(data: dict[str, Any]) -> bytes:
    """One Responses SSE event: ``event: <type>`` and its ``data`` line."""
    kind = data["type"]
    template = None
    if kind == "response.output_text.delta" and len(data) == 7:
        if data["content_index"] == 0 and data["logprobs"] == []:
            template = _TEXT_DELTA
    elif kind == "response.function_call_arguments.delta" and len(data) == 5:
        template = _ARGUMENTS_DELTA
    if template is not None:
        template = _template(template, data["item_id"], data["output_index"])
        return template % (data["sequence_number"], _escape(data["delta"]).encode())
    return b"event: " + str(kind).encode() + b"\ndata: " + _dumps(data).encode("utf-8") + b"\n\n"


# -------------------------------------------------------------------------------------------------- stream
class ResponsesStream:
    """Released chat chunks in, Responses stream events out: ``feed(chunk)``, then ``close()``.

    One output item is open at a time: the message (its one ``output_text`` part) or the ``function_call`` of
    one chat call index; a new kind or index finishes the open item (``.done`` events) and adds the next."""

    __slots__ = (
        "_calls",
        "_delta",
        "_ended",
        "_finish",
        "_items",
        "_open",
        "_response",
        "_seq",
        "_started",
        "_text",
        "_upstream_item",
    )

    def __init__(self, request: dict[str, Any], *, response_id: str | None = None) -> None:
        self._response = _skeleton(request, response_id or _id("resp_"), int(time.time()))
        self._started = False
        self._ended = False
        self._seq = 0
        self._items: list[dict[str, Any]] = []  # finished output items
        self._open: tuple[str, int, dict[str, Any]] | None = None  # (kind, chat index, the item in progress)
        self._text: list[str] = []  # the open item's text or arguments so far
        self._delta = b""  # the open item's delta template (``_template``)
        self._calls: set[int] = set()
        self._finish: str | None = None
        self._upstream_item: dict[str, Any] | None = None  # an upstream reasoning item (REASONING_ITEM_KEY)

    def feed(self, chunk: Any) -> list[dict[str, Any]]:
        if self._ended or not isinstance(chunk, dict):
            return []
        if isinstance(chunk.get("error"), dict):
            return self.error(chunk)
        out = self._start()
        if isinstance(chunk.get("usage"), dict):
            self._response["usage"] = _usage(chunk["usage"])
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            kept = delta.get(REASONING_ITEM_KEY)
            if type(kept) is dict and isinstance(kept.get("id"), str):
                upstream = self._upstream_item
                if upstream is not None and upstream["id"] == kept["id"]:
                    upstream.update(kept)  # the item finished: its encrypted content, its summary
                else:
                    self._upstream_item = dict(kept)
            thinking = _reasoning(delta)  # passed through as a reasoning item, never judged
            if thinking:
                if self._open is None or self._open[0] != "reasoning":
                    upstream = self._upstream_item
                    rid = upstream["id"] if upstream is not None else _id("rs_")
                    out.extend(self._add("reasoning", -1, _reasoning_item("", rid, "in_progress")))
                item = self._open[2]  # type: ignore[index]
                self._text.append(thinking)
                out.append(
                    self._event(
                        "response.reasoning_text.delta",
                        item_id=item["id"],
                        output_index=len(self._items),
                        content_index=0,
                        delta=thinking,
                    )
                )
            text = delta.get("content")
            if isinstance(text, str) and text:
                out.extend(self._text_events(text))
            for call in delta.get("tool_calls") or ():
                index = call.get("index", 0)
                fn = call.get("function") or {}
                if self._open is None or self._open[:2] != ("call", index):
                    if index in self._calls:
                        continue
                    self._calls.add(index)
                    item = _call_item(
                        call.get("id") or _id("call_"), fn.get("name") or "", "", _id("fc_"), "in_progress"
                    )
                    out.extend(self._add("call", index, item))
                fragment = fn.get("arguments")
                if isinstance(fragment, str) and fragment:
                    out.append(self._arguments_event(fragment))
            if choice.get("finish_reason"):
                self._finish = choice["finish_reason"]
        return out

    def text_sse(self, text: str) -> bytes:
        """The encoded events (``encode_event``'s bytes) of a chunk whose delta is ``{"content": text}``
        alone: the proxy's fast path, an open message's delta written from its template (no event dict)."""
        if self._ended or not text:
            return b""
        if self._open is None or self._open[0] != "message":
            return b"".join([encode_event(e) for e in self._start() + self._text_events(text)])
        self._text.append(text)
        self._seq += 1
        return self._delta % (self._seq - 1, _escape(text).encode())

    def arguments_sse(self, index: int, fragment: str) -> bytes:
        """The same for a chunk whose delta continues call ``index``'s arguments alone."""
        if self._ended or self._open is None or self._open[:2] != ("call", index) or not fragment:
            call = {"index": index, "function": {"arguments": fragment}}
            return b"".join(
                [encode_event(e) for e in self.feed({"choices": [{"delta": {"tool_calls": [call]}}]})]
            )
        self._text.append(fragment)
        self._seq += 1
        return self._delta % (self._seq - 1, _escape(fragment).encode())

    def _text_events(self, text: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self._open is None or self._open[0] != "message":
            out.extend(self._add("message", -1, _message_item("", _id("msg_"), "in_progress")))
            part = {"type": "output_text", "text": "", "annotations": []}
            out.append(
                self._event(
                    "response.content_part.added",
                    item_id=self._open[2]["id"],  # type: ignore[index]
                    output_index=len(self._items),
                    content_index=0,
                    part=part,
                )
            )
        self._text.append(text)
        item = self._open[2]  # type: ignore[index]
        out.append(
            self._event(
                "response.output_text.delta",
                item_id=item["id"],
                output_index=len(self._items),
                content_index=0,
                delta=text,
                logprobs=[],
            )
        )
        return out

    def _arguments_event(self, fragment: str) -> dict[str, Any]:
        item = self._open[2]  # type: ignore[index]
        self._text.append(fragment)
        return self._event(
            "response.function_call_arguments.delta",
            item_id=item["id"],
            output_index=len(self._items),
            delta=fragment,
        )

    def close(self) -> list[dict[str, Any]]:
        """The chat stream's end (``[DONE]``): finish the open item, then ``response.completed``."""
        if self._ended:
            return []
        out = self._start() + self._done()
        self._ended = True
        response = _end({**self._response, "output": list(self._items)}, self._finish, bool(self._calls))
        if response["usage"] is None:
            response["usage"] = _usage(None)
        kind = "response.completed" if response["status"] == "completed" else "response.incomplete"
        out.append(self._event(kind, response=response))
        return out

    def error(self, openai_body: Any) -> list[dict[str, Any]]:
        """``response.failed`` for an OpenAI-format error body; nothing follows it."""
        if self._ended:
            return []
        out = self._start()
        self._ended = True
        err = openai_body.get("error") if isinstance(openai_body, dict) else None
        err = err if isinstance(err, dict) else {}
        error: dict[str, Any] = {
            "code": str(err.get("code") or "server_error"),
            "message": str(err.get("message") or "the response failed"),
        }
        if err.get("toolguard") is not None:
            error["toolguard"] = err["toolguard"]
        response = {**self._response, "status": "failed", "error": error, "output": list(self._items)}
        out.append(self._event("response.failed", response=response))
        return out

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self._seq, **fields}
        self._seq += 1
        return event

    def _start(self) -> list[dict[str, Any]]:
        if self._started:
            return []
        self._started = True
        return [
            self._event("response.created", response=dict(self._response)),
            self._event("response.in_progress", response=dict(self._response)),
        ]

    def _add(self, kind: str, index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
        out = self._done()
        self._open = (kind, index, item)
        self._delta = _template(
            _TEXT_DELTA if kind == "message" else _ARGUMENTS_DELTA, item["id"], len(self._items)
        )
        out.append(self._event("response.output_item.added", output_index=len(self._items), item=dict(item)))
        return out

    def _done(self) -> list[dict[str, Any]]:
        if self._open is None:
            return []
        kind, _, item = self._open
        self._open = None
        at = len(self._items)
        out = []
        text = "".join(self._text)
        self._text = []
        if kind == "message":
            item = _message_item(text, item["id"])
            out.append(
                self._event(
                    "response.output_text.done",
                    item_id=item["id"],
                    output_index=at,
                    content_index=0,
                    text=text,
                    logprobs=[],
                )
            )
            out.append(
                self._event(
                    "response.content_part.done",
                    item_id=item["id"],
                    output_index=at,
                    content_index=0,
                    part=item["content"][0],
                )
            )
        elif kind == "reasoning":
            item = _reasoning_item(text, item["id"])
            upstream, self._upstream_item = self._upstream_item, None
            if upstream is not None and upstream["id"] == item["id"]:
                item.update({k: upstream[k] for k in _KEPT_REASONING if k in upstream})
            out.append(
                self._event(
                    "response.reasoning_text.done",
                    item_id=item["id"],
                    output_index=at,
                    content_index=0,
                    text=text,
                )
            )
        else:
            item = {**item, "arguments": text, "status": "completed"}
            out.append(
                self._event(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=at,
                    name=item["name"],
                    arguments=item["arguments"],
                )
            )
        self._items.append(item)
        out.append(self._event("response.output_item.done", output_index=at, item=item))
        return out
