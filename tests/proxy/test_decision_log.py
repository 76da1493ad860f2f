"""One log line per decision in the proxy (logfmt or JSON), no argument key or value in it by default, and the
final decision on the last chunk of a stream."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import openai
import pytest

from tests.support import ScriptedUpstream

from .conftest import client_for
from .helpers import MESSAGES, TOOLS, bad_schema, good
from .proxy_server import ProxyServer

# Everything the failing call carries that is an argument key or value (bad_schema: city=Paris, unit=kelvin).
PRIVATE = ("Paris", "kelvin", "city", "unit")


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    messages = [r.getMessage() for r in caplog.records if r.name == "toolguard.proxy"]
    return [m for m in messages if "decision" in m]


def test_a_reask_is_one_line_and_says_no_argument(
    hold: ProxyServer, upstream: ScriptedUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolguard")
    upstream.script(bad_schema(), good())
    with client_for(hold) as client:
        client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS)
    lines = _lines(caplog)
    assert [line.split()[0] for line in lines] == ["decision=re-asked", "decision=released"], lines
    assert "verdict=rejected" in lines[0] and "attempt=1" in lines[0] and "keyword=enum" in lines[0]
    assert "tool=get_weather" in lines[0] and "door=proxy" in lines[0] and "latency_ms=" in lines[0]
    assert "verdict=ok" in lines[1] and "retries=1" in lines[1]
    for line in lines:
        assert not any(word in line for word in PRIVATE), line


def test_a_give_up_is_one_line_and_says_no_argument(
    hold: ProxyServer, upstream: ScriptedUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolguard")
    upstream.script(bad_schema(), bad_schema(), bad_schema())
    with client_for(hold) as client, pytest.raises(openai.UnprocessableEntityError):
        client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS)
    lines = _lines(caplog)
    assert [line.split()[0] for line in lines] == ["decision=re-asked"] * 2 + ["decision=gave-up"]
    assert "verdict=rejected" in lines[-1] and "attempt=3" in lines[-1] and "retries=2" in lines[-1]
    warnings = [r for r in caplog.records if "decision=gave-up" in r.getMessage()]
    assert warnings and warnings[0].levelno == logging.WARNING
    for line in lines:
        assert not any(word in line for word in PRIVATE), line


def test_json_lines_and_arguments_on_request(
    make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolguard")
    proxy = make_proxy(upstream=upstream.base_url, log_format="json", log_arguments=True)
    upstream.script(bad_schema(), good())
    with client_for(proxy) as client:
        client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS)
    records = [json.loads(line) for line in _lines(caplog)]
    assert [r["action"] for r in records] == ["re-asked", "released"]
    assert records[0]["event"] == "toolguard.decision" and records[0]["path"] == "/unit"
    assert "'k' cannot become any of 'c', 'f'" in records[0]["message"]


@pytest.mark.parametrize("mode", ["hold", "pass"])
def test_the_last_chunk_carries_the_final_decision(
    make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream, mode: str
) -> None:
    proxy = make_proxy(upstream=upstream.base_url, mode=mode)
    upstream.script(bad_schema(), good()) if mode == "hold" else upstream.script(good())
    with client_for(proxy) as client:
        chunks = list(client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, stream=True))
    finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finishing) == 1
    summary: Any = (finishing[0].choices[0].delta.model_extra or {}).get("toolguard")
    retries = 1 if mode == "hold" else 0
    assert summary == {"verdict": "ok", "action": "released", "retries": retries, "attempts": retries + 1}
