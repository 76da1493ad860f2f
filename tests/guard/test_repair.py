"""The Guard's repairs (``repair=True``): calls written as text become tool calls, whatever the split."""

from __future__ import annotations

import json

import pytest

from toolguard import ContentDelta, Finish, Guard, ToolCallDelta
from toolguard._repair import call_format_for, fabricated_split

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_forecast",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city", "days"],
            },
        },
    }
]
QWEN3_CODER = (
    "<tool_call>\n<function=get_forecast>\n<parameter=city>\nParis\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
)
GLM = (
    "<tool_call>get_forecast\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
    "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
)
HERMES = '<tool_call>\n{"name": "get_forecast", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>'


def _run(text: str, size: int) -> Guard:
    guard = Guard(TOOLS, repair=True)
    for i in range(0, len(text), size):
        guard.feed(ContentDelta(text[i : i + size]))
    guard.feed(Finish("stop"))
    return guard


@pytest.mark.parametrize("call", [HERMES, QWEN3_CODER, GLM], ids=["hermes", "qwen3-coder", "glm"])
@pytest.mark.parametrize("size", [1, 5, 10_000])
def test_calls_written_as_text_are_repaired_in_any_split(call: str, size: int) -> None:
    guard = _run("Checking. " + call + "\n<tool_response>sunny</tool_response>", size)
    assert guard.repaired and guard.verdict.kind == "fabricated" and guard.verdict.usable
    assert guard.content == "Checking. "
    (got,) = guard.tool_calls
    assert (got.name, json.loads(got.arguments)) == ("get_forecast", {"city": "Paris", "days": 3})


def test_an_xml_parameter_the_schema_refuses_is_rejected() -> None:
    guard = _run(QWEN3_CODER.replace("\n3\n", "\nthree\n"), 7)
    assert guard.verdict.kind == "rejected" and "days" in guard.verdict.message


def test_without_repair_the_call_in_the_text_is_a_violation() -> None:
    guard = Guard(TOOLS)
    assert guard.feed_message({"content": HERMES}, "stop").kind == "call_in_content"


def test_text_that_only_looks_like_a_call_gives_its_content_back() -> None:
    text = "Use <tool_call> tags to call tools."
    guard = _run(text, 4)
    assert guard.verdict.kind in ("call_in_content", "rejected") and not guard.verdict.usable
    assert guard.content == text and not guard.repaired, "the re-ask shows the model its own text"


def test_calls_both_in_the_text_and_in_tool_calls_are_asked_again() -> None:
    guard = Guard(TOOLS, repair=True)
    guard.feed(ContentDelta(HERMES))
    verdict = guard.feed(ToolCallDelta(0, "c1", "get_forecast", '{"city": "Paris", "days": 3}'))
    assert verdict.kind == "call_in_content"


def test_fabricated_split_moves_a_made_up_result_after_the_calls() -> None:
    call = ToolCallDelta(0, "c", "f", "{}")
    events = [ContentDelta("On it.\nObservation: 21C"), call, Finish("tool_calls")]
    moved = [ContentDelta("On it.\n"), call, ContentDelta("Observation: 21C"), events[-1]]
    assert fabricated_split(events) == moved
    plain = [ContentDelta("I will check."), ToolCallDelta(0, "c", "f", "{}"), Finish("tool_calls")]
    assert fabricated_split(plain) == plain


def test_call_format_for_a_model() -> None:
    formats = {"*Llama-3*": "llama3", "mistral*": "mistral"}
    assert call_format_for("meta/Llama-3.1-8B", formats) == "llama3"
    assert call_format_for("qwen", formats) is None and call_format_for(None, formats) is None


def test_prose_with_markup_beside_the_calls_is_kept() -> None:
    call = ToolCallDelta(0, "c", "f", "{}")
    events = [ContentDelta("It was <s>cold</s> warm yesterday."), call, Finish("tool_calls")]
    assert fabricated_split(events) == events
