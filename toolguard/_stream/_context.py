"""``EvalContext``: what a schema evaluation needs from the engine that drives it.

``Ev``, ``KeyName`` and the keyword checks run inside ``Engine`` but must not import it (the engine imports
them). They see it through this protocol: the offset of the current character, the regex time budget and the
patterns that ran out of it, the pattern probes left for escapes, the format checker, and the verbs that
build a violation (``violation``), shorten one for a message (``short``) and end the stream (``reject``).
Types only: nothing here runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .._schema._node import Node
    from ._frame import Frame
    from ._types import Violation

__all__ = ["EvalContext", "EvalParent"]


class EvalContext(Protocol):
    off: int
    regex_timeout: float
    slow_patterns: set[int]
    range_probes: int  # pattern probes left for escapes (``_prefix.range_death``)
    format_checker: Any

    def violation(self, frame: Frame | None, keyword: str, detail: str) -> Violation: ...

    def reject(self, viol: Violation) -> None: ...

    def short(self, viol: Violation | None) -> str: ...


class EvalParent(Protocol):
    """The evaluation a ``KeyName`` filter reports to (an ``Ev`` on the object)."""

    dead: bool
    node: Node

    def kid_failed(self, kid: Any, viol: Any, ctx: EvalContext) -> None: ...
