"""``GET /openapi.json``: the proxy describes what it serves, and the description is valid and truthful.

The fuzz suite (fuzz/test_proxy_schemathesis.py) drives the description with generated requests behind a
healthy upstream; here the statuses a healthy upstream never causes (a token refused, a body too large, a
violation, an upstream down, slow or answering an error) are provoked one by one, and schemathesis checks
each answer against the description: status, content type, headers and body.
"""

from __future__ import annotations

import importlib.resources
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import schemathesis

import toolguard
from tests.support import Reply, ScriptedUpstream
from toolguard.proxy import create_app

from .helpers import MESSAGES, TOOLS, bad_schema, good
from .proxy_server import ProxyServer

DESCRIPTION = (importlib.resources.files("toolguard.proxy") / "openapi.json").read_bytes()
CONFORMANCE = [
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
]


def _schema(proxy: ProxyServer) -> Any:
    """The description as the live proxy serves it, loaded by schemathesis (which validates it)."""
    schema = schemathesis.openapi.from_url(proxy.root + "/openapi.json", timeout=10)
    schema.config.checks.update(included_check_names=CONFORMANCE)
    return schema


def _conforms(proxy: ProxyServer, method: str, path: str, status: int, **case: Any) -> Any:
    """Send one request described by the document; assert its status; check the answer conforms."""
    operation = _schema(proxy)[path][method]
    made = operation.Case(**case)
    response = made.call(base_url=proxy.root, timeout=20)
    assert response.status_code == status, response.text
    made.validate_response(response)  # raises a FailureGroup naming every mismatch
    return response


@pytest.mark.anyio
async def test_served_in_process_without_an_upstream() -> None:
    app = create_app(upstream="http://127.0.0.1:1/v1")  # nothing listens there: a call upstream would fail
    async with app, httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        r = await http.get("http://proxy.test/openapi.json")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.content == DESCRIPTION


def test_it_is_valid_openapi_31_naming_every_route() -> None:
    document = json.loads(DESCRIPTION)
    schema = schemathesis.openapi.from_dict(document)
    schema.validate()  # against the OpenAPI 3.1 metaschema; raises on any violation
    assert document["openapi"].startswith("3.1.")
    assert document["info"]["version"] == toolguard.__version__
    routes = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    assert routes == {
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/messages"),
        ("POST", "/v1/responses"),
        ("GET", "/v1/models"),
        ("GET", "/healthz"),
        ("GET", "/metrics"),
        ("GET", "/openapi.json"),
    }
    for method, path in routes:
        assert schema[path][method].path == path  # each operation loads (its $refs resolve)


def test_the_validation_has_teeth() -> None:
    document = json.loads(DESCRIPTION)
    media = document["paths"]["/healthz"]["get"]["responses"]["200"]["content"]["application/json"]
    media["description"] = "x"  # a media type object has no description in OpenAPI 3.1
    with pytest.raises(Exception, match="description"):
        schemathesis.openapi.from_dict(document).validate()


