"""The fuzz suite's runner: ``toolguard fuzz`` and ``pytest fuzz/`` drive these functions.

``run_fuzz(targets=..., time_budget=..., seed=..., findings_dir=...)`` fuzzes the named targets (stream,
grammar, runaway, formats, sse, proxy) for a time budget and writes every finding as a reproducible JSON case;
``replay_finding(path)`` checks one again (the regression suite in ``tests/regressions`` replays them all).
Not part of the public API: the command line is.
"""

from __future__ import annotations

from . import _targets  # noqa: F401  (importing it registers the built-in targets)
from ._core import (
    DEFAULT_FINDINGS_DIR,
    DEFAULT_HANG_TIMEOUT,
    TARGET_NAMES,
    Finding,
    FuzzReport,
    Progress,
    Target,
    TargetReport,
    Violation,
    case_seed,
    get_target,
    load_finding,
    new_findings,
    open_regressions,
    register,
    replay_finding,
    run_fuzz,
)

__all__ = [
    "DEFAULT_FINDINGS_DIR",
    "DEFAULT_HANG_TIMEOUT",
    "TARGET_NAMES",
    "Finding",
    "FuzzReport",
    "Progress",
    "Target",
    "TargetReport",
    "Violation",
    "case_seed",
    "get_target",
    "load_finding",
    "new_findings",
    "open_regressions",
    "register",
    "replay_finding",
    "run_fuzz",
]
