"""Parsing each wire format, and the failure modes models really produce."""

from __future__ import annotations

import json

import pytest

from toolguard import ToolCall, UsageError
from toolguard.formats import FORMATS, Parsed, parse


def kinds(parsed: Parsed) -> list[str]:
    return [p.kind for p in parsed.problems]


def args(call: ToolCall) -> object:
    return json.loads(call.arguments)


# --- openai JSON ----------------------------------------------------------------------------------
def test_openai_single_object() -> None:
    parsed = parse('{"name": "get_weather", "arguments": {"city": "Paris"}}', format="openai")
    assert parsed.tool_calls == [ToolCall("get_weather", '{"city": "Paris"}')]
    assert (parsed.content, parsed.fabricated, parsed.complete, parsed.problems) == ("", "", True, [])
    assert parsed.format == "openai"


def test_openai_array_with_ids_and_string_arguments() -> None:
    text = json.dumps(
        [
            {"name": "a", "arguments": '{"x": 1}', "id": "call_1"},
            {"type": "function", "id": "call_2", "function": {"name": "b", "arguments": {"y": [1, 2]}}},
        ]
    )
    parsed = parse(text, format="openai")
    assert parsed.tool_calls == [
        ToolCall("a", '{"x": 1}', "call_1"),
        ToolCall("b", '{"y": [1, 2]}', "call_2"),
    ]
    assert parsed.problems == []


def test_openai_plain_json_answer_is_content() -> None:
    parsed = parse('{"answer": 42}', format="openai")
    assert parsed.tool_calls == []
    assert parsed.content == '{"answer": 42}'


def test_concatenated_json_objects_are_kept_and_reported() -> None:
    text = (
        '{"name": "a", "arguments": {}}{"name": "b", "arguments": {"x": 1}}\n{"name": "c", "arguments": {}}'
    )
    parsed = parse(text, format="openai")
    assert [c.name for c in parsed.tool_calls] == ["a", "b", "c"]
    assert kinds(parsed) == ["concatenated", "concatenated"]
    assert parsed.problems[0].offset == text.index('{"name": "b"')


def test_call_embedded_mid_content_is_reported_and_tail_cut() -> None:
    text = 'Sure, let me look. {"name": "search", "arguments": {"q": "toolguard"}} Then I will summarise.'
    parsed = parse(text, format="openai")
    assert parsed.tool_calls == [ToolCall("search", '{"q": "toolguard"}')]
    assert parsed.content == "Sure, let me look. "
    assert parsed.fabricated == "Then I will summarise."
    assert kinds(parsed) == ["embedded", "fabricated"]


def test_object_with_a_name_key_in_prose_is_not_a_call() -> None:
    text = 'The user is {"name": "Bob", "age": 3}.'
    parsed = parse(text, format="openai")
    assert parsed.tool_calls == []
    assert parsed.content == text


def test_braces_in_prose_stay_content() -> None:
    text = "Use { to open a block, {} for empty, [1, 2] for lists and {bad json} freely."
    parsed = parse(text, format="openai")
    assert parsed.tool_calls == [] and parsed.content == text and parsed.problems == []


def test_json_result_after_call_is_fabricated() -> None:
    text = '{"name": "add", "arguments": {"a": 1, "b": 2}}\n{"result": 3}\nThe answer is 3.'
    parsed = parse(text, format="openai")
    assert [c.name for c in parsed.tool_calls] == ["add"]
    assert parsed.fabricated == '{"result": 3}\nThe answer is 3.'
    assert kinds(parsed) == ["fabricated"]
    assert "fabricated tool result" in parsed.problems[0].message


def test_unterminated_json_call_is_not_a_call() -> None:
    parsed = parse('{"name": "write_file", "arguments": {"path": "a.txt", "content": "hel', format="openai")
    assert parsed.tool_calls == []
    assert parsed.complete is False
    assert kinds(parsed) == ["unterminated"]
    assert parsed.truncated.startswith('{"name": "write_file"')


