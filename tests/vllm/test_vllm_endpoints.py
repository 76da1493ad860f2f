"""The proxy and ``wrap()`` in front of a real vLLM, with and without a tool parser (issue 14).

Two servers for the session (``conftest.py``: vLLM's own ``hermes`` parser, and no parser at all), the
embedded demo model, the official ``openai`` client. Through both doors, for ``tool_choice`` auto /
required / a named tool, streamed and not, with tools ``strict`` and not: every ``tool_calls`` entry names
an offered tool (the named one, if any) and its arguments validate against the tool's full schema; no text
follows a call; with the engine constraint (the whole-turn structural tag) every first attempt is valid. In
front of the server without a parser no request fails: the calls come back as ``tool_calls`` repaired from
the text. A tag vLLM refuses (a back-reference in a pattern) is dropped and the request still answered; a
schema with ``uniqueItems`` (which xgrammar would ignore) keeps it enforced by validation. Greedy decoding.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

import toolguard
from tests.proxy.proxy_server import ProxyServer
from tests.support.vllm_server import VLLMServer
from tests.vllm.test_vllm_plugin import SCENARIOS, check_calls, strict, tool_choice
from toolguard._repair import FABRICATION_MARKERS

pytestmark = pytest.mark.vllm

CASES = [
    (scenario, choice, stream, is_strict)
    for scenario in ("weather", "offered-only", "math")
    for choice in ("auto", "required", "named")
    for stream in (False, True)
    for is_strict in (False, True)
]
DOORS = ["proxy", "sdk"]


def _ids(case: tuple[Any, ...]) -> str:
    scenario, choice, stream, is_strict = case
    return f"{scenario}-{choice}-{'stream' if stream else 'plain'}-{'strict' if is_strict else 'loose'}"


@pytest.fixture(scope="module")
def hermes_proxy(vllm_hermes: VLLMServer) -> Iterator[ProxyServer]:
    with ProxyServer(upstream=vllm_hermes.base_url, read_timeout=120) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def bare_proxy(vllm_hermes: VLLMServer) -> Iterator[ProxyServer]:
    """In front of the same server, sending requests as they came (no engine constraint)."""
    with ProxyServer(upstream=vllm_hermes.base_url, read_timeout=120, engine_constraints="off") as proxy:
        yield proxy


@pytest.fixture(scope="module")
def no_parser_proxy(vllm_no_parser: VLLMServer) -> Iterator[ProxyServer]:
    with ProxyServer(upstream=vllm_no_parser.base_url, read_timeout=120) as proxy:
        yield proxy


def _client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=180)


def ask(client: Any, model: str, *, stream: bool, **kw: Any) -> tuple[str, list[tuple[str, str]], str | None]:
    """(content, calls, finish_reason) of one request, streamed or not, through any client."""
    if not stream:
        choice = client.chat.completions.create(model=model, **kw).choices[0]
        calls = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls or ()]
        return choice.message.content or "", calls, choice.finish_reason
    content, calls, finish = [], {}, None
    for chunk in client.chat.completions.create(model=model, stream=True, **kw):
        if not chunk.choices:
            continue
        c = chunk.choices[0]
        if c.delta.content:
            assert not calls, f"text after a call: {c.delta.content!r}"
            content.append(c.delta.content)
        for d in c.delta.tool_calls or ():
            entry = calls.setdefault(d.index, ["", ""])
            entry[0] += (d.function.name or "") if d.function else ""
            entry[1] += (d.function.arguments or "") if d.function else ""
        finish = c.finish_reason or finish
    return "".join(content), [(n, a) for n, a in (calls[i] for i in sorted(calls))], finish


def _check(content: str, calls: list[tuple[str, str]], finish: str | None, tools: Any, choice: Any) -> None:
    check_calls(calls, tools, choice)
    if calls:
        assert finish == "tool_calls", finish
        assert "<tool_call>" not in content and not FABRICATION_MARKERS.search(content), content


def _request(case: tuple[Any, ...]) -> tuple[dict[str, Any], bool]:
    scenario, choice, stream, is_strict = case
    message, tools = SCENARIOS[scenario]
    tools = strict(tools) if is_strict else tools
    kw = {"messages": [{"role": "user", "content": message}], "tools": tools, "max_tokens": 200}
    return {**kw, "tool_choice": tool_choice(choice, tools), "temperature": 0}, stream


def _door(door: str, proxy: ProxyServer, server: VLLMServer) -> Any:
    if door == "proxy":
        return _client(proxy.base_url)
    return toolguard.wrap(_client(server.base_url))


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_only_valid_calls_of_offered_tools(
    door: str, case: tuple[Any, ...], hermes_proxy: ProxyServer, vllm_hermes: VLLMServer
) -> None:
    kw, stream = _request(case)
    content, calls, finish = ask(
        _door(door, hermes_proxy, vllm_hermes), vllm_hermes.model, stream=stream, **kw
    )
    _check(content, calls, finish, kw["tools"], kw["tool_choice"])


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_a_server_without_a_tool_parser_is_served(
    door: str, case: tuple[Any, ...], no_parser_proxy: ProxyServer, vllm_no_parser: VLLMServer
) -> None:
    kw, stream = _request(case)
    client = _door(door, no_parser_proxy, vllm_no_parser)
    content, calls, finish = ask(client, vllm_no_parser.model, stream=stream, **kw)
    _check(content, calls, finish, kw["tools"], kw["tool_choice"])
    if kw["tool_choice"] != "auto":
        assert calls, "the client asked for a call and gets one, repaired from the text"


def _first_attempts(proxy: ProxyServer, model: str) -> tuple[int, int]:
    """(valid first attempts, requests) over the non-streamed matrix, read from x-toolguard-retries."""
    valid = total = 0
    with _client(proxy.base_url) as client:
        for case in CASES:
            kw, stream = _request(case)
            if stream:
                continue
            total += 1
            try:
                raw = client.chat.completions.with_raw_response.create(model=model, **kw)
            except openai.UnprocessableEntityError:  # no valid call even after the re-asks
                continue
            valid += raw.headers["x-toolguard-retries"] == "0"
    return valid, total


def test_first_attempt_validity_with_the_engine_constraint(
    hermes_proxy: ProxyServer, bare_proxy: ProxyServer, vllm_hermes: VLLMServer
) -> None:
    valid, total = _first_attempts(hermes_proxy, vllm_hermes.model)
    bare_valid, bare_total = _first_attempts(bare_proxy, vllm_hermes.model)
    print(f"first-attempt validity: with the tag {valid}/{total}, without {bare_valid}/{bare_total}")
    assert valid / total >= 0.99, (valid, total)
    assert valid >= bare_valid


def test_a_refused_constraint_never_fails_the_request(
    hermes_proxy: ProxyServer, vllm_hermes: VLLMServer
) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "spell",
                "description": "Spell a doubled letter.",
                "parameters": {
                    "type": "object",
                    "properties": {"pair": {"type": "string", "pattern": "^(a)\\1$"}},
                    "required": ["pair"],
                },
            },
        }
    ]
    messages = [{"role": "user", "content": "Spell a doubled letter a."}]
    with _client(hermes_proxy.base_url) as client:
        for _ in range(2):
            try:
                response = client.chat.completions.with_raw_response.create(
                    model=vllm_hermes.model, messages=messages, tools=tools, max_tokens=60, temperature=0
                ).http_response
            except openai.UnprocessableEntityError as exc:  # the model's own calls stayed invalid: not a 400
                response = exc.response
            assert response.headers["x-toolguard-engine-constraint"] == "refused"


def test_unique_items_stays_enforced_with_the_tag(hermes_proxy: ProxyServer, vllm_hermes: VLLMServer) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "tag_note",
                "description": "Tag a note with distinct labels.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "labels": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
                    },
                    "required": ["labels"],
                },
            },
        }
    ]
    messages = [{"role": "user", "content": "Tag my note as work and urgent."}]
    with _client(hermes_proxy.base_url) as client:
        try:
            raw = client.chat.completions.with_raw_response.create(
                model=vllm_hermes.model,
                messages=messages,
                tools=tools,
                tool_choice="required",
                max_tokens=100,
                temperature=0,
            )
        except openai.UnprocessableEntityError as exc:  # every attempt broke uniqueItems: never delivered
            assert exc.body["toolguard"]["keyword"] == "uniqueItems"
            return
    assert raw.headers["x-toolguard-engine-constraint"] == "structural_tag"
    for call in raw.parse().choices[0].message.tool_calls or ():
        labels = json.loads(call.function.arguments)["labels"]
        assert len(labels) == len(set(labels))
