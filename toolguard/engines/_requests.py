"""What a request to an engine carries beyond the client's body, and how it falls back (sans-IO).

Theory of operation
-------------------
Validation catches a bad call after the model wrote it; an engine decoding under a grammar never writes it.
``EngineMemory`` (one per upstream: the proxy's ``Engines``, the SDK wrapper's client) knows the upstream's
engine (configured, or named by ``engine_of_models`` from a ``/v1/models`` answer the door fetched) and, per
request with tools, makes a ``RequestPlan``:

- **vLLM and SGLang** (constraints on): the whole-turn structural tag of ``build_structural_tag`` goes in
  ``response_format`` — one tag per allowed tool, the tool's schema as content, ``stop_after_first`` unless
  ``parallel_tool_calls``, ``at_least_one`` for ``required`` or a named tool (which keeps only its tag),
  ``excludes`` for tool-result markers — in the served model's call syntax (hermes by default). The client's
  ``tool_choice`` goes upstream as ``"auto"`` so the server's tool parser reads the call the tag forced
  (measured on vLLM 0.32: its own ``required``/named path constrains a JSON array and ignores the tag); the
  Guard still enforces the client's choice. ``strict`` is taken off the tools sent with a tag (measured:
  vLLM then builds its own tag from the strict tools and drops ours, so a named choice was lost); the tag
  enforces the same schemas. A client that sent its own ``response_format`` (not ``text``),
  ``structured_outputs`` or ``guided_*`` is left alone. Keywords the tag leaves out (xgrammar would not
  enforce them) stay enforced by the Guard's validator.
- **llama.cpp, OpenAI, other or unknown engines**: nothing is added.
- **A refused constraint**: a 400 to a request carrying the tag (vLLM: "Invalid response_format
  structural_tag specification" for e.g. ``minimum > maximum`` or a back-reference). ``after_400`` says send
  again without it; ``confirm_refusal`` (the resend was not refused too) keeps the tool set from being sent
  with a tag for ``REFUSAL_SECONDS``. A hint never fails a request.
- **vLLM without a tool parser** answers 400 to every request with tools whose ``tool_choice`` is not
  ``"none"`` (``is_no_parser``). It is remembered for the upstream, and requests go with ``tool_choice:
  "none"`` (the chat template still renders the tools) plus the tag, which then forces the client's
  ``required``/named choice; the Guard repairs the call from the text (``toolguard._repair``).

``RequestPlan.constraint``: ``structural_tag``, ``none`` or ``refused`` (the proxy's
``x-toolguard-engine-constraint``). Cost: the tag is built once per (tool set, choice, parallel) and cached;
a plan is O(1) after that.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .._exceptions import ToolguardError
from .._tools import ToolSet
from ._structural_tag import build_structural_tag

__all__ = [
    "ENGINES",
    "NO_PARSER",
    "REFUSAL_SECONDS",
    "TAG_ENGINES",
    "EngineMemory",
    "RequestPlan",
    "client_constrains",
    "engine_of_models",
    "is_no_parser",
]

ENGINES: tuple[str, ...] = ("vllm", "sglang", "llamacpp", "openai", "generic")
#: Engines that compile an xgrammar structural tag from ``response_format``.
TAG_ENGINES = frozenset({"vllm", "sglang"})
#: How long a refused constraint is not sent again for the same tool set.
REFUSAL_SECONDS = 600.0
TAG_CACHE_SIZE = 256
#: What vLLM says when it was started without ``--enable-auto-tool-choice --tool-call-parser``.
NO_PARSER = ("--enable-auto-tool-choice", "--tool-call-parser")
#: Request keys through which a client asks for its own constrained decoding.
CLIENT_CONSTRAINTS = (
    "structured_outputs",
    "guided_json",
    "guided_regex",
    "guided_choice",
    "guided_grammar",
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
    """The engine named by a ``/v1/models`` answer (a model's ``owned_by``) or a ``server`` header;
    ``"generic"`` when neither says."""
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


def is_no_parser(text: str) -> bool:
    """Whether a 400's text is vLLM refusing tools because it was started without a tool parser."""
    return any(marker in text for marker in NO_PARSER)


def client_constrains(body: dict[str, Any]) -> bool:
    """Whether the request asks for its own constrained decoding (which then wins over the tag)."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") not in (None, "text"):
        return True
    extra = body.get("extra_body")
    return any(k in body for k in CLIENT_CONSTRAINTS) or (
        isinstance(extra, dict) and any(k in extra for k in CLIENT_CONSTRAINTS)
    )


@dataclass
class RequestPlan:
    """What one request sends beyond the client's body (see the module docstring)."""

    memory: EngineMemory
    wants_tools: bool = False  # tools with a tool_choice other than "none": a no-parser 400 is possible
    key: tuple[Any, ...] | None = None
    tag: dict[str, Any] | None = None
    no_parser: bool = False
    constraint: str = "none"
    refused_now: bool = False
    loose_tools: list[Any] | None = None  # the tools without ``strict``, sent with the tag (None: unchanged)

    def changes(self) -> dict[str, Any]:
        """The keys to set on the request body."""
        out: dict[str, Any] = {}
        if self.tag is not None:
            out["response_format"] = self.tag
            out["tool_choice"] = "none" if self.no_parser else "auto"
            if self.loose_tools is not None:
                out["tools"] = self.loose_tools
        elif self.no_parser:
            out["tool_choice"] = "none"
        return out

    def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        changes = self.changes()
        return {**body, **changes} if changes else body

    def may_fall_back(self) -> bool:
        """Whether a 400 to this request could be one the plan answers (read its body, then ``after_400``)."""
        return self.tag is not None or (self.wants_tools and not self.no_parser)

    def after_400(self, text: str) -> bool:
        """The upstream answered 400 with ``text``: whether to send the request again (with ``apply``)."""
        if self.wants_tools and not self.no_parser and is_no_parser(text):
            self.memory.no_parser = True
            self.no_parser = True
            return True
        if self.tag is not None:
            self.tag = None
            self.constraint = "refused"
            self.refused_now = True
            return True
        return False

    def confirm_refusal(self, status: int) -> None:
        """The resend after a refused tag was answered ``status``: a refusal it proves is remembered."""
        if self.refused_now and status != 400 and self.key is not None:
            self.memory.refuse(self.key)


class EngineMemory:
    """One upstream's engine, the tags built for it and what it refused (see the module docstring)."""

    def __init__(self, *, engine: str | None, enabled: bool = True, call_format: Any = "hermes") -> None:
        self.engine = engine  # None: not known yet (the door detects it)
        self.enabled = enabled
        self.call_format = call_format
        self.no_parser = False
        self._tags: OrderedDict[tuple[Any, ...], tuple[ToolSet, dict[str, Any] | None]] = OrderedDict()
        self._refused: dict[tuple[Any, ...], float] = {}

    def refuse(self, key: tuple[Any, ...]) -> None:
        now = time.monotonic()
        self._refused[key] = now + REFUSAL_SECONDS
        if len(self._refused) > TAG_CACHE_SIZE:
            self._refused = {k: t for k, t in self._refused.items() if t > now}

    def _is_refused(self, key: tuple[Any, ...]) -> bool:
        until = self._refused.get(key)
        if until is None:
            return False
        if until <= time.monotonic():
            del self._refused[key]
            return False
        return True

    def plan(
        self, body: dict[str, Any], tools: ToolSet, engine: str | None, *, tools_key: str | None = None
    ) -> RequestPlan | None:
        """The plan for one request to an upstream running ``engine`` (``None``: send it as it came).
        ``tools_key`` names the tool set (its JSON); without it the ``ToolSet`` object does (the proxy keeps
        one per distinct ``tools`` JSON)."""
        if not len(tools) or body.get("tool_choice") == "none":
            return None
        plan = RequestPlan(self, wants_tools=True, no_parser=self.no_parser)
        if not self.enabled or engine not in TAG_ENGINES or client_constrains(body):
            return plan
        choice = body.get("tool_choice")
        parallel = body.get("parallel_tool_calls") is not False
        named = tools_key if tools_key is not None else id(tools)
        key = (named, json.dumps(choice, sort_keys=True), parallel)
        if self._is_refused(key):
            plan.constraint = "refused"
            return plan
        plan.key = key
        plan.tag = self._tag(key, tools, choice, parallel)
        if plan.tag is not None:
            plan.constraint = "structural_tag"
            plan.loose_tools = _without_strict(body.get("tools"))
        return plan

    def _tag(
        self, key: tuple[Any, ...], tools: ToolSet, choice: Any, parallel: bool
    ) -> dict[str, Any] | None:
        cached = self._tags.get(key)
        if cached is not None and (cached[0] is tools or isinstance(key[0], str)):
            self._tags.move_to_end(key)
            return cached[1]
        try:
            built = build_structural_tag(
                tools, tool_choice=choice, parallel_tool_calls=parallel, format=self.call_format
            )
        except ToolguardError:  # a schema the tag cannot express: validation alone
            built = None
        tag = built.tag if built is not None else None
        self._tags[key] = (tools, tag)
        if len(self._tags) > TAG_CACHE_SIZE:
            self._tags.popitem(last=False)
        return tag


def _without_strict(tools: Any) -> list[Any] | None:
    """``tools`` with ``function.strict`` taken off, or ``None`` when no tool has it."""
    if not isinstance(tools, list) or not any(
        isinstance(t, dict) and isinstance(t.get("function"), dict) and "strict" in t["function"]
        for t in tools
    ):
        return None
    return [
        {**t, "function": {k: v for k, v in t["function"].items() if k != "strict"}}
        if isinstance(t, dict) and isinstance(t.get("function"), dict)
        else t
        for t in tools
    ]
