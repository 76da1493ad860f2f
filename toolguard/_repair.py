"""Repair what a server got wrong about tool calls, so a valid call costs no second generation.

Theory of operation
-------------------
Two faults of real endpoints are repaired here, for every front door (the ``Guard`` calls in; nothing here
does I/O):

- **A call written as text.** ``transformers serve``, Ollama, ``llama-server`` without ``--jinja`` and vLLM
  without a tool parser (or when its parser misses) return ``<tool_call>{...}</tool_call>`` as ``content``.
  The Guard's ``ContentCallScan`` notices the call; with repair on, the Guard hands the text from there to a
  ``toolguard.formats.StreamingParser`` in the format ``repair_format`` names (``"auto"``: detected from the
  marker) and checks the parsed calls like any others. ``call_format_for`` picks the format configured for a
  model name (``fnmatch`` patterns, first match wins).
- **A fabricated result beside the calls.** A non-streamed message with ``tool_calls`` whose ``content`` holds
  a tool-result or next-turn marker (``<tool_response>``, ``Observation:``, ``<|im_start|>``, a role header,
  an end-of-turn token) carries text the model made up after its call. ``fabricated_split`` moves the content
  from that marker on after the calls, where the Guard's own rule cuts it exactly as it cuts it in a stream.
- **Calls written as XML parameters** (Qwen3-Coder ``<function=NAME><parameter=KEY>…``, GLM
  ``<arg_key>/<arg_value>``), which ``toolguard.formats`` reads as malformed JSON calls: ``xml_calls`` reads
  them at the end of the turn, typed by the tool's schema.

Cost: one regex search over the content per message; the parser is linear in the text it reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any

from ._events import ContentDelta, GuardEvent, ToolCallDelta
from ._exceptions import ConfigError
from .formats import END_TOKENS, FORMATS

__all__ = [
    "FABRICATION_MARKERS",
    "XML_SIGNS",
    "call_format_for",
    "fabricated_split",
    "repair_format",
    "xml_calls",
]

#: What starts text a model made up beside its calls: a tool's result, another turn, the end of the turn.
FABRICATION_MARKERS = re.compile(
    r"<tool_response>|<tool_result>|<\|?ipython\|?>|Observation\s*:|\[TOOL_RESULTS\]|"
    r"<\|im_start\|>|<\|start_header_id\|>|\[INST\]|<start_of_turn>|"
    r"^[^\S\n]*(?:user|human|tool|assistant)\s*:|"
    # end-of-turn tokens, but not ``</s>``: prose writes it too (HTML strikethrough)
    + "|".join(re.escape(t) for t in END_TOKENS if t.startswith("<|")),
    re.IGNORECASE | re.MULTILINE,
)


def repair_format(call_format: str | None) -> str:
    """The ``toolguard.formats`` format repairs parse (``None``: ``"auto"``); raises ``ConfigError``."""
    fmt = call_format or "auto"
    if fmt not in FORMATS:
        raise ConfigError(f"unknown call format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return fmt


def call_format_for(model: Any, formats: Mapping[str, str] | Iterable[tuple[str, str]]) -> str | None:
    """The call format configured for ``model`` (``{pattern: format}``, shell patterns, case-sensitive, first
    match wins), or ``None``."""
    if not isinstance(model, str):
        return None
    items = formats.items() if isinstance(formats, Mapping) else formats
    for pattern, fmt in items:
        if fnmatchcase(model, pattern):
            return fmt
    return None


def fabricated_split(events: list[GuardEvent]) -> list[GuardEvent]:
    """``[ContentDelta, ToolCallDelta..., Finish]`` of a whole message, with the content from its first
    fabrication marker on moved after the calls (where the Guard cuts it); unchanged when there is none."""
    first = events[0]
    assert isinstance(first, ContentDelta)
    match = FABRICATION_MARKERS.search(first.text)
    if match is None:
        return events
    kept, cut = first.text[: match.start()], first.text[match.start() :]
    calls = [e for e in events[1:-1] if isinstance(e, ToolCallDelta)]
    if len(calls) != len(events) - 2:
        return events
    head: list[GuardEvent] = [ContentDelta(kept)] if kept.strip() else []
    return [*head, *calls, ContentDelta(cut), events[-1]]


# Qwen3-Coder: <tool_call><function=NAME><parameter=KEY>VALUE</parameter>...</function></tool_call>
_XML_CALL = re.compile(
    r"\s*<tool_call>\s*<function=([^>\s]{1,128})>(.*?)</function>\s*</tool_call>", re.DOTALL
)
_XML_PARAM = re.compile(r"<parameter=([^>\s]{1,128})>\n?(.*?)\n?</parameter>", re.DOTALL)
# GLM-4.5: <tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>...</tool_call>
_GLM_CALL = re.compile(
    r"\s*<tool_call>\s*([^<\s]{1,128})\s*((?:<arg_key>.*?</arg_value>\s*)*)</tool_call>", re.DOTALL
)
_GLM_PARAM = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)
#: Text that says a call is written as XML parameters (``xml_calls`` reads it), not as JSON.
XML_SIGNS = ("<parameter=", "<arg_key>")


def xml_calls(text: str, schemas: Mapping[str, Any]) -> tuple[list[tuple[str, str]], str] | None:
    """The calls of ``text`` written as XML parameters (Qwen3-Coder's ``<function=…><parameter=…>``, GLM's
    ``<arg_key>/<arg_value>``), back to back from its start: ``([(name, arguments JSON)], text after them)``,
    or ``None`` when it does not start with one. Values are JSON-decoded unless the tool's schema
    (``schemas[name]``) says the parameter is a string, as the servers' own parsers do."""
    calls: list[tuple[str, str]] = []
    at = 0
    while True:
        m = _XML_CALL.match(text, at)
        if m is not None:
            name, params = m.group(1), _XML_PARAM.findall(m.group(2))
        else:
            m = _GLM_CALL.match(text, at)
            if m is None:
                break
            name, params = m.group(1), _GLM_PARAM.findall(m.group(2))
        properties = (schemas.get(name) or {}).get("properties")
        props = properties if isinstance(properties, Mapping) else {}
        args = {key.strip(): _value(value, props.get(key.strip())) for key, value in params}
        calls.append((name, json.dumps(args, ensure_ascii=False)))
        at = m.end()
    return (calls, text[at:]) if calls else None


def _value(raw: str, schema: Any) -> Any:
    kinds = schema.get("type") if isinstance(schema, Mapping) else None
    if kinds == "string" or (isinstance(kinds, list) and "string" in kinds):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw
