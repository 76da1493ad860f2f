"""The ``mcp`` fuzz target (hostile JSON-RPC through ``toolguard mcp`` over stdio): its judge on hand-made
answers, and a short seeded run (the CI budget; ``toolguard fuzz --target mcp`` runs longer)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from toolguard._fuzz import new_findings, run_fuzz
from toolguard._fuzz._targets._mcp import _frame, _well_formed

REGRESSIONS = Path(__file__).resolve().parents[1] / "tests" / "regressions" / "data"
SEED = 20261201


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, True),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Unknown tool: x"}}, True),
        ({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": ""}}, False),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}, False),
        ({"id": 1, "result": {}}, False),
    ],
)
def test_answer_judge(answer: dict[str, object], ok: bool) -> None:
    assert _well_formed(answer) is ok


def test_frames_cover_requests_and_garbage() -> None:
    rng = random.Random(1)
    frames = [_frame(rng, f"r{i}") for i in range(300)]
    assert any(f["id"] is None for f in frames) and any(f["deep"] for f in frames)
    assert any(len(f["text"]) > 1_000_000 for f in frames)


def test_short_seeded_run(tmp_path: Path) -> None:
    report = run_fuzz(
        targets=["mcp"], time_budget=40, seed=SEED, max_inputs=25, findings_dir=tmp_path, shrink_time=2.0
    )
    (result,) = report.targets
    if result.status == "skipped":
        pytest.skip(result.skip_reason)
    new = new_findings(report, REGRESSIONS)
    assert not new, "\n".join(f"{f.path}: {f.invariant}: {f.observed[:800]}" for f in new)
    assert result.inputs >= 10
