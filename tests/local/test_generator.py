"""LocalGenerator end to end on a random-weight model: OpenAI-shaped results, jump-forward, truthful endings
(length, repetition), streaming (hold and pass) consistent with the non-streaming result."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
jsonschema = pytest.importorskip("jsonschema")

from _local_toolsets import NESTED, SMALL, example_tools  # noqa: E402

from toolguard import ToolSet  # noqa: E402
from toolguard.local import LocalGenerator  # noqa: E402

pytestmark = pytest.mark.local

ASK = [{"role": "system", "content": "You call tools."}, {"role": "user", "content": "Weather in Paris?"}]
WEATHER = example_tools("weather")


@pytest.fixture(scope="module")
def gen(bpe_tokenizer: Any, tiny_llama: Any) -> LocalGenerator:
    return LocalGenerator(tiny_llama, bpe_tokenizer, max_string_length=8, model_name="tiny")


class Bias:
    """The model's preference, set at the logits boundary: add ``bias`` to the logits of ``tokens``."""

    def __init__(self, tokens: list[int], bias: float) -> None:
        self.tokens = tokens
        self.bias = bias

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        scores[:, self.tokens] += self.bias
        return scores


def valid_call(call: dict[str, Any], tools: Any) -> None:
    schema = ToolSet.from_openai(tools)[call["function"]["name"]].parameters
    jsonschema.validate(json.loads(call["function"]["arguments"]), schema,
                        format_checker=jsonschema.FormatChecker())