def test_the_local_routes_conform(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    for path in ("/healthz", "/metrics", "/openapi.json", "/v1/models"):
        _conforms(hold, "GET", path, 200)
    assert [r.path for r in upstream.requests] == ["/v1/models"]  # only the pass-through went upstream


def test_completions_conform_streamed_or_not(passing: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good(), good(), good(), bad_schema())
    body = {"model": "m", "messages": MESSAGES, "tools": TOOLS}
    r = _conforms(passing, "POST", "/v1/chat/completions", 200, body=body)
    assert r.json()["choices"][0]["message"]["tool_calls"]
    r = _conforms(passing, "POST", "/v1/chat/completions", 200, body={**body, "stream": True})
    assert r.text.endswith("data: [DONE]\n\n")
    # pass mode, usage asked: a usage chunk, then a violation after forwarded fragments: an error event
    streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
    _conforms(passing, "POST", "/v1/chat/completions", 200, body=streamed)
    r = _conforms(passing, "POST", "/v1/chat/completions", 200, body={**body, "stream": True})
    assert '"code":"rejected"' in r.text


def test_a_violation_after_every_retry_conforms(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(bad_schema(), bad_schema(), bad_schema())
    r = _conforms(hold, "POST", "/v1/chat/completions", 422, body={"messages": MESSAGES, "tools": TOOLS})
    assert r.json()["error"]["toolguard"]["kind"] == "rejected"
    assert r.headers["x-toolguard-verdict"] == ["rejected"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"messages": []}, "invalid_request"),
        ({"messages": MESSAGES, "n": 2}, "invalid_request"),
        (
            {
                "messages": MESSAGES,
                "tools": [{"type": "function", "function": {"name": "f", "parameters": 1}}],
            },
            "invalid_tool_schema",
        ),
    ],
)
def test_refusals_conform(body: Any, code: str, hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    r = _conforms(hold, "POST", "/v1/chat/completions", 400, body=body)
    assert r.json()["error"]["code"] == code
    assert upstream.requests == []


def test_refusals_before_reading_conform(upstream: ScriptedUpstream, make_proxy: Callable[..., Any]) -> None:
    proxy = make_proxy(upstream=upstream.base_url, auth_token="secret", max_body_bytes=4096)
    r = _conforms(proxy, "POST", "/v1/chat/completions", 401, body={"messages": MESSAGES})
    assert r.headers["www-authenticate"] == ["Bearer"]
    _conforms(proxy, "GET", "/v1/models", 401)
    big = {"messages": [{"role": "user", "content": "x" * 5000}]}
    headers = {"authorization": "Bearer secret"}
    r = _conforms(proxy, "POST", "/v1/chat/completions", 413, body=big, headers=headers)
    assert r.json()["error"]["code"] == "body_too_large"
    assert upstream.requests == []


def test_upstream_failures_conform(upstream: ScriptedUpstream, make_proxy: Callable[..., Any]) -> None:
    down = make_proxy(upstream="http://127.0.0.1:1/v1", max_attempts=1, upstream_retries=0)
    body = {"messages": MESSAGES}
    assert _conforms(down, "POST", "/v1/chat/completions", 502, body=body).json()["error"]["code"] == (
        "upstream_error"
    )
    _conforms(down, "GET", "/v1/models", 502)
    slow = make_proxy(upstream=upstream.base_url, read_timeout=0.2, max_attempts=1)
    upstream.script(Reply(stall=1.0))
    r = _conforms(slow, "POST", "/v1/chat/completions", 504, body=body)
    assert r.json()["error"]["code"] == "upstream_timeout"


@pytest.mark.parametrize("status", [429, 503, 500, 404])
def test_relayed_upstream_errors_conform(status: int, hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(*[Reply.error(status, retry_after=0)] * 6)
    r = _conforms(hold, "POST", "/v1/chat/completions", status, body={"messages": MESSAGES})
    assert r.json()["error"]["type"] == "scripted_error"  # the upstream's own body, relayed


FUNCTION = TOOLS[0]["function"]
#: The same request in each protocol's own terms.
PROTOCOL_BODIES = {
    "/v1/messages": {
        "model": "m",
        "max_tokens": 64,
        "messages": MESSAGES,
        "tools": [{"name": FUNCTION["name"], "input_schema": FUNCTION["parameters"]}],
    },
    "/v1/responses": {
        "model": "m",
        "input": MESSAGES[-1]["content"],
        "tools": [{"type": "function", "name": FUNCTION["name"], "parameters": FUNCTION["parameters"]}],
    },
}


@pytest.mark.parametrize("path", PROTOCOL_BODIES)
def test_protocol_answers_conform(
    path: str, hold: ProxyServer, upstream: ScriptedUpstream, make_proxy: Callable[..., Any]
) -> None:
    body = PROTOCOL_BODIES[path]
    translating = make_proxy(upstream=upstream.base_url, protocols="translate")
    upstream.script(good(), good(), good(), bad_schema(), bad_schema(), bad_schema())
    _conforms(hold, "POST", path, 200, body=body)
    documented = json.loads(DESCRIPTION)["paths"][path]["post"]["responses"]["200"]["headers"]
    for proxy, protocol in ((hold, "native"), (translating, "translated")):
        r = _conforms(proxy, "POST", path, 200, body={**body, "stream": True})
        assert r.headers["content-type"][0].startswith("text/event-stream")
        assert r.headers["x-toolguard-protocol"] == [protocol]
        assert protocol in documented["x-toolguard-protocol"]["schema"]["enum"]
    r = _conforms(hold, "POST", path, 422, body=body)  # a violation after every retry
    assert r.headers["x-toolguard-verdict"] == ["rejected"]


@pytest.mark.parametrize("path", PROTOCOL_BODIES)
def test_protocol_refusals_conform(
    path: str, upstream: ScriptedUpstream, make_proxy: Callable[..., Any]
) -> None:
    proxy = make_proxy(upstream=upstream.base_url, auth_token="secret", max_body_bytes=4096)
    headers = {"authorization": "Bearer secret"}
    _conforms(proxy, "POST", path, 401, body=PROTOCOL_BODIES[path])
    big = {**PROTOCOL_BODIES[path], "instructions" if path == "/v1/responses" else "system": "x" * 5000}
    assert _conforms(proxy, "POST", path, 413, body=big, headers=headers).status_code == 413
    bad_tool = (
        {"name": "f", "input_schema": 1}
        if path == "/v1/messages"
        else {"type": "function", "name": "f", "parameters": 1}
    )
    unmapped = {**PROTOCOL_BODIES[path], "tools": [bad_tool]}
    _conforms(proxy, "POST", path, 400, body=unmapped, headers=headers)
    assert upstream.requests == []
    down = make_proxy(upstream="http://127.0.0.1:1/v1", max_attempts=1, upstream_retries=0)
    _conforms(down, "POST", path, 502, body=PROTOCOL_BODIES[path])
