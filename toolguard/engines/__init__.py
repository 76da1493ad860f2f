"""Engine constraints: the whole-turn grammar each engine can enforce, built from a tool set (pure builders).

- ``build_structural_tag``: the xgrammar structural tag vLLM and SGLang accept (``structural_tag``), with the
  schema keywords xgrammar would drop reported in ``StructuralTag.unenforced``.
- ``EngineMemory`` / ``RequestPlan``: what a request to an engine carries beyond the client's body (the tag,
  ``tool_choice``) and how it falls back after a refusal or on a vLLM without a tool parser (sans-IO; the
  proxy and the SDK wrapper do the I/O).
- ``prepare_schema``: the pre-scan every grammar engine's schema goes through: what the engine would ignore
  is refused (``UnsupportedKeyword``) or, with ``unenforced=[...]``, removed and reported.

Nothing here imports an engine: the builders return plain JSON-able values, and the doors send them.
"""

from __future__ import annotations

from ._keywords import ENGINE_FORMATS, ENGINE_KEYWORDS, EngineName, prepare_schema
from ._requests import ENGINES, EngineMemory, RequestPlan, engine_of_models
from ._structural_tag import (
    MAX_WHITESPACE,
    TAG_FORMATS,
    CallSyntax,
    StructuralTag,
    TagFormat,
    build_structural_tag,
    tool_choice_mode,
)

__all__ = [
    "ENGINES",
    "ENGINE_FORMATS",
    "ENGINE_KEYWORDS",
    "MAX_WHITESPACE",
    "TAG_FORMATS",
    "CallSyntax",
    "EngineMemory",
    "EngineName",
    "RequestPlan",
    "StructuralTag",
    "TagFormat",
    "build_structural_tag",
    "engine_of_models",
    "prepare_schema",
    "tool_choice_mode",
]
