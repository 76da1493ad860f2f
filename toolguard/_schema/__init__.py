"""Schema handling: normalisation (drafts 4..2020-12, BFCL-style type names), local $ref only, keyword scan."""

from __future__ import annotations

from ._normalize import detect_draft, normalize_schema

__all__ = ["detect_draft", "normalize_schema"]
