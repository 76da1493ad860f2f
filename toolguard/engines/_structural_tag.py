"""The whole-turn constraint as an xgrammar *structural tag*, for engines that accept one (vLLM, SGLang).

Theory of operation
-------------------
vLLM (``structured_outputs: {"structural_tag": ...}`` or ``response_format: {"type": "structural_tag"}``) and
SGLang compile a structural tag with xgrammar. Its ``triggered_tags`` format lets the model write free text
until a *trigger* appears, then forces one of the *tags* — ``begin``, a JSON document valid for ``content``'s
schema, ``end`` — and afterwards allows free text again (or, with ``stop_after_first``, nothing but the end of
the turn). ``build_structural_tag`` turns a tool set into that shape, one tag per offered tool:

- ``begin`` is the call's opening in the served model's wire format with the tool's name already written
  (hermes: ``<tool_call>\\n{"name": "get_weather", "arguments": ``), so the name is enforced by the prefix and
  the arguments by the tool's schema; ``end`` closes the call (``}\\n</tool_call>``).
- ``tool_choice``: ``"auto"`` allows prose or calls; ``"required"`` sets ``at_least_one`` (measured on
  xgrammar 0.2.8: the turn must then *start* with a call, no prose before it); a named tool keeps only its tag
  and sets ``at_least_one``; ``"none"`` (or no tools) builds nothing.
- ``parallel_tool_calls=False`` sets ``stop_after_first``: after the call only the end of the turn may
  follow (not even a newline), so the model cannot go on and invent the tool's result. With parallel calls
  the free text between and after calls ``excludes`` the format's tool-result and new-turn markers
  (``<tool_response>``, ``<|im_start|>``...).
- Whitespace inside the arguments is capped at ``max_whitespace`` consecutive characters (xgrammar's
  ``max_whitespace_cnt``): JSON allows any amount between tokens, and a sampled model can spend its whole
  token budget there (measured with the demo model at temperature 1: a required call cut by ``max_tokens``
  after runs of newlines). Indented JSON still fits under the default.
- Each schema first goes through ``prepare_schema(..., engine="xgrammar", unenforced=...)``: keywords xgrammar
  would silently ignore (``uniqueItems``, ``multipleOf`` beside a range, ``allOf``, ``propertyNames``,
  ``not``, a ``format`` it does not know...) are removed from the tag and reported in
  ``StructuralTag.unenforced``; the caller must validate every call against the full schema (the
  ``StreamValidator``) so those keywords stay enforced. ``minLength``/``maxLength`` go the same way: xgrammar
  (0.2.8 and 0.2.9, measured) enforces them with a string grammar that forbids every escape (no ``\"``,
  ``\n``, ``\u0041``) and lets raw control characters through, i.e. it refuses valid values and allows
  invalid JSON; without them its JSON string grammar is exact. What the tag lets through is never wider than
  the schema except for exactly the reported keywords.

Pure: no engine import, no I/O. Cost: one walk of each schema (O(size of the tool set)); callers cache.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .._choice import parse_tool_choice
from .._exceptions import UsageError
from .._tools import ToolSet
from .._types import ChoiceMode
from ._keywords import prepare_schema

__all__ = [
    "MAX_WHITESPACE",
    "TAG_FORMATS",
    "CallSyntax",
    "StructuralTag",
    "TagFormat",
    "build_structural_tag",
    "tool_choice_mode",
]

TagFormat: TypeAlias = Literal["hermes", "llama3", "openai", "mistral", "react"]
#: Consecutive whitespace characters allowed inside a call's arguments (room for indented JSON).
MAX_WHITESPACE = 16


@dataclass(frozen=True, slots=True)
class CallSyntax:
    """How one wire format writes a call, as a structural tag sees it.

    ``begin`` holds ``{name}`` (replaced by the tool name, JSON-quoted when ``quote_name``); the arguments
    object follows it and ``end`` closes the call. ``trigger`` is the shared prefix of every ``begin``: free
    text runs until it appears. ``excludes`` are strings forbidden in the free text (tool results and new
    turns, which a model must never write itself)."""

    trigger: str
    begin: str
    end: str
    excludes: tuple[str, ...] = ()
    quote_name: bool = True

    def opening(self, name: str) -> str:
        spelled = json.dumps(name, ensure_ascii=False) if self.quote_name else name
        return self.begin.replace("{name}", spelled)


#: The formats ``toolguard.formats`` parses and renders that a structural tag can express, spelled exactly as
#: ``toolguard.formats.render`` writes them (a test renders calls and checks xgrammar accepts them).
TAG_FORMATS: dict[TagFormat, CallSyntax] = {
    "hermes": CallSyntax(
        "<tool_call>", '<tool_call>\n{"name": {name}, "arguments": ', "}\n</tool_call>",
        ("<tool_response>", "</tool_response>", "<|im_start|>"),
    ),
    "llama3": CallSyntax('{"name": ', '{"name": {name}, "parameters": ', "}", ("<|start_header_id|>",)),
    "openai": CallSyntax('{"name": ', '{"name": {name}, "arguments": ', "}"),
    "mistral": CallSyntax(
        "[TOOL_CALLS]", '[TOOL_CALLS][{"name": {name}, "arguments": ', "}]", ("[TOOL_RESULTS]", "[INST]")
    ),
    "react": CallSyntax("Action:", "Action: {name}\nAction Input: ", "", ("Observation:",), quote_name=False),
}


@dataclass(frozen=True, slots=True)
class StructuralTag:
    """A built structural tag.

    ``tag``: the object engines accept (``{"type": "structural_tag", "format": {...}}``; vLLM takes it as
    ``response_format`` or, JSON-encoded, as ``structured_outputs.structural_tag``). ``unenforced``: the
    ``(tool, JSON pointer)`` of every schema keyword left out because xgrammar would not enforce it; those
    must be checked by validating each call. ``mode`` and ``names``: the parsed ``tool_choice`` the tag
    enforces (``"auto"`` or ``"required"``, and the tools it allows)."""

    tag: dict[str, Any]
    format: TagFormat
    mode: ChoiceMode
    names: tuple[str, ...]
    unenforced: tuple[tuple[str, str], ...] = ()

    def as_json(self) -> str:
        """The tag as JSON text (vLLM's ``structured_outputs.structural_tag``)."""
        return json.dumps(self.tag, ensure_ascii=False, separators=(",", ":"))


def tool_choice_mode(tool_choice: Any, tools: ToolSet) -> tuple[ChoiceMode, tuple[str, ...]]:
    """``(mode, allowed tool names)`` for a request's ``tool_choice``: ``toolguard._choice.parse_tool_choice``
    (every spelling it accepts; ``UsageError`` for the rest, for a name that is not an offered tool and for
    ``"required"`` without tools)."""
    choice = parse_tool_choice(tool_choice, tools)
    return choice.mode, choice.names


def build_structural_tag(
    tools: ToolSet | Iterable[Mapping[str, Any]],
    *,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    format: TagFormat = "hermes",
    max_whitespace: int | None = MAX_WHITESPACE,
) -> StructuralTag | None:
    """The structural tag that makes an engine enforce the whole turn (see the module docstring).

    ``tools``: a ``ToolSet`` or OpenAI ``tools`` JSON. ``format``: the call syntax of the served model (its
    chat template): one of ``TAG_FORMATS``. ``max_whitespace``: consecutive whitespace characters allowed
    inside the arguments (``None``: unbounded). Returns ``None`` when there is nothing to enforce
    (``tool_choice="none"`` or no tools).

    Raises ``UsageError`` (a bad ``tool_choice`` or ``format``), ``SchemaError``/``RemoteRefRefused`` (a
    schema the tag cannot be built from).
    """
    syntax = TAG_FORMATS.get(format)
    if syntax is None:
        raise UsageError(f"no structural tag for call format {format!r}; choose one of {sorted(TAG_FORMATS)}")
    toolset = tools if isinstance(tools, ToolSet) else ToolSet.from_openai(tools)
    mode, names = tool_choice_mode(tool_choice, toolset)
    if mode == "none":
        return None
    dropped: list[tuple[str, str]] = []
    tags = [_tag(syntax, name, toolset[name].parameters, dropped, max_whitespace) for name in names]
    body: dict[str, Any] = {
        "type": "triggered_tags",
        "triggers": [syntax.trigger],
        "tags": tags,
        "at_least_one": mode == "required",
        "stop_after_first": not parallel_tool_calls,
    }
    if syntax.excludes:
        body["excludes"] = list(syntax.excludes)
    return StructuralTag(
        tag={"type": "structural_tag", "format": body},
        format=format,
        mode=mode,
        names=names,
        unenforced=tuple(dropped),
    )


#: Enforced by xgrammar with an escape-free string grammar (see the module docstring): left to validation.
_XGRAMMAR_LENGTHS = frozenset({"minLength", "maxLength"})


def _tag(
    syntax: CallSyntax, name: str, schema: Any, dropped: list[tuple[str, str]], max_whitespace: int | None
) -> dict[str, Any]:
    lost: list[str] = []
    prepared = prepare_schema(schema, engine="xgrammar", tool=name, unenforced=lost,
                              also_unsupported=_XGRAMMAR_LENGTHS)
    dropped.extend((name, pointer) for pointer in lost)
    content: dict[str, Any] = {"type": "json_schema", "json_schema": prepared}
    if max_whitespace is not None:
        content["max_whitespace_cnt"] = max_whitespace
    return {"begin": syntax.opening(name), "content": content, "end": syntax.end}

