"""The ScriptedUpstream's own encoders for Anthropic Messages and the OpenAI Responses API.

A FAKE's wire code, written from the public wire shapes (the official SDKs' types, what vLLM emits), never
from toolguard's translators: a fake must not share code with what it tests. Each function renders one
scripted ``Reply`` (through its chat deltas: ``Reply.deltas``) as the real API would: a whole answer
(``anthropic_message``, ``response``) or the SSE events of a stream (``messages_events``,
``responses_events``), plus each protocol's error event and a malformed event for the fault knobs.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .scripted_upstream import Reply

__all__ = [
    "MODEL",
    "anthropic_message",
    "chat_usage",
    "error_event",
    "malformed_event",
    "messages_events",
    "response",
    "responses_events",
]

MODEL = "scripted-model"
_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def chat_usage(reply: Reply) -> dict[str, int]:
    """The reply's chat usage (``prompt_tokens`` 10, a completion token per delta, unless scripted)."""
    if reply.usage is not None:
        return dict(reply.usage)
    completion = len(reply.deltas(iter(str(i) for i in itertools.count())))
    return {"prompt_tokens": 10, "completion_tokens": completion, "total_tokens": 10 + completion}


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


# ---------------------------------------------------------------------------------------------- Messages
def anthropic_message(reply: Reply, message_id: str, call_ids: Iterator[str]) -> dict[str, Any]:
    """The reply as Anthropic's Messages API answers: ``thinking``, ``text`` and ``tool_use`` blocks
    (``input`` parsed: the Messages wire has no unparsed arguments, so a reply whose arguments are not JSON
    cannot be sent whole, unless it was cut by the token limit: then ``input`` is ``{}``)."""
    message = reply.message(call_ids)
    content: list[dict[str, Any]] = []
    if message.get("reasoning_content"):
        content.append(
            {"type": "thinking", "thinking": message["reasoning_content"], "signature": reply.signature}
        )
    if reply.redacted is not None:
        content.append({"type": "redacted_thinking", "data": reply.redacted})
    if message.get("content"):
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or ():
        fn = call["function"]
        try:
            arguments = json.loads(fn["arguments"])
        except ValueError:
            if reply.finish != "length":
                raise
            arguments = {}  # cut by the token limit inside the call: the API sends what parsed (nothing)
        content.append({"type": "tool_use", "id": call["id"], "name": fn["name"], "input": arguments})
    usage = chat_usage(reply)
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": _STOP_REASONS.get(reply.finish, "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]},
    }


def messages_events(reply: Reply, message_id: str, call_ids: Iterator[str]) -> list[bytes]:
    """The reply as a Messages SSE stream: ``message_start``, ``ping``, one content block per run of one
    kind (``thinking`` with ``thinking_delta`` and a closing ``signature_delta``, then a ``redacted_thinking``
    block whole in its start event; ``text`` with
    ``text_delta``; ``tool_use`` per call with ``input_json_delta.partial_json``), ``message_delta`` (stop
    reason, usage), ``message_stop``. Arguments stream as scripted, whether or not they are JSON."""
    usage = chat_usage(reply)
    start = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": 1},
    }
    out = [
        _event("message_start", {"type": "message_start", "message": start}),
        _event("ping", {"type": "ping"}),
    ]
    index = -1
    open_kind: tuple[str, int] | None = None

    def stop() -> None:
        nonlocal open_kind
        if open_kind is None:
            return
        if open_kind[0] == "thinking":
            delta = {"type": "signature_delta", "signature": reply.signature}
            out.append(
                _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
        out.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
        open_kind = None

    def begin(kind: tuple[str, int], block: dict[str, Any]) -> None:
        nonlocal index, open_kind
        stop()
        index += 1
        open_kind = kind
        out.append(
            _event(
                "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
            )
        )

    def delta(d: dict[str, Any]) -> None:
        out.append(_event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}))

    redacted = reply.redacted

    def redact() -> None:  # the redacted_thinking block, whole in its start event, after the thinking
        nonlocal redacted
        if redacted is not None:
            begin(("redacted", 0), {"type": "redacted_thinking", "data": redacted})
            redacted = None
            stop()

    for d in reply.deltas(call_ids):
        if not d.get("reasoning_content") and (d.get("content") or d.get("tool_calls")):
            redact()
        if d.get("reasoning_content"):
            if open_kind != ("thinking", 0):
                begin(("thinking", 0), {"type": "thinking", "thinking": "", "signature": ""})
            delta({"type": "thinking_delta", "thinking": d["reasoning_content"]})
        if d.get("content"):
            if open_kind != ("text", 0):
                begin(("text", 0), {"type": "text", "text": ""})
            delta({"type": "text_delta", "text": d["content"]})
        for tc in d.get("tool_calls") or ():
            fn = tc.get("function") or {}
            if tc.get("id"):
                begin(
                    ("tool", tc["index"]),
                    {"type": "tool_use", "id": tc["id"], "name": fn.get("name"), "input": {}},
                )
            if fn.get("arguments"):
                delta({"type": "input_json_delta", "partial_json": fn["arguments"]})
    redact()
    stop()
    message_delta = {
        "type": "message_delta",
        "delta": {"stop_reason": _STOP_REASONS.get(reply.finish, "end_turn"), "stop_sequence": None},
        "usage": {"output_tokens": usage["completion_tokens"]},
    }
    out.append(_event("message_delta", message_delta))
    out.append(_event("message_stop", {"type": "message_stop"}))
    return out


