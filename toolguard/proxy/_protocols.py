"""``POST /v1/messages`` and ``POST /v1/responses``: the guarded chat flow behind another wire.

Theory of operation. The route translates the request with the protocol's sans-IO wire module
(``toolguard._messages``, ``toolguard._responses``) into its chat view, then runs the proxy's own chat handler
(``_chat.handle_chat``: the Guard, the re-ask flow, the release gate, the engine constraints) on it unchanged,
with ``send`` wrapped by ``_Translating``. Only the upstream hop depends on what the upstream speaks: the
request's ``NativeHop`` (``_native``, chosen by ``protocols``) sends each attempt to the upstream's own
``/v1/messages`` or ``/v1/responses`` in the protocol's terms and reads the answer back as chat (native), or
sends the chat request to its chat completions (translated: a chat-only upstream, found by a 404 and
remembered, or ``protocols: translate``). Either way the handler sees chat and ``_Translating`` sees what the
handler would have sent its client and sends the protocol's own form instead: a JSON body is read whole and
translated (a 200 completion into the protocol's answer, with a native upstream's thinking blocks or reasoning
items as they came; an OpenAI-format error into the protocol's error at the same status, a body already in
Anthropic's shape as it came; the ``x-toolguard-*`` headers kept, ``x-toolguard-protocol: native|translated``
added); an SSE body is decoded event by event (``SSEDecoder``) and each released chunk translated at once, so
nothing is held longer than the gate holds it (a native Messages stream's thinking signatures are written
where their block closes, its redacted thinking blocks before the first block that is not thinking). The chat
writer's text and arguments chunks (nearly all of a stream) take a fast path: a body that is one such event
whole is read on its bytes (its fixed head and tail around one JSON string: ``_one``; within a body of
several, ``_fast``) and the protocol's delta event is written from the open item's byte template
(``text_sse``/``arguments_sse``), no event dict and no JSON encoder; anything else is decoded and read in
full. The wrapper mirrors ``_Responder``'s ``started``/``complete``/``sse`` so the app's terminal errors
(deadline, upstream failure) pass through it and arrive translated too. No rule lives here. Work: O(bytes
moved).
"""

from __future__ import annotations

import json
from collections import deque
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any

from .. import _messages, _responses
from ._native import REASONING_KEY, THINKING_KEY, NativeHop
from ._respond import error_body, send_json
from ._sse import DEFAULT_MAX_LINE_BYTES, SSEDecoder

if TYPE_CHECKING:
    from ._app import ProxyApp
    from ._respond import Receive
    from ._upstream import Deadline

