"""Runaway generation: detect repetition loops in a stream and decide what a front door does next.

- ``RunawayDetector`` / ``Runaway`` / ``RunawayConfig`` (``_detector``, ``_config``): the sans-IO detector;
  ``classify_unit`` (not re-exported by ``toolguard``) names the class that chose a loop's threshold.
- ``RunawayPolicy``, ``FINISH_REASON_REPETITION``, ``loop_in_prompt`` (``_policy``): retry with a change.

The transformers ``StoppingCriteria`` lives in ``toolguard.local`` (the one door to torch).
"""

from __future__ import annotations

from ._config import RunawayConfig, UnitClass, classify_unit  # noqa: F401  (classify_unit: module API)
from ._detector import Runaway, RunawayDetector, RunawayKind
from ._policy import FINISH_REASON_REPETITION, MAX_RUNAWAY_RETRIES, RunawayPolicy, loop_in_prompt

__all__ = [
    "FINISH_REASON_REPETITION",
    "MAX_RUNAWAY_RETRIES",
    "Runaway",
    "RunawayConfig",
    "RunawayDetector",
    "RunawayKind",
    "RunawayPolicy",
    "UnitClass",
    "loop_in_prompt",
]
