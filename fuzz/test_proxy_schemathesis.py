"""Schemathesis against the proxy's own OpenAPI description, the one it serves at ``GET /openapi.json``.

The real proxy runs under uvicorn (``ProxyServer``) in front of the fake ``ScriptedUpstream``. Schemathesis
generates requests for every operation of the description, valid ones and ones that break the request schema
(both generation modes), and sends them to the live proxy over HTTP with a client timeout.

The upstream is healthy and answers at once (``_replies``: a text, a call of the request's first tool, a
repetition loop or a call cut by the token limit), with a reply scripted for every attempt the policy allows.
So what the client sees is the proxy's own doing, and each response is held to:

- the description: its status, content type, headers and body as documented (schemathesis's conformance
  checks; its other checks judge choices the proxy makes on purpose: it forwards what it does not read, and
  ``/healthz`` answers any method);
- no 5xx other than the documented upstream errors (502/504 with the proxy's upstream codes): a 500
  ``proxy_error`` is an unhandled exception;
- errors in the proxy's own shape (``ProxyError`` or ``ViolationError``; ``AnthropicError`` on
  ``/v1/messages``): a healthy upstream relays none;
- one terminal response: a whole JSON body, or an event stream that ends with exactly one ``[DONE]``, nothing
  after an error event (on ``/v1/messages`` and ``/v1/responses``: exactly one ending event, last). The
  proxy's deadline and upstream timeouts are longer than the client's, so a hang shows up as a client timeout
  or a stream cut short, never as a documented 504.

The CI budget is small and derandomized (the examples and fuzzing phases, ``MAX_EXAMPLES`` cases per
operation). Look harder locally with ``TOOLGUARD_SCHEMATHESIS_EXAMPLES=500``,
``TOOLGUARD_SCHEMATHESIS_PHASES=examples,coverage,fuzzing`` (the coverage phase adds a few hundred boundary
and schema-breaking bodies) and ``TOOLGUARD_SCHEMATHESIS_SEED=N`` for a random run (fuzz/README.md).
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import os
import zlib
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import pytest
import requests
import schemathesis
from schemathesis import Case, CheckContext, Response

from tests.proxy.proxy_server import ProxyServer
from tests.support import Reply, ScriptedUpstream
from toolguard._policy import DEFAULT_POLICY

#: Generated cases per operation (fuzzing phase), unless ``TOOLGUARD_SCHEMATHESIS_EXAMPLES`` says otherwise.
MAX_EXAMPLES = int(os.environ.get("TOOLGUARD_SCHEMATHESIS_EXAMPLES", "60"))
PHASES = os.environ.get("TOOLGUARD_SCHEMATHESIS_PHASES", "examples,fuzzing").split(",")
#: A seed for a random (still reproducible) run; without one the run is derandomized, the same every time.
SEED = os.environ.get("TOOLGUARD_SCHEMATHESIS_SEED")
#: Seconds the client waits for a whole response (an event stream included) before calling it a hang.
CLIENT_TIMEOUT = 10.0
#: The proxy waits longer than the client, so a hang is never hidden behind a documented 504.
PROXY_TIMEOUT = 60.0
#: One copy of the upstream's repetition loop.
LOOP = "Let me check that for you once more. "
#: 5xx statuses the description documents for a failing upstream, with the proxy's error codes for them.
UPSTREAM_5XX = {502: {"upstream_error"}, 504: {"upstream_timeout", "deadline"}}

# The description the proxy serves (``live`` checks it serves these very bytes). It is loaded at import, not
# through ``schemathesis.pytest.from_fixture``: that loader reads ``Node._nodeid``, which pytest 9 removed.
DESCRIPTION = (importlib.resources.files("toolguard.proxy") / "openapi.json").read_bytes()
DOCUMENT = json.loads(DESCRIPTION)


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    """A validator for one component schema of the description (``$ref``s resolved in the document)."""
    return jsonschema.Draft202012Validator({**DOCUMENT, "$ref": f"#/components/schemas/{name}"})


def _own_error(body: Any, path: str = "/v1/chat/completions") -> None:
    """An error the proxy wrote is a ``ProxyError`` or a ``ViolationError`` (an ``AnthropicError`` on
    ``/v1/messages``), never a relayed body."""
    if path == "/v1/messages":
        if not _validator("AnthropicError").is_valid(body):
            raise AssertionError(f"an error body not in Anthropic's shape: {body!r}")
        return
    if not (_validator("ProxyError").is_valid(body) or _validator("ViolationError").is_valid(body)):
        raise AssertionError(f"an error body not in the proxy's own shape: {body!r}")


def _path(case: Case[Any]) -> str:
    return str(case.operation.path)


def _events(text: str) -> list[str]:
    """The ``data`` of each event of an event stream."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if lines:
            out.append("\n".join(lines))
    return out