__all__ = ["ROUTES", "serve"]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class _Messages:
    """The Messages wire (``toolguard._messages``) as the route needs it: errors in Anthropic's shape."""

    route = "messages"
    to_chat = staticmethod(_messages.to_chat)

    def __init__(self, body: dict[str, Any]) -> None:
        self.model = str(body.get("model") or "")
        self.stream = _messages.MessagesStream(model=self.model)
        self.hop: NativeHop | None = None  # set by ``serve``: a native hop's thinking signatures
        self._thinking = -1  # the client stream's open thinking block
        self._shift = 0  # blocks inserted into the client stream (a native stream's redacted thinking)
        self._last = -1  # the client stream's last block index

    @staticmethod
    def error_body(status: int, openai_body: Any) -> Any:
        """Anthropic's error shape; a body in that shape already (a Messages upstream's) as it came."""
        if (
            isinstance(openai_body, dict)
            and openai_body.get("type") == "error"
            and isinstance(openai_body.get("error"), dict)
            and isinstance(openai_body["error"].get("type"), str)
        ):
            return openai_body
        return _messages.error_body(status, openai_body)

    def answer(self, completion: dict[str, Any]) -> dict[str, Any]:
        out = _messages.from_chat(completion, model=self.model)
        kept = (completion["choices"][0].get("message") or {}).get(THINKING_KEY)
        if kept:  # a Messages upstream's thinking blocks, signatures and all, in place of the chat view's
            kinds = ("thinking", "redacted_thinking")
            out["content"] = [*kept, *(b for b in out["content"] if b["type"] not in kinds)]
        return out

    def held(self) -> bool:
        """Whether the next events must go through ``encode`` (not the byte fast path): a native stream's
        signatures or redacted thinking are waiting, or inserted blocks have shifted the indices."""
        hop = self.hop
        return hop is not None and hop.native and bool(hop.signatures or hop.redacted or self._shift)

    def encode(self, events: list[tuple[str, dict[str, Any]]]) -> bytes:
        if self.hop is not None and self.hop.native:
            events = self._signed(events, self.hop.signatures, self.hop.redacted)
        return b"".join(_messages.encode_event(name, data) for name, data in events)

    def _signed(
        self, events: list[tuple[str, dict[str, Any]]], signatures: deque[str], redacted: deque[str]
    ) -> list[tuple[str, dict[str, Any]]]:
        """``events`` with a Messages upstream's signature closing each thinking block (oldest first), and
        its ``redacted_thinking`` blocks (which carry no text the chat view could hold) inserted before the
        first block that is not thinking, or before ``message_delta``; later blocks' indices move up."""
        out: list[tuple[str, dict[str, Any]]] = []
        for name, data in events:
            if redacted and (
                name == "message_delta"
                or (name == "content_block_start" and data["content_block"].get("type") != "thinking")
            ):
                while redacted:
                    self._last += 1
                    block = {"type": "redacted_thinking", "data": redacted.popleft()}
                    start = {"type": "content_block_start", "index": self._last, "content_block": block}
                    out.append(("content_block_start", start))
                    out.append(("content_block_stop", {"type": "content_block_stop", "index": self._last}))
                    self._shift += 1
            if "index" in data:
                if self._shift:
                    data = {**data, "index": data["index"] + self._shift}
                self._last = max(self._last, data["index"])
            if name == "content_block_start" and data["content_block"].get("type") == "thinking":
                self._thinking = data["index"]
            elif name == "content_block_stop" and data["index"] == self._thinking and signatures:
                delta = {"type": "signature_delta", "signature": signatures.popleft()}
                out.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": data["index"], "delta": delta},
                    )
                )
                self._thinking = -1
            out.append((name, data))
        return out


#: What a Responses upstream's finished reasoning item gives the client's: the fields the chat view lacks.
_KEPT = ("id", "encrypted_content", "summary")


