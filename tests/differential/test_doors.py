"""Differential suite: the same scripted behaviours through every door; what the client sees must agree.

Each scenario of ``scenarios.py`` runs through ``wrap(OpenAI)`` and ``wrap(AsyncOpenAI)`` (non-stream, and
stream in hold and pass mode) and through the proxy (the same, read by the official openai client). Every
door must produce the scenario's ``Outcome`` (text, refusal, calls, finish reason, error kind), or the one its
documented difference names; each difference's reason is a paragraph of the README (checked here too).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .doors import DOORS, Door, Outcome
from .scenarios import CALL_IN_CONTENT, REASONS, SCENARIOS, Scenario, split_call_in_content

README = Path(__file__).resolve().parents[2] / "README.md"


def check(
    scenario: Scenario, through: Callable[..., tuple[Outcome, int]], doors: tuple[Door, ...] = DOORS
) -> None:
    wrong = []
    for door in doors:
        got, requests = through(door, list(scenario.replies), scenario.request(), scenario.repair)
        want, reason = scenario.expected(door.tags)
        if got != want:
            wrong.append(f"{door.name}: got {got}, want {want} ({reason or 'same as every door'})")
        elif scenario.requests is not None and requests != scenario.requests:
            wrong.append(f"{door.name}: {requests} upstream requests, want {scenario.requests}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_every_door_agrees(scenario: Scenario, through: Callable[..., tuple[Outcome, int]]) -> None:
    check(scenario, through)


@pytest.mark.parametrize("repair", [True, False], ids=["repaired", "reasked"])
def test_a_call_written_into_the_content_split_at_every_position(
    repair: bool, through: Callable[..., tuple[Outcome, int]]
) -> None:
    for at in range(1, len(CALL_IN_CONTENT)):
        check(split_call_in_content(at, repair=repair), through)


def test_every_difference_is_explained_in_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    used = {reason for s in SCENARIOS for _, reason in s.differs.values()}
    assert used <= set(REASONS)
    missing = [REASONS[r] for r in sorted(used) if REASONS[r] not in text]
    assert not missing, f"README lacks: {missing}"
