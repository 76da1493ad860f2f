"""``toolguard demo`` on SmolLM2: the five cases, each showing what it claims (greedy, so deterministic)."""

from __future__ import annotations

import io
from typing import Any


def test_the_demo_shows_the_five_cases_on_smollm2(smollm2: tuple[Any, Any]) -> None:
    from rich.console import Console

    from toolguard.local._demo import run_demo

    out = io.StringIO()
    summary = run_demo(model="smollm2", console=Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "SmolLM2-135M-Instruct (134.5M parameters)" in text
    assert summary.requests == 5
    assert summary.stop_reasons[1] == "compared"
    # 1: the guarded call, copied from the request, executed, and an answer using the result
    assert 'proposal: get_weather({"city": "Paris"})' in text
    assert '"temperature": 18' in text and summary.answers[0] and "18" in summary.answers[0]
    # 2: without the grammar, no valid call
    assert "no tool call: the model answered without one" in text
    # 3: a real validation failure, re-asked, then a valid call
    assert summary.reasks >= 1 and summary.records["invalid"] >= 1
    assert 'proposal: get_forecast({"city": "Tokyo", "days": 3})' in text
    # 4: the failing tool's sanitised error record
    assert summary.records["error"] >= 1 and "FileNotFoundError" in text
    # 5: a loop of the model's own, stopped
    assert summary.runaways_stopped >= 1 and "line_repeat loop of '\\n* Aniseed'" in text
    assert summary.stop_reasons[4] == "final"