def test_fenced_json_call() -> None:
    parsed = parse('```json\n{"name": "a", "arguments": {"x": 1}}\n```', format="openai")
    assert parsed.tool_calls == [ToolCall("a", '{"x": 1}')]
    assert parsed.problems == [] and parsed.fabricated == ""


# --- hermes / Qwen --------------------------------------------------------------------------------
HERMES = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def test_hermes_call_with_content_and_end_token() -> None:
    parsed = parse("I'll check.\n" + HERMES + "<|im_end|>", format="hermes")
    assert parsed.tool_calls == [ToolCall("get_weather", '{"city": "Paris"}')]
    assert parsed.content == "I'll check.\n"
    assert parsed.problems == [] and parsed.complete


def test_hermes_fake_tool_response_is_cut() -> None:
    fake = '<tool_response>\n{"temperature": 31}\n</tool_response>\nIt is 31 degrees in Paris.'
    parsed = parse(HERMES + "\n" + fake, format="hermes")
    assert len(parsed.tool_calls) == 1
    assert parsed.fabricated == fake
    assert kinds(parsed) == ["fabricated"]
    assert "<tool_response>" in parsed.problems[0].message


def test_hermes_calls_after_a_fake_response_are_cut_too() -> None:
    second = '<tool_call>{"name": "book", "arguments": {}}</tool_call>'
    parsed = parse(HERMES + "<tool_response>sunny</tool_response>" + second, format="hermes")
    assert [c.name for c in parsed.tool_calls] == ["get_weather"]
    assert second in parsed.fabricated


def test_hermes_parallel_calls() -> None:
    parsed = parse(HERMES + "\n" + HERMES.replace("Paris", "Rome"), format="hermes")
    assert [args(c) for c in parsed.tool_calls] == [{"city": "Paris"}, {"city": "Rome"}]


def test_hermes_unterminated_call() -> None:
    parsed = parse('Checking.<tool_call>\n{"name": "get_weather", "arguments": {"ci', format="hermes")
    assert parsed.tool_calls == [] and parsed.complete is False
    assert kinds(parsed) == ["unterminated"]
    assert parsed.content == "Checking."


def test_hermes_missing_close_tag_is_accepted_and_reported() -> None:
    parsed = parse('<tool_call>\n{"name": "a", "arguments": {}}', format="hermes")
    assert parsed.tool_calls == [ToolCall("a", "{}")]
    assert kinds(parsed) == ["missing_close_tag"] and parsed.complete


def test_hermes_malformed_body_is_not_a_call() -> None:
    parsed = parse('<tool_call>{"name": "a", "arguments": {"x": 1}</tool_call>', format="hermes")
    assert parsed.tool_calls == []
    assert kinds(parsed) == ["malformed"]
    assert parsed.complete


def test_hermes_tag_inside_a_string_argument_does_not_close_the_call() -> None:
    parsed = parse(
        '<tool_call>{"name": "echo", "arguments": {"s": "</tool_call>"}}</tool_call>', format="hermes"
    )
    assert parsed.tool_calls == [ToolCall("echo", '{"s": "</tool_call>"}')]


def test_another_turn_after_end_token_is_fabricated() -> None:
    parsed = parse(HERMES + "<|im_end|>\n<|im_start|>user\nthanks!", format="hermes")
    assert parsed.fabricated == "<|im_start|>user\nthanks!"
    assert "another turn" in parsed.problems[0].message


# --- llama 3 --------------------------------------------------------------------------------------
def test_llama3_json_with_parameters_and_semicolons() -> None:
    text = '{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {}}<|eot_id|>'
    parsed = parse(text, format="llama3")
    assert parsed.tool_calls == [ToolCall("a", '{"x": 1}'), ToolCall("b", "{}")]
    assert parsed.problems == []


def test_llama3_python_tag_json() -> None:
    parsed = parse('<|python_tag|>{"name": "a", "parameters": {"q": "x"}}<|eom_id|>', format="llama3")
    assert parsed.tool_calls == [ToolCall("a", '{"q": "x"}')]


