"""Proxy test fixtures: the real proxy (uvicorn in a thread) in front of fake upstreams on 127.0.0.1.

``ScriptedUpstream`` (tests/support) scripts well-formed answers and HTTP faults; ``HostileUpstream`` breaks
HTTP itself. Both are fakes at the true external boundary, the model server. Clients are the official openai
SDK (``max_retries=0``: a retry must come from the proxy, never from the SDK hiding a failure).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from tests.support import ScriptedUpstream

from .proxy_server import ProxyServer

openai = pytest.importorskip("openai")

# Fast retries: the proxy's own backoff would otherwise dominate the suite's time. The fake upstreams are no
# engine: no detection request (tests of the engine constraints say engine=... or "auto" themselves).
FAST = {"backoff_initial": 0.01, "backoff_max": 0.05, "engine": "generic"}


@pytest.fixture(scope="session")
def _scripted() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream() as server:
        yield server


@pytest.fixture
def upstream(_scripted: ScriptedUpstream) -> Iterator[ScriptedUpstream]:
    _scripted.reset()
    yield _scripted
    _scripted.reset()


@pytest.fixture(scope="session")
def _hold_proxy(_scripted: ScriptedUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream=_scripted.base_url, mode="hold", read_timeout=1.0, **FAST) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def _pass_proxy(_scripted: ScriptedUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream=_scripted.base_url, mode="pass", read_timeout=1.0, **FAST) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def _chat_only() -> Iterator[ScriptedUpstream]:
    """A scripted upstream without /v1/messages and /v1/responses (404): the proxy translates over chat."""
    with ScriptedUpstream(chat_only=True) as server:
        yield server


@pytest.fixture(scope="session")
def _hold_chat_only(_chat_only: ScriptedUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream=_chat_only.base_url, mode="hold", read_timeout=1.0, **FAST) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def _pass_chat_only(_chat_only: ScriptedUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream=_chat_only.base_url, mode="pass", read_timeout=1.0, **FAST) as proxy:
        yield proxy


@pytest.fixture
def hold(_hold_proxy: ProxyServer, upstream: ScriptedUpstream) -> ProxyServer:
    return _hold_proxy


@pytest.fixture
def passing(_pass_proxy: ProxyServer, upstream: ScriptedUpstream) -> ProxyServer:
    return _pass_proxy


@pytest.fixture
def make_proxy() -> Iterator[Callable[..., ProxyServer]]:
    """Start a proxy with any options; stopped at the end of the test."""
    with ExitStack() as stack:

        def make(**options: Any) -> ProxyServer:
            return stack.enter_context(ProxyServer(**{**FAST, **options}))

        yield make


def client_for(proxy: ProxyServer, **kw: Any) -> Any:
    return openai.OpenAI(
        base_url=proxy.base_url,
        api_key=kw.pop("api_key", "sk-client"),
        max_retries=0,
        timeout=kw.pop("timeout", 20),
        **kw,
    )
