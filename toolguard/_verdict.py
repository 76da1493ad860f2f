"""``GuardVerdict`` and ``GuardLimits``: what the Guard answers, and the caps it enforces."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    from ._runaway import Runaway

__all__ = ["GuardLimits", "GuardVerdict", "VerdictKind"]

VerdictKind: TypeAlias = Literal[
    "ok", "rejected", "unknown_tool", "runaway", "fabricated", "truncated", "call_in_content", "missing_call"
]
Where: TypeAlias = Literal["content", "arguments", "name", "tokens", "finish"]


@dataclass(frozen=True, slots=True)
class GuardLimits:
    """Caps the Guard enforces (named, so a deployment can change them).

    ``max_calls``: tool calls per generation; ``max_argument_chars``: characters of one call's arguments.
    Exceeding either rejects the generation.
    """

    max_calls: int = 64
    max_argument_chars: int = 1_000_000


DEFAULT_LIMITS = GuardLimits()


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    """What the Guard says about the generation so far.

    ``kind`` is ``"ok"`` while nothing is wrong. ``done`` is true once the generation ended (``Finish`` or
    ``close()``) and on every failing verdict. For a failure: ``message`` (one line, written for the model in
    a re-ask and for logs), ``where`` it happened, ``call_index`` and ``tool`` for a call, ``offset`` (index
    into that call's arguments, or into the content), ``path`` (JSON pointer into the arguments) and
    ``keyword`` (the schema keyword) for a rejection, ``runaway`` for a runaway, ``text`` for the cut or
    offending text.
    """

    kind: VerdictKind = "ok"
    done: bool = False
    message: str = ""
    where: Where | None = None
    call_index: int | None = None
    tool: str | None = None
    offset: int | None = None
    path: str | None = None
    keyword: str | None = None
    runaway: Runaway | None = None
    text: str | None = None

    @property
    def ok(self) -> bool:
        """Nothing is wrong (so far, or at the end when ``done``)."""
        return self.kind == "ok"

    @property
    def usable(self) -> bool:
        """The generation can be used: ``"ok"``, or ``"fabricated"`` with the text after the calls cut."""
        return self.kind == "ok" or self.kind == "fabricated"

    @property
    def failed(self) -> bool:
        return not self.usable

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (proxy error events, logs); ``None`` fields left out."""
        out: dict[str, Any] = {"kind": self.kind, "done": self.done}
        for name in ("message", "where", "call_index", "tool", "offset", "path", "keyword", "text"):
            value = getattr(self, name)
            if value not in (None, ""):
                out[name] = value
        if self.runaway is not None:
            r = self.runaway
            out["runaway"] = {
                k: getattr(r, k) for k in ("kind", "unit", "period", "copies", "offset") if hasattr(r, k)
            }
        return out


OK = GuardVerdict()
DONE_OK = GuardVerdict(done=True)


def runaway_message(where: str, runaway: Runaway) -> str:
    unit = getattr(runaway, "unit", "")
    shown = unit if len(unit) <= 40 else unit[:37] + "..."
    copies = getattr(runaway, "copies", "?")
    return f"the {where} fell into a repetition loop ({copies} copies of {shown!r})"


def replace_done(verdict: GuardVerdict) -> GuardVerdict:
    """``verdict`` marked final."""
    return replace(verdict, done=True)
