"""A real third-party upstream: ``transformers serve`` with a random-weight model built here (no download).

The tiny model's output is noise; what this checks is that the proxy speaks to a server it did not write: its
chunk shapes (a role delta without content, UUID ids), its finish reasons, and a genuine repetition loop (a
random model falls into one) cut with ``finish_reason="repetition"``. Needs ``transformers[serving]``
(fastapi, accelerate) and torch, hence the ``local`` marker.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import client_for
from .helpers import TOOLS
from .proxy_server import ProxyServer

pytest.importorskip("fastapi")
pytest.importorskip("torch")
pytestmark = [pytest.mark.local, pytest.mark.slow]

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def served_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    from toolguard.local._fixtures import build_tiny_llama, build_tokenizer, default_corpus

    folder = tmp_path_factory.mktemp("tiny-model")
    tokenizer = build_tokenizer(default_corpus(max_bytes=60_000), 600)
    build_tiny_llama(tokenizer).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
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
