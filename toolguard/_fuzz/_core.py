"""The fuzz runner: targets, budgets, findings.

Theory of operation
-------------------
A *target* is a named object with four verbs: ``unavailable()`` says why it cannot run here (a component not
built, torch missing), ``generate(rng)`` builds one JSON-serialisable *case* from a seeded ``random.Random``,
``check(case)`` runs the case against the component and returns the broken invariants as ``Violation`` values,
and ``shrink(case)`` proposes smaller cases. Because a case is plain JSON, a finding is reproducible without
the generator: ``replay_finding`` calls ``check`` on the stored case, and the regression suite does the same.

``run_fuzz`` gives each runnable target an equal share of the time budget (a skipped target's share goes to
the others) and loops: derive a per-case seed from (run seed, target, index), generate, check under a
watchdog (a SIGALRM timer in the main thread turns a hang into a ``no-hang`` violation), and record each
violation as a ``Finding`` written to ``findings_dir``. Violations are grouped by signature; only the first
``MAX_FINDINGS_PER_SIGNATURE`` of a group are shrunk and written, so one bug does not fill the disk.

Cost: the runner adds O(1) work per case on top of the target's own check; shrinking is bounded by
``DEFAULT_SHRINK_TIME`` per written finding.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import signal
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

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

TargetName = Literal["stream", "grammar", "runaway", "formats", "sse", "proxy"]
TARGET_NAMES: tuple[TargetName, ...] = ("stream", "grammar", "runaway", "formats", "sse", "proxy")

DEFAULT_FINDINGS_DIR = Path(".toolguard-fuzz/findings")
DEFAULT_HANG_TIMEOUT = 20.0
"""Seconds one case may run before it counts as a hang."""
DEFAULT_SHRINK_TIME = 5.0
"""Seconds spent shrinking one finding before it is written."""
MAX_FINDINGS_PER_SIGNATURE = 2
"""Findings written per (target, signature); further ones are only counted."""
PROGRESS_INTERVAL = 0.2
"""Seconds between progress callbacks."""
FINDING_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant: what should hold, and what was seen instead.

    ``signature`` groups violations that are probably the same bug (by default the invariant name).
    """

    invariant: str
    expected: str
    observed: str
    signature: str = ""

    @property
    def key(self) -> str:
        return self.signature or self.invariant


@dataclass(frozen=True, slots=True)
class Finding:
    """A reproducible case: replaying ``input`` through the target's check breaks ``invariant``."""

    target: str
    seed: int
    invariant: str
    expected: str
    observed: str
    input: dict[str, Any]
    path: Path | None = None
    signature: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FINDING_FORMAT,
            "target": self.target,
            "seed": self.seed,
            "invariant": self.invariant,
            "signature": self.signature or self.invariant,
            "expected": self.expected,
            "observed": self.observed,
            "input": self.input,
        }


@dataclass(frozen=True, slots=True)
class TargetReport:
    """What one target did in a run. ``duplicates`` counts violations grouped under an existing signature."""

    target: str
    status: Literal["ran", "skipped"]
    inputs: int = 0
    findings: tuple[Finding, ...] = ()
    duplicates: int = 0
    elapsed: float = 0.0
    skip_reason: str = ""
    stats: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class FuzzReport:
    seed: int
    findings_dir: Path
    targets: tuple[TargetReport, ...]

    @property
    def inputs(self) -> int:
        return sum(t.inputs for t in self.targets)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for t in self.targets for f in t.findings)


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress snapshot, sent to the ``progress`` callback while a target runs."""

    target: str
    status: Literal["start", "running", "done", "skipped"]
    inputs: int
    findings: int
    elapsed: float
    budget: float
    message: str = ""


class Target:
    """Base class of fuzz targets. Subclasses set ``name`` and ``description`` and override the verbs."""

    name: str = ""
    description: str = ""
    watchdog: bool = True
    """Whether the runner may interrupt a hanging check with SIGALRM (off for targets running event loops)."""

    def __init__(self) -> None:
        self.stats: Counter[str] = Counter()

    def unavailable(self) -> str | None:
        """Why this target cannot run here, or None when it can."""
        return None

    def open(self) -> None:
        """Acquire what the checks share (servers, models). Called once before the first check."""

    def close(self) -> None:
        """Release what ``open`` acquired."""

    def generate(self, rng: random.Random) -> dict[str, Any]:
        raise NotImplementedError

    def check(self, case: dict[str, Any]) -> list[Violation]:
        raise NotImplementedError

    def shrink(self, case: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Smaller variants of ``case``, most aggressive first. The default proposes nothing."""
        return iter(())


_REGISTRY: dict[str, Callable[[], Target]] = {}


def register(name: str, factory: Callable[[], Target]) -> None:
    """Register a target factory under ``name`` (a later registration replaces an earlier one)."""
    _REGISTRY[name] = factory


