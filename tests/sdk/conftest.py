"""SDK wrapper test fixtures: the official openai SDK against a ScriptedUpstream (a fake model server)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ScriptedUpstream

openai = pytest.importorskip("openai")


@pytest.fixture(scope="session")
def _server() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream() as server:
        yield server


@pytest.fixture
def upstream(_server: ScriptedUpstream) -> Iterator[ScriptedUpstream]:
    _server.reset()
    yield _server
    _server.reset()


@pytest.fixture
def client(upstream: ScriptedUpstream) -> Iterator[Any]:
    with openai.OpenAI(base_url=upstream.base_url, api_key="test", max_retries=2, timeout=10) as c:
        yield c


@pytest.fixture
async def aclient(upstream: ScriptedUpstream) -> Any:
    async with openai.AsyncOpenAI(base_url=upstream.base_url, api_key="test", max_retries=2, timeout=10) as c:
        yield c
