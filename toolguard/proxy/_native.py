"""The upstream hop of ``/v1/messages`` and ``/v1/responses`` in the protocol's own terms (native mode).

Theory of operation. The guarded flow runs on the chat view of a Messages or Responses request whatever the
upstream speaks (``_protocols``); only the hop to the upstream differs. ``NativeHop.send`` (``Exchange.send``
hands each attempt to it) turns the attempt's chat request back into the protocol's own request with the
reverse translators the SDK uses (``to_messages``/``to_responses``: the client's turns exactly as they came,
so what the chat view drops (``metadata``, ``thinking``, ``cache_control``, ``store``, ``include``...) still
reaches the upstream; the flow's re-asks as ``tool_result``/``function_call_output`` items, a retry's
``max_tokens``/``temperature`` in the protocol's fields), POSTs it to the upstream's own endpoint, and gives
the flow back an ``httpx.Response`` that reads as chat: a JSON answer becomes the chat completion
(``chat_completion``), an SSE stream is translated event by event into chat chunks (``_ChatStream``), an
error status is returned as it came (its protocol-shaped body reaches the client in that shape). So the
relay, the non-stream driver, the re-ask flow and the status handling see one upstream kind only. The
engine plan's changes go along where the endpoint takes them (vLLM's Responses: the structural tag as
``structured_outputs``, ``_engine``); a native Messages request carries none (``carries_engine``).

Detection (``protocols: auto``): a 404, 405 or 501 from the protocol's path means the upstream lacks the
endpoint. The same attempt is sent at once over chat completions (the client sees no error) and, when that
path is not a 404 too (a 404 on both is the client's model, not the endpoint), ``ProtocolMemory`` keeps the
protocol translated for this upstream for ``MISSING_SECONDS``; then the endpoint is tried again (an upgraded
upstream is found). ``auto`` also translates a Messages request with tools in front of vLLM or SGLang
(``choose``): their Messages endpoints take no engine constraint, their chat endpoints do. ``native`` never
translates; ``translate`` never tries the endpoint.

A Messages answer's ``thinking``/``redacted_thinking`` blocks ride beside the chat view (``THINKING_KEY`` in
the chat message; a stream's signatures in ``signatures``, its redacted blocks' data in ``redacted``) so the
client gets them back with their ``signature`` unchanged, and a Responses stream's reasoning items
(``reasoning``: ids, ``encrypted_content``, summaries) likewise; the chat view's reasoning is passed through
unjudged, never validated as a call. A Messages answer cut by ``max_tokens`` inside its last ``tool_use``
carries the ``input`` that parsed before the cut; the Guard gets those arguments unterminated (``_cut_call``),
a truncation as when streamed, never a call. Work: O(bytes moved) per attempt.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from .. import _messages, _messages_back, _responses_back
from .._exceptions import UpstreamError, UpstreamProtocolError
from ..engines._requests import TAG_ENGINES

if TYPE_CHECKING:
    from ._app import ProxyApp
    from ._exchange import Exchange

__all__ = [
    "MISSING",
    "MISSING_SECONDS",
    "REASONING_KEY",
    "THINKING_KEY",
    "NativeHop",
    "ProtocolMemory",
]

log = logging.getLogger("toolguard.proxy")

#: Statuses from a protocol's path that say the upstream has no such endpoint.
MISSING = frozenset({404, 405, 501})
#: How long a protocol found missing is served translated before its endpoint is tried again.
MISSING_SECONDS = 600.0
#: The chat message key carrying a Messages answer's thinking blocks as they came (signatures included).
THINKING_KEY = "toolguard_thinking_blocks"
#: The chat message key carrying a Responses answer's reasoning items as they came.
REASONING_KEY = "toolguard_reasoning_items"
#: Bytes of a missing endpoint's answer kept (handed to the client when chat is missing too).
_MISSING_BODY_LIMIT = 64 * 1024

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class ProtocolMemory:
    """One upstream's protocols found missing, each until its time runs out (see the module docstring)."""

    __slots__ = ("_missing",)

    def __init__(self) -> None:
        self._missing: dict[str, float] = {}

    def missing(self, route: str) -> bool:
        until = self._missing.get(route)
        if until is None:
            return False
        if time.monotonic() >= until:
            del self._missing[route]
            return False
        return True

    def remember(self, route: str) -> None:
        self._missing[route] = time.monotonic() + MISSING_SECONDS


