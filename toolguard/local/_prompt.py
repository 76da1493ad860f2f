"""The prompt of one turn: the chat template, with the tools in the system message when it has none.

Theory of operation: many small instruction-tuned models (SmolLM2, TinyLlama, ...) ship a plain ChatML
template that ignores ``tools`` and renders every message's ``content`` as is. With such a template the model
never learns which tools exist, so under ``tool_choice="auto"`` it cannot choose one.
``template_handles_tools`` detects it by rendering one probe conversation with and without a probe tool
(identical output: the template ignores tools; the answer is cached per tokenizer). For those templates
``render_prompt`` rewrites the conversation the way hermes/Qwen 2.5 templates render it, then applies the
template to plain messages:

- the tools' JSON inside ``<tools></tools>`` and the ``<tool_call>`` convention, appended to the system
  message (one is added when the conversation has none);
- an assistant message's ``tool_calls`` as ``<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>``
  after its content;
- ``tool`` messages (consecutive ones together) as one ``user`` message stating each result in words:
  ``The function NAME returned RESULT.``; when the conversation ends with them (the turn that should answer),
  the message adds ``Answer my question with the values it returned: <the last user message>`` and the tools
  block is left out of the system message; when one of them is a refused proposal (the executor's
  ``Invalid call to ...``, which the agent loop re-asks after) it asks for the call again instead, and the
  tools block stays; the answering turn leaves refused proposals and their refusals out.

The last rule departs from Qwen's ``<tool_response>`` user turns on purpose. Measured on SmolLM2-135M-Instruct
(greedy, five requests): with Qwen's rendering it echoed the ``<tool_response>`` block or wrote the call again
in all five answers; stating the result in words without the tools block, four of five answers used the
returned value. A model whose template knows tools never gets here.

A template that does handle tools is used untouched. Without any template, ``role: content`` lines with the
tool list on a system line. Cost: two probe renders once per tokenizer, then one render per prompt.
"""

from __future__ import annotations

import contextlib
import json
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["TOOLS_PREAMBLE", "render_prompt", "template_handles_tools", "tools_system_text"]

TOOLS_PREAMBLE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_EPILOGUE = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\n</tool_call>"
)
#: How ``Executor`` words a refused proposal (``toolguard._executor``): the agent loop re-asks after it.
_REASK_PREFIX = "Invalid call to "
_PROBE_MESSAGES = [{"role": "user", "content": "probe"}]
_PROBE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "toolguard_probe_tool",
            "description": "probe",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]
_HANDLES_TOOLS: weakref.WeakKeyDictionary[Any, tuple[str, bool]] = weakref.WeakKeyDictionary()


def template_handles_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template renders ``tools`` (see the module docstring); cached."""
    template = str(getattr(tokenizer, "chat_template", None) or "")
    try:
        cached = _HANDLES_TOOLS.get(tokenizer)
    except TypeError:  # not weak-referenceable: probe every time
        cached = None
    if cached is not None and cached[0] == template:
        return cached[1]
    try:
        plain = tokenizer.apply_chat_template(_PROBE_MESSAGES, tokenize=False, add_generation_prompt=True)
    except Exception:  # a template that cannot render a user message handles nothing
        handles = False
    else:
        try:
            with_tools = tokenizer.apply_chat_template(
                _PROBE_MESSAGES, tools=_PROBE_TOOLS, tokenize=False, add_generation_prompt=True
            )
        except Exception:  # refusing tools is not handling them
            handles = False
        else:
            handles = with_tools != plain
    with contextlib.suppress(TypeError):
        _HANDLES_TOOLS[tokenizer] = (template, handles)
    return handles


def tools_system_text(tools: Sequence[Mapping[str, Any]], system: str | None = None) -> str:
    """The hermes/Qwen tools block for the system message (after ``system`` when there is one)."""
    lines = [json.dumps(dict(t.get("function", t)), ensure_ascii=False) for t in tools]
    block = TOOLS_PREAMBLE + "".join("\n" + line for line in lines) + _TOOLS_EPILOGUE
    return f"{system}\n\n{block}" if system else block


def _call_text(call: Mapping[str, Any]) -> str:
    fn = call.get("function", call)
    arguments = fn.get("arguments", {})
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):  # else shown as the string it was
            arguments = json.loads(arguments)
    payload = json.dumps({"name": fn.get("name"), "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{payload}\n</tool_call>"


def _content(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)


def _trailing_results(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    n = len(messages)
    while n and messages[n - 1].get("role") == "tool":
        n -= 1
    return list(messages[n:])


def _without_refused(messages: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``messages`` without the proposals the executor refused and their refusals (the answering turn does
    not need them, and a small model given them tends to propose again)."""
    refused = {
        str(m.get("tool_call_id"))
        for m in messages
        if m.get("role") == "tool" and _content(m).startswith(_REASK_PREFIX)
    }
    if not refused:
        return messages
    out: list[Mapping[str, Any]] = []
    for message in messages:
        if message.get("role") == "tool" and str(message.get("tool_call_id")) in refused:
            continue
        calls = message.get("tool_calls")
        if message.get("role") == "assistant" and calls:
            kept = [c for c in calls if str(c.get("id")) not in refused]
            if not kept and not _content(message):
                continue
            message = {**message, "tool_calls": kept}
        out.append(message)
    return out