def get_target(name: str) -> Target:
    """A fresh target registered under ``name`` (the built-in ones register when ``toolguard._fuzz`` is
    imported, which importing this module always does first)."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        from .._exceptions import UsageError

        raise UsageError(
            f"unknown fuzz target {name!r}; choose from {', '.join(sorted(_REGISTRY))}"
        ) from None
    return factory()


def case_seed(run_seed: int, target: str, index: int) -> int:
    """The seed of case ``index`` of ``target`` in a run seeded with ``run_seed`` (stable across Pythons)."""
    digest = hashlib.blake2b(f"{run_seed}/{target}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


class _Hang(BaseException):
    """Raised by the watchdog inside a hanging check (a BaseException: ``except Exception`` can't eat it)."""


@contextlib.contextmanager
def _watchdog(seconds: float, *, enabled: bool) -> Iterator[None]:
    usable = (
        enabled
        and seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _Hang()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _checked(target: Target, case: dict[str, Any], *, hang_timeout: float) -> list[Violation]:
    """Run ``target.check`` and turn a hang or an escaped exception into a violation."""
    started = time.monotonic()
    try:
        with _watchdog(hang_timeout, enabled=target.watchdog):
            return list(target.check(case))
    except _Hang:
        return [
            Violation(
                "no-hang",
                f"a case finishes within {hang_timeout:g} s",
                f"still running after {time.monotonic() - started:.1f} s",
            )
        ]
    except Exception as exc:  # the check itself let an exception through: that is a finding too
        tb = "".join(traceback.format_exception(exc, limit=-6))
        return [
            Violation(
                "no-unexpected-exception",
                "only ToolguardError or data (verdicts) come out",
                f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}\n{tb}",
                signature=f"exception:{type(exc).__qualname__}",
            )
        ]


def _shrink(
    target: Target, case: dict[str, Any], key: str, *, budget: float, hang_timeout: float
) -> tuple[dict[str, Any], Violation | None]:
    """Greedy shrinking: accept the first smaller case that still breaks the same signature; repeat."""
    deadline = time.monotonic() + budget
    saved_stats = target.stats.copy()  # shrinking re-runs checks; keep the run's statistics honest
    best, best_violation = case, None
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for candidate in target.shrink(best):
            if time.monotonic() >= deadline:
                break
            found = [v for v in _checked(target, candidate, hang_timeout=hang_timeout) if v.key == key]
            if found:
                best, best_violation, improved = candidate, found[0], True
                break
    target.stats = saved_stats
    return best, best_violation


def _file_name(finding: Finding) -> str:
    blob = json.dumps(finding.input, sort_keys=True).encode()
    digest = hashlib.sha1(blob).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in (finding.signature or finding.invariant))[
        :60
    ]
    return f"{finding.target}-{safe}-{digest}.json"


def _save(finding: Finding, findings_dir: Path) -> Finding:
    findings_dir.mkdir(parents=True, exist_ok=True)
    path = findings_dir / _file_name(finding)
    path.write_text(json.dumps(finding.to_json(), indent=2, sort_keys=True) + "\n")
    return Finding(
        finding.target,
        finding.seed,
        finding.invariant,
        finding.expected,
        finding.observed,
        finding.input,
        path,
        finding.signature,
    )


def load_finding(source: Path | str | dict[str, Any]) -> Finding:
    """Read a finding (a path to its JSON file, or the decoded dict)."""
    data = source if isinstance(source, dict) else json.loads(Path(source).read_text())
    path = None if isinstance(source, dict) else Path(source)
    return Finding(
        target=data["target"],
        seed=int(data.get("seed", 0)),
        invariant=data["invariant"],
        expected=data.get("expected", ""),
        observed=data.get("observed", ""),
        input=data["input"],
        path=path,
        signature=str(data.get("signature") or data["invariant"]),
    )


def open_regressions(folder: Path | str) -> dict[tuple[str, str], Path]:
    """(target, signature) -> file, for every finding in ``folder`` still marked open (an ``xfail`` key)."""
    out: dict[tuple[str, str], Path] = {}
    for path in sorted(Path(folder).glob("*.json")):
        record = json.loads(path.read_text())
        if record.get("xfail"):
            out[(record["target"], record.get("signature", record["invariant"]))] = path
    return out


def new_findings(report: FuzzReport, regressions: Path | str) -> list[Finding]:
    """The findings of ``report`` that no open regression in ``regressions`` already stands for."""
    known = open_regressions(regressions)
    return [f for f in report.findings if (f.target, f.signature or f.invariant) not in known]


