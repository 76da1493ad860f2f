"""A real third-party upstream: ``transformers serve`` with a random-weight model built here (no download).

The tiny model's output is noise; what this checks is that the proxy speaks to a server it did not write: its
chunk shapes (a role delta without content, UUID ids), its finish reasons, and a genuine repetition loop (a
random model falls into one) cut with ``finish_reason="repetition"``. Needs ``transformers[serving]``
(fastapi, accelerate) and torch, hence the ``local`` marker.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from .conftest import client_for
from .helpers import TOOLS
from .proxy_server import ProxyServer

pytest.importorskip("fastapi")
pytest.importorskip("torch")
pytestmark = [pytest.mark.local, pytest.mark.slow]

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
DEMO_MODEL = Path(__file__).resolve().parents[2] / "toolguard" / "_models" / "demo"
PROMPTS = [
    "What is the weather in Paris?",
    "Weather in Tokyo in fahrenheit, please.",
    "Forecast for Berlin for the next 3 days.",
    "How warm is it in Rome right now?",
]


def _serve(folder: Path) -> Iterator[tuple[str, str]]:
    """``transformers serve`` of the model in ``folder`` on a free port; (base URL, model name)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cli = Path(sys.executable).with_name("transformers")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen(
        [str(cli), "serve", str(folder), "--port", str(port), "--device", "cpu"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("transformers serve did not start")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1", str(folder)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def served_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    from toolguard.local._fixtures import build_tiny_llama, build_tokenizer, default_corpus

    folder = tmp_path_factory.mktemp("tiny-model")
    tokenizer = build_tokenizer(default_corpus(max_bytes=60_000), 600)
    build_tiny_llama(tokenizer).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    yield from _serve(folder)


@pytest.fixture(scope="module")
def served_demo() -> Iterator[tuple[str, str]]:
    """The embedded demo model (trained to call tools hermes-style), served by ``transformers serve``."""
    yield from _serve(DEMO_MODEL)


def test_real_upstream_stream_and_non_stream(served_model: tuple[str, str]) -> None:
    base, model = served_model
    with ProxyServer(upstream=base) as proxy, client_for(proxy, timeout=120) as client:
        chunks = list(
            client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=200, stream=True)
        )
        assert len({c.id for c in chunks}) == 1
        roles = [c.choices[0].delta.role for c in chunks if c.choices and c.choices[0].delta.role]
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        assert roles == ["assistant"]
        assert len(finishes) == 1 and finishes[0] in ("stop", "length", "repetition")
        raw = client.chat.completions.with_raw_response.create(
            model=model, messages=MESSAGES, max_tokens=16, tools=TOOLS
        )
        completion = raw.parse()
        assert raw.headers["x-toolguard-verdict"] in ("ok", "fabricated")
        assert completion.choices[0].finish_reason in ("stop", "length", "tool_calls")
        for call in (
            completion.choices[0].message.tool_calls or ()
        ):  # noise may look like a call: never invalid
            assert call.function.name == "get_weather"


def test_real_runaway_is_cut(served_model: tuple[str, str]) -> None:
    """A random model loops on one token; the proxy stops it long before max_tokens and says so."""
    base, model = served_model
    with ProxyServer(upstream=base) as proxy, client_for(proxy, timeout=120) as client:
        chunks = list(
            client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=400, stream=True)
        )
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    if finishes != ["repetition"]:
        pytest.skip(f"this random model did not loop here (finish {finishes}, {len(text)} chars)")
    assert len(chunks) < 400


def test_every_valid_call_written_as_text_arrives_as_a_tool_call(served_demo: tuple[str, str]) -> None:
    """transformers serve returns the demo model's ``<tool_call>...`` as plain content; through the proxy each
    valid one is a tool call on the first attempt (no second generation), the text gone from the content."""
    from toolguard import Guard
    from toolguard.formats import parse

    base, model = served_demo
    tools = json.loads((DEMO_MODEL / "tools.json").read_text())["weather"]
    written = 0
    with ProxyServer(upstream=base) as proxy, client_for(proxy, timeout=300) as client:
        direct = openai.OpenAI(base_url=base, api_key="unused", max_retries=0, timeout=300)
        for prompt in PROMPTS:
            kw = {
                "model": model,
                "messages": [{"role": "user", "content": prompt}],
                "tools": tools,
                "max_tokens": 120,
                "temperature": 0,
            }
            text = direct.chat.completions.create(**kw).choices[0].message.content or ""
            parsed = parse(text, format="hermes")
            guard = Guard(tools, repair=True)
            if not parsed.tool_calls or guard.feed_message({"content": text}, "stop").kind not in (
                "ok",
                "fabricated",
            ):
                continue  # not a valid call as written: the proxy may re-ask it
            written += 1
            raw = client.chat.completions.with_raw_response.create(**kw)
            choice = raw.parse().choices[0]
            assert raw.headers["x-toolguard-retries"] == "0", prompt
            assert choice.finish_reason == "tool_calls" and "<tool_call>" not in (
                choice.message.content or ""
            )
            got = [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls]
            assert got == [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls], prompt
            streamed: dict[int, list[str]] = {}
            text_seen = []
            for chunk in client.chat.completions.create(stream=True, **kw):
                delta = chunk.choices[0].delta if chunk.choices else None
                text_seen.append((delta.content or "") if delta else "")
                for d in (delta.tool_calls or ()) if delta else ():
                    entry = streamed.setdefault(d.index, ["", ""])
                    entry[0] += d.function.name or "" if d.function else ""
                    entry[1] += d.function.arguments or "" if d.function else ""
            assert "<tool_call>" not in "".join(text_seen), "the call's text never reaches a streamed client"
            assert [(n, json.loads(a)) for n, a in streamed.values()] == got, prompt
    if not written:
        pytest.skip("the demo model wrote no valid call as text for these prompts")