def test_required_call_result_shape(gen: LocalGenerator) -> None:
    result = gen.chat(ASK, tools=WEATHER, tool_choice="required", seed=1, max_new_tokens=80)
    assert result["object"] == "chat.completion" and result["model"] == "tiny"
    choice = result["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["role"] == "assistant" and message["content"] is None
    (call,) = message["tool_calls"]
    assert call["id"].startswith("call_") and call["type"] == "function"
    assert isinstance(call["function"]["arguments"], str)
    valid_call(call, WEATHER)
    usage = result["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    stats = result["toolguard"]["stats"]
    assert stats["tokens_generated"] == usage["completion_tokens"]


def test_jump_forward_saves_forward_passes(gen: LocalGenerator) -> None:
    for seed in range(3):
        result = gen.chat(ASK, tools=WEATHER, tool_choice="required", seed=seed, max_new_tokens=80)
        stats = result["toolguard"]["stats"]
        assert result["choices"][0]["finish_reason"] == "tool_calls"
        # one pass per sampled token; forced tokens ride along for free
        assert stats["forward_passes"] == stats["tokens_generated"] - stats["tokens_forced"]
        assert stats["tokens_forced"] >= 0.25 * stats["tokens_generated"]


def test_seeded_runs_repeat(gen: LocalGenerator) -> None:
    a = gen.chat(ASK, tools=NESTED, tool_choice="required", seed=5, max_new_tokens=120)
    b = gen.chat(ASK, tools=NESTED, tool_choice="required", seed=5, max_new_tokens=120)
    assert a["choices"] == b["choices"]


def test_truncated_call_is_length_not_a_call(gen: LocalGenerator) -> None:
    result = gen.chat(ASK, tools=NESTED, tool_choice="required", seed=2, max_new_tokens=12)
    choice = result["choices"][0]
    assert choice["finish_reason"] == "length"
    assert "tool_calls" not in choice["message"]
    assert result["toolguard"]["truncated"].startswith('<tool_call>\n{"name": "')
    assert result["usage"]["completion_tokens"] == 12


def test_auto_free_text(gen: LocalGenerator) -> None:
    result = gen.chat(ASK, tools=WEATHER, tool_choice="auto", seed=3, max_new_tokens=20)
    choice = result["choices"][0]
    assert choice["finish_reason"] in ("stop", "length")
    assert choice["message"]["content"] and "tool_calls" not in choice["message"]


def test_auto_call_after_text(gen: LocalGenerator, bpe_tokenizer: Any) -> None:
    marker = bpe_tokenizer.convert_tokens_to_ids("<tool_call>")
    for seed in range(6):
        result = gen.chat(ASK, tools=WEATHER, seed=seed, max_new_tokens=80,
                          logits_processors=[Bias([marker], 5.0)])
        choice = result["choices"][0]
        if choice["finish_reason"] == "tool_calls":
            valid_call(choice["message"]["tool_calls"][0], WEATHER)
            assert "<tool_call>" not in (choice["message"]["content"] or "")
            return
    pytest.fail("no call in six biased runs")


def test_runaway_inside_a_string_argument(bpe_tokenizer: Any, tiny_llama: Any) -> None:
    text = {"type": "string", "maxLength": 400}
    params = {"type": "object", "properties": {"text": text}, "required": ["text"]}
    tools = [{"type": "function", "function": {"name": "note", "parameters": params}}]
    gen = LocalGenerator(tiny_llama, bpe_tokenizer)
    loop = bpe_tokenizer.encode(" la", add_special_tokens=False)
    result = gen.chat(ASK, tools=tools, tool_choice="required", seed=0, max_new_tokens=300,
                      logits_processors=[Bias(loop, 30.0)])
    choice = result["choices"][0]
    assert choice["finish_reason"] == "repetition"
    assert "tool_calls" not in choice["message"]
    assert result["toolguard"]["runaway"]["kind"]
    assert result["usage"]["completion_tokens"] < 300


def test_runaway_in_free_text_trims_content(bpe_tokenizer: Any, tiny_llama: Any) -> None:
    gen = LocalGenerator(tiny_llama, bpe_tokenizer)
    word = bpe_tokenizer.encode(" lock", add_special_tokens=False)
    result = gen.chat(ASK, tools=WEATHER, seed=0, max_new_tokens=300, logits_processors=[Bias(word, 30.0)])
    choice = result["choices"][0]
    assert choice["finish_reason"] == "repetition"
    runaway = result["toolguard"]["runaway"]
    assert len(choice["message"]["content"]) == runaway["offset"] + runaway["period"]


def collect(chunks: Any) -> tuple[str, list[dict[str, Any]], str | None, list[dict[str, Any]]]:
    content, calls, finish, all_chunks = "", [], None, list(chunks)
    for chunk in all_chunks:
        for choice in chunk["choices"]:
            delta = choice["delta"]
            content += delta.get("content") or ""
            for tc in delta.get("tool_calls") or ():
                if tc["index"] == len(calls):
                    calls.append({"id": tc["id"], "type": "function",
                                  "function": {"name": tc["function"]["name"], "arguments": ""}})
                calls[tc["index"]]["function"]["arguments"] += tc["function"].get("arguments", "")
            finish = choice["finish_reason"] or finish
    return content, calls, finish, all_chunks


@pytest.mark.parametrize("mode", ["hold", "pass"])
def test_stream_matches_non_stream(gen: LocalGenerator, mode: str) -> None:
    kwargs = dict(tools=NESTED, tool_choice="required", seed=7, max_new_tokens=120, parallel_tool_calls=True,
                  max_calls=2)
    full = gen.chat(ASK, **kwargs)
    content, calls, finish, chunks = collect(gen.chat(ASK, stream=True, stream_calls=mode, include_usage=True,
                                                      **kwargs))
    choice = full["choices"][0]
    assert finish == choice["finish_reason"] == "tool_calls"
    assert calls == choice["message"]["tool_calls"]
    assert content == (choice["message"]["content"] or "")
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["usage"] == full["usage"] and chunks[-1]["choices"] == []
    assert {c["id"] for c in chunks} == {chunks[0]["id"]}
    if mode == "pass":  # arguments arrived in several fragments
        assert sum(1 for c in chunks for ch in c["choices"] for tc in ch["delta"].get("tool_calls") or ()) > 3


def test_stream_hold_never_shows_a_truncated_call(gen: LocalGenerator) -> None:
    _, calls, finish, _ = collect(gen.chat(ASK, tools=NESTED, tool_choice="required", seed=2,
                                                 max_new_tokens=12, stream=True))
    assert finish == "length" and calls == []


def test_stream_content_holds_back_a_partial_marker(gen: LocalGenerator, bpe_tokenizer: Any) -> None:
    marker = bpe_tokenizer.convert_tokens_to_ids("<tool_call>")
    content, _, _, _ = collect(gen.chat(ASK, tools=WEATHER, seed=1, max_new_tokens=80, stream=True,
                                                 logits_processors=[Bias([marker], 5.0)]))
    assert "<tool_call" not in content


@pytest.mark.parametrize("engine", ["xgrammar", "outlines"])
def test_other_engines_jump_forward(bpe_tokenizer: Any, tiny_llama: Any, engine: str) -> None:
    gen = LocalGenerator(tiny_llama, bpe_tokenizer, engine=engine, max_string_length=6)
    result = gen.chat(ASK, tools=SMALL, tool_choice="required", seed=4, max_new_tokens=80)
    choice = result["choices"][0]
    assert choice["finish_reason"] == "tool_calls", result
    valid_call(choice["message"]["tool_calls"][0], SMALL)
    stats = result["toolguard"]["stats"]
    assert stats["tokens_forced"] > 0
    assert stats["forward_passes"] == stats["tokens_generated"] - stats["tokens_forced"]


def test_json_format_parallel(bpe_tokenizer: Any, tiny_llama: Any) -> None:
    gen = LocalGenerator(tiny_llama, bpe_tokenizer, format="json", max_string_length=6)
    result = gen.chat(ASK, tools=SMALL, tool_choice="required", seed=8, max_new_tokens=120,
                      parallel_tool_calls=True, max_calls=2)
    choice = result["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert 1 <= len(choice["message"]["tool_calls"]) <= 2
    for call in choice["message"]["tool_calls"]:
        valid_call(call, SMALL)


def test_check_mode_reports_what_the_grammar_could_not_enforce(bpe_tokenizer: Any, tiny_llama: Any) -> None:
    tools = copy.deepcopy(example_tools("math"))
    # seven measures: too many arrangements to list, so uniqueItems stays unenforceable (three are listed)
    stats = next(t for t in tools if t["function"]["name"] == "statistics")["function"]["parameters"]
    stats["properties"]["measures"]["items"]["enum"] += ["min", "max", "sum", "count"]
    gen = LocalGenerator(tiny_llama, bpe_tokenizer, max_string_length=6, unenforced="check")
    for seed in range(3):
        result = gen.chat(ASK, tools=tools, tool_choice="statistics", seed=seed, max_new_tokens=100)
        extras = result["toolguard"]
        assert extras["unenforced"] == {"statistics": ["/properties/measures/uniqueItems"]}
        for i, call in enumerate(result["choices"][0]["message"].get("tool_calls") or ()):
            args = json.loads(call["function"]["arguments"])
            measures = args.get("measures", [])
            duplicated = len(set(measures)) != len(measures)
            assert duplicated == any(item["index"] == i for item in extras["invalid"])



def test_a_call_demanded_without_tools_is_refused_before_generating(gen: LocalGenerator) -> None:
    from toolguard import UsageError

    for choice in ("required", "any", {"type": "function", "function": {"name": "get_weather"}}):
        with pytest.raises(UsageError, match="tool"):
            gen.chat(ASK, tool_choice=choice, max_new_tokens=4)
    assert gen.chat(ASK, tool_choice="auto", max_new_tokens=4, seed=0)["choices"][0]["message"] is not None