def test_llama3_python_tag_builtin_call() -> None:
    parsed = parse('<|python_tag|>brave_search.call(query="weather in Paris")<|eom_id|>', format="llama3")
    assert parsed.tool_calls == [ToolCall("brave_search", '{"query": "weather in Paris"}')]


def test_llama3_python_tag_truncated_python_call() -> None:
    parsed = parse('<|python_tag|>brave_search.call(query="weather in', format="llama3")
    assert parsed.tool_calls == [] and not parsed.complete


# --- mistral --------------------------------------------------------------------------------------
def test_mistral_array() -> None:
    text = (
        '[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}, "id": "abcDEF123"}, '
        '{"name": "b", "arguments": {}}]</s>'
    )
    parsed = parse(text, format="mistral")
    assert parsed.tool_calls == [ToolCall("a", '{"x": 1}', "abcDEF123"), ToolCall("b", "{}")]
    assert parsed.problems == []


def test_mistral_name_args_syntax() -> None:
    text = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[CALL_ID]c1[ARGS]{}'
    parsed = parse(text, format="mistral")
    assert parsed.tool_calls == [
        ToolCall("get_weather", '{"city": "Paris"}'),
        ToolCall("get_time", "{}", "c1"),
    ]


def test_mistral_fake_results_are_cut() -> None:
    parsed = parse(
        '[TOOL_CALLS][{"name": "a", "arguments": {}}][TOOL_RESULTS]{"content": 1}', format="mistral"
    )
    assert parsed.fabricated == '[TOOL_RESULTS]{"content": 1}'


# --- ReAct ----------------------------------------------------------------------------------------
def test_react_action_and_fake_observation() -> None:
    text = (
        'Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Paris"}\n'
        "Observation: 31 degrees\nThought: I now know.\nFinal Answer: hot"
    )
    parsed = parse(text, format="react")
    assert parsed.tool_calls == [ToolCall("get_weather", '{"city": "Paris"}')]
    assert parsed.content == "Thought: I need the weather.\n"
    assert parsed.fabricated.startswith("Observation: 31 degrees")
    assert kinds(parsed) == ["fabricated"]
    assert "Observation" in parsed.problems[0].message


def test_react_non_json_input_is_passed_on_as_a_json_string_and_reported() -> None:
    parsed = parse("Action: search\nAction Input: weather in Paris\n", format="react")
    assert parsed.tool_calls == [ToolCall("search", '"weather in Paris"')]
    assert parsed.tool_calls[0].parsed_arguments() == "weather in Paris"  # JSON, so the validator decides
    assert kinds(parsed) == ["arguments_not_json"]


def test_react_final_answer_is_content() -> None:
    text = "Thought: done\nFinal Answer: 42"
    assert parse(text, format="react") == Parsed(content=text, format="react")


def test_react_action_without_input_is_unterminated() -> None:
    parsed = parse("Action: get_weather\n", format="react")
    assert parsed.tool_calls == [] and not parsed.complete


# --- auto -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        (HERMES, "hermes"),
        ('[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]', "mistral"),
        ('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}', "llama3"),
        ('{"name": "get_weather", "parameters": {"city": "Paris"}}', "llama3"),
        ('{"name": "get_weather", "arguments": {"city": "Paris"}}', "openai"),
        ('Action: get_weather\nAction Input: {"city": "Paris"}', "react"),
    ],
)
def test_auto_detects_the_format(text: str, fmt: str) -> None:
    parsed = parse(text)
    assert parsed.format == fmt
    assert parsed.tool_calls == [ToolCall("get_weather", '{"city": "Paris"}')]


def test_auto_plain_text() -> None:
    assert parse("Hello there.") == Parsed(content="Hello there.")


def test_unknown_format_is_refused() -> None:
    with pytest.raises(UsageError, match="unknown tool-call format"):
        parse("x", format="xml")  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_accepts_empty_text(fmt: str) -> None:
    parsed = parse("", format=fmt)  # type: ignore[arg-type]
    assert parsed.tool_calls == [] and parsed.complete


