"""AgentLoop / AsyncAgentLoop with a scripted model client (the fake sits at the model boundary only)."""

from __future__ import annotations

import asyncio
import json
import runpy
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from toolguard import (
    AgentLoop,
    AsyncAgentLoop,
    AsyncExecutor,
    Executor,
    RetryPolicy,
    ToolSet,
    UpstreamProtocolError,
    UsageError,
    tool,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def completion(
    content: str | None = None,
    calls: Sequence[tuple[str, Any]] | Sequence[tuple[str, Any, str | None]] = (),
    *,
    finish_reason: str | None = None,
    as_dict: bool = False,
) -> Any:
    """An OpenAI chat completion, as the SDK's pydantic object (default) or as a plain dict."""
    tool_calls = []
    for n, entry in enumerate(calls):
        name, arguments, call_id = (*entry, f"call_{n}") if len(entry) == 2 else entry
        function = {
            "name": name,
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        }
        tool_calls.append({"type": "function", "function": function} | ({"id": call_id} if call_id else {}))
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    data = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
            }
        ],
    }
    return data if as_dict else ChatCompletion.model_validate(data)


class ScriptedModel:
    """A fake OpenAI client: ``chat.completions.create`` returns canned replies and records each request."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.chat = self
        self.completions = self

    def create(self, **kwargs: Any) -> Any:
        self.requests.append(json.loads(json.dumps(kwargs)))  # a snapshot, as a server would see it
        if not self.replies:
            raise AssertionError("the scripted model ran out of replies")
        return self.replies.pop(0)


class AsyncScriptedModel(ScriptedModel):
    async def create(self, **kwargs: Any) -> Any:
        await asyncio.sleep(0)
        return super().create(**kwargs)


WEATHER = {"Paris": 21, "Rome": 27}


@tool(idempotent=True)
def get_weather(city: str) -> dict[str, Any]:
    """Current temperature for a city."""
    if city not in WEATHER:
        raise LookupError(f"no station for {city}")
    return {"city": city, "celsius": WEATHER[city]}


@tool
def send_email(to: str, body: str) -> str:
    """Send an email (not idempotent)."""
    return f"sent to {to}"


TOOLS = ToolSet([get_weather, send_email])


def test_calls_then_final_answer() -> None:
    model = ScriptedModel(
        completion(calls=[("get_weather", {"city": "Paris"})]),
        completion("It is 21 °C in Paris."),
    )
    result = AgentLoop(model, TOOLS, model="gpt-test").run("Weather in Paris?")
    assert result.stop_reason == "final" and result.turns == 2
    assert result.content == "It is 21 °C in Paris."
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.messages[2] == {
        "role": "tool",
        "tool_call_id": "call_0",
        "content": '{"city": "Paris", "celsius": 21}',
    }
    assert [r.status for r in result.records] == ["ok"]
    first = model.requests[0]
    assert first["model"] == "gpt-test" and first["tool_choice"] == "auto"
    assert first["tools"] == TOOLS.to_openai()
    assert model.requests[1]["messages"] == result.messages[:3]


def test_invalid_proposal_is_reasked_with_the_error() -> None:
    model = ScriptedModel(
        completion(calls=[("get_weather", {"town": "Paris"})]),
        completion(calls=[("get_weather", {"city": "Paris"})]),
        completion("21 °C."),
    )
    result = AgentLoop(model, TOOLS).run("Weather in Paris?")
    assert result.stop_reason == "final"
    assert [r.status for r in result.records] == ["invalid", "ok"]
    error_message = model.requests[1]["messages"][-1]
    assert error_message["role"] == "tool" and "'city' is a required property" in error_message["content"]
    # the scripted server numbers ids per reply, so "call_0" comes twice: the loop renames the second
    ids = [m["tool_call_id"] for m in result.messages if m["role"] == "tool"]
    assert ids[0] == "call_0" and ids[1].startswith("call_") and ids[1] != "call_0"
    assert any("reused the call id 'call_0'" in note for note in result.notes)


def test_invalid_proposals_are_bounded_per_tool() -> None:
    bad = [completion(calls=[("get_weather", '{"city": 1}')]) for _ in range(5)]
    result = AgentLoop(ScriptedModel(*bad), TOOLS, max_invalid_per_tool=2).run("Weather?")
    assert result.stop_reason == "invalid_calls" and result.turns == 3
    assert "get_weather" in result.detail and "1 is not of type 'string'" in result.detail


def test_identical_calls_in_a_loop_are_stopped() -> None:
    same = [completion(calls=[("get_weather", {"city": "Rome"})]) for _ in range(5)]
    result = AgentLoop(ScriptedModel(*same), TOOLS).run("Weather in Rome?")
    assert result.stop_reason == "repeated_calls" and result.turns == 3
    assert len(result.records) == 2  # run twice, refused the third time
    assert [c.name for c in result.unanswered] == ["get_weather"]
    assert "3rd time" in result.detail


def test_max_turns_ends_the_run_without_running_the_last_calls() -> None:
    sent: list[str] = []

    @tool
    def note(text: str) -> str:
        sent.append(text)
        return "ok"

    replies = [completion(calls=[("note", {"text": f"n{i}"})]) for i in range(4)]
    result = AgentLoop(ScriptedModel(*replies), [note], max_turns=3).run("go")
    assert result.stop_reason == "max_turns" and result.turns == 3
    assert sent == ["n0", "n1"] and [c.arguments for c in result.unanswered] == ['{"text": "n2"}']
    assert "max_turns=3" in result.detail


def test_text_calls_are_parsed_and_fabricated_results_ignored() -> None:
    fake = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>\n'
        '<tool_response>{"city": "Rome", "celsius": -40}</tool_response>\nIt is -40 in Rome.'
    )
    model = ScriptedModel(completion(fake, as_dict=True), completion("27 °C in Rome.", as_dict=True))
    result = AgentLoop(model, TOOLS, text_format="hermes").run("Weather in Rome?")
    assert result.stop_reason == "final"
    assistant = result.messages[1]
    assert assistant["content"] == "" and assistant["tool_calls"][0]["function"]["name"] == "get_weather"
    tool_message = result.messages[2]
    assert json.loads(tool_message["content"]) == {
        "city": "Rome",
        "celsius": 27,
    }  # from the record, not the fake
    assert tool_message["tool_call_id"] == assistant["tool_calls"][0]["id"] != ""
    assert "-40" not in json.dumps(model.requests[1]["messages"])
    assert any("fabricated" in note for note in result.notes)


def test_unterminated_text_call_stops_as_truncated() -> None:
    model = ScriptedModel(
        completion('<tool_call>{"name": "get_weather", "arguments": {"ci', finish_reason="length")
    )
    result = AgentLoop(model, TOOLS, text_format="hermes").run("Weather?")
    assert result.stop_reason == "truncated" and result.records == []


def test_unreadable_text_call_is_reasked() -> None:
    model = ScriptedModel(
        completion("<tool_call>get_weather(city='Rome')</tool_call>"),
        completion('<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>'),
        completion("27 °C."),
    )
    result = AgentLoop(model, TOOLS, text_format="hermes").run("Weather?")
    assert result.stop_reason == "final"
    reask = model.requests[1]["messages"][-1]
    assert reask["role"] == "user" and "could not be read" in reask["content"]


def test_length_and_content_filter_stops() -> None:
    assert (
        AgentLoop(ScriptedModel(completion("The answer is", finish_reason="length")), TOOLS)
        .run("q")
        .stop_reason
        == "truncated"
    )
    assert (
        AgentLoop(ScriptedModel(completion("", finish_reason="content_filter")), TOOLS).run("q").stop_reason
        == "content_filter"
    )


def test_tool_errors_reach_the_model_sanitised() -> None:
    @tool
    def db_query(sql: str) -> str:
        raise ConnectionError("could not connect to postgres://app:s3cr3t-pw@10.0.0.5/prod")

    model = ScriptedModel(
        completion(calls=[("db_query", {"sql": "select 1"})]), completion("The database is down.")
    )
    result = AgentLoop(model, Executor([db_query], retry=RetryPolicy(attempts=1))).run("q")
    assert result.records[0].status == "error"
    assert "s3cr3t-pw" not in json.dumps(model.requests[1])
    assert "postgres://[REDACTED]@10.0.0.5/prod" in model.requests[1]["messages"][-1]["content"]


def test_calls_without_ids_get_unique_ids() -> None:
    model = ScriptedModel(
        completion(
            calls=[("get_weather", {"city": "Paris"}, None), ("get_weather", {"city": "Rome"}, None)],
            as_dict=True,
        ),
        completion("ok", as_dict=True),
    )
    result = AgentLoop(model, TOOLS).run(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q"}]
    )
    ids = [c["id"] for c in result.messages[2]["tool_calls"]]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)
    assert [m["tool_call_id"] for m in result.messages[3:5]] == ids


def test_bad_replies_and_bad_options() -> None:
    with pytest.raises(UpstreamProtocolError):
        AgentLoop(ScriptedModel("not a completion"), TOOLS).run("q")
    with pytest.raises(UpstreamProtocolError, match="no choices"):
        AgentLoop(ScriptedModel({"choices": []}), TOOLS).run("q")
    with pytest.raises(UsageError):
        AgentLoop(ScriptedModel(), AsyncExecutor(TOOLS))  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        AgentLoop(ScriptedModel(), TOOLS, max_turns=0)


@pytest.mark.anyio
async def test_async_loop_runs_one_turns_calls_concurrently() -> None:
    @tool
    async def slow_lookup(key: str) -> str:
        await asyncio.sleep(0.3)
        return key.upper()

    model = AsyncScriptedModel(
        completion(
            calls=[("slow_lookup", {"key": "a"}), ("slow_lookup", {"key": "b"}), ("slow_lookup", {"k": 1})]
        ),
        completion("A and B."),
    )
    start = time.perf_counter()
    result = await AsyncAgentLoop(model, [slow_lookup]).run("look up a and b")
    assert time.perf_counter() - start < 0.55
    assert result.stop_reason == "final" and result.content == "A and B."
    assert [r.status for r in result.records] == ["ok", "ok", "invalid"]
    assert [m["content"] for m in result.messages[2:4]] == ["A", "B"]
    with pytest.raises(UsageError):
        AsyncAgentLoop(model, Executor([slow_lookup]))  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_async_loop_accepts_a_sync_client() -> None:
    model = ScriptedModel(completion(calls=[("get_weather", {"city": "Paris"})]), completion("21."))
    result = await AsyncAgentLoop(model, TOOLS, max_turns=2).run("q")
    assert result.stop_reason == "final" and result.records[0].result == {"city": "Paris", "celsius": 21}


def test_example_script_runs(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.argv", ["agent_loop.py"])
    runpy.run_path(str(Path(__file__).parent.parent / "examples" / "agent_loop.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "stop_reason=final turns=3 records=['invalid', 'ok']" in out
    assert '"temperature": 21' in out and "35" not in out
