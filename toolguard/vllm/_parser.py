"""``ToolguardToolParser``: vLLM's ``--tool-call-parser toolguard``.

Theory of operation
-------------------
vLLM builds one tool parser per request and calls it three ways; each call is translated to toolguard's
core and back, and nothing here judges a call itself:

1. ``adjust_request`` (before sampling; chat-completion and Responses requests, and Anthropic Messages ones,
   which vLLM turns into chat completions): the request's tools, ``tool_choice`` and ``parallel_tool_calls``
   become the structural tag of ``toolguard.engines.build_structural_tag`` in the served model's call syntax
   (``TOOLGUARD_VLLM_FORMAT``, hermes by default), set as ``structured_outputs.structural_tag`` so xgrammar
   enforces the whole turn: only offered tools, arguments valid for their schema (except the keywords
   xgrammar drops, reported and checked below), and, without parallel calls, nothing after the call. Under
   ``tool_choice="auto"`` a constraint the client sent itself (``response_format``, ``structured_outputs``)
   is left alone. A tool schema toolguard cannot validate is a 400 here, before any token is generated.
   When the runaway stop applies to the request (``toolguard.vllm.RunawayProcessor``), ``RUNAWAY_STOP`` is
   added to its stop strings, so a stopped loop ends with that ``stop_reason``.
2. ``extract_tool_calls`` (non-streaming) and ``extract_tool_calls_streaming`` + ``finish_streaming``
   (streaming): the text runs through a ``TextTurn`` (one ``Guard`` with the format parser and a
   ``StreamValidator`` per call). Prose is released as it is vouched for; each call is released whole once
   it closed and validated, so a client never sees a partial, invalid or unknown-tool call as
   ``tool_calls``.
3. How a turn ends: valid calls and prose are returned; text after the calls is cut; a call left open
   (``max_tokens``, a stop string) is withheld and the prose before it returned, with vLLM's own
   ``finish_reason`` (``"length"``); a loop ends the answer at the point it was recognised. A call that is
   invalid, names a tool not offered, is malformed, written in another syntax, or missing under
   ``"required"`` refuses the answer: non-streaming, HTTP 422 (``UnprocessableEntityError``, ``param`` = the
   toolguard code); streaming, vLLM's error event (code 422), after which the request is aborted. The engine
   constraint makes these rare (measured: none on the test scenarios); they are the plugin's last line.

The decision on each turn goes through ``_report.decision`` (logged; on streams also sent as a ``toolguard``
field in the delta of the last chunk). Tool sets and tags are cached per distinct request tools.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    ExtractedToolCallInformation,
    FunctionCall,
    ToolCall,
)
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.entrypoints.openai.responses.protocol import ResponsesRequest
from vllm.exceptions import VLLMUnprocessableEntityError, VLLMValidationError
from vllm.renderers.chat_utils import make_tool_call_id
from vllm.sampling_params import StructuredOutputsParams
from vllm.tool_parsers.abstract_tool_parser import ToolParser, ToolParserManager

from .._exceptions import ToolguardError, UsageError
from .._stream import StreamValidator
from .._text_turn import Release, TextTurn
from .._tools import ToolSet
from .._verdict import GuardVerdict
from ..engines import StructuralTag, build_structural_tag, tool_choice_mode
from ._options import RUNAWAY_STOP, call_format, runaway_default, runaway_wanted
from ._report import EngineConstraint, decision

__all__ = ["ERROR_CODES", "ToolguardToolParser"]

#: The ``param`` of the 422 body for each refused verdict (the snake_case codes the other doors use).
ERROR_CODES = {
    "rejected": "invalid_arguments",
    "unknown_tool": "unknown_tool",
    "call_in_content": "call_in_content",
    "missing_call": "missing_call",
}
CACHE_SIZE = 64
# Read once, when vLLM imports the plugin: a bad value stops the server at start with the error logged.
_FORMAT = call_format()
_RUNAWAY_DEFAULT = runaway_default()


@lru_cache(maxsize=CACHE_SIZE)
def _toolset(tools_json: str) -> ToolSet:
    """The tool set of a request (built once per distinct tools list), every schema compiled once by the
    ``StreamValidator`` so a schema it cannot enforce is refused before generation, not after."""
    toolset = ToolSet.from_openai(json.loads(tools_json))
    for tool in toolset:
        StreamValidator(tool.parameters)
    return toolset


@lru_cache(maxsize=CACHE_SIZE)
def _tag(tools_json: str, choice_json: str, parallel: bool, fmt: str) -> tuple[StructuralTag, str] | None:
    """The tag for a request and its JSON text (what vLLM receives, and how the parser recognises it)."""
    tag = build_structural_tag(
        _toolset(tools_json), tool_choice=json.loads(choice_json), parallel_tool_calls=parallel,
        format=fmt,  # type: ignore[arg-type]
    )
    return None if tag is None else (tag, tag.as_json())


def _dump(value: Any) -> Any:
    return value.model_dump(exclude_none=True) if hasattr(value, "model_dump") else value


class _Request:
    """What the parser reads off a vLLM request, as JSON keys for the caches."""

    __slots__ = ("choice_json", "mode", "parallel", "tools_json")

    def __init__(self, request: Any) -> None:
        tools = [_dump(t) for t in (getattr(request, "tools", None) or [])]
        self.tools_json = json.dumps(tools, sort_keys=True)
        self.choice_json = json.dumps(_dump(getattr(request, "tool_choice", None)), sort_keys=True)
        self.parallel = getattr(request, "parallel_tool_calls", True) is not False
        self.mode = "none"
        if tools:
            try:
                self.mode = tool_choice_mode(json.loads(self.choice_json), self.toolset)[0]
            except UsageError as exc:
                raise VLLMValidationError(f"toolguard: {exc}", parameter="tool_choice") from exc
            except ToolguardError as exc:
                raise VLLMValidationError(f"toolguard: {exc}", parameter="tools") from exc

    @property
    def toolset(self) -> ToolSet:
        return _toolset(self.tools_json)

    def tag(self, fmt: str) -> tuple[StructuralTag, str] | None:
        try:
            return _tag(self.tools_json, self.choice_json, self.parallel, fmt)
        except ToolguardError as exc:
            raise VLLMValidationError(f"toolguard: {exc}", parameter="tools") from exc


class ToolguardToolParser(ToolParser):  # type: ignore[misc]  # vLLM ships no type information
    """toolguard's tool parser for vLLM (see the module docstring). Registered as ``toolguard``."""

    # required/named calls go through extract_tool_calls too (vLLM's own JSON path is not used)
    supports_required_and_named = False
    # so that vLLM calls finish_streaming() at the end of a stream
    engine_based_streaming = True

    def __init__(self, tokenizer: Any, tools: list[Any] | None = None) -> None:
        super().__init__(tokenizer, tools)
        self._format = _FORMAT
        self._turn: TextTurn | None = None
        self._request: _Request | None = None
        self._constraint: EngineConstraint = "none"
        self._unenforced: Sequence[tuple[str, str]] = ()
        self._sent = 0
        self._last: DeltaMessage | None = None  # what the current streaming step returned

    # ---------------------------------------------------------------------------------- before sampling
    def adjust_request(self, request: Any) -> Any:
        if not isinstance(request, ChatCompletionRequest | ResponsesRequest) or not request.tools:
            return request
        info = _Request(request)
        if info.mode == "none":
            return request
        if not (info.mode == "auto" and request.extract_structured_outputs() is not None):
            built = info.tag(self._format)
            if built is not None:
                request.structured_outputs = StructuredOutputsParams(structural_tag=built[1])
                if isinstance(request, ResponsesRequest):
                    request.text = None  # where a Responses request carries its own format
                else:
                    request.response_format = None
        if runaway_wanted(request.vllm_xargs, _RUNAWAY_DEFAULT):
            stop = [request.stop] if isinstance(request.stop, str) else list(request.stop or [])
            if RUNAWAY_STOP not in stop:
                request.stop = [*stop, RUNAWAY_STOP]
        return request

    # ------------------------------------------------------------------------------------- extraction
    def _start(self, request: Any) -> TextTurn | None:
        info = self._request = _Request(request)
        if info.mode == "none":
            return None
        built = info.tag(self._format)
        so = getattr(request, "structured_outputs", None)
        if built is not None and so is not None and so.structural_tag == built[1]:
            self._constraint, self._unenforced = "structural_tag", built[0].unenforced
        elif getattr(request, "extract_structured_outputs", None) and request.extract_structured_outputs():
            self._constraint = "client"
        return TextTurn(info.toolset, tool_choice=json.loads(info.choice_json), format=self._format)

    def _decide(self, turn: TextTurn, *, stream: bool) -> dict[str, Any]:
        verdict = turn.stopped or turn.verdict
        record = decision(verdict, constraint=self._constraint, unenforced=self._unenforced,
                          calls=len(turn.tool_calls), stream=stream)
        if verdict.failed and verdict.kind not in ("runaway", "truncated"):
            raise _refusal(verdict)
        return record

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        turn = self._start(request)
        if turn is None:
            return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
        first, last = turn.feed(model_output), turn.close()
        self._decide(turn, stream=False)
        calls = [
            ToolCall(type="function", function=FunctionCall(name=c.name, arguments=c.arguments))
            for c in (*first.calls, *last.calls)
        ]
        content = first.content + last.content
        return ExtractedToolCallInformation(
            tools_called=bool(calls), tool_calls=calls, content=content or None
        )

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> DeltaMessage | None:
        self._last = None
        if self._request is None:
            self._turn = self._start(request)
        turn = self._turn
        if turn is None:
            return DeltaMessage(content=delta_text) if delta_text else None
        released = turn.feed(delta_text)
        verdict = turn.verdict
        if verdict.failed and verdict.kind not in ("runaway", "truncated"):
            self._decide(turn, stream=True)  # raises: vLLM ends the stream with an error event
        self._last = self._delta(released)
        return self._last

    def finish_streaming(self) -> DeltaMessage | None:
        turn = self._turn
        if turn is None:
            return None
        released = turn.close()
        record = self._decide(turn, stream=True)
        # The decision rides on the last chunk as an extra field (vLLM's DeltaMessage allows extras). vLLM
        # merges what this returns into the delta the same step's extract_tool_calls_streaming returned, and
        # that merge copies content and calls but not extras: so extend that delta itself when there is one.
        last, self._last = self._last, None
        if last is None:
            return self._delta(released, toolguard=record)
        more = self._delta(released)
        if more is not None:
            last.content = (last.content or "") + (more.content or "") or None
            last.tool_calls = [*last.tool_calls, *more.tool_calls]
        setattr(last, "toolguard", record)  # noqa: B010 (an extra field, not a declared one)
        return None

    def _delta(self, released: Release, **extra: Any) -> DeltaMessage | None:
        if not released and not extra:
            return None
        calls = []
        for call in released.calls:
            calls.append(
                DeltaToolCall(
                    index=self._sent,
                    id=make_tool_call_id(),
                    type="function",
                    function=DeltaFunctionCall(name=call.name, arguments=call.arguments).model_dump(
                        exclude_none=True
                    ),
                )
            )
            self._sent += 1
        return DeltaMessage(content=released.content or None, tool_calls=calls, **extra)


def _refusal(verdict: GuardVerdict) -> VLLMUnprocessableEntityError:
    code = ERROR_CODES.get(verdict.kind, verdict.kind)
    return VLLMUnprocessableEntityError(f"toolguard refused the answer: {verdict.message}", parameter=code)


ToolParserManager.register_module("toolguard", module=ToolguardToolParser)