def _answer_request(messages: Sequence[Mapping[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _content(message)
    return ""


def hermes_messages(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
) -> list[dict[str, str]]:
    """``messages`` as plain ``{"role", "content"}`` messages in the hermes convention (module docstring)."""
    rest = list(messages)
    ending = _trailing_results(rest)
    reask = any(_content(m).startswith(_REASK_PREFIX) for m in ending)
    answering = bool(ending) and not reask
    if answering:
        rest = _without_refused(rest)
    out: list[dict[str, str]] = []
    system = _content(rest.pop(0)) if rest and rest[0].get("role") == "system" else None
    if tools and not answering:
        out.append({"role": "system", "content": tools_system_text(tools, system)})
    elif system is not None:
        out.append({"role": "system", "content": system})
    names: dict[str, str] = {}
    results: list[str] = []
    for i, message in enumerate(rest):
        role = str(message.get("role"))
        if role == "tool":
            name = names.get(str(message.get("tool_call_id")), message.get("name") or "the tool")
            results.append(f"The function {name} returned {_content(message)}.")
            if i + 1 < len(rest) and rest[i + 1].get("role") == "tool":
                continue
            text = " ".join(results)
            results = []
            question = _answer_request(rest) if i + 1 == len(rest) else ""
            if question and reask:
                text += f" Write the call again, with valid arguments, for my request: {question}"
            elif question:
                text += f" Answer my question with the values it returned: {question}"
            out.append({"role": "user", "content": text})
            continue
        text = _content(message)
        if role == "assistant" and message.get("tool_calls"):
            for call in message["tool_calls"]:
                fn = call.get("function", call)
                names[str(call.get("id"))] = str(fn.get("name"))
            calls = "\n".join(_call_text(c) for c in message["tool_calls"])
            text = f"{text}\n{calls}" if text else calls
        out.append({"role": role, "content": text})
    return out


def render_prompt(
    tokenizer: Any, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
) -> list[int]:
    """Token ids of the prompt for ``messages`` and OpenAI-shaped ``tools`` (see the module docstring)."""
    if getattr(tokenizer, "chat_template", None):
        if template_handles_tools(tokenizer):
            ids = tokenizer.apply_chat_template(
                list(messages), tools=list(tools) if tools else None, add_generation_prompt=True,
                tokenize=True, return_dict=False,
            )
        else:
            ids = tokenizer.apply_chat_template(
                hermes_messages(messages, tools), add_generation_prompt=True, tokenize=True, return_dict=False
            )
        return [int(i) for i in ids]
    lines = []
    if tools:
        lines.append("system: tools: " + json.dumps(list(tools)))
    lines += [f"{m.get('role')}: {_content(m)}" for m in messages]
    lines.append("assistant:")
    return list(tokenizer.encode("\n".join(lines) + " "))
