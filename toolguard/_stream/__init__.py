"""Incremental, schema-aware JSON validation: ``StreamValidator`` and its records.

Internals other components reuse: ``toolguard._stream._parser.JsonPushParser`` (a push JSON parser with a
documented event protocol) and ``toolguard._schema.compile_schema`` (the cached schema compiler).
"""

from __future__ import annotations

from .._schema._limits import ValidationLimits
from ._types import Verdict, Violation
from ._validator import StreamValidator, validate_json

__all__ = ["StreamValidator", "ValidationLimits", "Verdict", "Violation", "validate_json"]
