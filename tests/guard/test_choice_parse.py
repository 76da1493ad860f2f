"""``tool_choice`` read once (``toolguard._choice``): every spelling, every refusal, the Guard's use of it."""

from __future__ import annotations

from typing import Any

import pytest

from toolguard import ContentDelta, Finish, Guard, ToolCallDelta, ToolSet, UsageError
from toolguard._choice import parse_tool_choice
from toolguard._reask import RetryFlow
from toolguard._types import ParsedToolChoice

TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("get_weather", "search")
]
NAMES = ("get_weather", "search")
SEARCH = {"type": "function", "function": {"name": "search"}}


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        (None, ParsedToolChoice("auto", NAMES)),
        ("auto", ParsedToolChoice("auto", NAMES)),
        ("none", ParsedToolChoice("none", ())),
        ("required", ParsedToolChoice("required", NAMES)),
        ("any", ParsedToolChoice("required", NAMES)),
        ({"type": "any"}, ParsedToolChoice("required", NAMES)),
        ({"type": "auto"}, ParsedToolChoice("auto", NAMES)),
        ("search", ParsedToolChoice("required", ("search",), "search")),
        (SEARCH, ParsedToolChoice("required", ("search",), "search")),
        ({"type": "tool", "name": "search"}, ParsedToolChoice("required", ("search",), "search")),
        ({"name": "get_weather"}, ParsedToolChoice("required", ("get_weather",), "get_weather")),
        (
            {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [SEARCH]}},
            ParsedToolChoice("required", ("search",)),
        ),
    ],
)
def test_every_spelling_reads_the_same(choice: Any, expected: ParsedToolChoice) -> None:
    assert parse_tool_choice(choice, ToolSet.from_openai(TOOLS)) == expected
    assert parse_tool_choice(choice, NAMES) == expected


@pytest.mark.parametrize(
    ("choice", "tools", "says"),
    [
        ("sometimes", NAMES, "neither a keyword nor an offered tool"),
        (3, NAMES, "tool_choice must be"),
        ({"type": "function", "function": {"name": "launch"}}, NAMES, "'launch', which is not one of"),
        ({"type": "function"}, NAMES, "needs function.name"),
        ({"type": "frobnicate"}, NAMES, "type 'frobnicate'"),
        ({"type": "allowed_tools", "allowed_tools": {"mode": "maybe", "tools": []}}, NAMES, "mode must be"),
        ("required", (), "needs at least one tool"),
        ("any", (), "needs at least one tool"),
        (SEARCH, (), "offers no tools"),
    ],
)
def test_a_choice_the_tools_cannot_keep_is_refused(choice: Any, tools: tuple[str, ...], says: str) -> None:
    with pytest.raises(UsageError, match=says):
        parse_tool_choice(choice, tools)


def test_auto_without_tools_reads_as_none() -> None:
    assert parse_tool_choice("auto", ()) == ParsedToolChoice("none", ())


def test_the_guard_reads_any_as_required() -> None:
    """"any" used to be a tool name to the Guard: every call was an unknown tool."""
    guard = Guard(TOOLS, tool_choice="any")
    verdicts = [guard.feed(e) for e in (ToolCallDelta(0, "c1", "search", "{}"), Finish("tool_calls"))]
    assert verdicts[-1].kind == "ok", verdicts[-1]
    guard = Guard(TOOLS, tool_choice="any")
    verdicts = [guard.feed(e) for e in (ContentDelta("It is sunny."), Finish("stop"))]
    assert verdicts[-1].kind == "missing_call"


def test_the_flow_refuses_a_bad_choice_before_its_first_attempt() -> None:
    with pytest.raises(UsageError, match="sometimes"):
        RetryFlow({"messages": [], "tools": TOOLS, "tool_choice": "sometimes"})
    with pytest.raises(UsageError, match="at least one tool"):
        RetryFlow({"messages": [], "tool_choice": "required"})
    assert RetryFlow({"messages": [], "tools": TOOLS, "tool_choice": "any"}).choice.mode == "required"
