"""Schema handling: normalisation (drafts 4..2020-12, BFCL-style type names), local $ref only, keyword scan,
and compilation into the node graph the stream validator walks (``compile_schema``, cached)."""

from __future__ import annotations

from ._compile import compile_schema
from ._limits import DEFAULT_LIMITS, ValidationLimits
from ._node import CompiledSchema, Node
from ._normalize import detect_draft, normalize_schema

__all__ = [
    "DEFAULT_LIMITS",
    "CompiledSchema",
    "Node",
    "ValidationLimits",
    "compile_schema",
    "detect_draft",
    "normalize_schema",
]
