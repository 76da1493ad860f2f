"""``toolguard.wrap(LocalGenerator(...))``: the same surface over local decoding (random-weight tiny Llama).

The model and tokenizer come from ``toolguard.local._fixtures`` (built offline, the tokenizer cached on disk),
the builders behind tests/local/conftest.py's fixtures, which are not visible from this folder.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

import toolguard
from tests.sdk.helpers import MESSAGES, WEATHER_TOOL
from toolguard import Policy, TruncatedToolCall

pytestmark = pytest.mark.local


@pytest.fixture(scope="module")
def generator() -> Any:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    from toolguard.local import LocalGenerator
    from toolguard.local._fixtures import build_tiny_llama, cached_tokenizer

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    cache = Path(
        os.environ.get("TOOLGUARD_TEST_CACHE") or Path(tempfile.gettempdir()) / "toolguard-test-cache"
    )
    cache.mkdir(parents=True, exist_ok=True)
    tokenizer = cached_tokenizer(cache, 3000)  # the vocabulary size tests/local/conftest.py uses
    yield LocalGenerator(build_tiny_llama(tokenizer), tokenizer, max_string_length=6)
    torch.set_num_threads(threads)


def create(wrapped: Any, **kw: Any) -> Any:
    return wrapped.chat.completions.create(
        model="local", messages=MESSAGES, tools=[WEATHER_TOOL], tool_choice="required", seed=0, **kw
    )


def test_a_grammar_enforced_call_passes_the_guard(generator: Any) -> None:
    events: list[Any] = []
    result = create(toolguard.wrap(generator, on_event=events.append), max_tokens=64)
    call = result["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "get_weather" and "city" in json.loads(call["arguments"])
    assert [e.kind for e in events] == ["attempt", "verdict", "done"]


def test_the_stream_yields_the_generators_chunks(generator: Any) -> None:
    chunks = list(create(toolguard.wrap(generator), max_tokens=64, stream=True))
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    args = "".join(
        tc["function"]["arguments"] for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls") or ()
    )
    assert "city" in json.loads(args)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_truncated_call_is_retried_with_more_room_then_raised(generator: Any, stream: bool) -> None:
    events: list[Any] = []
    wrapped = toolguard.wrap(generator, policy=Policy(max_truncation_retries=1), on_event=events.append)
    with pytest.raises(TruncatedToolCall) as info:
        result = create(wrapped, max_tokens=4, stream=stream)
        if stream:
            list(result)
    assert [a.verdict.kind for a in info.value.attempts] == ["truncated", "truncated"]
    assert [dict(e.changes) for e in events if e.kind == "retry"] == [{"max_tokens": 8}]
