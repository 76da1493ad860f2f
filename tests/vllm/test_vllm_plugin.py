"""toolguard's tool parser inside a real vLLM server: only valid calls to offered tools, terminated.

One server for the session (``conftest.py``), the embedded demo model, the official ``openai`` client, no
proxy in front. Each scenario runs with ``tool_choice`` auto / required / a named tool, streamed and not,
with the tools sent ``strict`` and not, and is checked on the first attempt: every ``tool_calls`` entry
names an offered tool (the one named, if any) and its arguments validate against that tool's full schema;
when streamed, no text follows the first call. The matrix decodes greedily (deterministic in CI); a sampled
run (temperature 1, fixed seeds) checks the same guarantees where the model wanders.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.vllm_server import REPO, VLLMServer
from toolguard import StreamValidator

pytestmark = pytest.mark.vllm

SCHEMAS = REPO / "schemas" / "tools"


def load(name: str) -> list[dict[str, Any]]:
    return json.loads((SCHEMAS / f"{name}.json").read_text())


def strict(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**t, "function": {**t["function"], "strict": True}} for t in tools]


WEATHER, MATH, FILES = load("weather"), load("math"), load("files")
FORECAST_ONLY = [t for t in WEATHER if t["function"]["name"] == "get_forecast"]
SCENARIOS = {
    # (user message, tools): the forecast-only one asks for the weather but offers only get_forecast
    "weather": ("What's the weather in Paris?", WEATHER),
    "forecast": ("Forecast for Berlin for the next 3 days, please.", WEATHER),
    "offered-only": ("What's the weather in Paris?", FORECAST_ONLY),
    "math": ("add 2 and 3", MATH),
    "files": ("Read the file notes/todo.txt", FILES),
}
CHOICES = ["auto", "required", "named"]


@pytest.fixture(scope="module")
def client(vllm_server: VLLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=vllm_server.base_url, api_key="unused", max_retries=0, timeout=120)


def tool_choice(kind: str, tools: list[dict[str, Any]]) -> Any:
    if kind == "named":
        return {"type": "function", "function": {"name": tools[-1]["function"]["name"]}}
    return kind


def check_calls(calls: list[tuple[str, str]], tools: list[dict[str, Any]], choice: Any) -> None:
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    allowed = {choice["function"]["name"]} if isinstance(choice, dict) else set(schemas)
    if choice != "auto":
        assert calls, "tool_choice demands a call"
    for name, arguments in calls:
        assert name in allowed, f"{name!r} was not offered (allowed: {sorted(allowed)})"
        validator = StreamValidator(schemas[name])
        validator.feed(arguments)
        assert validator.close().state == "complete", (name, arguments)


def stream(client: openai.OpenAI, model: str, **kw: Any) -> tuple[list[tuple[str, Any]], str | None, Any]:
    """(events in order: ("content", text) / ("call", (name, args))), finish_reason, toolguard field."""
    events: list[tuple[str, Any]] = []
    finish, decision = None, None
    for chunk in client.chat.completions.create(model=model, stream=True, **kw):
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        if delta.content:
            events.append(("content", delta.content))
        for call in delta.tool_calls or []:
            assert call.function is not None
            events.append(("call", (call.function.name, call.function.arguments)))
        if choice.finish_reason:
            finish, decision = choice.finish_reason, (delta.model_extra or {}).get("toolguard")
    return events, finish, decision


MATRIX = pytest.mark.parametrize(
    ("scenario", "kind", "is_strict"),
    [(s, k, st) for s in sorted(SCENARIOS) for k in CHOICES for st in (False, True)],
    ids=lambda v: v if isinstance(v, str) else ("strict" if v else "plain"),
)


def request(scenario: str, kind: str, is_strict: bool, model: str) -> tuple[dict[str, Any], Any]:
    """The greedy request of one matrix cell, and its tools (as sent)."""
    message, tools = SCENARIOS[scenario]
    tools = strict(tools) if is_strict else tools
    kw = dict(model=model, messages=[{"role": "user", "content": message}], tools=tools,
              tool_choice=tool_choice(kind, tools), max_tokens=200, temperature=0)
    return kw, tools


@MATRIX
def test_non_streamed_answers_hold_only_valid_calls_to_offered_tools(
    client: openai.OpenAI, vllm_server: VLLMServer, scenario: str, kind: str, is_strict: bool
) -> None:
    kw, tools = request(scenario, kind, is_strict, vllm_server.model)
    choice = kw["tool_choice"]
    reply = client.chat.completions.create(**kw)
    answer = reply.choices[0]
    calls = [(c.function.name, c.function.arguments) for c in answer.message.tool_calls or []]
    assert answer.finish_reason != "length", answer
    check_calls(calls, tools, choice)
    if calls and kind != "named":
        assert answer.finish_reason == "tool_calls"


@MATRIX
def test_streamed_answers_hold_only_valid_calls_and_nothing_after_them(
    client: openai.OpenAI, vllm_server: VLLMServer, scenario: str, kind: str, is_strict: bool
) -> None:
    kw, tools = request(scenario, kind, is_strict, vllm_server.model)
    choice = kw.pop("tool_choice")
    events, finish, decision = stream(client, tool_choice=choice, **kw)
    calls = [value for what, value in events if what == "call"]
    assert finish in ("stop", "tool_calls"), (finish, decision, events)
    check_calls(calls, tools, choice)
    if calls:
        first = next(i for i, (what, _) in enumerate(events) if what == "call")
        assert all(what == "call" for what, _ in events[first:]), "text after a tool call"
    assert decision is not None and decision["verdict"] in ("ok", "fabricated")
    assert decision["engine_constraint"] == "structural_tag"
    assert decision["calls"] == len(calls)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", CHOICES)
def test_sampled_answers_hold_only_valid_calls(
    client: openai.OpenAI, vllm_server: VLLMServer, kind: str, seed: int
) -> None:
    message, tools = SCENARIOS[sorted(SCENARIOS)[seed % len(SCENARIOS)]]
    choice = tool_choice(kind, tools)
    events, finish, decision = stream(
        client, vllm_server.model, messages=[{"role": "user", "content": message}], tools=tools,
        tool_choice=choice, max_tokens=200, temperature=1.0, seed=seed,
    )
    calls = [value for what, value in events if what == "call"]
    if finish == "length":  # a call cut by max_tokens is never a call; nothing else may be missing
        assert decision is not None and decision["verdict"] in ("truncated", "ok")
        choice = "auto"
    check_calls(calls, tools, choice)


def test_a_call_cut_by_max_tokens_is_never_a_call(client: openai.OpenAI, vllm_server: VLLMServer) -> None:
    kw: dict[str, Any] = dict(model=vllm_server.model, tools=WEATHER, tool_choice="required", max_tokens=6,
                              messages=[{"role": "user", "content": "What's the weather in Paris?"}])
    reply = client.chat.completions.create(**kw)
    assert reply.choices[0].finish_reason == "length"
    assert not reply.choices[0].message.tool_calls
    assert "<tool_call>" not in (reply.choices[0].message.content or "")
    events, finish, decision = stream(client, **kw)
    assert finish == "length" and not [e for e in events if e[0] == "call"]
    assert decision is not None and (decision["verdict"], decision["action"]) == ("truncated", "withheld")


# Under tool_choice="auto" a client's own constraint is left alone: a regex makes the model write exactly a
# given text, which is how these tests make a real model produce a bad call on purpose.
def forced(text: str) -> dict[str, Any]:
    return {"structured_outputs": {"regex": re.escape(text)}}


BAD_ARGUMENTS = '<tool_call>\n{"name": "get_weather", "arguments": {"town": "Paris"}}\n</tool_call>'
UNKNOWN_TOOL = '<tool_call>\n{"name": "delete_files", "arguments": {"path": "/"}}\n</tool_call>'


@pytest.mark.parametrize(
    ("text", "code"), [(BAD_ARGUMENTS, "invalid_arguments"), (UNKNOWN_TOOL, "unknown_tool")]
)
def test_an_invalid_call_is_refused_not_returned(
    client: openai.OpenAI, vllm_server: VLLMServer, text: str, code: str
) -> None:
    kw: dict[str, Any] = dict(model=vllm_server.model, tools=WEATHER, max_tokens=100, extra_body=forced(text),
                              messages=[{"role": "user", "content": "What's the weather in Paris?"}])
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.chat.completions.create(**kw)
    body = refused.value.body
    assert isinstance(body, dict) and body.get("param") == code
    assert "toolguard refused the answer" in str(body.get("message"))
    with pytest.raises(openai.APIError) as ended:
        stream(client, **kw)
    assert isinstance(ended.value.body, dict) and ended.value.body.get("code") == 422
    assert ended.value.body.get("param") == code


def test_a_made_up_tool_result_is_cut(client: openai.OpenAI, vllm_server: VLLMServer) -> None:
    result = '\n<tool_response>\n{"temperature": 40}\n</tool_response>'
    fake = BAD_ARGUMENTS.replace('"town"', '"city"') + result
    kw: dict[str, Any] = dict(model=vllm_server.model, tools=WEATHER, max_tokens=100, extra_body=forced(fake),
                              messages=[{"role": "user", "content": "What's the weather in Paris?"}])
    answer = client.chat.completions.create(**kw).choices[0]
    assert [c.function.name for c in answer.message.tool_calls or []] == ["get_weather"]
    assert not answer.message.content
    events, _, decision = stream(client, **kw)
    assert events == [("call", ("get_weather", '{"city": "Paris"}'))]
    assert decision is not None and (decision["verdict"], decision["action"]) == ("fabricated", "cut")
    assert decision["engine_constraint"] == "client"


def test_keywords_xgrammar_drops_are_reported_and_the_request_still_served(
    client: openai.OpenAI, vllm_server: VLLMServer
) -> None:
    # vLLM's own JSON path answers 400 to uniqueItems; the tag leaves it out and validation keeps it
    tags = {"type": "function", "function": {"name": "tag_file", "parameters": {
        "type": "object", "required": ["path", "tags"], "additionalProperties": False,
        "properties": {"path": {"type": "string"},
                       "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}}}}
    events, _, decision = stream(
        client, vllm_server.model, tools=[tags], tool_choice="required", max_tokens=120, temperature=0,
        messages=[{"role": "user", "content": "Tag notes.txt as work"}],
    )
    assert decision is not None and "tag_file/properties/tags/uniqueItems" in decision["unenforced"]
    check_calls([v for w, v in events if w == "call"], [tags], "required")


def test_a_schema_toolguard_cannot_check_is_a_400_before_generation(
    client: openai.OpenAI, vllm_server: VLLMServer
) -> None:
    remote = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"$ref": "https://example.com/schema.json"}}}}}
    with pytest.raises(openai.BadRequestError, match="toolguard"):
        client.chat.completions.create(model=vllm_server.model, tools=[remote], max_tokens=10,
                                       messages=[{"role": "user", "content": "hi"}])


def test_requests_without_tools_pass_through(client: openai.OpenAI, vllm_server: VLLMServer) -> None:
    reply = client.chat.completions.create(model=vllm_server.model, max_tokens=30,
                                           messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content and not reply.choices[0].message.tool_calls


def test_the_plugin_loads_by_path_as_printed_by_the_cli(vllm_python: Path) -> None:
    path = subprocess.run([sys.executable, "-m", "toolguard", "vllm-plugin-path"], capture_output=True,
                          text=True, check=True, cwd=REPO).stdout.strip()
    code = ("import sys; from vllm.tool_parsers import ToolParserManager as M;"
            f"M.import_tool_parser({path!r}); print(M.get_tool_parser('toolguard').__name__)")
    out = subprocess.run([str(vllm_python), "-c", code], capture_output=True, text=True, check=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.stdout.strip().splitlines()[-1] == "ToolguardToolParser"


@pytest.mark.parametrize("stream", [False, True])
def test_the_responses_api_gets_the_same_guarantees(
    client: openai.OpenAI, vllm_server: VLLMServer, stream: bool
) -> None:
    tools = [{"type": "function", **t["function"]} for t in FORECAST_ONLY]  # Responses tools are flat
    kw: dict[str, Any] = dict(model=vllm_server.model, input="What's the weather in Paris?", tools=tools,
                              tool_choice="required", max_output_tokens=120, temperature=0)
    if stream:
        events = list(client.responses.create(stream=True, **kw))
        response = next(e.response for e in events if e.type == "response.completed")
    else:
        response = client.responses.create(**kw)
    calls = [(item.name, item.arguments) for item in response.output if item.type == "function_call"]
    check_calls(calls, FORECAST_ONLY, "required")  # asked for the weather, only get_forecast offered


def test_the_anthropic_messages_api_gets_the_same_guarantees(vllm_server: VLLMServer) -> None:
    import httpx

    tools = [{"name": t["function"]["name"], "description": t["function"]["description"],
              "input_schema": t["function"]["parameters"]} for t in FORECAST_ONLY]
    body = {"model": vllm_server.model, "max_tokens": 120, "temperature": 0, "tools": tools,
            "tool_choice": {"type": "any"},
            "messages": [{"role": "user", "content": "What's the weather in Paris?"}]}
    reply = httpx.post(vllm_server.base_url.removesuffix("/v1") + "/v1/messages", json=body, timeout=120)
    assert reply.status_code == 200, reply.text
    blocks = reply.json()["content"]
    calls = [(b["name"], json.dumps(b["input"])) for b in blocks if b["type"] == "tool_use"]
    check_calls(calls, FORECAST_ONLY, "required")


def test_bad_plugin_settings_stop_the_import_with_a_clear_error(vllm_python: Path) -> None:
    for name, value in (("TOOLGUARD_VLLM_FORMAT", "xml"), ("TOOLGUARD_VLLM_RUNAWAY", "always")):
        env = {**os.environ, "PYTHONPATH": str(REPO), name: value}
        out = subprocess.run([str(vllm_python), "-c", "import toolguard.vllm"], capture_output=True,
                             text=True, cwd=REPO, env=env, check=False)
        assert out.returncode != 0
        assert f"ConfigError: {name}={value!r}" in out.stderr
