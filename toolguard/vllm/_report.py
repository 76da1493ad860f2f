"""Decisions of the vLLM door: one record per turn, logged and (on streams) sent on the last chunk.

Every decision goes through ``decision()``, so when the shared decision record of the other doors changes,
this is the one place to follow it. A record names the verdict, what the door did about it, where it
happened (tool, JSON pointer, keyword, offset) and whether the engine enforced the turn; it never carries
argument values or message text (the client gets those in its own answer). Logged on vLLM's logger tree
(``vllm.toolguard``), so lines appear in the server log with vLLM's own prefix.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Literal

from .._verdict import GuardVerdict

__all__ = ["Action", "EngineConstraint", "decision"]

Action = Literal["released", "cut", "withheld", "stopped", "refused"]
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
    """Record, log and return the decision on one finished (or refused) turn."""
    record: dict[str, Any] = {
        "door": "vllm",
        "verdict": verdict.kind,
        "action": _ACTIONS.get(verdict.kind, "refused"),
        "engine_constraint": constraint,
        "calls": calls,
        "stream": stream,
    }
    for name in ("where", "tool", "path", "keyword", "offset"):
        value = getattr(verdict, name)
        if value is not None:
            record[name] = value
    if verdict.runaway is not None:
        record["runaway"] = {"kind": verdict.runaway.kind, "period": verdict.runaway.period,
                             "copies": verdict.runaway.copies}
    if unenforced:
        record["unenforced"] = [f"{tool}{pointer}" for tool, pointer in unenforced]
    level = logging.INFO if verdict.kind == "ok" else logging.WARNING
    _log.log(level, "toolguard decision %s", json.dumps(record, sort_keys=True))
    return record
