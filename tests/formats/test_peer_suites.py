"""The peers' own parser tests (vLLM, SGLang, llama.cpp), run against ``toolguard.formats.parse``.

Cases and sources: tests/formats/data/ (SOURCE.md). Every case agrees with the peer, except those marked with
a ``difference`` that the README names and explains; for those the test asserts what toolguard does instead.
Each case is also fed one character at a time, which must give the same result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolguard.formats import StreamingParser, parse

DATA = Path(__file__).resolve().parent / "data" / "peer_cases.json"
README = Path(__file__).resolve().parents[2] / "README.md"
CASES: list[dict[str, Any]] = json.loads(DATA.read_text(encoding="utf-8"))["cases"]


def _id(case: dict[str, Any]) -> str:
    return f"{case['source'].split('/')[0].split('@')[0]}:{case['test']}"


def _check_calls(calls: list[Any], expected: list[dict[str, Any]]) -> None:
    assert [c.name for c in calls] == [e["name"] for e in expected]
    for call, want in zip(calls, expected, strict=True):
        if isinstance(want["arguments"], str):
            assert call.arguments == want["arguments"]
        elif want["arguments"] is not None:
            assert json.loads(call.arguments) == want["arguments"]


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_peer_case(case: dict[str, Any]) -> None:
    parsed = parse(case["text"], format=case["format"])
    ours = case.get("ours", {})
    _check_calls(parsed.tool_calls, ours.get("calls", case["calls"]))
    content = ours.get("content", None if "difference" in case else case.get("content"))
    if content is not None:
        if case.get("content_compare") == "stripped":
            assert parsed.content.strip() == content.strip()
        else:
            assert parsed.content == content
    if "fabricated" in ours:
        assert parsed.fabricated.strip() == ours["fabricated"].strip()
    streamed = StreamingParser(case["format"])
    for c in case["text"]:
        streamed.feed(c)
    assert streamed.close() == parsed


def test_every_difference_is_named_in_the_readme() -> None:
    readme = README.read_text(encoding="utf-8")
    for key in sorted({c["difference"] for c in CASES if "difference" in c}):
        assert f"`{key}`" in readme, f"README must explain the deliberate difference {key!r}"


def test_the_corpus_covers_the_three_peers_and_the_formats() -> None:
    assert {c["source"].split("@")[0].split(" ")[0] for c in CASES} >= {
        "vllm-project/vllm",
        "sgl-project/sglang",
        "ggml-org/llama.cpp",
    }
    assert {c["format"] for c in CASES} == {"hermes", "llama3", "mistral", "openai"}
    agreeing = [c for c in CASES if "difference" not in c]
    assert len(agreeing) / len(CASES) >= 0.85
