"""The proxy's side of repairs (``toolguard._repair``): the per-request policy, the counts, the header.

``request_policy`` gives the request its call format (``call_formats`` patterns over the request's
``model``, else ``call_format``); ``repair_headers`` counts what the Guard repaired
(``toolguard_repairs_total``; the decision log line says it too, ``repaired=tool_calls``) and tells the
client (``x-toolguard-repaired``: ``tool_calls`` when calls written as text were delivered as tool calls,
``fabricated`` when made-up text beside them was cut). O(number of patterns) per request.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._guard import Guard
from .._policy import Policy
from .._repair import call_format_for

if TYPE_CHECKING:
    from ._config import ProxyConfig
    from ._metrics import Metrics

__all__ = ["repair_headers", "request_policy"]


def request_policy(policy: Policy, config: ProxyConfig, body: dict[str, Any]) -> Policy:
    """``policy`` with the call format configured for the request's model (unchanged when none is)."""
    if not config.call_formats:
        return policy
    fmt = call_format_for(body.get("model"), config.call_formats)
    return policy if fmt is None or fmt == policy.call_format else replace(policy, call_format=fmt)


def repair_headers(metrics: Metrics, guard: Guard) -> list[tuple[bytes, bytes]]:
    """Count the accepted answer's repairs; the ``x-toolguard-repaired`` header naming them (or none)."""
    done: list[str] = []
    if guard.repaired:
        metrics.repair("call_in_content")
        done.append("tool_calls")
    if guard.verdict.kind == "fabricated":
        metrics.repair("fabricated")
        done.append("fabricated")
    return [(b"x-toolguard-repaired", ",".join(done).encode())] if done else []