# --------------------------------------------------------------------------------------------- Responses
def _response_usage(usage: dict[str, int]) -> dict[str, Any]:
    return {
        "input_tokens": usage["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"],
    }


def _response_object(
    reply: Reply, response_id: str, status: str, output: list[Any], usage: Any
) -> dict[str, Any]:
    cut = status == "incomplete"
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


def response(reply: Reply, response_id: str, call_ids: Iterator[str]) -> dict[str, Any]:
    """The reply as OpenAI's Responses API answers: ``reasoning``, ``message`` and ``function_call`` output
    items, a cut (``finish_reason="length"``) as ``status: "incomplete"``."""
    message = reply.message(call_ids)
    output: list[dict[str, Any]] = []
    if message.get("reasoning_content"):
        output.append(_reasoning_item("rs_1", message["reasoning_content"], "completed", reply.signature))
    if message.get("content"):
        output.append(_message_item("msg_1", message["content"], "completed"))
    for n, call in enumerate(message.get("tool_calls") or ()):
        fn = call["function"]
        output.append(_call_item(f"fc_{n}", call["id"], fn["name"], fn["arguments"], "completed"))
    status = "incomplete" if reply.finish == "length" else "completed"
    return _response_object(reply, response_id, status, output, _response_usage(chat_usage(reply)))


