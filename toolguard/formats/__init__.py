"""Tool-call wire formats: parse a model's turn into proposals, cut what it made up, and write calls back.

``parse(text, format=...)`` returns a ``Parsed`` with the ``tool_calls``, the ``content`` before them, the
``fabricated`` text cut after the last closed call (a fake ``<tool_response>``, an ``Observation:``, a JSON
"result", another turn), ``complete`` (False when a call was left unterminated) and the ``problems`` noticed
on the way (concatenated JSON calls, calls embedded in prose, unterminated or malformed calls): reported,
never silently merged or dropped. ``StreamingParser`` does the same chunk by chunk, in linear time, and
``render`` writes calls in a format. Formats: ``openai`` (JSON ``{"name", "arguments"}`` or arrays of them),
``hermes`` (Qwen ``<tool_call>…</tool_call>``, bare JSON, ``<function=name>{…}</function>``), ``llama3`` (JSON
with ``parameters``, ``<|python_tag|>`` with JSON or Python, the pythonic list ``[f(a=1)]``, Llama 4's
``<|python_start|>``), ``mistral`` (``[TOOL_CALLS][…]``, ``[TOOL_CALLS]name[ARGS]{…}`` and ``name{…}``),
``react`` (``Action:``/``Action Input:``) and ``auto``. Sans-IO: nothing here reads a clock, starts a thread
or does I/O.
"""

from __future__ import annotations

from ._parser import END_TOKENS, StreamingParser, parse
from ._records import (
    FORMATS,
    ContentDelta,
    Event,
    FabricationStarted,
    Format,
    Parsed,
    Problem,
    ProblemFound,
    ProblemKind,
    ToolCallCompleted,
    ToolCallStarted,
)
from ._render import render

__all__ = [
    "END_TOKENS",
    "FORMATS",
    "ContentDelta",
    "Event",
    "FabricationStarted",
    "Format",
    "Parsed",
    "Problem",
    "ProblemFound",
    "ProblemKind",
    "StreamingParser",
    "ToolCallCompleted",
    "ToolCallStarted",
    "parse",
    "render",
]
