"""The prompt of a turn (``toolguard.local._prompt``): tools rendered hermes-style when a template has none.

The tokenizer is the local tests' real BPE tokenizer; its hermes template handles tools, and a copy carrying a
plain ChatML template (SmolLM2's, which renders ``content`` only) stands for the models that ship without
tool support.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from toolguard.local._prompt import render_prompt, template_handles_tools

pytestmark = pytest.mark.local

CHATML = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


@pytest.fixture(scope="module")
def chatml_tokenizer(bpe_tokenizer: Any) -> Any:
    tok = copy.deepcopy(bpe_tokenizer)
    tok.chat_template = CHATML
    return tok


def _text(tokenizer: Any, messages: list[dict[str, Any]], tools: Any) -> str:
    return str(tokenizer.decode(render_prompt(tokenizer, messages, tools)))


def test_a_template_that_handles_tools_is_used_untouched(bpe_tokenizer: Any) -> None:
    assert template_handles_tools(bpe_tokenizer)
    messages = [{"role": "user", "content": "weather in Paris?"}]
    expected = bpe_tokenizer.apply_chat_template(
        messages, tools=TOOLS, add_generation_prompt=True, tokenize=False
    )
    assert _text(bpe_tokenizer, messages, TOOLS) == expected


def test_a_template_that_ignores_tools_gets_them_in_the_system_message(chatml_tokenizer: Any) -> None:
    assert not template_handles_tools(chatml_tokenizer)
    text = _text(chatml_tokenizer, [{"role": "user", "content": "weather in Paris?"}], TOOLS)
    system, rest = text.split("<|im_end|>", 1)
    assert system.startswith("<|im_start|>system\n# Tools")
    assert json.dumps(TOOLS[0]["function"]) in system
    assert "<tool_call></tool_call> XML tags" in system
    assert "You are a helpful AI assistant" not in text  # our system message replaces the template's default
    assert rest.endswith("<|im_start|>user\nweather in Paris?<|im_end|>\n<|im_start|>assistant\n")


def test_the_callers_system_message_comes_first_and_without_tools_nothing_changes(
    chatml_tokenizer: Any,
) -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    text = _text(chatml_tokenizer, messages, TOOLS)
    assert text.startswith("<|im_start|>system\nBe brief.\n\n# Tools\n")
    plain = chatml_tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert _text(chatml_tokenizer, messages, None) == plain


def test_calls_are_rendered_hermes_style_and_results_in_words(chatml_tokenizer: Any) -> None:
    call = {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    messages = [
        {"role": "user", "content": "weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", **call},
                {"id": "b", **call, "function": {**call["function"], "arguments": '{"city": "Rome"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": '{"temperature": 18}'},
        {"role": "tool", "tool_call_id": "b", "content": '{"temperature": 25}'},
    ]
    text = _text(chatml_tokenizer, messages, TOOLS)
    assert (
        "<|im_start|>assistant\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call><|im_end|>'
    ) in text
    # the answering turn: both results in one user message, the question repeated, no tools block
    assert (
        '<|im_start|>user\nThe function get_weather returned {"temperature": 18}. The function get_weather '
        'returned {"temperature": 25}. Answer my question with the values it returned: weather in Paris and '
        "Rome?<|im_end|>\n<|im_start|>assistant\n"
    ) in text
    assert "<tools>" not in text and "<|im_start|>tool" not in text
    # a later turn (the user spoke again) gets the tools back, and the result is stated without the request
    later = _text(chatml_tokenizer, [*messages, {"role": "user", "content": "and Oslo?"}], TOOLS)
    assert "<tools>" in later
    assert 'returned {"temperature": 25}.<|im_end|>\n<|im_start|>user\nand Oslo?' in later


def test_after_a_refused_call_the_tools_stay_and_the_call_is_asked_again(chatml_tokenizer: Any) -> None:
    fn = {"name": "get_weather", "arguments": '{"town": "Rome"}'}
    call = {"id": "a", "type": "function", "function": fn}
    refused = "Invalid call to 'get_weather': (root): 'city' is a required property"
    messages = [
        {"role": "user", "content": "weather in Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "a", "content": refused},
    ]
    text = _text(chatml_tokenizer, messages, TOOLS)
    assert "<tools>" in text
    assert (
        f"The function get_weather returned {refused}. Write the call again, with valid arguments, for my "
        "request: weather in Rome?<|im_end|>"
    ) in text


def test_the_answering_turn_leaves_refused_proposals_out(chatml_tokenizer: Any) -> None:
    bad = {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": '{"town": "R"}'}}
    good = {"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "R"}'}}
    messages = [
        {"role": "user", "content": "weather in Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [bad]},
        {"role": "tool", "tool_call_id": "a", "content": "Invalid call to 'get_weather': 'city' is required"},
        {"role": "assistant", "content": None, "tool_calls": [good]},
        {"role": "tool", "tool_call_id": "b", "content": '{"temperature": 25}'},
    ]
    text = _text(chatml_tokenizer, messages, TOOLS)
    assert "town" not in text and "Invalid call" not in text
    assert text.count("<tool_call>") == 1 and '"city": "R"' in text
    assert text.endswith(
        'The function get_weather returned {"temperature": 25}. Answer my question with the values it '
        "returned: weather in Rome?<|im_end|>\n<|im_start|>assistant\n"
    )