def replay_finding(
    source: Path | str | dict[str, Any], *, hang_timeout: float = DEFAULT_HANG_TIMEOUT
) -> list[Violation]:
    """Run a stored case through its target's check again; an empty list means the invariant holds now.

    Raises ``UsageError`` for an unknown target; returns ``[Violation("unavailable", ...)]`` when the target
    cannot run here (callers such as the regression suite skip on it).
    """
    finding = load_finding(source)
    target = get_target(finding.target)
    reason = target.unavailable()
    if reason is not None:
        return [Violation("unavailable", "the target can run", reason)]
    target.open()
    try:
        return _checked(target, finding.input, hang_timeout=hang_timeout)
    finally:
        target.close()


def _run_target(
    target: Target,
    *,
    budget: float,
    seed: int,
    findings_dir: Path,
    hang_timeout: float,
    shrink_time: float,
    max_inputs: int | None,
    progress: Callable[[Progress], None],
) -> TargetReport:
    started = time.monotonic()
    deadline = started + budget
    findings: list[Finding] = []
    seen: Counter[str] = Counter()
    duplicates = 0
    inputs = 0
    last_report = 0.0
    progress(Progress(target.name, "start", 0, 0, 0.0, budget))
    target.open()
    try:
        while time.monotonic() < deadline and (max_inputs is None or inputs < max_inputs):
            cseed = case_seed(seed, target.name, inputs)
            try:
                case = target.generate(random.Random(cseed))
            except Exception as exc:  # a generator bug is ours; report it, don't spin on it
                raise RuntimeError(f"fuzz target {target.name!r} failed to generate case {cseed}") from exc
            violations = _checked(target, case, hang_timeout=hang_timeout)
            inputs += 1
            for violation in violations:
                group = f"{target.name}:{violation.key}"
                seen[group] += 1
                if seen[group] > MAX_FINDINGS_PER_SIGNATURE:
                    duplicates += 1
                    continue
                small, small_violation = _shrink(
                    target, case, violation.key, budget=shrink_time, hang_timeout=hang_timeout
                )
                shown = small_violation or violation
                finding = Finding(
                    target.name,
                    cseed,
                    shown.invariant,
                    shown.expected,
                    shown.observed,
                    small,
                    signature=shown.key,
                )
                saved = _save(finding, findings_dir)
                if any(f.path == saved.path for f in findings):  # shrunk to a case already written
                    duplicates += 1
                else:
                    findings.append(saved)
            now = time.monotonic()
            if now - last_report >= PROGRESS_INTERVAL:
                last_report = now
                progress(Progress(target.name, "running", inputs, len(findings), now - started, budget))
    finally:
        target.close()
    elapsed = time.monotonic() - started
    progress(Progress(target.name, "done", inputs, len(findings), elapsed, budget))
    return TargetReport(
        target=target.name,
        status="ran",
        inputs=inputs,
        findings=tuple(findings),
        duplicates=duplicates,
        elapsed=elapsed,
        stats=tuple(sorted(target.stats.items())),
    )


def run_fuzz(
    *,
    targets: list[str] | tuple[str, ...] | str = "all",
    time_budget: float = 60.0,
    seed: int | None = None,
    findings_dir: Path | str = DEFAULT_FINDINGS_DIR,
    hang_timeout: float = DEFAULT_HANG_TIMEOUT,
    shrink_time: float = DEFAULT_SHRINK_TIME,
    max_inputs: int | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> FuzzReport:
    """Fuzz ``targets`` ("all" or a list of names) for ``time_budget`` seconds in total.

    The budget is shared equally among the targets that can run here, in the order of ``TARGET_NAMES``;
    a target that cannot run (component missing, torch absent) is reported as skipped with its reason.
    ``seed`` makes the run reproducible (a random one is drawn and reported when omitted). Findings are
    written as JSON files under ``findings_dir``; ``replay_finding(path)`` checks one again.
    ``max_inputs`` caps the cases per target (for tests). Raises ``UsageError`` for an unknown target.
    """
    names: list[str] = (
        list(TARGET_NAMES) if targets == "all" else ([targets] if isinstance(targets, str) else list(targets))
    )
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    findings_path = Path(findings_dir)
    emit = progress or (lambda _p: None)
    built = [get_target(name) for name in names]
    runnable: list[Target] = []
    reports: dict[str, TargetReport] = {}
    for target in built:
        reason = target.unavailable()
        if reason is None:
            runnable.append(target)
        else:
            reports[target.name] = TargetReport(target.name, "skipped", skip_reason=reason)
            emit(Progress(target.name, "skipped", 0, 0, 0.0, 0.0, reason))
    started = time.monotonic()
    for position, target in enumerate(runnable):
        left = time_budget - (time.monotonic() - started)
        share = max(left, 0.0) / (len(runnable) - position)
        reports[target.name] = _run_target(
            target,
            budget=share,
            seed=seed,
            findings_dir=findings_path,
            hang_timeout=hang_timeout,
            shrink_time=shrink_time,
            max_inputs=max_inputs,
            progress=emit,
        )
    return FuzzReport(seed, findings_path, tuple(reports[t.name] for t in built))
