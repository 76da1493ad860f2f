"""SmolLM2 on thirty simple requests across the five shipped tool sets, under ``required`` and ``auto``.

Under ``required`` every call must be valid against its tool's full schema (``uniqueItems`` included: the
generator checks what the grammar cannot enforce) and terminated (``finish_reason == "tool_calls"``; a call
cut by ``max_new_tokens`` must come back as ``"length"`` with no call, and most must finish); the tool and
arguments must be right, and the answer turn must mention the tool result's key value, at floors measured on
this model (benchmarks/RESULTS.md, "Real model") with a margin: a 135M model is not always right, and the
grammar makes its calls valid, not wise. Under ``auto`` SmolLM2 answers in prose (its template has no tool
support, and it does not take up the tools toolguard renders into the system message): any call it opens
must still be valid and terminated, and the rate is reported, not required (0 of 30 on 2 Dec 2026).

Cost: about 9 minutes for these tests on the shared 2-core machine at load 2-3 (30 call turns + 25 answer
turns + 30 auto turns + the serve test), plus a one-off 25 s conversion on a machine with an empty cache.
"""

from __future__ import annotations

from typing import Any

import pytest

from .requests import REQUESTS, Outcome, rates, run_request

#: Measured on the 30 requests (greedy, 2 CPU threads, 2 Dec 2026): 25/30 calls finished within 96 tokens (the
#: other 5 ran on inside a string and came back as "length"), all 25 valid; right tool 67%, right arguments
#: 53%, answers mentioning the result 50% (benchmarks/RESULTS.md, "Real model"). The floors sit below, for
#: other CPUs' float rounding.
FLOOR_TERMINATED = 0.70
FLOOR_RIGHT_TOOL = 0.55
FLOOR_RIGHT_ARGUMENTS = 0.40
FLOOR_ANSWER_MENTIONS = 0.35


@pytest.fixture(scope="module")
def required(generator: Any) -> list[Outcome]:
    return [run_request(generator, r, tool_choice="required") for r in REQUESTS]


@pytest.fixture(scope="module")
def auto(generator: Any) -> list[Outcome]:
    return [run_request(generator, r, tool_choice="auto", max_new_tokens=32) for r in REQUESTS]


def test_the_request_set_covers_every_tool_set() -> None:
    assert len(REQUESTS) >= 30
    assert {r.tool_set for r in REQUESTS} == {"weather", "calendar", "files", "http", "math"}


def test_required_calls_are_valid_and_terminated(required: list[Outcome]) -> None:
    for outcome in required:
        if outcome.finish_reason == "tool_calls":
            assert len(outcome.calls) == 1, outcome
            assert not outcome.schema_errors, (outcome.request.text, outcome.calls, outcome.schema_errors)
        else:  # cut by max_new_tokens (or a loop): reported as such, never as a call
            assert outcome.finish_reason in ("length", "repetition"), outcome
            assert not outcome.calls, outcome
    terminated = sum(o.finish_reason == "tool_calls" for o in required) / len(required)
    assert terminated >= FLOOR_TERMINATED, terminated


def test_required_calls_are_mostly_right_and_answers_use_the_result(required: list[Outcome]) -> None:
    measured = rates(required)
    print(f"\nSmolLM2, tool_choice=required, {len(required)} requests: {measured}")
    assert measured["right_tool"] >= FLOOR_RIGHT_TOOL, measured
    assert measured["right_arguments"] >= FLOOR_RIGHT_ARGUMENTS, measured
    assert measured["answer_mentions_result"] >= FLOOR_ANSWER_MENTIONS, measured


def test_auto_calls_are_valid_and_terminated_when_opened(auto: list[Outcome]) -> None:
    measured = rates(auto)
    print(f"\nSmolLM2, tool_choice=auto, {len(auto)} requests: {measured}")
    for outcome in auto:
        if outcome.calls:
            assert outcome.finish_reason == "tool_calls", outcome
            assert not outcome.schema_errors, outcome
        else:
            assert outcome.finish_reason in ("stop", "length", "repetition"), outcome
            assert "<tool_call>" not in (outcome.answer or ""), outcome  # no call hidden in the text
