"""``StreamValidator``: schema-aware, incremental validation of one JSON document.

Theory of operation. The schema is compiled once (``toolguard._schema.compile_schema``, cached by canonical
JSON and shared by every validator). Each ``feed`` hands the chunk to a ``JsonPushParser`` whose events drive
the ``Engine``; nothing already consumed is read again, so validating n characters costs O(n) whatever the
chunking, and any split of the text gives the same verdict. The verdict is ``open`` while the text can still
become a valid document, ``complete`` once a whole valid document was read, and ``rejected`` (sticky) at the
first character that no continuation can save. After ``close()`` the verdict equals ``jsonschema``'s on
``json.loads(text)``, with two deliberate differences: a duplicate key is rejected (``json.loads`` silently
keeps the last one) and so are documents past a cap of ``ValidationLimits``.

Sans-IO: no I/O, no clock, no threads (the only time budget is the ``regex`` package's own match timeout).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from .._exceptions import UsageError
from .._schema._compile import compile_schema
from .._schema._limits import DEFAULT_LIMITS, ValidationLimits
from .._schema._node import CompiledSchema
from ._engine import Engine, Rejected
from ._parser import JsonParseError, JsonPushParser
from ._types import COMPLETE, OPEN, Verdict, Violation

__all__ = ["StreamValidator", "validate_json"]

_CHECKERS: dict[str, Any] = {}


def _number_cap(max_number_length: int) -> int:
    """``max_number_length``, lowered to Python's int-digits limit (``sys.get_int_max_str_digits``, 4300 by
    default; 0 = none) so that converting an accepted literal can never raise ``ValueError``."""
    digits = sys.get_int_max_str_digits()
    return min(max_number_length, digits) if digits > 0 else max_number_length


def _format_checker(draft: str) -> Any:
    """``jsonschema``'s format checker for ``draft`` (the judge of what a format means)."""
    checker = _CHECKERS.get(draft)
    if checker is None:
        import jsonschema

        cls = {
            "draft4": jsonschema.Draft4Validator,
            "draft6": jsonschema.Draft6Validator,
            "draft7": jsonschema.Draft7Validator,
            "draft2019-09": jsonschema.Draft201909Validator,
            "draft2020-12": jsonschema.Draft202012Validator,
        }[draft]
        checker = _CHECKERS[draft] = cls.FORMAT_CHECKER
    return checker


class StreamValidator:
    """Validate a JSON document against a JSON Schema while it streams in.

    ``schema`` is a JSON Schema (a dict or a boolean; drafts 4, 6, 7, 2019-09 and 2020-12 by ``$schema``,
    2020-12 when absent) or a ``CompiledSchema``. ``limits`` caps depth, size and regex time
    (``ValidationLimits``). ``format_assertion`` makes ``format`` an assertion, judged by ``jsonschema``'s
    ``FormatChecker`` for the draft (date, time, date-time, email, ipv4, ipv6, uuid, uri, ...).

    Raises ``SchemaError`` (malformed schema), ``RemoteRefRefused`` (a ``$ref`` outside the document),
    ``UnsupportedKeyword`` and ``SchemaLimitExceeded`` at construction. After that nothing raises except
    ``UsageError`` for ``feed`` after ``close``: the model's mistakes are the verdict.

    >>> v = StreamValidator({"type": "object", "properties": {"days": {"type": "integer", "maximum": 14}}})
    >>> v.feed('{"days": 2').state
    'open'
    >>> v.feed('0}').error.message
    '/days: 20 is greater than the maximum of 14'
    """

    __slots__ = ("_closed", "_engine", "_max_size", "_parser", "_size", "_verdict", "compiled", "limits")

    def __init__(
        self,
        schema: Mapping[str, Any] | bool | CompiledSchema,
        *,
        limits: ValidationLimits | None = None,
        format_assertion: bool = True,
    ) -> None:
        self.limits = limits or DEFAULT_LIMITS
        self.compiled = compile_schema(schema, limits=self.limits)
        checker = _format_checker(self.compiled.draft) if format_assertion else None
        self._engine = Engine(self.compiled, self.limits, checker)
        self._parser = JsonPushParser(
            self._engine,
            max_depth=self.limits.max_depth,
            max_number_length=_number_cap(self.limits.max_number_length),
        )
        self._verdict: Verdict = OPEN
        self._closed = False
        self._size = 0
        self._max_size = self.limits.max_document_size

    def __repr__(self) -> str:
        return f"<StreamValidator {self._verdict.state} at offset {self._size}>"

    @property
    def verdict(self) -> Verdict:
        """The current verdict."""
        return self._verdict

    @property
    def value(self) -> Any:
        """The value read so far (containers fill in as they stream; an unfinished string shows its text so
        far, an unfinished number its digits). ``None`` before the first value character. This is the live
        object the validator keeps filling: copy it to keep a snapshot."""
        return self._engine.partial_value()

    @property
    def offset(self) -> int:
        """Characters fed so far (up to the chunk that was rejected, if any)."""
        return self._size

    def feed(self, chunk: str) -> Verdict:
        """Consume the next piece of the document and return the verdict.

        A rejection is sticky: later feeds do no work and return the same verdict. Raises ``UsageError`` after
        ``close()``.
        """
        if self._closed:
            raise UsageError("feed() after close(): this document is finished; create a new StreamValidator")
        if self._verdict.error is not None or not chunk:
            return self._verdict
        over = self._size + len(chunk) - self._max_size
        if over > 0:
            chunk = chunk[: len(chunk) - over]
        self._size += len(chunk)
        try:
            self._parser.feed(chunk)
            if over > 0:
                self._verdict = Verdict(
                    "rejected",
                    Violation(
                        self._max_size,
                        self._path(),
                        f"{self._path() or '(root)'}: the document is longer than max_document_size="
                        f"{self._max_size} characters",
                        "limit",
                    ),
                )
                return self._verdict
        except Rejected as exc:
            self._verdict = Verdict("rejected", exc.violation)
            return self._verdict
        except JsonParseError as exc:
            self._verdict = self._parse_error(exc)
            return self._verdict
        if self._engine.done:
            self._verdict = COMPLETE
        return self._verdict

    def close(self) -> Verdict:
        """End of stream. The verdict is then ``complete`` or ``rejected`` (an incomplete document is rejected
        at offset = the stream length). Idempotent."""
        if self._closed:
            return self._verdict
        self._closed = True
        if self._verdict.error is not None:
            return self._verdict
        try:
            self._parser.close()
        except Rejected as exc:
            self._verdict = Verdict("rejected", exc.violation)
            return self._verdict
        except JsonParseError as exc:
            self._verdict = self._parse_error(exc)
            return self._verdict
        self._verdict = COMPLETE if self._engine.done else self._verdict
        return self._verdict

    def _path(self) -> str:
        return self._engine.current_path()

    def _parse_error(self, exc: JsonParseError) -> Verdict:
        path = self._path()
        return Verdict(
            "rejected", Violation(exc.offset, path, f"{path or '(root)'}: {exc.message}", exc.keyword)
        )


def validate_json(
    schema: Mapping[str, Any] | bool | CompiledSchema,
    text: str,
    *,
    limits: ValidationLimits | None = None,
    format_assertion: bool = True,
) -> Verdict:
    """Validate a whole document: ``complete`` or ``rejected`` (same checks and offsets as streaming it)."""
    validator = StreamValidator(schema, limits=limits, format_assertion=format_assertion)
    validator.feed(text)
    return validator.close()
