"""Decisions of the vLLM door: one record per turn, logged and (on streams) sent on the last chunk.

Every decision goes through ``decision()``, which makes the shared record of every door
(``toolguard._decisions.Decision``). A record names the verdict, what the door did about it, where it
happened (tool, JSON pointer, keyword, offset) and whether the engine enforced the turn; it never carries
argument values or message text (the client gets those in its own answer). Logged on vLLM's logger tree
(``vllm.toolguard``), so lines appear in the server log with vLLM's own prefix.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from .._decisions import Action, Decision, log_decision
from .._verdict import GuardVerdict

__all__ = ["Action", "EngineConstraint", "decision"]

EngineConstraint = Literal["structural_tag", "client", "none"]
#: What the door does for each verdict kind.
_ACTIONS: dict[str, Action] = {"ok": "released", "fabricated": "cut", "truncated": "withheld",
                               "runaway": "stopped"}

_log = logging.getLogger("vllm.toolguard")


def decision(
    verdict: GuardVerdict,
    *,
    constraint: EngineConstraint,
    unenforced: Sequence[tuple[str, str]] = (),
    calls: int = 0,
    stream: bool,
) -> dict[str, Any]:
    """Record, log and return the decision on one finished (or refused) turn: the shared ``Decision``
    (``toolguard._decisions``) with the vLLM facts in its ``detail``; the returned dict (sent on the last
    chunk) adds the JSON pointer, the log line leaves it out."""
    detail: dict[str, Any] = {"engine_constraint": constraint, "calls": calls, "stream": stream}
    if verdict.runaway is not None:
        detail["runaway"] = {"kind": verdict.runaway.kind, "period": verdict.runaway.period,
                             "copies": verdict.runaway.copies}
    if unenforced:
        detail["unenforced"] = [f"{tool}{pointer}" for tool, pointer in unenforced]
    record = Decision(
        _ACTIONS.get(verdict.kind, "refused"), verdict.kind, "vllm", tool=verdict.tool, where=verdict.where,
        keyword=verdict.keyword, offset=verdict.offset, path=verdict.path, detail=detail,
    )
    log_decision(_log, record, "json")
    return record.fields(arguments=True)
