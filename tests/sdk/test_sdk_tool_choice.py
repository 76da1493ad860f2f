"""The wrapped SDK refuses a ``tool_choice`` the tools cannot keep before any request (counted upstream)."""

from __future__ import annotations

from typing import Any

import pytest

import toolguard
from tests.sdk.helpers import MESSAGES, WEATHER_TOOL
from tests.support import Reply, ScriptedUpstream
from toolguard import UsageError


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"tools": [WEATHER_TOOL], "tool_choice": "sometimes"}, "sometimes"),
        ({"tool_choice": "required"}, "at least one tool"),
    ],
)
def test_sync_refuses_before_any_request(
    client: Any, upstream: ScriptedUpstream, kw: dict[str, Any], says: str, stream: bool
) -> None:
    upstream.script(Reply.text("hi"))
    with pytest.raises(UsageError, match=says):
        toolguard.wrap(client).chat.completions.create(model="m", messages=MESSAGES, stream=stream, **kw)
    assert upstream.chat_requests == []


@pytest.mark.anyio
async def test_async_refuses_before_any_request(aclient: Any, upstream: ScriptedUpstream) -> None:
    upstream.script(Reply.text("hi"))
    bad = {"type": "function", "function": {"name": "launch_rocket"}}
    with pytest.raises(UsageError, match="launch_rocket"):
        await toolguard.wrap(aclient).chat.completions.create(
            model="m", messages=MESSAGES, tools=[WEATHER_TOOL], tool_choice=bad
        )
    assert upstream.chat_requests == []
