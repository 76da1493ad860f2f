"""Thirty simple requests across the five shipped tool sets, written for the real-model tests and benchmark.

Each names the tool set offered, the call a person would expect (the tool and the arguments that must match;
others may be added by the model), and how to find the tool result's key value, which a good answer mentions.
``run_request`` plays one request through ``LocalGenerator`` the way an agent loop would: a call turn, the
call executed by the demo's fake backends (deterministic, no I/O), then an answer turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

TOOLS_DIR = Path(__file__).resolve().parents[2] / "toolguard" / "_models" / "demo" / "tools.json"


@dataclass(frozen=True, slots=True)
class Request:
    tool_set: str
    text: str
    tool: str
    arguments: dict[str, Any]
    key: Callable[[dict[str, Any]], str]


def _first(key: str, inner: str) -> Callable[[dict[str, Any]], str]:
    return lambda result: str(result[key][0][inner]) if result[key] else str(result.get("date", ""))


def _get(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda result: str(result[key])


REQUESTS: tuple[Request, ...] = (
    Request("weather", "What's the weather in Paris?", "get_weather", {"city": "Paris"}, _get("temperature")),
    Request(
        "weather", "How warm is it in Oslo right now?", "get_weather", {"city": "Oslo"}, _get("temperature")
    ),
    Request("weather", "Weather in Madrid, please.", "get_weather", {"city": "Madrid"}, _get("temperature")),
    Request(
        "weather",
        "What is the temperature in Cairo in fahrenheit?",
        "get_weather",
        {"city": "Cairo", "unit": "fahrenheit"},
        _get("temperature"),
    ),
    Request(
        "weather",
        "Give me a 3 day forecast for Tokyo",
        "get_forecast",
        {"city": "Tokyo", "days": 3},
        _first("days", "high"),
    ),
    Request(
        "weather",
        "Forecast for Berlin for the next 5 days",
        "get_forecast",
        {"city": "Berlin", "days": 5},
        _first("days", "high"),
    ),
    Request(
        "calendar",
        "What events do I have on 2026-03-04?",
        "list_events",
        {"date": "2026-03-04"},
        _first("events", "title"),
    ),
    Request(
        "calendar",
        "List my events for 2026-07-15.",
        "list_events",
        {"date": "2026-07-15"},
        _first("events", "title"),
    ),
    Request(
        "calendar",
        "Cancel the event evt_a1b2c3.",
        "cancel_event",
        {"event_id": "evt_a1b2c3"},
        _get("event_id"),
    ),
    Request(
        "calendar",
        "Please cancel event evt_407xyz",
        "cancel_event",
        {"event_id": "evt_407xyz"},
        _get("event_id"),
    ),
    Request(
        "calendar",
        "Schedule Standup at 2026-05-02T09:00:00Z for 15 minutes.",
        "create_event",
        {"title": "Standup", "duration_minutes": 15},
        lambda r: str(r["event"]["title"]),
    ),
    Request(
        "calendar",
        "Create an event called Dentist at 2026-06-10T14:30:00Z lasting 45 minutes.",
        "create_event",
        {"title": "Dentist", "duration_minutes": 45},
        lambda r: str(r["event"]["title"]),
    ),
    Request("files", "Read the file notes.txt", "read_file", {"path": "notes.txt"}, _get("content")),
    Request("files", "Show me what is in todo.md", "read_file", {"path": "todo.md"}, _get("content")),
    Request(
        "files",
        "Open config.yaml and tell me what it says.",
        "read_file",
        {"path": "config.yaml"},
        _get("content"),
    ),
    Request(
        "files",
        "List the files in the folder src",
        "list_dir",
        {"path": "src"},
        lambda r: str(r["entries"][0]),
    ),
    Request("files", "What files are in docs?", "list_dir", {"path": "docs"}, lambda r: str(r["entries"][0])),
    Request(
        "files",
        "Write 'hello' to the file greeting.txt",
        "write_file",
        {"path": "greeting.txt", "content": "hello"},
        _get("bytes_written"),
    ),
    Request(
        "http",
        "Fetch https://example.com/status",
        "http_get",
        {"url": "https://example.com/status"},
        _get("status"),
    ),
    Request(
        "http",
        "GET https://api.example.org/users",
        "http_get",
        {"url": "https://api.example.org/users"},
        _get("status"),
    ),
    Request(
        "http",
        "Download https://example.net/index.html",
        "http_get",
        {"url": "https://example.net/index.html"},
        _get("status"),
    ),
    Request(
        "http",
        "Check whether https://toolguard.dev is up.",
        "http_get",
        {"url": "https://toolguard.dev"},
        _get("status"),
    ),
    Request(
        "http",
        'POST {"name": "Ada"} to https://api.example.org/users',
        "http_post",
        {"url": "https://api.example.org/users", "json": {"name": "Ada"}},
        _get("status"),
    ),
    Request(
        "http",
        'Send {"ok": true} to https://hooks.example.com/ping with a POST request',
        "http_post",
        {"url": "https://hooks.example.com/ping"},
        _get("status"),
    ),
    Request("math", "What is 17 plus 25?", "add", {"a": 17, "b": 25}, _get("result")),
    Request("math", "Add 120 and 45.", "add", {"a": 120, "b": 45}, _get("result")),
    Request("math", "Evaluate 6 * 7", "evaluate", {"expression": "6 * 7"}, _get("result")),
    Request("math", "Compute (3 + 4) * 5", "evaluate", {"expression": "(3 + 4) * 5"}, _get("result")),
    Request("math", "What is the mean of 3, 5 and 10?", "statistics", {"values": [3, 5, 10]}, _get("mean")),
    Request("math", "Average of 2, 4, 6 and 8?", "statistics", {"values": [2, 4, 6, 8]}, _get("mean")),
)


def tool_sets() -> dict[str, list[dict[str, Any]]]:
    sets: dict[str, list[dict[str, Any]]] = json.loads(TOOLS_DIR.read_text())
    return sets


@dataclass(slots=True)
class Outcome:
    """What one request produced (see ``run_request``)."""

    request: Request
    finish_reason: str
    calls: list[dict[str, Any]]
    schema_errors: list[str] = field(default_factory=list)
    result: dict[str, Any] | None = None
    answer: str | None = None

    @property
    def right_tool(self) -> bool:
        return len(self.calls) == 1 and self.calls[0]["name"] == self.request.tool

    @property
    def right_arguments(self) -> bool:
        if not self.right_tool:
            return False
        got = self.calls[0]["arguments"]
        return isinstance(got, dict) and all(_same(got.get(k), v) for k, v in self.request.arguments.items())

    @property
    def mentions_key(self) -> bool:
        if self.result is None or "error" in self.result or self.answer is None or not self.right_tool:
            return False  # the key value is read the request's way, from the result of the tool it expects
        try:
            key = self.request.key(self.result)
        except (KeyError, IndexError, TypeError):  # the right tool, other options (statistics' measures)
            return False
        return key.lower() in self.answer.lower()


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, str) and isinstance(got, str):
        return got.strip().lower() == want.lower()
    return bool(got == want)


def _schema(tools: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    return next((t["function"]["parameters"] for t in tools if t["function"]["name"] == name), None)


def run_request(
    generator: Any, request: Request, *, tool_choice: str, max_new_tokens: int = 96, answer_tokens: int = 48
) -> Outcome:
    """A call turn under ``tool_choice``; if it called a tool, the call executed and an answer turn (auto)."""
    from toolguard.local._demo_tools import run_fake_tool

    tools = tool_sets()[request.tool_set]
    messages: list[dict[str, Any]] = [{"role": "user", "content": request.text}]
    reply = generator.chat(
        messages, tools=tools, tool_choice=tool_choice, temperature=0.0, max_new_tokens=max_new_tokens
    )
    choice = reply["choices"][0]
    raw_calls = choice["message"].get("tool_calls") or []
    calls = [
        {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
        for c in raw_calls
    ]
    outcome = Outcome(request, choice["finish_reason"], calls)
    for call in calls:
        schema = _schema(tools, call["name"])
        if schema is None:
            outcome.schema_errors.append(f"unknown tool {call['name']}")
            continue
        validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
        outcome.schema_errors += [e.message for e in validator.iter_errors(call["arguments"])]
    if not calls or outcome.schema_errors:
        outcome.answer = choice["message"].get("content")
        return outcome
    try:
        outcome.result = run_fake_tool(calls[0]["name"], calls[0]["arguments"])
    except Exception as exc:  # a valid call the backend refuses ("evaluate .* 7"): the model hears why
        outcome.result = {"error": f"{type(exc).__name__}: {exc}"}
    messages += [
        {"role": "assistant", "content": None, "tool_calls": raw_calls[:1]},
        {"role": "tool", "tool_call_id": raw_calls[0]["id"], "content": json.dumps(outcome.result)},
    ]
    answer = generator.chat(
        messages, tools=tools, tool_choice="auto", temperature=0.0, max_new_tokens=answer_tokens
    )
    outcome.answer = answer["choices"][0]["message"].get("content") or ""
    return outcome


def rates(outcomes: list[Outcome]) -> dict[str, float]:
    n = len(outcomes) or 1
    called = [o for o in outcomes if o.calls]
    return {
        "called": len(called) / n,
        "valid": sum(not o.schema_errors for o in called) / (len(called) or 1),
        "right_tool": sum(o.right_tool for o in outcomes) / n,
        "right_arguments": sum(o.right_arguments for o in outcomes) / n,
        "answer_mentions_result": sum(o.mentions_key for o in outcomes) / n,
    }
