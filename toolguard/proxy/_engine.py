"""Engine-side enforcement: ask the upstream engine to enforce the turn, and fall back when it cannot.

Theory of operation
-------------------
Validation catches a bad call after the model wrote it; an engine decoding under a grammar never writes it.
``Engines`` (one per proxy) knows the upstream's engine (``engine`` in the config, else detected once from
``GET /v1/models``: ``owned_by`` ``vllm``/``sglang``/``llamacpp``/``openai``, else ``generic``; a failed
detection is retried after ``DETECT_RETRY_SECONDS``) and, per request with tools, makes an ``EnginePlan``:

- **vLLM and SGLang** (``engine_constraints: auto``): the whole-turn structural tag of
  ``toolguard.engines.build_structural_tag`` goes in ``response_format`` — one tag per allowed tool, the
  tool's schema as content, ``stop_after_first`` unless ``parallel_tool_calls``, ``at_least_one`` for
  ``required`` or a named tool (which keeps only its tag), ``excludes`` for tool-result markers — in the call
  syntax of the served model (``engine_call_format``, hermes by default). The client's ``tool_choice`` goes
  upstream as ``"auto"`` so the server's tool parser reads the calls the tag forced (vLLM's own ``required``
  path would constrain a JSON array and ignore the tag); the Guard still enforces the client's choice. A
  client that sent its own ``response_format``/``structured_outputs``/``guided_*`` is left alone. Keywords
  the tag leaves out (xgrammar would not enforce them) stay enforced by the Guard's validator.
- **llama.cpp, OpenAI, other hosted or unknown engines**: nothing is added (llama.cpp's server applies its own
  lazy grammar from the tools; OpenAI's ``strict`` passes through untouched).
- **A refused constraint**: the engine answers 400 to a request carrying the tag (an unsupported keyword, a
  grammar error). ``EnginePlan.open`` sends the request again once without it and remembers the refusal for
  that tool set for ``REFUSAL_SECONDS``: a hint never fails a request.
- **vLLM without a tool parser** answers 400 to every request with tools whose ``tool_choice`` is not
  ``"none"``. That refusal is recognised (``NO_PARSER``), remembered for the upstream, and the request is sent
  with ``tool_choice: "none"`` (the chat template still renders the tools), the tag (which then forces the
  client's ``required``/named choice), and the Guard repairs the call from the text (``toolguard._repair``).

``EnginePlan.constraint`` is what the answer carries in ``x-toolguard-engine-constraint``: ``structural_tag``,
``none`` or ``refused``. Cost: the tag is built once per (tool set, choice, parallel) and cached; a plan is
O(1) after that.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from .._exceptions import ToolguardError, UpstreamError
from .._tools import ToolSet
from ..engines import build_structural_tag
from ._config import ENGINES
from ._upstream import Deadline

if TYPE_CHECKING:
    from ._app import ProxyApp
    from ._exchange import Exchange

__all__ = [
    "DETECT_RETRY_SECONDS",
    "ENGINES",
    "NO_PARSER",
    "REFUSAL_SECONDS",
    "TAG_ENGINES",
    "EnginePlan",
    "Engines",
    "engine_headers",
    "engine_of_models",
]

log = logging.getLogger("toolguard.proxy")

#: Engines that compile an xgrammar structural tag from ``response_format``.
TAG_ENGINES = frozenset({"vllm", "sglang"})
#: How long a refused constraint is not sent again for the same tool set.
REFUSAL_SECONDS = 600.0
#: How long a failed engine detection counts as ``generic`` before it is tried again.
DETECT_RETRY_SECONDS = 60.0
DETECT_TIMEOUT = 1.5  # seconds; an engine answers /v1/models in milliseconds
TAG_CACHE_SIZE = 256
ERROR_BODY_LIMIT = 64 * 1024
#: What vLLM says when it was started without ``--enable-auto-tool-choice --tool-call-parser``.
NO_PARSER = ("--enable-auto-tool-choice", "tool-call-parser", "tool_call_parser")
#: Request keys through which a client asks for its own constrained decoding.
CLIENT_CONSTRAINTS = (
    "structured_outputs",
    "guided_json",
    "guided_regex",
    "guided_choice",
    "guided_grammar",
    "guided_decoding_backend",
    "structural_tag",
    "ebnf",
    "regex",
)

_OWNERS = {
    "vllm": "vllm",
    "sglang": "sglang",
    "llamacpp": "llamacpp",
    "llama.cpp": "llamacpp",
    "llama-cpp": "llamacpp",
    "openai": "openai",
    "openai-internal": "openai",
    "system": "openai",
}


def engine_of_models(body: Any, server: str = "") -> str:
    """The engine named by a ``/v1/models`` answer (``owned_by`` of its first model) or its ``server``
    header; ``"generic"`` when neither says."""
    data = body.get("data") if isinstance(body, dict) else None
    if isinstance(data, list):
        for model in data:
            owner = model.get("owned_by") if isinstance(model, dict) else None
            if isinstance(owner, str) and owner.lower() in _OWNERS:
                return _OWNERS[owner.lower()]
    server = server.lower()
    for name, engine in (("llama.cpp", "llamacpp"), ("sglang", "sglang"), ("vllm", "vllm")):
        if name in server:
            return engine
    return "generic"


def _client_constrains(body: dict[str, Any]) -> bool:
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") not in (None, "text"):
        return True
    extra = body.get("extra_body")
    return any(k in body for k in CLIENT_CONSTRAINTS) or (
        isinstance(extra, dict) and any(k in extra for k in CLIENT_CONSTRAINTS)
    )


@dataclass
class EnginePlan:
    """What one request sends beyond the client's body, and how it falls back (see the module docstring)."""

    engines: Engines
    key: tuple[Any, ...] | None = None
    tag: dict[str, Any] | None = None
    no_parser: bool = False
    constraint: str = "none"
    refused_now: bool = field(default=False)

    def changes(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.tag is not None:
            out["response_format"] = self.tag
            out["tool_choice"] = "none" if self.no_parser else "auto"
        elif self.no_parser:
            out["tool_choice"] = "none"
        return out

    async def open(self, ex: Exchange, body: dict[str, Any]) -> httpx.Response:
        """Send ``body`` with the plan's changes; after a refusal of them, send it again once without."""
        response = await ex.send({**body, **self.changes()})
        if response.status_code != 400:
            return response
        could_be_parser = not self.no_parser and body.get("tools") and body.get("tool_choice") != "none"
        if self.tag is None and not could_be_parser:
            return response
        try:
            raw = await ex.app.upstream.read_body(response, limit=ERROR_BODY_LIMIT)
        except UpstreamError:
            raw = b""
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
        text = raw.decode("utf-8", "replace")
        if could_be_parser and any(marker in text for marker in NO_PARSER):
            self.engines.no_parser = True
            self.no_parser = True
            log.warning(
                "toolguard proxy: the upstream has no tool parser (vLLM without --enable-auto-tool-choice);"
                " sending tools with tool_choice='none' and repairing calls from the text"
            )
        elif self.tag is None:  # a 400 about something else: the client gets it as it was
            headers = [
                (k, v)
                for k, v in response.headers.multi_items()
                if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
            ]
            return httpx.Response(400, headers=headers, content=raw, request=response.request)
        else:
            self.tag = None
            self.constraint = "refused"
            self.refused_now = True
            log.warning("toolguard proxy: the engine refused the structural tag (%s); sent again", text[:300])
            again = await ex.send({**body, **self.changes()})
            if again.status_code != 400:  # it was the tag: not sent again for this tool set for a while
                self.engines.refuse(self.key)
            return again
        return await ex.send({**body, **self.changes()})


class Engines:
    """The upstream's engine and what it refused (one per proxy; see the module docstring)."""

    def __init__(self, app: ProxyApp) -> None:
        self.app = app
        config = app.config
        configured = config.engine
        self._configured: str | None = None if configured == "auto" else configured
        self.engine: str | None = self._configured
        self._detected_at = 0.0
        self.enabled = config.engine_constraints == "auto"
        self.call_format: Any = config.engine_call_format
        self.no_parser = False
        self._tags: OrderedDict[tuple[Any, ...], tuple[ToolSet, dict[str, Any] | None]] = OrderedDict()
        self._refused: dict[tuple[Any, ...], float] = {}
        self._lock = anyio.Lock()

    async def kind(self, headers: list[tuple[str, str]]) -> str:
        """The upstream's engine: configured, or detected (once; again a while after a failed detection)."""
        if self._configured is not None:
            return self._configured
        if not self._stale():
            assert self.engine is not None
            return self.engine
        async with self._lock:
            if self._stale():
                self.engine = await self._detect(headers)
                self._detected_at = time.monotonic()
                log.info("toolguard proxy: upstream engine %s", self.engine)
        assert self.engine is not None
        return self.engine

    def _stale(self) -> bool:
        return self.engine is None or (
            self.engine == "generic" and time.monotonic() - self._detected_at >= DETECT_RETRY_SECONDS
        )

    async def _detect(self, headers: list[tuple[str, str]]) -> str:
        upstream = self.app.upstream
        try:
            response = await upstream.open(
                "GET",
                upstream.url("/v1/models"),
                headers=[(k, v) for k, v in headers if k.lower() not in ("content-type", "content-length")],
                content=b"",
                deadline=Deadline(DETECT_TIMEOUT),
                idempotent=True,
                retries=0,
            )
        except UpstreamError:
            return "generic"
        try:
            server = response.headers.get("server", "")
            if response.status_code != 200:
                return engine_of_models(None, server)
            raw = await upstream.read_body(response, limit=1024 * 1024)
            return engine_of_models(json.loads(raw), server)
        except (UpstreamError, ValueError):
            return "generic"
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()

    def refuse(self, key: tuple[Any, ...] | None) -> None:
        if key is not None:
            self._refused[key] = time.monotonic() + REFUSAL_SECONDS
            if len(self._refused) > TAG_CACHE_SIZE:
                now = time.monotonic()
                self._refused = {k: t for k, t in self._refused.items() if t > now}

    def _is_refused(self, key: tuple[Any, ...]) -> bool:
        until = self._refused.get(key)
        if until is None:
            return False
        if until <= time.monotonic():
            del self._refused[key]
            return False
        return True

    async def plan(
        self, body: dict[str, Any], tools: ToolSet, headers: list[tuple[str, str]]
    ) -> EnginePlan | None:
        """The plan for one request (``None``: send it as it came)."""
        if not len(tools):
            return None
        choice = body.get("tool_choice")
        if choice == "none":
            return None
        plan = EnginePlan(self, no_parser=self.no_parser)
        if not self.enabled or _client_constrains(body):
            return plan
        if await self.kind(headers) not in TAG_ENGINES:
            return plan
        parallel = body.get("parallel_tool_calls") is not False
        key = (id(tools), json.dumps(choice, sort_keys=True), parallel)
        if self._is_refused(key):
            plan.constraint = "refused"
            return plan
        plan.key = key
        plan.tag = self._tag(key, tools, choice, parallel)
        if plan.tag is not None:
            plan.constraint = "structural_tag"
        return plan

    def _tag(
        self, key: tuple[Any, ...], tools: ToolSet, choice: Any, parallel: bool
    ) -> dict[str, Any] | None:
        cached = self._tags.get(key)
        if cached is not None and cached[0] is tools:
            self._tags.move_to_end(key)
            return cached[1]
        try:
            built = build_structural_tag(
                tools, tool_choice=choice, parallel_tool_calls=parallel, format=self.call_format
            )
        except ToolguardError as exc:  # a schema the tag cannot express: validation alone
            log.info("toolguard proxy: no structural tag for this tool set: %s", exc)
            built = None
        tag = built.tag if built is not None else None
        self._tags[key] = (tools, tag)
        if len(self._tags) > TAG_CACHE_SIZE:
            self._tags.popitem(last=False)
        return tag


def engine_headers(ex: Exchange, attempts: Sequence[Any]) -> list[tuple[bytes, bytes]]:
    """``x-toolguard-engine-constraint`` for a request with tools (none otherwise), and the first attempt's
    validity counted by the constraint it was sent with."""
    plan = ex.engine
    if plan is None:
        return []
    first = attempts[0].verdict if attempts else None
    if first is not None:
        ex.app.metrics.first_attempt(plan.constraint, first.kind in ("ok", "fabricated"))
    return [(b"x-toolguard-engine-constraint", plan.constraint.encode())]