def _content_type(response: Response) -> str:
    return (response.headers.get("content-type") or [""])[0]


@schemathesis.check
def only_documented_server_errors(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
    """No 5xx but the documented upstream errors (a 500 ``proxy_error`` is an unhandled exception)."""
    if response.status_code >= 500:
        codes = UPSTREAM_5XX.get(response.status_code, set())
        body = json.loads(response.content) if _content_type(response).startswith("application/json") else {}
        code = body.get("error", {}).get("code") if isinstance(body, dict) else None
        assert code in codes, f"undocumented server error {response.status_code}: {response.text[:500]}"
    return None


@schemathesis.check
def errors_in_the_proxys_shape(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
    """Behind a healthy upstream every error is the proxy's own: OpenAI's shape, a documented code."""
    if response.status_code >= 400:
        _own_error(json.loads(response.content), _path(case))
    return None


@schemathesis.check
def one_terminal_response(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
    """A whole JSON body, or a stream that ends with one ``[DONE]``, last, and nothing after an error."""
    content_type = _content_type(response)
    if content_type.startswith("application/json"):
        json.loads(response.content)  # a body cut short does not parse
    if not content_type.startswith("text/event-stream"):
        return None
    assert not response.stream_cut_short, "the event stream did not end within the client's timeout"
    events = _events(response.text)
    path = _path(case)
    if path != "/v1/chat/completions":
        _one_protocol_ending(path, [json.loads(data) for data in events])
        return None
    assert events and events[-1] == "[DONE]", f"the stream does not end with [DONE]: {events[-3:]!r}"
    assert events.count("[DONE]") == 1, "more than one [DONE]"
    for i, data in enumerate(events[:-1]):
        event = json.loads(data)
        if isinstance(event, dict) and "error" in event:
            assert i == len(events) - 2, "events after an error event"
            _own_error(event)
    return None


#: The events that end a stream of each protocol, and the ones that end it with an error.
ENDINGS = {
    "/v1/messages": ({"message_stop"}, {"error"}),
    "/v1/responses": ({"response.completed", "response.incomplete"}, {"response.failed", "error"}),
}


def _one_protocol_ending(path: str, events: list[Any]) -> None:
    """A Messages or Responses stream: exactly one ending event, last (a clean one or an error)."""
    clean, failed = ENDINGS[path]
    kinds = [event.get("type") if isinstance(event, dict) else None for event in events]
    endings = [i for i, kind in enumerate(kinds) if kind in clean | failed]
    assert endings == [len(events) - 1], f"not one ending event, last: {kinds[-3:]!r}"
    if kinds[-1] == "error" and path == "/v1/messages":
        _own_error(events[-1], path)


CHECKS = [
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    only_documented_server_errors.__name__,
    errors_in_the_proxys_shape.__name__,
    one_terminal_response.__name__,
]

schema = schemathesis.openapi.from_dict(DOCUMENT)
schema.config.update(request_timeout=CLIENT_TIMEOUT)
schema.config.phases.update(phases=PHASES)
schema.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=SEED is None, database="none")
if SEED is not None:
    schema.config.seed = int(SEED)
schema.config.checks.update(included_check_names=CHECKS)


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[ScriptedUpstream, ProxyServer]]:
    with (
        ScriptedUpstream() as upstream,
        ProxyServer(
            upstream=upstream.base_url,
            deadline=PROXY_TIMEOUT,
            read_timeout=PROXY_TIMEOUT,
            backoff_initial=0.01,
            backoff_max=0.05,
        ) as proxy,
    ):
        served = httpx.get(proxy.root + "/openapi.json", timeout=CLIENT_TIMEOUT)
        assert served.status_code == 200 and served.content == DESCRIPTION, "the proxy serves another text"
        yield upstream, proxy


def _replies(case: Case[Any]) -> list[Reply]:
    """The upstream's answer to every attempt of ``case``, one of four kinds picked by a digest of the body:
    a text, a call of the request's first named tool with ``{}`` as arguments (judged against whatever schema
    was generated), a repetition loop, a call cut by the token limit. Without a named tool, a call becomes a
    text. So the proxy's re-ask, runaway and truncation retries all run on generated requests."""
    body = case.body if isinstance(case.body, dict) else {}
    tools = body.get("tools")
    first = tools[0] if isinstance(tools, list) and tools else None
    fn = first.get("function", first) if isinstance(first, dict) else None  # Messages/Responses: flat tools
    name = fn.get("name") if isinstance(fn, dict) else None
    kind = zlib.crc32(repr(case.body).encode("utf-8", "replace")) % 4
    if kind == 2:
        reply = Reply.text(*[LOOP] * 40)
    elif not (isinstance(name, str) and name):
        reply = Reply.text("All good.")
    elif kind == 1:
        reply = Reply.call(name, "{}")
    elif kind == 3:
        reply = Reply.call(name, '{"', finish_reason="length")
    else:
        reply = Reply.text("All good.")
    return [reply] * DEFAULT_POLICY.max_attempts


@schema.parametrize()
def test_proxy_conforms_to_its_description(
    case: Case[Any], live: tuple[ScriptedUpstream, ProxyServer]
) -> None:
    upstream, proxy = live
    upstream.reset()
    upstream.script(*_replies(case))
    case.call_and_validate(base_url=proxy.root, timeout=CLIENT_TIMEOUT)


def _response(status: int, body: bytes, content_type: str = "application/json") -> Response:
    return Response(
        status_code=status,
        headers={"content-type": [content_type]},
        content=body,
        request=requests.Request("POST", "http://127.0.0.1/v1/chat/completions").prepare(),
        elapsed=0.1,
        verify=True,
    )


CHUNK = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}\n\n'
DONE = b"data: [DONE]\n\n"


