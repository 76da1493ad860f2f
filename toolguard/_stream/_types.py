"""The records the stream validator returns: ``Verdict`` and its ``Violation``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["COMPLETE", "OPEN", "Verdict", "VerdictState", "Violation"]

VerdictState = Literal["open", "complete", "rejected"]


@dataclass(frozen=True, slots=True)
class Violation:
    """Why a stream was rejected.

    ``offset``: index, in the whole stream, of the first character that made the text impossible to complete
    validly (for a check decided when a value closes: the character that closed it; for an incomplete
    document at ``close()``: the stream length). ``path``: JSON pointer of the offending value ("" = root).
    ``message``: actionable text that starts with the path. ``keyword``: the JSON Schema keyword, or
    ``"syntax"`` (malformed JSON, duplicate key, trailing data, incomplete document) or ``"limit"`` (a cap of
    ``ValidationLimits``).
    """

    offset: int
    path: str
    message: str
    keyword: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """The validator's state: ``"open"`` (valid so far), ``"complete"`` (a whole valid document; only
    whitespace may follow) or ``"rejected"`` (``error`` says where and why; sticky)."""

    state: VerdictState
    error: Violation | None = None

    @property
    def ok(self) -> bool:
        """True unless rejected."""
        return self.state != "rejected"


OPEN = Verdict("open")
COMPLETE = Verdict("complete")
