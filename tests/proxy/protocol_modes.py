"""The Messages and Responses tests run twice: against an upstream that serves the protocol (native) and
against a chat-only one (translated over chat completions, found by the proxy's detection).

A test module binds ``upstream``, ``hold`` and ``passing`` to these fixtures (``hold = modes.hold``...)
in place of conftest's, so each of its tests runs once per ``upstream_mode``; ``guarded(upstream, route)``
gives the requests that reached the upstream's guarded endpoint in that mode (the protocol's path when
native, chat completions when translated), whose count is the attempts the flow made.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import ScriptedUpstream
from tests.support.scripted_upstream import RecordedRequest

from .proxy_server import ProxyServer

__all__ = ["MODES", "guarded", "hold", "passing", "upstream", "upstream_mode"]

MODES = ("native", "translated")


@pytest.fixture(params=MODES)
def upstream_mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def upstream(
    upstream_mode: str, _scripted: ScriptedUpstream, _chat_only: ScriptedUpstream
) -> Iterator[ScriptedUpstream]:
    server = _scripted if upstream_mode == "native" else _chat_only
    server.reset()
    yield server
    server.reset()


@pytest.fixture
def hold(upstream_mode: str, upstream: ScriptedUpstream, request: pytest.FixtureRequest) -> ProxyServer:
    name = "_hold_proxy" if upstream_mode == "native" else "_hold_chat_only"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


@pytest.fixture
def passing(upstream_mode: str, upstream: ScriptedUpstream, request: pytest.FixtureRequest) -> ProxyServer:
    name = "_pass_proxy" if upstream_mode == "native" else "_pass_chat_only"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


def guarded(upstream: ScriptedUpstream, route: str) -> list[RecordedRequest]:
    """The requests on the guarded endpoint: ``/v1/<route>`` for a native upstream, else chat completions."""
    if upstream.chat_only:
        return upstream.chat_requests
    return upstream.messages_requests if route == "messages" else upstream.responses_requests