# --- inputs from the peers' suites that used to go wrong (issue: right on inputs nobody here wrote) ---------
def test_python_tag_followed_by_a_list_of_python_calls() -> None:
    parsed = parse('<|python_tag|>[get_weather(city="Paris"), search(q="x", n=2)]<|eom_id|>', format="llama3")
    assert parsed.tool_calls == [
        ToolCall("get_weather", '{"city": "Paris"}'),
        ToolCall("search", '{"q": "x", "n": 2}'),
    ]
    assert parsed.problems == [] and parsed.content == ""


@pytest.mark.parametrize("fmt", ["hermes", "openai", "llama3", "auto"])
@pytest.mark.parametrize("fence", ["```json\n", "```\n", "  ```JSON \n\n", "```xml\n<tools>\n"])
def test_a_fence_around_a_call_is_not_content(fmt: str, fence: str) -> None:
    closer = "</tools>\n```" if "<tools>" in fence else "```"
    text = f'{fence}{{"name": "f", "arguments": {{"a": 1}}}}\n{closer}\n'
    parsed = parse(text, format=fmt)  # type: ignore[arg-type]
    assert parsed.tool_calls == [ToolCall("f", '{"a": 1}')]
    assert parsed.content.strip() == "" and parsed.fabricated == "" and parsed.problems == []


def test_a_fence_around_code_stays_content() -> None:
    text = "```python\nprint({'a': 1})\n```\n"
    assert parse(text, format="hermes") == Parsed(content=text, format="hermes")


@pytest.mark.parametrize("fmt", ["mistral", "auto"])
def test_mistral_v11_without_its_args_token(fmt: str) -> None:
    parsed = parse('[TOOL_CALLS]get_weather{"city": "Paris"}[TOOL_CALLS]add{"a": 1}', format=fmt)  # type: ignore[arg-type]
    assert parsed.tool_calls == [ToolCall("get_weather", '{"city": "Paris"}'), ToolCall("add", '{"a": 1}')]
    assert parsed.problems == []


def test_bare_name_without_arguments_key_is_an_answer_but_a_marked_one_is_a_call() -> None:
    # Decision: JSON with no marker is a call only when it has "arguments"/"parameters" (as vLLM, SGLang and
    # llama.cpp require); inside a call marker the marker says it is a call, and no key means no arguments.
    assert parse('{"name": "get_time"}', format="openai").tool_calls == []
    assert parse('{"name": "get_time"}', format="openai").content == '{"name": "get_time"}'
    assert parse('[{"name": "a"}, {"name": "b"}]', format="llama3").tool_calls == []
    assert parse('<tool_call>{"name": "get_time"}</tool_call>', format="hermes").tool_calls == [
        ToolCall("get_time", "{}")
    ]
    assert parse('[TOOL_CALLS][{"name": "get_time"}]', format="mistral").tool_calls == [ToolCall("get_time")]


def test_one_bad_pythonic_call_keeps_its_siblings() -> None:
    parsed = parse("[get_weather(city='Paris'), bad(x=b'z'), search(q='x')]", format="llama3")
    assert [c.name for c in parsed.tool_calls] == ["get_weather", "search"]
    assert kinds(parsed) == ["malformed"] and "bad(x=b'z')" in parsed.problems[0].text
    tagged = parse("<|python_tag|>[f(a=1), g(1, 2)]", format="llama3")
    assert [c.name for c in tagged.tool_calls] == ["f"] and kinds(tagged) == ["malformed"]


def test_pythonic_lookalikes_in_prose_stay_content() -> None:
    for text in [
        "See [the docs](https://x.y) first.",
        "[print(x) for x in y]",
        "[len(a), 3]",
        "[f(1)]",
        "[a]",
    ]:
        parsed = parse(text, format="llama3")
        assert parsed.tool_calls == [] and parsed.content == text, text


def test_an_unclosed_pythonic_list_is_unterminated() -> None:
    parsed = parse("[get_weather(city='Par", format="llama3")
    assert parsed.tool_calls == [] and not parsed.complete and kinds(parsed) == ["unterminated"]