class _Responses:
    """The Responses wire (``toolguard._responses``): errors before the stream are OpenAI-format already."""

    route = "responses"
    to_chat = staticmethod(_responses.to_chat)

    def __init__(self, body: dict[str, Any]) -> None:
        self.request = body
        self.stream = _responses.ResponsesStream(body)
        self.hop: NativeHop | None = None
        self._reasoning: dict[str, dict[str, Any]] = {}  # the client stream's reasoning item id -> upstream's
        self._source: deque[dict[str, Any]] | None = None  # the attempt whose upstream items are being taken
        self._taken = 0  # of its items

    @staticmethod
    def error_body(status: int, openai_body: Any) -> Any:
        if isinstance(openai_body, dict) and isinstance(openai_body.get("error"), dict):
            return openai_body
        return error_body(f"HTTP {status}", status=status)

    def answer(self, completion: dict[str, Any]) -> dict[str, Any]:
        out = _responses.from_chat(completion, self.request)
        kept = (completion["choices"][0].get("message") or {}).get(REASONING_KEY)
        if kept:  # a Responses upstream's reasoning items as they came (ids, encrypted content)
            out["output"] = [*kept, *(i for i in out["output"] if i["type"] != "reasoning")]
        return out

    def encode(self, events: list[dict[str, Any]]) -> bytes:
        hop = self.hop
        if hop is not None and hop.native and hop.reasoning:
            events = self._as_they_came(events, hop.reasoning)
        return b"".join(_responses.encode_event(data) for data in events)

    def _as_they_came(
        self, events: list[dict[str, Any]], upstream: deque[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """``events`` with each reasoning item under a Responses upstream's id for it (the n-th the client
        sees is the upstream's n-th of this attempt), finished with its ``encrypted_content`` and summary: the
        chat view has no field for them. The upstream's items are read as they finish (``_native_stream``)."""
        ids = self._reasoning
        if upstream is not self._source:
            self._source, self._taken = upstream, 0
        out = []
        for data in events:
            item = data.get("item")
            if (
                data["type"] == "response.output_item.added"
                and item is not None
                and item.get("type") == "reasoning"
                and self._taken < len(upstream)
            ):
                ids[item["id"]] = upstream[self._taken]
                self._taken += 1
            if data.get("item_id") in ids:
                data = {**data, "item_id": ids[data["item_id"]]["id"]}
            if item is not None and item.get("id") in ids:
                kept = ids[item["id"]]
                if data["type"] == "response.output_item.done":  # in place: response.completed lists it
                    item.update({k: v for k, v in kept.items() if k in _KEPT})
                else:
                    data = {**data, "item": {**item, "id": kept["id"]}}
            out.append(data)
        return out


Wire = _Messages | _Responses

#: path -> protocol wire
ROUTES: dict[str, type[Wire]] = {"/v1/messages": _Messages, "/v1/responses": _Responses}


# The bytes ``toolguard._openai.ChunkWriter`` writes around a text run and an arguments fragment (the fast
# path reads them; any other chunk, or another writer's, is read with json.loads).
_CONTENT = '{"content":'
_TAIL = '},"logprobs":null,"finish_reason":null}]}'
_ARGUMENTS = '{"tool_calls":[{"index":'
_ARGUMENTS_MID = ',"function":{"arguments":'
_ARGUMENTS_TAIL = "}}]" + _TAIL
_CONTENT_B, _ARGUMENTS_B, _ARGUMENTS_MID_B = _CONTENT.encode(), _ARGUMENTS.encode(), _ARGUMENTS_MID.encode()
_TEXT_END, _ARGUMENTS_END = (_TAIL + "\n\n").encode(), (_ARGUMENTS_TAIL + "\n\n").encode()


def _string(data: str, start: int, end: int) -> str | None:
    """The JSON string that fills ``data[start:end]`` exactly, or ``None`` (json's own C scanner)."""
    if start >= end or data[start] != '"':
        return None
    try:
        value, stop = scanstring(data, start + 1)
    except ValueError:
        return None
    return value if stop == end else None


def _writer_prefix(data: str) -> str:
    """The bytes before a chunk's delta (``id``, ``object``, ``created``, ``model``...: the same for every
    chunk of one response), or ``""`` when ``data`` is not shaped as the writer writes it."""
    at = data.find(',"choices":[{"index":0,"delta":')
    return data[: at + 31] if data.startswith('{"id":') and at > 0 else ""


class _Translating:
    """``send`` for the chat handler: what it sends, translated into the protocol's own form."""

    __slots__ = (
        "_arguments_head",
        "_body",
        "_decoder",
        "_headers",
        "_held",
        "_hop",
        "_idle",
        "_inner",
        "_prefix",
        "_status",
        "_text_head",
        "_wire",
    )

    def __init__(self, inner: Any, wire: Wire, hop: NativeHop | None = None) -> None:
        self._inner = inner  # the app's _Responder
        self._wire = wire
        self._hop = hop
        self._status = 0
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._decoder: SSEDecoder | None = None
        self._idle = True  # the decoder holds no part of an event (all fed so far ended with a blank line)
        self._prefix = ""  # the chat writer's bytes before each delta, learnt from the first chunk
        self._text_head = b""  # the bytes before a text run in a body of one event (``_one``)
        self._arguments_head = b""  # and before an arguments fragment's index
        # a native Messages stream: while its thinking signatures or redacted thinking wait, or inserted
        # blocks have shifted the indices, every event goes through the wire's ``encode``, not the fast path
        self._held = wire.held if isinstance(wire, _Messages) and hop is not None and hop.native else None

    @property
    def started(self) -> bool:
        return self._status != 0

    @property
    def complete(self) -> bool:
        return bool(self._inner.complete)

    @property
    def sse(self) -> bool:
        return self._decoder is not None

    @property
    def status(self) -> int:
        return int(self._inner.status)

    async def __call__(self, message: Any) -> None:
        if (
            self._idle
            and self._text_head
            and (self._held is None or not self._held())
            and message["type"] == "http.response.body"
            and message.get("more_body")
        ):
            body = self._one(message.get("body", b""))  # first: the common case, a text or arguments event
            if body is not None:
                await self._inner({"type": "http.response.body", "body": body, "more_body": True})
                return
        if message["type"] == "http.response.start":
            self._status = int(message["status"])
            headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"content-length"]
            if self._hop is not None:  # settled by now: the first attempt has been answered
                headers.append((b"x-toolguard-protocol", self._hop.protocol.encode()))
            if any(k.lower() == b"content-type" and v.startswith(b"text/event-stream") for k, v in headers):
                self._decoder = SSEDecoder()
                await self._inner({**message, "headers": headers})
            else:
                self._headers = [(k, v) for k, v in headers if k.lower() != b"content-type"]
            return
        if message["type"] != "http.response.body":
            return
        more = bool(message.get("more_body", False))
        chunk = message.get("body", b"")
        if self._decoder is None:
            self._body.append(chunk)
            if not more:
                await self._finish_json()
            return
        events: list[Any] = []
        if chunk:
            self._idle = False  # a decoder that raises stays failed: never bypassed again
            events = self._decoder.feed(chunk)
            self._idle = chunk.endswith(b"\n\n") and self._decoder.error is None
        if not more:
            events += self._decoder.close()
        body = b"".join([self._event(event.data) for event in events])
        await self._inner({"type": "http.response.body", "body": body, "more_body": more})

    def _event(self, data: str) -> bytes:
        """The protocol's encoded events for one chat SSE event's ``data``."""
        stream: Any = self._wire.stream
        if data == "[DONE]":
            return self._wire.encode(stream.close())
        if self._prefix and (self._held is None or not self._held()) and data.startswith(self._prefix):
            fast = self._fast(stream, data)
            if fast is not None:
                return fast
        try:
            obj = json.loads(data)
        except ValueError:
            return b""
        if not self._prefix:
            self._prefix = _writer_prefix(data)
            if self._prefix and "\n" not in self._prefix:
                head = b"data: " + self._prefix.encode()
                self._text_head, self._arguments_head = head + _CONTENT_B, head + _ARGUMENTS_B
        return self._wire.encode(stream.feed(obj))

    def _one(self, chunk: bytes) -> bytes | None:
        """``_fast`` on the bytes of a body that is one whole text or arguments event of the writer's, before
        the decoder (``None``: any other body, decoded). Sound as ``_fast``: the fixed bytes (no line break in
        them) around exactly one JSON string (no raw control character in it) make one single-line event,
        what the idle decoder would return, within its line cap."""
        if not chunk.endswith(_TEXT_END) or len(chunk) - 2 > DEFAULT_MAX_LINE_BYTES:
            return None
        index = -1  # a text run
        if chunk.startswith(self._text_head):
            start, end = len(self._text_head), len(chunk) - len(_TEXT_END)
        elif chunk.startswith(self._arguments_head) and chunk.endswith(_ARGUMENTS_END):
            at = len(self._arguments_head)
            mid = chunk.find(_ARGUMENTS_MID_B, at)
            digits = chunk[at:mid]
            if mid < 0 or not digits.isdigit():  # bytes.isdigit: ASCII digits only
                return None
            index, start, end = int(digits), mid + len(_ARGUMENTS_MID_B), len(chunk) - len(_ARGUMENTS_END)
        else:
            return None
        try:
            data = chunk[start:end].decode("utf-8")
            value, stop = scanstring(data, 1)
        except ValueError:  # UnicodeDecodeError included
            return None
        if stop != len(data) or data[0] != '"':
            return None
        stream = self._wire.stream
        return stream.text_sse(value) if index < 0 else stream.arguments_sse(index, value)

    def _fast(self, stream: Any, data: str) -> bytes | None:
        """The encoded events of a chunk whose delta is one text run or one arguments fragment, read without
        ``json.loads`` of the whole chunk and written without event dicts (``text_sse``/``arguments_sse``;
        ``None``: any other chunk, read in full). Sound whatever the chunk: the writer's fixed bytes must
        surround exactly one JSON string (and a decimal index)."""
        start = len(self._prefix)
        if not data.endswith(_TAIL):
            return None
        if data.startswith(_CONTENT, start):
            text = _string(data, start + len(_CONTENT), len(data) - len(_TAIL))
            return None if text is None else stream.text_sse(text)
        if data.startswith(_ARGUMENTS, start) and data.endswith(_ARGUMENTS_TAIL):
            at = start + len(_ARGUMENTS)
            mid = data.find(_ARGUMENTS_MID, at)
            index = data[at:mid]
            if mid < 0 or not (index.isdigit() and index.isascii()):
                return None
            fragment = _string(data, mid + len(_ARGUMENTS_MID), len(data) - len(_ARGUMENTS_TAIL))
            return None if fragment is None else stream.arguments_sse(int(index), fragment)
        return None

    async def _finish_json(self) -> None:
        raw = b"".join(self._body)
        try:
            obj = json.loads(raw) if raw else None
        except ValueError:
            obj = None
        if self._status == 200 and isinstance(obj, dict) and obj.get("choices"):
            try:
                answer = self._wire.answer(obj)
            except (ValueError, KeyError, TypeError, IndexError):
                await send_json(
                    self._inner,
                    502,
                    self._wire.error_body(
                        502, {"error": {"message": "the released completion could not be translated"}}
                    ),
                )
                return
            await send_json(self._inner, 200, answer, headers=self._headers)
            return
        status = self._status if self._status >= 400 else 502
        await send_json(self._inner, status, self._wire.error_body(status, obj), headers=self._headers)


def _upstream_headers(app: ProxyApp, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A Messages client's headers for the chat upstream. Its ``x-api-key`` is its credential for this
    endpoint: sent upstream as the bearer token where the client's own ``Authorization`` would be (no
    ``upstream_api_key``, no ``auth_token``), else dropped; ``anthropic-*`` headers (the SDK's version and
    betas) belong to the Messages protocol, not to the chat upstream: dropped."""
    key: str | None = None
    out: list[tuple[str, str]] = []
    for k, v in headers:
        name = k.lower()
        if name == "x-api-key":
            key = v
        elif not name.startswith("anthropic-"):
            out.append((k, v))
    config = app.config
    has_authorization = any(k.lower() == "authorization" for k, _ in out)
    if key and not has_authorization and not config.upstream_api_key and not config.auth_token:
        out.append(("authorization", f"Bearer {key}"))
    return out


async def serve(
    app: ProxyApp,
    wire_type: type[Wire],
    raw: bytes,
    headers: list[tuple[str, str]],
    deadline: Deadline,
    receive: Receive,
    send: Any,
) -> None:
    """Answer one request of a translated protocol (see the module docstring)."""
    from ._chat import handle_chat

    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        body = None
    wire = wire_type(body if isinstance(body, dict) else {})
    if body is None:
        refusal = error_body("the request body is not valid JSON", code="invalid_json")
        await send_json(send, 400, wire.error_body(400, refusal))
        return
    try:
        chat = wire.to_chat(body)
    except _messages.ProtocolRefusal as exc:
        refusal = error_body(str(exc), status=400, code="invalid_request", param=exc.param)
        await send_json(send, 400, wire.error_body(400, refusal))
        return

    hop = wire.hop = NativeHop(app, wire.route, body, chat, headers)
    out = _Translating(send, wire, hop)
    chat_headers = _upstream_headers(app, headers) if wire_type is _Messages else headers
    await hop.choose(chat, chat_headers)

    async def work() -> None:
        await handle_chat(app, _dumps(chat).encode("utf-8"), chat_headers, deadline, out, hop)

    try:
        await app._until_disconnect(receive, out, work)  # type: ignore[arg-type]
    finally:
        app.metrics.protocol(wire.route, hop.protocol)
