"""Engine constraints: the whole-turn grammar each engine can enforce, built from a tool set (pure builders).

- ``build_structural_tag``: the xgrammar structural tag vLLM and SGLang accept (``structural_tag``), with the
  schema keywords xgrammar would drop reported in ``StructuralTag.unenforced``.
- ``prepare_schema``: the pre-scan every grammar engine's schema goes through: what the engine would ignore
  is refused (``UnsupportedKeyword``) or, with ``unenforced=[...]``, removed and reported.

Nothing here imports an engine: the builders return plain JSON-able values, and the doors send them.
"""

from __future__ import annotations

from ._keywords import ENGINE_FORMATS, ENGINE_KEYWORDS, EngineName, prepare_schema
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
    "ENGINE_FORMATS",
    "ENGINE_KEYWORDS",
    "MAX_WHITESPACE",
    "TAG_FORMATS",
    "CallSyntax",
    "EngineName",
    "StructuralTag",
    "TagFormat",
    "build_structural_tag",
    "prepare_schema",
    "tool_choice_mode",
]
