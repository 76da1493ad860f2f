"""render() writes what parse() reads."""

from __future__ import annotations

import json

import pytest

from toolguard import ToolCall, UsageError
from toolguard.formats import parse, render

CALLS = [
    ToolCall("get_weather", '{"city": "Paris"}', "call_1"),
    ToolCall("add", '{"a": 1, "b": 2.5}', "call_2"),
]
CONCRETE = ["openai", "hermes", "llama3", "mistral", "react"]


@pytest.mark.parametrize("fmt", CONCRETE)
def test_round_trip(fmt: str) -> None:
    parsed = parse(render(CALLS, format=fmt), format=fmt)  # type: ignore[arg-type]
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == [
        (c.name, json.loads(c.arguments)) for c in CALLS
    ]
    assert parsed.problems == [] and parsed.complete
    if fmt in ("openai", "mistral"):
        assert [c.id for c in parsed.tool_calls] == ["call_1", "call_2"]


@pytest.mark.parametrize("fmt", CONCRETE)
def test_round_trip_through_auto(fmt: str) -> None:
    parsed = parse(render(CALLS, format=fmt))  # type: ignore[arg-type]
    assert [c.name for c in parsed.tool_calls] == ["get_weather", "add"]


def test_exact_shapes() -> None:
    one = [ToolCall("a", '{"x": 1}')]
    assert render(one, format="openai") == '{"name": "a", "arguments": {"x": 1}}'
    assert render(one, format="hermes") == '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>'
    assert render(one, format="llama3") == '{"name": "a", "parameters": {"x": 1}}'
    assert render(one, format="mistral") == '[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}]'
    assert render(one, format="react") == 'Action: a\nAction Input: {"x": 1}'


def test_text_that_is_not_json_survives_as_a_json_string() -> None:
    call = ToolCall("a", "not json {")
    for fmt in ("openai", "hermes", "llama3", "mistral"):  # a tuple of literals: mypy sees each as a Format
        (back,) = parse(render([call], format=fmt), format=fmt).tool_calls
        assert back.name == "a" and back.parsed_arguments() == "not json {"


def test_content_prefix() -> None:
    text = render([ToolCall("a", "{}")], format="hermes", content="Let me check.")
    parsed = parse(text, format="hermes")
    assert parsed.content == "Let me check.\n" and len(parsed.tool_calls) == 1


def test_auto_cannot_be_rendered() -> None:
    with pytest.raises(UsageError):
        render(CALLS, format="auto")
