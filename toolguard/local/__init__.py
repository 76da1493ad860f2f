"""Local decoding with transformers: grammar-enforced tool calls, truthful endings, runaway stop.

The one door to torch: nothing outside ``toolguard.local`` imports torch, transformers or a grammar engine.

- ``ToolCallLogitsProcessor(tokenizer, toolset, tool_choice)``: for
  ``model.generate(logits_processor=[...])``; one grammar state per sequence of the batch.
- ``LocalGenerator(model, tokenizer)``: ``.chat(messages, tools=..., tool_choice=...)`` returns an
  OpenAI-shaped ``chat.completion`` dict; ``.chat_stream(...)`` yields ``chat.completion.chunk`` dicts.
  Jump-forward decoding.
- ``RunawayStoppingCriteria``: stop ``generate()`` at a repetition loop.
- ``load_model(path)``: a local folder or a GGUF file (converted once into a cache), on CPU.
- Engines: ``"llguidance"`` (default), ``"xgrammar"``, ``"outlines"`` (outlines-core); see ``ENGINES``.
"""

from __future__ import annotations

from ..engines._keywords import ENGINE_FORMATS, ENGINE_KEYWORDS, prepare_schema
from ._compile import DEFAULT_COMPILE_TIMEOUT, clear_cache
from ._engines import ENGINES
from ._generator import DEFAULT_MAX_NEW_TOKENS, GeneratorStats, LocalGenerator
from ._load import load_model
from ._processor import DEFAULT_ENGINE, DEFAULT_SEPARATORS, ProcessorStats, ToolCallLogitsProcessor
from ._stopping import RunawayStoppingCriteria

__all__ = [
    "DEFAULT_COMPILE_TIMEOUT",
    "DEFAULT_ENGINE",
    "DEFAULT_MAX_NEW_TOKENS",
    "DEFAULT_SEPARATORS",
    "ENGINES",
    "ENGINE_FORMATS",
    "ENGINE_KEYWORDS",
    "GeneratorStats",
    "LocalGenerator",
    "ProcessorStats",
    "RunawayStoppingCriteria",
    "ToolCallLogitsProcessor",
    "clear_cache",
    "load_model",
    "prepare_schema",
]
