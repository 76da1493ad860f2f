"""A ``tool_choice`` the request's tools cannot keep is a 400 ``invalid_request`` before anything goes
upstream (counted on the scripted upstream), streamed or not."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.support import ScriptedUpstream

from .conftest import client_for
from .helpers import MESSAGES, TOOLS, good
from .proxy_server import ProxyServer

ROCKET = {"type": "function", "function": {"name": "launch_rocket"}}
BAD = [
    ({"tools": TOOLS, "tool_choice": "sometimes"}, "sometimes"),
    ({"tools": TOOLS, "tool_choice": ROCKET}, "launch_rocket"),
    ({"tool_choice": "required"}, "at least one tool"),
    ({"tool_choice": {"type": "function", "function": {"name": "get_weather"}}}, "offers no tools"),
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("kw", "says"), BAD)
def test_a_bad_tool_choice_is_a_400_with_no_upstream_request(
    hold: ProxyServer, upstream: ScriptedUpstream, kw: dict[str, Any], says: str, stream: bool
) -> None:
    upstream.script(good())
    with client_for(hold) as client, pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=MESSAGES, stream=stream, **kw)
    assert info.value.status_code == 400
    assert info.value.code == "invalid_request" and info.value.param == "tool_choice"
    assert says in info.value.message
    assert upstream.chat_requests == []


def test_any_is_read_as_required(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    upstream.script(good())
    with client_for(hold) as client:
        done = client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, tool_choice="any")
    assert done.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert len(upstream.chat_requests) == 1