def _message_item(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    content = (
        [] if text is None else [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    )
    return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}


def _reasoning_item(
    item_id: str, text: str | None, status: str, encrypted: str | None = None
) -> dict[str, Any]:
    """A reasoning item; a finished one carries ``encrypted_content`` (as with ``include:
    ["reasoning.encrypted_content"]``), which the chat view cannot hold."""
    content = [] if text is None else [{"type": "reasoning_text", "text": text}]
    item = {"type": "reasoning", "id": item_id, "summary": [], "content": content, "status": status}
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def _call_item(item_id: str, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


def responses_events(reply: Reply, response_id: str, call_ids: Iterator[str]) -> list[bytes]:
    """The reply as a Responses SSE stream (``response.created``, ``response.in_progress``, per output item
    ``response.output_item.added``, its deltas and ``.done`` events, ``response.output_item.done``, then
    ``response.completed``, or ``response.incomplete`` for a cut), every event numbered
    (``sequence_number``)."""
    seq = itertools.count()
    out: list[bytes] = []
    items: list[dict[str, Any]] = []
    open_item: dict[str, Any] | None = None
    texts: list[str] = []

    def emit(kind: str, **fields: Any) -> None:
        out.append(_event(kind, {"type": kind, "sequence_number": next(seq), **fields}))

    def done() -> None:
        nonlocal open_item
        if open_item is None:
            return
        item, at, text = open_item, len(items), "".join(texts)
        texts.clear()
        kind = item["type"]
        if kind == "message":
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            emit(
                "response.output_text.done",
                item_id=item["id"],
                output_index=at,
                content_index=0,
                text=text,
                logprobs=[],
            )
            emit(
                "response.content_part.done", item_id=item["id"], output_index=at, content_index=0, part=part
            )
            item = _message_item(item["id"], text, "completed")
        elif kind == "reasoning":
            emit(
                "response.reasoning_text.done",
                item_id=item["id"],
                output_index=at,
                content_index=0,
                text=text,
            )
            item = _reasoning_item(item["id"], text, "completed", reply.signature)
        else:
            emit("response.function_call_arguments.done", item_id=item["id"], output_index=at, arguments=text)
            item = _call_item(item["id"], item["call_id"], item["name"], text, "completed")
        emit("response.output_item.done", output_index=at, item=item)
        items.append(item)
        open_item = None

    def add(item: dict[str, Any]) -> None:
        nonlocal open_item
        done()
        open_item = item
        emit("response.output_item.added", output_index=len(items), item=item)

    in_progress = _response_object(reply, response_id, "in_progress", [], None)
    emit("response.created", response=in_progress)
    emit("response.in_progress", response=in_progress)
    for d in reply.deltas(call_ids):
        if d.get("reasoning_content"):
            if open_item is None or open_item["type"] != "reasoning":
                add(_reasoning_item(f"rs_{len(items)}", None, "in_progress"))
            texts.append(d["reasoning_content"])
            emit(
                "response.reasoning_text.delta",
                item_id=open_item["id"],
                output_index=len(items),  # type: ignore[index]
                content_index=0,
                delta=d["reasoning_content"],
            )
        if d.get("content"):
            if open_item is None or open_item["type"] != "message":
                add(_message_item(f"msg_{len(items)}", None, "in_progress"))
                part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                emit(
                    "response.content_part.added",
                    item_id=open_item["id"],
                    output_index=len(items),  # type: ignore[index]
                    content_index=0,
                    part=part,
                )
            texts.append(d["content"])
            emit(
                "response.output_text.delta",
                item_id=open_item["id"],
                output_index=len(items),  # type: ignore[index]
                content_index=0,
                delta=d["content"],
                logprobs=[],
            )
        for tc in d.get("tool_calls") or ():
            fn = tc.get("function") or {}
            if tc.get("id"):
                add(_call_item(f"fc_{len(items)}", tc["id"], fn.get("name") or "", "", "in_progress"))
            if fn.get("arguments"):
                texts.append(fn["arguments"])
                emit(
                    "response.function_call_arguments.delta",
                    item_id=open_item["id"],  # type: ignore[index]
                    output_index=len(items),
                    delta=fn["arguments"],
                )
    done()
    status = "incomplete" if reply.finish == "length" else "completed"
    final = _response_object(reply, response_id, status, items, _response_usage(chat_usage(reply)))
    emit(f"response.{status}", response=final)
    return out


# ------------------------------------------------------------------------------------------------ faults
def error_event(protocol: str, message: str, sequence_number: int) -> bytes:
    """The protocol's error event inside a stream (chat: an OpenAI error object as a ``data:`` line)."""
    if protocol == "messages":
        return _event("error", {"type": "error", "error": {"type": "overloaded_error", "message": message}})
    if protocol == "responses":
        error = {
            "type": "error",
            "code": "server_error",
            "message": message,
            "param": None,
            "sequence_number": sequence_number,
        }
        return _event("error", error)
    body = {"error": {"message": message, "type": "server_error", "param": None, "code": "scripted"}}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def malformed_event(protocol: str) -> bytes:
    """A broken event: its ``data`` line is not JSON (then the stream ends)."""
    if protocol == "messages":
        return b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {\n\n'
    if protocol == "responses":
        return b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", \n\n'
    return b'data: {"id": "broken", "choices": [\n\ndata: [DONE]\n\n'