def _messages_headers(app: ProxyApp, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A Messages client's headers for a Messages upstream: ``anthropic-*`` (version, betas) as they came;
    its ``x-api-key`` where its ``Authorization`` would go (no ``upstream_api_key``, no ``auth_token``),
    ``upstream_api_key`` in it when one is configured, else none."""
    config = app.config
    out = [(k, v) for k, v in headers if k.lower() != "x-api-key"]
    if config.upstream_api_key:
        out.append(("x-api-key", config.upstream_api_key))
    elif not config.auth_token:
        out.extend((k, v) for k, v in headers if k.lower() == "x-api-key")
    return out


class NativeHop:
    """One request's hop to the upstream: native (the protocol's endpoint) or translated (chat)."""

    __slots__ = (
        "_app",
        "_choice",
        "_headers",
        "_original",
        "_sent",
        "auto",
        "native",
        "reasoning",
        "redacted",
        "route",
        "signatures",
        "url",
    )

    def __init__(
        self,
        app: ProxyApp,
        route: str,
        original: dict[str, Any],
        chat: dict[str, Any],
        headers: list[tuple[str, str]],
    ) -> None:
        mode = app.config.protocols
        self._app = app
        self.route = route  # "messages" or "responses"
        self._original = original
        self._sent = len(chat["messages"])  # chat messages the client's own turns made (``to_chat``)
        self._choice = chat.get("tool_choice")  # the client's, in chat terms
        self._headers = _messages_headers(app, headers) if route == "messages" else headers
        self.auto = mode == "auto"
        self.native = mode == "native" or (self.auto and not app.protocols.missing(route))
        self.url = app.upstream.url(f"/v1/{route}")
        self.signatures: deque[str] = deque()  # streamed thinking signatures, oldest first
        self.redacted: deque[str] = deque()  # streamed redacted_thinking blocks' data, oldest first
        self.reasoning: deque[dict[str, Any]] = deque()  # streamed Responses reasoning items, as they came

    async def choose(self, chat: dict[str, Any], headers: list[tuple[str, str]]) -> None:
        """``auto``: a Messages request with tools goes over chat in front of an engine that takes the
        whole-turn constraint (vLLM, SGLang): their Messages endpoints take none (vLLM's ignores
        ``structured_outputs``; it is itself a translation to its chat endpoint), and measured on vLLM 0.32
        the constraint is what keeps a weak model to the offered tools where re-asks do not."""
        engines = self._app.engines
        if not (self.auto and self.native and self.route == "messages" and engines.enabled):
            return
        if not chat.get("tools") or chat.get("tool_choice") == "none":
            return
        if await engines.kind(headers) in TAG_ENGINES:
            self.native = False

    @property
    def carries_engine(self) -> bool:
        """Whether the engine constraint can go with this request: over chat, or natively as vLLM's
        Responses endpoint takes it (``structured_outputs.structural_tag``); vLLM's Messages endpoint takes
        no constraint (it ignores the field), so a native Messages request goes without."""
        return not self.native or self.route == "responses"

    @property
    def protocol(self) -> str:
        """``native`` or ``translated``: how this request reached the upstream (so far)."""
        return "native" if self.native else "translated"

    def request(self, chat: dict[str, Any]) -> dict[str, Any]:
        """The protocol's request for the flow's chat request ``chat``."""
        try:
            if self.route == "messages":
                body = _messages_back.to_messages(self._original, chat, self._sent)
            else:
                body = _responses_back.to_responses(self._original, chat, self._sent)
        except _messages.ProtocolRefusal as exc:
            raise UpstreamProtocolError(
                f"the re-ask cannot be sent as a {self.route} request: {exc}"
            ) from exc
        if chat.get("stream"):
            body["stream"] = True
        if self.route == "responses":
            self._engine(chat, body)
        return body

    def _engine(self, chat: dict[str, Any], body: dict[str, Any]) -> None:
        """The engine plan's changes to the chat request (``engines._requests.RequestPlan.changes``) in
        Responses terms: the whole-turn tag as ``structured_outputs.structural_tag`` (the JSON of the
        ``response_format`` vLLM's chat endpoint would take), its ``tool_choice`` (``auto``, or ``none`` for
        an engine without a tool parser; measured on vLLM 0.32: with ``required`` or a named choice its
        Responses endpoint ignores the tag) and the tools without ``strict``. A client cannot send a
        ``response_format`` here (``to_chat`` refuses a ``text.format``), so one in ``chat`` is the plan's."""
        fmt = chat.get("response_format")
        tagged = isinstance(fmt, dict) and fmt.get("type") == "structural_tag"
        if tagged:
            body["structured_outputs"] = {"structural_tag": _dumps(fmt)}
            tools = body.get("tools")
            if isinstance(tools, list):
                body["tools"] = [
                    {k: v for k, v in t.items() if k != "strict"} if isinstance(t, dict) else t for t in tools
                ]
        choice = chat.get("tool_choice")
        if (tagged or choice != self._choice) and choice in ("auto", "none"):
            body["tool_choice"] = choice

    async def send(self, ex: Exchange, chat: dict[str, Any]) -> httpx.Response:
        """One attempt: natively, else (or when the endpoint turns out missing) over chat completions."""
        if not self.native:
            return await ex.send_chat(chat)
        upstream = ex.upstream
        response = await upstream.open(
            "POST",
            self.url,
            headers=self._headers,
            content=_dumps(self.request(chat)).encode("utf-8"),
            deadline=ex.deadline,
            idempotent=True,
            retries=0,
        )
        status = response.status_code
        if status in MISSING and self.auto:
            return await self._missing(ex, chat, response)
        if status != 200:
            return response
        if chat.get("stream"):
            return httpx.Response(
                200,
                headers=[("content-type", "text/event-stream")],
                stream=_ChatStream(response, self),
                request=response.request,
            )
        try:
            raw = await upstream.read_body(response, limit=ex.config.max_upstream_body_bytes)
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
        completion = self.completion(raw)
        return httpx.Response(
            200,
            headers=[("content-type", "application/json")],
            content=_dumps(completion).encode("utf-8"),
            request=response.request,
        )

    async def _missing(self, ex: Exchange, chat: dict[str, Any], response: httpx.Response) -> httpx.Response:
        """The endpoint seems missing: the attempt over chat, remembered unless chat is missing too."""
        try:
            raw = await ex.upstream.read_body(response, limit=_MISSING_BODY_LIMIT)
        except UpstreamError:
            raw = b""
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
        again = await ex.send_chat(chat)
        if again.status_code == 404:  # not the endpoint: the model (or the whole upstream) is missing
            with anyio.CancelScope(shield=True):
                await again.aclose()
            headers = [
                (k, v)
                for k, v in response.headers.multi_items()
                if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
            ]
            return httpx.Response(
                response.status_code, headers=headers, content=raw, request=response.request
            )
        self.native = False
        self._app.protocols.remember(self.route)
        log.info(
            "toolguard proxy: the upstream has no /v1/%s (HTTP %d): served over chat completions",
            self.route,
            response.status_code,
        )
        return again

    def completion(self, raw: bytes) -> dict[str, Any]:
        """The chat completion the Guard reads for the upstream's JSON answer ``raw``."""
        try:
            answer = json.loads(raw)
            if not isinstance(answer, dict):
                raise TypeError(type(answer).__name__)
            if self.route == "messages":
                completion = _messages_back.chat_completion(answer)
                kept = [b for b in answer.get("content") or () if _is_thinking(b)]
                key = THINKING_KEY
                _cut_call(answer, completion)
            else:
                completion = _responses_back.chat_completion(answer)
                kept = [
                    i
                    for i in answer.get("output") or ()
                    if isinstance(i, dict) and i.get("type") == "reasoning"
                ]
                key = REASONING_KEY
        except (ValueError, TypeError, AttributeError) as exc:
            raise UpstreamProtocolError(
                f"the upstream's {self.route} answer could not be read: {exc!r}"
            ) from exc
        if kept:
            completion["choices"][0]["message"][key] = kept
        return completion


