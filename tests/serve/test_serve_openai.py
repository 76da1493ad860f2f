"""``toolguard serve`` driven by the official openai SDK: stream and non-stream, tools, tool_choice variants,
truthful finish reasons, request errors, one generation at a time, and the proxy in front of it."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import jsonschema
import pytest

pytestmark = pytest.mark.local
pytest.importorskip("torch")
openai = pytest.importorskip("openai")


@pytest.fixture(scope="module")
def client(served: str) -> Any:
    return openai.OpenAI(base_url=served, api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def weather(example_tools: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return example_tools["weather"]


def _schema(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(t["function"]["parameters"] for t in tools if t["function"]["name"] == name)


def test_health_and_models(served: str, client: Any) -> None:
    health = httpx.get(served.removesuffix("/v1") + "/health").json()
    assert health == {"status": "ok", "model": "toolguard-demo", "busy": False}
    assert [m.id for m in client.models.list().data] == ["toolguard-demo"]
    assert client.models.retrieve("toolguard-demo").owned_by == "toolguard"


def test_healthz_answers_like_health(served: str) -> None:
    base = served.removesuffix("/v1")
    assert httpx.get(base + "/healthz").json() == httpx.get(base + "/health").json()


def test_with_check_every_shipped_tool_set_is_served(
    generator: Any, example_tools: dict[str, list[dict[str, Any]]], server_thread: Any
) -> None:
    """``--unenforced check`` (serve's default): calendar and math carry ``uniqueItems``, which the grammar
    cannot enforce; they are served, and a call breaking such a keyword is listed under toolguard.invalid."""
    from toolguard.local._generator import LocalGenerator
    from toolguard.local._serve import create_serve_app

    checking = LocalGenerator(
        generator.model, generator.tokenizer, model_name="toolguard-demo", unenforced="check"
    )
    with server_thread(create_serve_app(checking)) as server:
        for name, tools in example_tools.items():
            reply = httpx.post(
                server.url + "/v1/chat/completions",
                timeout=60,
                json={
                    "model": "toolguard-demo",
                    "messages": [{"role": "user", "content": f"use the {name} tools"}],
                    "tools": tools,
                    "tool_choice": "required",
                    "temperature": 0,
                    "max_tokens": 96,
                },
            )
            assert reply.status_code == 200, (name, reply.text)
            body = reply.json()
            choice = body["choices"][0]
            if choice["finish_reason"] != "tool_calls":  # the tiny model may run out of tokens in a long call
                assert choice["finish_reason"] == "length", (name, body)
                continue
            invalid = body["toolguard"]["invalid"]
            for call in choice["message"]["tool_calls"]:
                errors = list(
                    jsonschema.Draft202012Validator(_schema(tools, call["function"]["name"])).iter_errors(
                        json.loads(call["function"]["arguments"])
                    )
                )
                assert not errors or invalid, (name, call, errors)


def test_required_call_picks_the_sensible_tool(client: Any, weather: list[dict[str, Any]]) -> None:
    reply = client.chat.completions.create(
        model="toolguard-demo",
        messages=[{"role": "user", "content": "What's the weather in Paris?"}],
        tools=weather,
        tool_choice="required",
        temperature=0,
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert reply.usage.completion_tokens > 0


def test_named_tool_choice_is_enforced(client: Any, weather: list[dict[str, Any]]) -> None:
    reply = client.chat.completions.create(
        model="toolguard-demo",
        messages=[{"role": "user", "content": "weather in Oslo"}],
        tools=weather,
        tool_choice={"type": "function", "function": {"name": "get_forecast"}},
        temperature=0,
    )
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "get_forecast"
    jsonschema.validate(json.loads(call.function.arguments), _schema(weather, "get_forecast"))


def test_sampling_at_temperature_one_still_gives_valid_calls(
    client: Any, weather: list[dict[str, Any]]
) -> None:
    for seed in range(3):
        reply = client.chat.completions.create(
            model="toolguard-demo",
            messages=[{"role": "user", "content": "forecast for Lima"}],
            tools=weather,
            tool_choice="required",
            temperature=1.0,
            seed=seed,
        )
        choice = reply.choices[0]
        assert choice.finish_reason in ("tool_calls", "length", "repetition")
        for call in choice.message.tool_calls or []:
            jsonschema.validate(json.loads(call.function.arguments), _schema(weather, call.function.name))


def test_tool_choice_none_answers_in_text(client: Any, weather: list[dict[str, Any]]) -> None:
    reply = client.chat.completions.create(
        model="toolguard-demo",
        messages=[{"role": "user", "content": "What's the weather in Paris?"}],
        tools=weather,
        tool_choice="none",
        temperature=0,
        max_tokens=40,
    )
    choice = reply.choices[0]
    assert not choice.message.tool_calls
    assert "<tool_call>" not in (choice.message.content or "")
    assert choice.finish_reason in ("stop", "length", "repetition")


def test_auto_small_talk_without_tools(client: Any) -> None:
    reply = client.chat.completions.create(
        model="toolguard-demo",
        messages=[{"role": "user", "content": "hi"}],
        temperature=0,
        max_tokens=40,
    )
    assert reply.choices[0].finish_reason == "stop"
    assert reply.choices[0].message.content


def test_cut_by_max_tokens_is_length_never_a_call(client: Any, weather: list[dict[str, Any]]) -> None:
    reply = client.chat.completions.create(
        model="toolguard-demo",
        messages=[{"role": "user", "content": "What's the weather in Paris?"}],
        tools=weather,
        tool_choice="required",
        temperature=0,
        max_tokens=3,
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "length"
    assert not choice.message.tool_calls


def test_stream_tool_call(client: Any, weather: list[dict[str, Any]]) -> None:
    stream = client.chat.completions.create(
        model="toolguard-demo",
        messages=[{"role": "user", "content": "What's the weather in Tokyo?"}],
        tools=weather,
        tool_choice="auto",
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    name, arguments, finish, usage = "", "", None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or []:
                name += delta.function.name or ""
                arguments += delta.function.arguments or ""
            finish = choice.finish_reason or finish
    assert finish == "tool_calls"
    assert name == "get_weather"
    assert json.loads(arguments) == {"city": "Tokyo"}
    assert usage is not None and usage.completion_tokens > 0


def test_stream_text(client: Any) -> None:
    stream = client.chat.completions.create(
        model="toolguard-demo",
        messages=[{"role": "user", "content": "What can you do?"}],
        temperature=0,
        max_tokens=60,
        stream=True,
    )
    text, finishes = "", []
    for chunk in stream:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            if choice.finish_reason:
                finishes.append(choice.finish_reason)
    assert text.strip()
    assert finishes in (["stop"], ["length"])


def test_unknown_tool_choice_is_a_400(client: Any, weather: list[dict[str, Any]]) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="toolguard-demo",
            messages=[{"role": "user", "content": "hi"}],
            tools=weather,
            tool_choice={"type": "function", "function": {"name": "launch_rocket"}},
        )
    assert "launch_rocket" in str(info.value)
    assert info.value.code == "invalid_request" and info.value.param == "tool_choice"


@pytest.mark.parametrize(("kw", "says"), [({"tool_choice": "sometimes"}, "sometimes"),
                                          ({"tool_choice": "required", "tools": None}, "at least one tool")])
def test_a_tool_choice_the_tools_cannot_keep_is_a_400(
    client: Any, weather: list[dict[str, Any]], kw: dict[str, Any], says: str
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="toolguard-demo", messages=[{"role": "user", "content": "hi"}], **{"tools": weather, **kw}
        )
    assert says in str(info.value) and info.value.code == "invalid_request"


def test_keyword_the_grammar_cannot_enforce_is_refused(client: Any, example_tools: dict[str, Any]) -> None:
    with pytest.raises(openai.BadRequestError) as info:  # create_event's attendees carry uniqueItems
        client.chat.completions.create(
            model="toolguard-demo",
            messages=[{"role": "user", "content": "schedule lunch"}],
            tools=example_tools["calendar"],
            stream=True,
        )
    assert "uniqueItems" in str(info.value)
    assert info.value.code == "unsupported_keyword"  # snake_case, as every toolguard error code


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "user", "content": "hi"}], "n": 2}, "n"),
        ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}, "max_tokens"),
        ({"messages": [{"role": "user", "content": "hi"}], "temperature": 9}, "temperature"),
        ({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]}, "tools"),
        ({"messages": [{"role": "user", "content": "hi"}], "stop": ["\n"]}, "stop"),
    ],
)
def test_invalid_bodies_are_openai_style_400s(served: str, body: dict[str, Any], param: str) -> None:
    response = httpx.post(served + "/chat/completions", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param


def test_one_generation_at_a_time(client: Any, weather: list[dict[str, Any]]) -> None:
    results: list[Any] = []

    def ask(city: str) -> None:
        reply = client.chat.completions.create(
            model="toolguard-demo",
            messages=[{"role": "user", "content": f"weather in {city}"}],
            tools=weather,
            tool_choice="required",
            temperature=0,
        )
        results.append(reply.choices[0].message.tool_calls[0].function)

    threads = [threading.Thread(target=ask, args=(city,)) for city in ("Paris", "London", "Rome")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(json.loads(f.arguments)["city"] for f in results) == ["London", "Paris", "Rome"]


def test_behind_the_toolguard_proxy(served: str, weather: list[dict[str, Any]], server_thread: Any) -> None:
    from toolguard.proxy import create_app

    with server_thread(create_app(upstream=served)) as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        reply = client.chat.completions.create(
            model="toolguard-demo",
            messages=[{"role": "user", "content": "What's the weather in Paris?"}],
            tools=weather,
            tool_choice="required",
            temperature=0,
        )
        (call,) = reply.choices[0].message.tool_calls
        assert call.function.name == "get_weather"
        assert json.loads(call.function.arguments) == {"city": "Paris"}
        stream = client.chat.completions.create(
            model="toolguard-demo",
            messages=[{"role": "user", "content": "What's the weather in Rome?"}],
            tools=weather,
            temperature=0,
            stream=True,
        )
        finishes = [c.choices[0].finish_reason for c in stream if c.choices and c.choices[0].finish_reason]
        assert finishes == ["tool_calls"]


def test_each_turn_is_one_decision_line_and_a_stream_ends_with_it(
    client: Any, weather: list[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="toolguard.serve")
    stream = client.chat.completions.create(
        model="toolguard-demo", messages=[{"role": "user", "content": "What's the weather in Paris?"}],
        tools=weather, tool_choice="required", temperature=0, stream=True,
    )
    finishing = [c for c in stream if c.choices and c.choices[0].finish_reason]
    assert len(finishing) == 1
    summary = (finishing[0].choices[0].delta.model_extra or {}).get("toolguard")
    assert summary == {"verdict": "ok", "action": "released", "retries": 0, "attempts": 1}
    lines = [r.getMessage() for r in caplog.records if r.name == "toolguard.serve"]
    assert len(lines) == 1 and lines[0].startswith("decision=released door=serve attempt=1")
    assert "finish_reason=tool_calls" in lines[0] and "Paris" not in lines[0]
