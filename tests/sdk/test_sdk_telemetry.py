"""OpenTelemetry spans of the re-ask flow, read back with the SDK's in-memory exporter: one span per request,
one per attempt, each decision an event with the log line's fields (no argument value)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import toolguard
from tests.sdk.helpers import MESSAGES, WEATHER_TOOL
from tests.support import Reply, ScriptedUpstream

trace = pytest.importorskip("opentelemetry.trace")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, sdk_trace.TracerProvider):
        provider = sdk_trace.TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


BAD = Reply.call("get_weather", '{"city": "Paris", "unit": "kelvin"}')
GOOD = Reply.call("get_weather", '{"city": "Paris"}')


def test_a_reask_is_two_attempt_spans_under_one_request(
    client: Any, upstream: ScriptedUpstream, spans: InMemorySpanExporter
) -> None:
    upstream.script(BAD, GOOD)
    toolguard.wrap(client).chat.completions.create(model="m", messages=MESSAGES, tools=[WEATHER_TOOL])
    finished = spans.get_finished_spans()
    requests = [s for s in finished if s.name == "toolguard.request"]
    attempts = [s for s in finished if s.name == "toolguard.attempt"]
    assert len(requests) == 1 and len(attempts) == 2
    request = requests[0]
    assert all(a.parent is not None and a.parent.span_id == request.context.span_id for a in attempts)
    assert request.attributes["toolguard.door"] == "sdk"
    assert (request.attributes["toolguard.verdict"], request.attributes["toolguard.retries"]) == ("ok", 1)
    assert [a.attributes["toolguard.verdict"] for a in attempts] == ["rejected", "ok"]
    events = [e for a in attempts for e in a.events]
    assert [e.attributes["toolguard.action"] for e in events] == ["re-asked", "released"]
    assert events[0].attributes["toolguard.keyword"] == "enum"
    flat = repr([dict(e.attributes) for e in events])
    assert "kelvin" not in flat and "Paris" not in flat and "/unit" not in flat
    assert request.status.is_ok or request.status.status_code.name == "UNSET"


def test_a_give_up_ends_the_request_span_with_the_error(
    client: Any, upstream: ScriptedUpstream, spans: InMemorySpanExporter
) -> None:
    upstream.script(BAD, BAD, BAD)
    with pytest.raises(toolguard.ToolCallRejected):
        toolguard.wrap(client).chat.completions.create(model="m", messages=MESSAGES, tools=[WEATHER_TOOL])
    request = next(s for s in spans.get_finished_spans() if s.name == "toolguard.request")
    assert request.status.status_code.name == "ERROR" and request.attributes["toolguard.action"] == "gave-up"
    assert any(e.name == "exception" for e in request.events)
