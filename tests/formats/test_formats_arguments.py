"""A call's arguments are the text the model wrote: parsed as that text's span, rendered verbatim.

Numbers JSON allows but a float round trip changes or breaks (``1e999``, ``1.0``, ``-0``, 23-digit integers),
escapes, whitespace and key order all survive ``parse`` and ``render`` unchanged.
"""

from __future__ import annotations

import json

import pytest

from toolguard import ToolCall
from toolguard.formats import parse, render

# keys out of sorted order; numbers a float would turn into inf, 1, 0 and 1.2345678901234568e+22
ARGS = (
    '{"zeta": 1e999, "alpha": 1.0, "mid": -0, "big": 12345678901234567890123, "e": "\\u00e9", "neg": -1E+2}'
)
CONCRETE = ["openai", "hermes", "llama3", "mistral", "react"]


def only_call(text: str, fmt: str, *, problems: tuple[str, ...] = ()) -> ToolCall:
    parsed = parse(text, format=fmt)  # type: ignore[arg-type]
    assert [p.kind for p in parsed.problems] == list(problems) and parsed.complete, parsed.problems
    assert len(parsed.tool_calls) == 1, parsed
    return parsed.tool_calls[0]


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("openai", f'{{"name": "f", "arguments": {ARGS}}}'),
        ("openai", f'[{{"name": "f", "arguments": {ARGS}}}]'),
        ("openai", f'{{"type": "function", "id": "c1", "function": {{"name": "f", "arguments": {ARGS}}}}}'),
        ("openai", f'[{{"type": "function", "function": {{"arguments": {ARGS}, "name": "f"}}}}]'),
        ("hermes", f'<tool_call>\n{{"name": "f", "arguments": {ARGS}}}\n</tool_call>'),
        ("llama3", f'{{"name": "f", "parameters": {ARGS}}}'),
        ("llama3", f'<|python_tag|>{{"name": "f", "parameters": {ARGS}}}'),
        ("mistral", f'[TOOL_CALLS][{{"name": "f", "arguments": {ARGS}}}]'),
        ("mistral", f"[TOOL_CALLS]f[ARGS]{ARGS}"),
        ("react", f"Action: f\nAction Input: {ARGS}"),
        ("auto", f'<tool_call>{{"name": "f", "arguments": {ARGS}}}</tool_call>'),
    ],
)
def test_parse_keeps_the_arguments_text(fmt: str, text: str) -> None:
    assert only_call(text, fmt).arguments == ARGS


def test_whitespace_and_escapes_inside_the_object_are_kept() -> None:
    args = '{ "q" :\t"caf\\u00e9 \\"x\\"" ,\n  "n": [1.50, 2e-400] }'
    assert only_call(f'{{"name": "f", "arguments":   {args}  }}', "openai").arguments == args


def test_string_arguments_are_their_decoded_content() -> None:
    text = json.dumps({"name": "f", "arguments": ARGS})  # the object's text, as a JSON string
    assert only_call(text, "openai").arguments == ARGS


def test_non_object_arguments_keep_their_text_too_and_are_reported() -> None:
    call = only_call('{"name": "f", "arguments": [1e999, 1.0]}', "openai", problems=("arguments_not_object",))
    assert call.arguments == "[1e999, 1.0]"


@pytest.mark.parametrize("value", ['"hello"', '"[oops"', '"{\\"a\\": 1} tail"', '""'])
def test_a_string_that_is_not_one_object_stays_json_and_is_reported(value: str) -> None:
    # the peers pass such strings through as arguments text that is not JSON; here the arguments stay JSON
    # (the string's own text), parsed_arguments() works, and the validator rejects them with a clear message
    call = only_call(f'{{"name": "f", "arguments": {value}}}', "openai", problems=("arguments_not_object",))
    assert call.arguments == value
    assert call.parsed_arguments() == json.loads(value)


def test_a_number_past_the_int_digits_limit_is_still_a_call() -> None:
    args = '{"n": ' + "9" * 5000 + "}"
    assert only_call(f'{{"name": "f", "arguments": {args}}}', "openai").arguments == args


def test_python_tag_call_keeps_json_number_spellings() -> None:
    call = only_call("<|python_tag|>f(zeta=1e999, alpha=1.0, mid=-0, big=12345678901234567890123)", "llama3")
    assert call.arguments == '{"zeta": 1e999, "alpha": 1.0, "mid": -0, "big": 12345678901234567890123}'


def test_python_tag_call_spells_python_only_numbers_as_json() -> None:
    call = only_call("<|python_tag|>f(a=1_000, b=0x10, c=1., d=[True, None], e={'k': 'v'})", "llama3")
    assert call.arguments == '{"a": 1000, "b": 16, "c": 1.0, "d": [true, null], "e": {"k": "v"}}'


def test_python_tag_call_with_a_value_json_cannot_spell_is_malformed() -> None:
    parsed = parse("<|python_tag|>f(a={1, 2})", format="llama3")
    assert parsed.tool_calls == [] and [p.kind for p in parsed.problems] == ["malformed"]


@pytest.mark.parametrize("fmt", CONCRETE)
def test_render_writes_the_arguments_verbatim(fmt: str) -> None:
    calls = [ToolCall("f", ARGS, "call_1"), ToolCall("g", '{"b": 2, "a": 1.0}', "call_2")]
    text = render(calls, format=fmt)  # type: ignore[arg-type]
    assert ARGS in text and '{"b": 2, "a": 1.0}' in text
    assert "Infinity" not in text
    parsed = parse(text, format=fmt)  # type: ignore[arg-type]
    assert [c.arguments for c in parsed.tool_calls] == [ARGS, '{"b": 2, "a": 1.0}']
    if fmt in ("openai", "mistral"):
        assert parsed.tool_calls == calls


def test_render_verbatim_includes_surrounding_whitespace_and_parse_gives_the_object() -> None:
    text = render([ToolCall("f", '  {"a": 1.0}\n')], format="openai")
    assert text == '{"name": "f", "arguments":   {"a": 1.0}\n}'
    assert only_call(text, "openai").arguments == '{"a": 1.0}'


@pytest.mark.parametrize("args", ["[1e999]", "1e999", '"hello"', "null"])
def test_render_writes_other_json_verbatim_and_it_parses_back_identical(args: str) -> None:
    for fmt in ("openai", "hermes", "llama3", "mistral"):
        text = render([ToolCall("f", args)], format=fmt)
        assert args in text
        expected = "{}" if args == "null" else args
        problems = () if args == "null" else ("arguments_not_object",)
        assert only_call(text, fmt, problems=problems).arguments == expected


@pytest.mark.parametrize("args", ['{"a": NaN}', '{"a": 1} trailing', "Infinity", "not json"])
def test_render_writes_text_that_is_not_json_as_a_json_string(args: str) -> None:
    for fmt in ("openai", "hermes", "llama3", "mistral"):
        text = render([ToolCall("f", args)], format=fmt)
        call = only_call(text, fmt, problems=("arguments_not_object",))
        assert call.arguments == json.dumps(args) and call.parsed_arguments() == args


def test_render_of_an_object_too_deep_to_nest_falls_back_to_a_string() -> None:
    args = '{"a": ' * 255 + "1e999" + "}" * 255
    for fmt in ("openai", "hermes", "mistral"):
        call = only_call(render([ToolCall("f", args)], format=fmt), fmt, problems=("arguments_not_object",))
        assert call.parsed_arguments() == args
