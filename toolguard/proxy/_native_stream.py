"""A Messages or Responses upstream's SSE stream, read as a chat-completions SSE stream (native mode).

Theory of operation. The relay (``_relay``) reads chat chunks whatever the upstream speaks; in native mode
``NativeHop`` hands it an ``httpx.Response`` whose body is ``chat_chunks``: the upstream's bytes are decoded
into SSE events (``SSEDecoder``), each event's JSON is fed to the protocol's sans-IO reader
(``MessagesReader``/``ResponsesReader``: protocol events in, chat chunks out) and the chunks are written as
``data: {json}`` events, then ``data: [DONE]`` once the reader has seen the protocol's end
(``message_stop``, ``response.completed``/``incomplete``); what follows it is not read. What one upstream
read carried goes out as one piece, so nothing waits longer than the network made it. A protocol error
event raises ``UpstreamError`` and a broken one ``UpstreamProtocolError``, in the relay's own error path. A
Messages ``signature_delta`` is kept on the hop (``NativeHop.signatures``) for the client's thinking block,
a ``redacted_thinking`` block's data (``NativeHop.redacted``) for the client's stream, and a Responses
reasoning item as it came (``NativeHop.reasoning``: its id, ``encrypted_content``, summary): the chat view has
no field for them. O(bytes moved).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx

from .._exceptions import UpstreamProtocolError
from ._sse import DONE, SSEDecoder

if TYPE_CHECKING:
    from ._native import NativeHop

__all__ = ["DRAIN_LIMIT", "chat_chunks"]

#: Bytes read after the protocol's end so a keep-alive connection is reused rather than closed.
DRAIN_LIMIT = 64 * 1024

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _reader(route: str) -> Any:
    if route == "messages":
        from .._messages_back import MessagesReader

        return MessagesReader()
    from .._responses_back import ResponsesReader

    return ResponsesReader()


async def chat_chunks(response: httpx.Response, hop: NativeHop) -> AsyncIterator[bytes]:
    """The chat SSE bytes of the upstream's protocol stream (see the module docstring)."""
    reader = _reader(hop.route)
    decoder = SSEDecoder()
    signatures, redacted = hop.signatures, hop.redacted
    signatures.clear()  # this attempt's thinking blocks only
    redacted.clear()
    reasoning = hop.reasoning = deque()  # a new one per attempt: the wire counts its items per attempt
    encoding = response.headers.get("content-encoding", "identity").lower()
    chunks = aiter(response.stream) if encoding in ("", "identity") else response.aiter_bytes()  # type: ignore[arg-type]
    async for raw in chunks:
        out: list[bytes] = []
        for event in decoder.feed(raw):
            data = event.data
            if not data:
                continue
            try:
                obj = json.loads(data)
            except ValueError as exc:
                raise UpstreamProtocolError("the upstream sent an SSE event that is not JSON") from exc
            if type(obj) is not dict:
                raise UpstreamProtocolError("the upstream sent an SSE event that is not a JSON object")
            kind = obj.get("type")
            if kind == "content_block_delta":
                delta = obj.get("delta")
                if isinstance(delta, dict) and delta.get("type") == "signature_delta":
                    signature = delta.get("signature")
                    if isinstance(signature, str) and signature:
                        signatures.append(signature)
            elif kind == "content_block_start":
                block = obj.get("content_block")
                if (
                    isinstance(block, dict)
                    and block.get("type") == "redacted_thinking"
                    and isinstance(block.get("data"), str)
                ):
                    redacted.append(block["data"])
            elif kind in ("response.output_item.added", "response.output_item.done"):
                item = obj.get("item")
                if (
                    isinstance(item, dict)
                    and item.get("type") == "reasoning"
                    and isinstance(item.get("id"), str)
                ):
                    if kind.endswith("added"):
                        reasoning.append(dict(item))
                    else:  # the finished item (encrypted_content, summary) into the one kept when it began
                        for kept in reasoning:
                            if kept["id"] == item["id"]:
                                kept.update(item)
            out.extend(b"data: " + _dumps(chunk).encode("utf-8") + b"\n\n" for chunk in reader.feed(obj))
            if reader.done:
                out.append(DONE)
                yield b"".join(out)
                await _drain(chunks)
                return
        if decoder.error is not None:
            raise UpstreamProtocolError(decoder.error)
        if out:
            yield b"".join(out)


async def _drain(chunks: Any) -> None:
    """Read what follows the protocol's end (the chunked terminator) so the connection can go back to the
    pool; an upstream still talking after it is left to the close."""
    left = DRAIN_LIMIT
    async for raw in chunks:
        left -= len(raw)
        if left < 0:
            return
