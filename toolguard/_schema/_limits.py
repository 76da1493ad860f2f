"""Safety caps shared by the schema compiler and the stream validator.

Every cap is a named field with a default; pass ``ValidationLimits(max_depth=32)`` (or any field) to tighten
one. Hitting a document cap is *data*: the validator rejects with ``keyword="limit"``. Hitting a schema cap is
a ``SchemaLimitExceeded`` exception at construction, because the schema, not the model, is at fault.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "ValidationLimits"]


@dataclass(frozen=True, slots=True)
class ValidationLimits:
    """Caps that keep validation linear and bounded on hostile documents and schemas.

    Document caps (a violation rejects the stream with ``keyword="limit"``):

    - ``max_depth``: nesting of arrays/objects (the 129th open bracket is rejected by default).
    - ``max_document_size``: characters in the whole stream.
    - ``max_number_length``: characters in one number literal (``json.loads`` itself refuses integers of
      more than 4300 digits). The stream validator lowers it to Python's int-digits limit
      (``sys.get_int_max_str_digits()``, 4300 by default) when that is smaller, so a longer literal is a
      ``"limit"`` rejection, never a ``ValueError``.
    - ``regex_timeout``: seconds one ``pattern``/``patternProperties`` search may take (the ``regex``
      package's own timeout). A search that runs out at a value's close rejects it as ``"limit"``; during a
      prefix check it only defers the decision to the close.
    - ``partial_pattern_max_length``: strings longer than this are not checked against ``pattern`` while
      they stream (the check is deferred to the closing quote), which keeps the work linear.

    Schema caps (exceeding one raises ``SchemaLimitExceeded``):

    - ``max_schema_depth``: nesting of the schema document.
    - ``max_schema_nodes``: number of subschemas.
    - ``max_enum_size``: members of one ``enum``.
    - ``max_pattern_length``: characters of one regular expression.
    - ``max_inplace_expansion``: schemas applied to one value through allOf/anyOf/oneOf/$ref/... chains.
    """

    max_depth: int = 128
    max_document_size: int = 16 * 1024 * 1024
    max_number_length: int = 1000
    regex_timeout: float = 0.1
    partial_pattern_max_length: int = 4096
    max_schema_depth: int = 256
    max_schema_nodes: int = 100_000
    max_enum_size: int = 10_000
    max_pattern_length: int = 2000
    max_inplace_expansion: int = 2000


DEFAULT_LIMITS = ValidationLimits()
