"""Everything around the guard: routes, pass-through, headers, auth, limits, metrics (real HTTP)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx
import pytest

from tests.support import ScriptedUpstream

from .conftest import client_for
from .hostile_upstream import Fault, HostileUpstream
from .proxy_server import ProxyServer


def test_healthz_and_404(hold: ProxyServer) -> None:
    r = httpx.get(hold.root + "/healthz")
    assert (r.status_code, r.json()) == (200, {"status": "ok"})
    r = httpx.get(hold.root + "/admin")
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"


def test_models_pass_through_with_the_openai_sdk(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    with client_for(hold) as client:
        models = client.models.list()
    assert [m.id for m in models.data] == ["scripted-model"]
    seen = upstream.requests[-1]
    assert seen.path == "/v1/models"
    assert seen.headers["authorization"] == "Bearer sk-client"  # the client's key goes upstream


def test_pass_through_keeps_status_and_filters_hop_by_hop(
    hold: ProxyServer, upstream: ScriptedUpstream
) -> None:
    r = httpx.post(
        hold.base_url + "/embeddings?x=1",
        json={"input": "hi"},
        headers={"connection": "keep-alive, x-drop-me", "x-drop-me": "1", "x-keep": "2", "te": "trailers"},
    )
    assert r.status_code == 404  # the scripted upstream serves no embeddings: its answer comes back as is
    assert r.json()["error"]["message"] == "ScriptedUpstream serves no /v1/embeddings"
    seen = upstream.requests[-1]
    assert seen.path == "/v1/embeddings"
    assert "x-drop-me" not in seen.headers and "te" not in seen.headers
    assert seen.headers["x-keep"] == "2"


def test_bearer_token_for_clients(make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream) -> None:
    proxy = make_proxy(upstream=upstream.base_url, auth_token="proxy-token", upstream_api_key="sk-upstream")
    r = httpx.get(proxy.base_url + "/models")
    assert r.status_code == 401
    assert r.json()["error"]["type"] == "authentication_error"
    assert httpx.get(proxy.base_url + "/models", headers={"authorization": "Bearer nope"}).status_code == 401
    with client_for(proxy, api_key="proxy-token") as client:
        assert client.models.list().data
    assert upstream.requests[-1].headers["authorization"] == "Bearer sk-upstream"
    assert httpx.get(proxy.root + "/healthz").status_code == 200  # health stays open for probes


def test_auth_token_alone_sends_no_key_upstream(
    make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream
) -> None:
    proxy = make_proxy(upstream=upstream.base_url, auth_token="proxy-token")
    r = httpx.get(proxy.base_url + "/models", headers={"authorization": "Bearer proxy-token"})
    assert r.status_code == 200
    assert "authorization" not in upstream.requests[-1].headers


def test_body_size_limit(make_proxy: Callable[..., ProxyServer], upstream: ScriptedUpstream) -> None:
    proxy = make_proxy(upstream=upstream.base_url, max_body_bytes=1000)
    r = httpx.post(
        proxy.base_url + "/chat/completions",
        content=b"{" + b" " * 2000 + b"}",
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "body_too_large"
    assert upstream.requests == []


def test_upstream_key_is_never_logged(
    make_proxy: Callable[..., ProxyServer], caplog: pytest.LogCaptureFixture
) -> None:
    with HostileUpstream(lambda n, body: Fault("garbage")) as bad:
        proxy = make_proxy(
            upstream=bad.base_url, upstream_api_key="sk-NEVER-LOG-ME", upstream_retries=1, log_level="debug"
        )
        with caplog.at_level(logging.DEBUG):
            r = httpx.get(proxy.base_url + "/models")
            r2 = httpx.post(
                proxy.base_url + "/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            )
    assert r.status_code == 502 and r2.status_code == 502
    assert "NEVER-LOG-ME" not in caplog.text
    assert "NEVER-LOG-ME" not in r.text + r2.text


def test_pass_through_retries_a_refused_connection_then_answers_502(
    make_proxy: Callable[..., ProxyServer],
) -> None:
    with HostileUpstream(lambda n, body: Fault("close_before_headers")) as bad:
        proxy = make_proxy(upstream=bad.base_url, upstream_retries=2)
        r = httpx.get(proxy.base_url + "/models")
        assert r.status_code == 502
        assert r.json()["error"]["type"] == "upstream_error"
        assert bad.requests == 3  # a GET is safe to retry


def test_pass_through_hands_a_long_retry_after_to_the_client(make_proxy: Callable[..., ProxyServer]) -> None:
    with HostileUpstream(lambda n, body: Fault("status", status=429, retry_after=120)) as bad:
        proxy = make_proxy(upstream=bad.base_url, max_retry_after=5)
        r = httpx.get(proxy.base_url + "/models")
        assert (r.status_code, r.headers["retry-after"]) == (429, "120")
        assert bad.requests == 1


def test_metrics_exposition(hold: ProxyServer) -> None:
    httpx.get(hold.root + "/healthz")
    text = httpx.get(hold.root + "/metrics").text
    assert "# TYPE toolguard_requests_total counter" in text
    assert 'toolguard_requests_total{route="healthz",code="200"}' in text
    assert "# TYPE toolguard_upstream_latency_seconds histogram" in text
    assert 'toolguard_upstream_latency_seconds_bucket{le="+Inf"}' in text
    assert "toolguard_streams_open 0" in text
