"""``toolguard serve`` on SmolLM2 with ``unenforced="check"`` (its default) serves every shipped tool set.

Driven over HTTP by the official openai SDK, one ``required`` request per tool set in ``schemas/tools`` (via
the demo model folder's ``tools.json``, the same sets): each answers 200 with a terminated call that the full
schema accepts, or a call cut by ``max_tokens`` reported as ``length`` and never as a call.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from tests.serve.conftest import ServerThread

from .requests import tool_sets

openai = pytest.importorskip("openai")


def test_every_shipped_tool_set_is_served(generator: Any) -> None:
    from toolguard.local._serve import create_serve_app

    prompts = {
        "weather": "What's the weather in Paris?",
        "calendar": "Cancel the event evt_a1b2c3.",
        "files": "Read the file notes.txt",
        "http": "Fetch https://example.com/status",
        "math": "What is 17 plus 25?",
    }
    sets = tool_sets()
    assert set(sets) == set(prompts)
    with ServerThread(create_serve_app(generator)) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)
        assert client.models.list().data[0].id == "SmolLM2-135M-Instruct"
        for name, tools in sets.items():
            reply = client.chat.completions.create(
                model="SmolLM2-135M-Instruct",
                messages=[{"role": "user", "content": prompts[name]}],
                tools=tools,  # type: ignore[arg-type]
                tool_choice="required",
                temperature=0,
                max_tokens=96,
            )
            choice = reply.choices[0]
            if choice.finish_reason == "length":
                assert not choice.message.tool_calls, name
                continue
            assert choice.finish_reason == "tool_calls", (name, choice)
            for call in choice.message.tool_calls or []:
                fn = call.function  # type: ignore[union-attr]
                schema = next(t["function"]["parameters"] for t in tools if t["function"]["name"] == fn.name)
                jsonschema.validate(json.loads(fn.arguments), schema)
