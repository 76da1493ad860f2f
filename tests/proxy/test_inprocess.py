"""In-process: the openai SDK -> httpx.ASGITransport -> proxy -> httpx.ASGITransport -> fake upstream."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.support import ScriptedUpstream
from toolguard.proxy import create_app

from .helpers import GOOD_ARGS, MESSAGES, TOOLS, accumulate, bad_schema, good

pytestmark = pytest.mark.anyio


async def test_stream_and_non_stream_in_process() -> None:
    upstream = ScriptedUpstream()  # never started: served as a plain ASGI app
    upstream.script(bad_schema(), good(), bad_schema(), good())
    app = create_app(upstream="http://upstream.test/v1", upstream_transport=httpx.ASGITransport(app=upstream))
    async with app, httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        client = openai.AsyncOpenAI(
            base_url="http://proxy.test/v1", api_key="k", http_client=http, max_retries=0
        )
        stream = await client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, stream=True)
        result = accumulate([chunk async for chunk in stream])
        assert result["calls"][0]["arguments"] == GOOD_ARGS
        raw = await client.chat.completions.with_raw_response.create(
            model="m", messages=MESSAGES, tools=TOOLS
        )
        assert raw.headers["x-toolguard-retries"] == "1"
        assert raw.parse().choices[0].message.tool_calls[0].function.arguments == GOOD_ARGS
        health = await http.get("http://proxy.test/healthz")
        assert health.status_code == 200
    assert len(upstream.chat_requests) == 4
    assert app.metrics.verdicts[(("kind", "rejected"),)] == 2
    assert app.metrics.retries[(("reason", "reask"),)] == 2