@pytest.mark.parametrize(
    ("check", "status", "body", "content_type"),
    [
        (only_documented_server_errors, 500, b'{"error":{"code":"proxy_error"}}', "application/json"),
        (only_documented_server_errors, 502, b"Bad Gateway", "text/plain"),
        (only_documented_server_errors, 504, b'{"error":{"code":"upstream_error"}}', "application/json"),
        (errors_in_the_proxys_shape, 400, b'{"error":{"detail":"the upstream said so"}}', "application/json"),
        (one_terminal_response, 200, b'{"choices": [', "application/json"),
        (one_terminal_response, 200, CHUNK, "text/event-stream"),
        (one_terminal_response, 200, CHUNK + DONE + DONE, "text/event-stream"),
        (one_terminal_response, 200, b'data: {"error":{}}\n\n' + CHUNK + DONE, "text/event-stream"),
    ],
)
def test_the_checks_catch_what_they_guard(check: Any, status: int, body: bytes, content_type: str) -> None:
    """Each custom check fails on a hand-made bad response, so a clean run means the proxy passed."""
    case = schema["/v1/chat/completions"]["POST"].Case(body={"messages": [{"role": "user"}]})
    with pytest.raises((AssertionError, ValueError)):
        check(None, _response(status, body, content_type), case)


def test_the_checks_pass_good_responses() -> None:
    case = schema["/v1/chat/completions"]["POST"].Case(body={"messages": [{"role": "user"}]})
    error = b'{"error":{"message":"x","type":"upstream_error","param":null,"code":"upstream_error"}}'
    ctx: Any = None  # the checks do not read it
    for check in (only_documented_server_errors, errors_in_the_proxys_shape, one_terminal_response):
        check(ctx, _response(502, error), case)
    one_terminal_response(ctx, _response(200, CHUNK + DONE, "text/event-stream"), case)