def _cut_call(answer: dict[str, Any], completion: dict[str, Any]) -> None:
    """A Messages answer cut by ``max_tokens`` inside its last ``tool_use``: the block's ``input`` is what
    parsed before the cut, so the chat view gets its arguments unterminated, as a stream would have shown
    them: the Guard reads a truncation (never a call), not a finished call with made-up ends."""
    content = answer.get("content")
    if answer.get("stop_reason") != "max_tokens" or not content or not isinstance(content, list):
        return
    last = content[-1]
    calls = completion["choices"][0]["message"].get("tool_calls")
    if isinstance(last, dict) and last.get("type") == "tool_use" and calls:
        fn = calls[-1]["function"]
        fn["arguments"] = fn["arguments"][:-1]


def _is_reasoning(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "reasoning"


def _is_thinking(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in ("thinking", "redacted_thinking")


class _ChatStream(httpx.AsyncByteStream):
    """The upstream's protocol SSE stream, read as a chat-completions SSE stream (chunks, then ``[DONE]``)."""

    def __init__(self, response: httpx.Response, hop: NativeHop) -> None:
        self._response = response
        self._hop = hop

    async def __aiter__(self) -> AsyncIterator[bytes]:
        from ._native_stream import chat_chunks

        async for piece in chat_chunks(self._response, self._hop):
            yield piece

    async def aclose(self) -> None:
        await self._response.aclose()
