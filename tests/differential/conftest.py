"""Fixtures of the differential suite: one ScriptedUpstream, and a real proxy per mode and repair setting."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from tests.proxy.proxy_server import ProxyServer
from tests.support import Reply, ScriptedUpstream

from .doors import FAST, Door, Outcome

pytest.importorskip("openai")


@pytest.fixture(scope="session")
def _upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream() as server:
        yield server


@pytest.fixture(scope="session")
def _proxies(_upstream: ScriptedUpstream) -> Iterator[dict[tuple[str, bool], ProxyServer]]:
    with ExitStack() as stack:
        proxies = {
            (mode, repair): stack.enter_context(
                ProxyServer(
                    upstream=_upstream.base_url, mode=mode, repair_calls=repair, read_timeout=2.0, **FAST
                )
            )
            for mode in ("hold", "pass")
            for repair in (True, False)
        }
        yield proxies


@pytest.fixture
def through(
    _upstream: ScriptedUpstream, _proxies: dict[tuple[str, bool], ProxyServer]
) -> Callable[..., tuple[Outcome, int]]:
    """``through(door, replies, body, repair=True)``: script ``replies``, ask through ``door``; return the
    door's ``Outcome`` and how many requests reached the upstream."""

    def run(
        door: Door, replies: list[Reply], body: dict[str, Any], repair: bool = True
    ) -> tuple[Outcome, int]:
        _upstream.reset()
        _upstream.script(*replies)
        proxy = _proxies[(door.mode, repair)].base_url if door.kind == "proxy" else None
        try:
            outcome = door.ask(_upstream.base_url, proxy, body, repair)
            return outcome, len(_upstream.chat_requests)
        finally:
            _upstream.reset()

    return run
