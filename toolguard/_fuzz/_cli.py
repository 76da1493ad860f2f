"""``toolguard fuzz``: a live progress display (rich) over ``run_fuzz``, a summary, and replay of findings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._core import (
    DEFAULT_FINDINGS_DIR,
    TARGET_NAMES,
    FuzzReport,
    Progress,
    open_regressions,
    replay_finding,
    run_fuzz,
)

__all__ = ["EXIT_CLEAN", "EXIT_FINDINGS", "fuzz_main", "render_summary"]

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
REGRESSIONS = Path(__file__).resolve().parents[2] / "tests" / "regressions" / "data"
"""Where a source checkout keeps its findings as regression tests (open ones carry an ``xfail`` key)."""


def fuzz_main(
    *,
    target: str = "all",
    time_budget: float = 60.0,
    seed: int | None = None,
    findings_dir: Path | str = DEFAULT_FINDINGS_DIR,
    replay: tuple[str, ...] | list[str] = (),
    console: Any = None,
) -> int:
    """Run the fuzzers with a live display and print a summary; or, with ``replay``, re-check findings.

    Returns ``EXIT_CLEAN`` when nothing was found (or every replayed finding passes now), else
    ``EXIT_FINDINGS``.
    """
    from rich.console import Console

    console = console or Console(highlight=False)
    if replay:
        return _replay(replay, console)
    targets: list[str] = list(TARGET_NAMES) if target == "all" else [target]
    report = _run_with_progress(targets, time_budget, seed, Path(findings_dir), console)
    render_summary(report, console)
    return EXIT_FINDINGS if report.findings else EXIT_CLEAN


def _run_with_progress(
    targets: list[str], time_budget: float, seed: int | None, findings_dir: Path, console: Any
) -> FuzzReport:
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    columns = (
        TextColumn("[bold]{task.fields[name]:<8}"),
        BarColumn(bar_width=24),
        TextColumn("{task.fields[inputs]:>8} inputs"),
        TextColumn("{task.fields[findings]:>3} findings"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}"),
    )
    with RichProgress(*columns, console=console, auto_refresh=False, transient=False) as bar:
        tasks = {
            name: bar.add_task(name, total=1.0, name=name, inputs=0, findings=0, note="waiting")
            for name in targets
        }

        def on_progress(p: Progress) -> None:
            task = tasks.get(p.target)
            if task is None:
                return
            if p.status == "skipped":
                bar.update(task, completed=1.0, note=f"skipped: {p.message}")
            else:
                done = 1.0 if p.status == "done" else min(p.elapsed / p.budget, 1.0) if p.budget else 0.0
                note = "done" if p.status == "done" else "running"
                bar.update(task, completed=done, inputs=p.inputs, findings=p.findings, note=note)
            bar.refresh()

        return run_fuzz(
            targets=targets,
            time_budget=time_budget,
            seed=seed,
            findings_dir=findings_dir,
            progress=on_progress,
        )


def render_summary(report: FuzzReport, console: Any) -> None:
    """A table (per target: inputs tried, findings, duplicates, time, notes), then how to replay findings."""
    from rich.table import Table

    table = Table(title=f"toolguard fuzz summary (seed {report.seed})")
    for column in ("target", "status", "inputs", "findings", "same bug again", "seconds"):
        table.add_column(column, justify="left" if column in ("target", "status") else "right")
    for t in report.targets:
        table.add_row(
            t.target, t.status, str(t.inputs), str(len(t.findings)), str(t.duplicates), f"{t.elapsed:.1f}"
        )
    table.add_row(
        "total",
        "",
        str(report.inputs),
        str(len(report.findings)),
        str(sum(t.duplicates for t in report.targets)),
        "",
    )
    console.print(table)
    say = _plain(console)
    for t in report.targets:
        notes = t.skip_reason if t.status == "skipped" else ", ".join(f"{k}: {v}" for k, v in t.stats)
        if notes:
            say(f"  {t.target}: {notes}")
    if not report.findings:
        console.print("no findings.")
        return
    say(f"{len(report.findings)} finding(s) written to {report.findings_dir}:")
    known = open_regressions(REGRESSIONS) if REGRESSIONS.is_dir() else {}
    for finding in report.findings:
        filed = known.get((finding.target, finding.signature or finding.invariant))
        note = f"; known open bug, filed as {filed.name}" if filed else ""
        say(f"  {finding.path}  ({finding.target}: {finding.signature or finding.invariant}{note})")
    say(f"replay one:     toolguard fuzz --replay {report.findings[0].path}")
    say(f"replay all:     toolguard fuzz --replay {report.findings_dir}")
    say('keep as a test: copy the file into tests/regressions/data/ (add "xfail": "<reason>" while open)')


def _plain(console: Any) -> Any:
    """Print without rich markup or wrapping (paths and messages stay copy-pastable)."""

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    return say


def _replay(paths: tuple[str, ...] | list[str], console: Any) -> int:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        files.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    failing = 0
    say = _plain(console)
    for path in files:
        violations = replay_finding(path)
        if violations and violations[0].invariant == "unavailable":
            say(f"skip   {path}: {violations[0].observed}")
        elif violations:
            failing += 1
            first = violations[0]
            say(f"FAILS  {path}: {first.invariant}: {first.observed}")
        else:
            say(f"passes {path}")
    say(f"{len(files)} replayed, {failing} still failing")
    return EXIT_FINDINGS if failing else EXIT_CLEAN
