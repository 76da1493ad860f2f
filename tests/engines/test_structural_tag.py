"""``build_structural_tag``: the shape vLLM/SGLang accept, and what xgrammar then allows and forbids.

The grammar checks compile each tag with the real xgrammar (``toolguard[local]``) and ask its matcher
whether whole strings are accepted: calls rendered by ``toolguard.formats.render`` in each format, prose
around them, tool results after them, names not offered.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolguard import ToolCall, ToolSet, UsageError
from toolguard.engines import MAX_WHITESPACE, TAG_FORMATS, build_structural_tag, tool_choice_mode
from toolguard.formats import parse, render

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas" / "tools"
WEATHER = json.loads((SCHEMAS / "weather.json").read_text())
PARIS = ToolCall("get_weather", '{"city": "Paris"}')
FORECAST = ToolCall("get_forecast", '{"city": "Paris", "days": 3}')


def tools(*names: str) -> list[dict[str, Any]]:
    everything = [t for f in sorted(SCHEMAS.glob("*.json")) for t in json.loads(f.read_text())]
    return [t for t in everything if t["function"]["name"] in names] if names else everything


# --------------------------------------------------------------------------------------------- shape


def test_auto_tag_has_one_tag_per_tool_in_the_hermes_syntax() -> None:
    built = build_structural_tag(WEATHER)
    assert built is not None
    assert built.tag["type"] == "structural_tag"
    fmt = built.tag["format"]
    assert fmt["type"] == "triggered_tags"
    assert fmt["triggers"] == ["<tool_call>"]
    assert [t["begin"] for t in fmt["tags"]] == [
        '<tool_call>\n{"name": "get_weather", "arguments": ',
        '<tool_call>\n{"name": "get_forecast", "arguments": ',
    ]
    assert {t["end"] for t in fmt["tags"]} == {"}\n</tool_call>"}
    sent = fmt["tags"][0]["content"]
    assert sent["type"] == "json_schema" and sent["max_whitespace_cnt"] == MAX_WHITESPACE
    unit = WEATHER[0]["function"]["parameters"]["properties"]["unit"]
    assert sent["json_schema"]["properties"]["unit"] == unit
    assert fmt["at_least_one"] is False
    assert fmt["stop_after_first"] is False  # parallel calls allowed by default
    assert "<tool_response>" in fmt["excludes"]
    assert (built.mode, built.names) == ("auto", ("get_weather", "get_forecast"))
    # minLength is checked by validation: xgrammar's length-bounded strings forbid escapes (see below)
    assert built.unenforced == (("get_weather", "/properties/city/minLength"),
                                ("get_forecast", "/properties/city/minLength"))
    assert json.loads(built.as_json()) == built.tag


def test_required_named_none_and_parallel() -> None:
    required = build_structural_tag(WEATHER, tool_choice="required", parallel_tool_calls=False)
    assert required is not None
    assert required.tag["format"]["at_least_one"] is True
    assert required.tag["format"]["stop_after_first"] is True
    named = build_structural_tag(
        WEATHER, tool_choice={"type": "function", "function": {"name": "get_forecast"}}
    )
    assert named is not None
    begins = [t["begin"] for t in named.tag["format"]["tags"]]
    assert begins == ['<tool_call>\n{"name": "get_forecast", "arguments": ']
    assert (named.mode, named.names) == ("required", ("get_forecast",))
    assert build_structural_tag(WEATHER, tool_choice="none") is None
    assert build_structural_tag([], tool_choice="auto") is None


@pytest.mark.parametrize(
    "choice", ["sometimes", {"type": "function", "function": {"name": "get_time"}}, {"type": "function"}, 3]
)
def test_bad_tool_choice_is_a_usage_error(choice: Any) -> None:
    with pytest.raises(UsageError):
        build_structural_tag(WEATHER, tool_choice=choice)


def test_tool_choice_mode_reads_every_openai_spelling() -> None:
    ts = ToolSet.from_openai(WEATHER)
    assert tool_choice_mode(None, ts) == ("auto", ("get_weather", "get_forecast"))
    assert tool_choice_mode("any", ts) == ("required", ("get_weather", "get_forecast"))
    assert tool_choice_mode("get_weather", ts) == ("required", ("get_weather",))
    assert tool_choice_mode({"name": "get_weather"}, ts) == ("required", ("get_weather",))
    with pytest.raises(UsageError, match="at least one tool"):
        tool_choice_mode("required", ToolSet())


def test_keywords_xgrammar_drops_are_left_out_and_reported() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "code": {"type": "string", "pattern": "^[a-z]+$", "minLength": 3},
            "step": {"type": "integer", "minimum": 0, "multipleOf": 5},
        },
    }
    built = build_structural_tag([{"type": "function", "function": {"name": "f", "parameters": schema}}])
    assert built is not None
    assert sorted(built.unenforced) == [
        ("f", "/properties/code/minLength"),
        ("f", "/properties/step/multipleOf"),
        ("f", "/properties/tags/uniqueItems"),
    ]
    sent = built.tag["format"]["tags"][0]["content"]["json_schema"]["properties"]
    assert "uniqueItems" not in sent["tags"]
    assert "minLength" not in sent["code"] and "multipleOf" not in sent["step"]
    assert schema["properties"]["tags"]["uniqueItems"] is True  # the caller's schema is not mutated


def test_unknown_format_is_refused() -> None:
    with pytest.raises(UsageError, match="no structural tag"):
        build_structural_tag(WEATHER, format="auto")  # type: ignore[arg-type]


def test_the_builder_imports_no_engine() -> None:
    code = (
        "import sys, toolguard.engines, toolguard._text_turn;"
        "heavy = ('torch', 'xgrammar', 'llguidance', 'vllm', 'toolguard.local');"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# ------------------------------------------------------------------------------ what xgrammar enforces


@pytest.fixture(scope="module")
def accepts() -> Any:
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _get_matcher_from_grammar

    matchers: dict[str, Any] = {}

    def check(tag: Any, text: str) -> bool:
        key = tag.as_json()
        if key not in matchers:  # compiling is the slow part: one matcher per tag, reset between strings
            matchers[key] = _get_matcher_from_grammar(xgr.Grammar.from_structural_tag(key))
        matcher = matchers[key]
        matcher.reset()
        return bool(matcher.accept_string(text) and matcher.is_terminated())

    return check


@pytest.mark.local
@pytest.mark.parametrize("fmt", sorted(TAG_FORMATS))
def test_calls_rendered_in_each_format_are_accepted_and_parse_back(fmt: str, accepts: Any) -> None:
    tag = build_structural_tag(WEATHER, format=fmt, parallel_tool_calls=False)  # type: ignore[arg-type]
    text = render([FORECAST], format=fmt)  # type: ignore[arg-type]
    assert accepts(tag, text)
    assert accepts(tag, "Let me look that up. " + text)
    assert parse(text, format=fmt).tool_calls[0].name == "get_forecast"  # type: ignore[arg-type]
    # nothing after the call when calls are not parallel, and no tool the request did not offer
    assert not accepts(tag, text + "\n")
    assert not accepts(tag, render([ToolCall("delete_files", "{}")], format=fmt))  # type: ignore[arg-type]


@pytest.mark.local
def test_hermes_semantics_of_auto_required_and_parallel(accepts: Any) -> None:
    call = render([PARIS], format="hermes")
    auto = build_structural_tag(WEATHER)
    assert accepts(auto, "Hello!") and accepts(auto, call) and accepts(auto, call + "\n" + call)
    # a made-up tool result is not grammatical, even between parallel calls
    assert not accepts(auto, call + "\n<tool_response>\n{}\n</tool_response>")
    assert not accepts(auto, "Sure <|im_start|>user")
    required = build_structural_tag(WEATHER, tool_choice="required")
    assert accepts(required, call)
    assert not accepts(required, "Hello!")
    assert not accepts(required, "Sure. " + call)  # measured: at_least_one means the turn starts with a call
    # arguments outside the schema are not grammatical
    def hermes(name: str, arguments: str) -> str:
        return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'

    assert not accepts(auto, hermes("get_weather", '{"town": "Paris"}'))
    assert not accepts(auto, hermes("get_forecast", '{"city": "P", "days": 99}'))
    # indented JSON fits; a run of whitespace longer than MAX_WHITESPACE does not
    assert accepts(auto, hermes("get_weather", '{\n    "city": "Paris"\n}'))
    assert not accepts(auto, hermes("get_weather", "{" + "\n" * 17 + '"city": "P"}'))


@pytest.mark.local
def test_length_bounds_would_forbid_escapes_in_xgrammar(accepts: Any) -> None:
    """Why minLength/maxLength are left out of the tag: with them, xgrammar refuses every escape and accepts a
    raw control character (invalid JSON). If this starts failing, xgrammar fixed it: enforce them again."""
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    bounded = xgr.Grammar.from_json_schema(json.dumps({"type": "string", "minLength": 1}))
    assert not _is_grammar_accept_string(bounded, '"a\\"b"')
    assert _is_grammar_accept_string(bounded, '"a\x01b"')
    tag = build_structural_tag(WEATHER, parallel_tool_calls=False)
    assert accepts(tag, render([ToolCall("get_weather", '{"city": "Saint \\"Paris\\""}')], format="hermes"))
    assert not accepts(tag, render([ToolCall("get_weather", '{"city": "Pa\x01ris"}')], format="hermes"))


@pytest.mark.local
@pytest.mark.slow
def test_valid_calls_for_every_example_tool_are_grammatical(accepts: Any) -> None:
    """No false refusal: a call the StreamValidator accepts is one the engine lets the model write (instances
    from the fuzz generator, canonical JSON spelling, labelled by the validator). Where xgrammar is knowingly
    narrower than the schema, which only restricts what a model can write, the case is left out: ``pattern``
    and ``format`` are taken out of the schemas (no escapes in pattern strings; e-mail and host grammars
    stricter than RFC 5321, e.g. no ``xn--`` top-level domain), and numbers under a bound with an exponent
    or more than 6 decimals are skipped (measured on 0.2.8/0.2.9: a bounded number has at most 6 decimals and
    no exponent), and object keys are written in the schema's order (xgrammar's ``any_order`` is off, as in
    vLLM's own tags: the order is fixed, which is what lets the grammar enforce ``required``). Everything
    else must agree."""
    import random

    from toolguard import StreamValidator
    from toolguard._fuzz._instances import gen_instance

    def narrow(value: Any) -> bool:
        if isinstance(value, float):
            text = repr(value)
            return "e" in text or len(text.partition(".")[2]) > 6
        if isinstance(value, dict):
            return any(narrow(v) for v in value.values())
        return any(narrow(v) for v in value) if isinstance(value, list) else False

    def in_order(value: Any, schema: Any) -> Any:
        if isinstance(value, dict) and isinstance(schema, dict):
            props = schema.get("properties") or {}
            keys = [k for k in props if k in value] + [k for k in value if k not in props]
            return {k: in_order(value[k], props.get(k)) for k in keys}
        return value

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in ("pattern", "format")}
        return [strip(v) for v in node] if isinstance(node, list) else node

    toolset = ToolSet.from_openai(strip(tools()))
    tag = build_structural_tag(toolset, tool_choice="required")
    assert tag is not None
    rng, checked = random.Random(7), 0
    for _ in range(100):
        name = rng.choice(tag.names)
        schema = toolset[name].parameters
        value = in_order(gen_instance(rng, schema), schema)
        if narrow(value):
            continue
        arguments = json.dumps(value, ensure_ascii=False)
        validator = StreamValidator(schema)
        if validator.feed(arguments).state == "rejected" or validator.close().state != "complete":
            continue
        checked += 1
        assert accepts(tag, render([ToolCall(name, arguments)], format="hermes")), (name, arguments)
    assert checked >= 25
