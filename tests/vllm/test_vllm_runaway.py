"""``toolguard.vllm.RunawayProcessor`` in a real vLLM server: loops provoked with ``logit_bias`` are stopped,
visibly and without a 500 where the grammar forbids the end of sequence; normal answers are left alone.

The demo model loops on ``ha`` when one token gets a +100 logit bias (``toolguard demo`` does the same).
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.support.vllm_server import DEMO_MODEL, VLLMServer

pytestmark = pytest.mark.vllm

WEATHER = json.loads((DEMO_MODEL.parents[2] / "schemas" / "tools" / "weather.json").read_text())
OPT_IN = {"vllm_xargs": {"toolguard_runaway": "stop"}}
# toolguard.vllm.RUNAWAY_STOP (that package imports vLLM, which lives in the server's venv, not this one)
RUNAWAY_STOP = "\U0010fffd"
MAX_TOKENS = 400


@pytest.fixture(scope="module")
def client(vllm_server: VLLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=vllm_server.base_url, api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def loop_bias() -> dict[str, int]:
    tokenizer = json.loads((DEMO_MODEL / "tokenizer.json").read_text())
    return {str(tokenizer["model"]["vocab"]["ha"]): 100}


def ask(client: openai.OpenAI, server: VLLMServer, content: str, **kw: Any) -> Any:
    kw.setdefault("max_tokens", MAX_TOKENS)
    messages = [{"role": "user", "content": content}]
    return client.chat.completions.create(model=server.model, messages=messages, **kw)


def test_without_the_processor_the_bias_makes_the_model_loop_to_max_tokens(
    client: openai.OpenAI, vllm_server: VLLMServer, loop_bias: dict[str, int]
) -> None:
    answer = ask(client, vllm_server, "hi", logit_bias=loop_bias)
    assert answer.choices[0].finish_reason == "length"
    assert answer.usage.completion_tokens == MAX_TOKENS


def test_a_loop_in_text_is_stopped_with_the_visible_stop_reason(
    client: openai.OpenAI, vllm_server: VLLMServer, loop_bias: dict[str, int]
) -> None:
    answer = ask(client, vllm_server, "hi", logit_bias=loop_bias, stop=[RUNAWAY_STOP], extra_body=OPT_IN)
    choice = answer.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.model_extra["stop_reason"] == RUNAWAY_STOP
    assert answer.usage.completion_tokens < 80
    assert choice.message.content.startswith("haha") and RUNAWAY_STOP not in choice.message.content


def test_without_the_stop_string_it_ends_with_eos(
    client: openai.OpenAI, vllm_server: VLLMServer, loop_bias: dict[str, int]
) -> None:
    answer = ask(client, vllm_server, "hi", logit_bias=loop_bias, extra_body=OPT_IN)
    assert answer.choices[0].finish_reason == "stop"
    assert answer.choices[0].model_extra["stop_reason"] is None
    assert answer.usage.completion_tokens < 80


def test_with_tools_the_plugin_adds_the_stop_string_and_reports_the_stop(
    client: openai.OpenAI, vllm_server: VLLMServer, loop_bias: dict[str, int]
) -> None:
    answer = ask(client, vllm_server, "hi", tools=WEATHER, logit_bias=loop_bias, extra_body=OPT_IN)
    assert answer.choices[0].model_extra["stop_reason"] == RUNAWAY_STOP
    assert not answer.choices[0].message.tool_calls
    decision = None
    for chunk in ask(client, vllm_server, "hi", tools=WEATHER, logit_bias=loop_bias, extra_body=OPT_IN,
                     stream=True):
        if chunk.choices and chunk.choices[0].finish_reason:
            decision = chunk.choices[0].delta.model_extra.get("toolguard")
    assert decision is not None and (decision["verdict"], decision["action"]) == ("runaway", "stopped")


def test_a_loop_inside_arguments_where_eos_is_forbidden_stops_without_a_500_and_is_no_call(
    client: openai.OpenAI, vllm_server: VLLMServer, loop_bias: dict[str, int]
) -> None:
    # required: the grammar holds the model inside the call, so EOS is not allowed while it loops in a string
    answer = ask(client, vllm_server, "What's the weather in Paris?", tools=WEATHER, tool_choice="required",
                 logit_bias=loop_bias, extra_body=OPT_IN)
    choice = answer.choices[0]
    assert choice.model_extra["stop_reason"] == RUNAWAY_STOP
    assert not choice.message.tool_calls  # the looping call is withheld
    assert answer.usage.completion_tokens < 120


def test_under_a_client_json_schema_the_loop_is_closed_into_valid_json(
    client: openai.OpenAI, vllm_server: VLLMServer, loop_bias: dict[str, int]
) -> None:
    # no tools, no stop string, EOS forbidden inside the string: the processor closes the structure
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    answer = ask(client, vllm_server, "hi", logit_bias=loop_bias, extra_body=OPT_IN,
                 response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage.completion_tokens < 80
    value = json.loads(answer.choices[0].message.content)
    assert value["a"].startswith("haha")


@pytest.mark.parametrize(("content", "tools", "choice"), [
    ("hi", None, None),
    ("What's the weather in Paris?", WEATHER, "auto"),
    ("Forecast for Berlin for the next 3 days, please.", WEATHER, "required"),
    ("What's the weather in Paris?", WEATHER, {"type": "function", "function": {"name": "get_forecast"}}),
])
def test_it_does_not_fire_on_normal_answers(
    client: openai.OpenAI, vllm_server: VLLMServer, content: str, tools: Any, choice: Any
) -> None:
    kw: dict[str, Any] = {"tools": tools, "tool_choice": choice} if tools else {}
    answer = ask(client, vllm_server, content, max_tokens=200, stop=[RUNAWAY_STOP], extra_body=OPT_IN, **kw)
    assert answer.choices[0].model_extra["stop_reason"] is None
    assert answer.choices[0].finish_reason in ("stop", "tool_calls")


def test_a_bad_option_is_a_400(client: openai.OpenAI, vllm_server: VLLMServer) -> None:
    with pytest.raises(openai.BadRequestError, match="toolguard_runaway"):
        ask(client, vllm_server, "hi", extra_body={"vllm_xargs": {"toolguard_runaway": "sometimes"}})
