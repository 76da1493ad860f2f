"""Fixtures for ``toolguard serve`` tests: the embedded demo model served by a real uvicorn on 127.0.0.1.

``served`` (module scope) starts ``create_serve_app`` over a ``LocalGenerator`` of the embedded model in a
uvicorn thread on a free port and yields its ``/v1`` base URL; the official openai SDK talks to it. Torch runs
on one thread (faster than two on a shared 2-core machine).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest


class ServerThread:
    """A real uvicorn server for an ASGI app, in a daemon thread, on 127.0.0.1 and a free port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(app, log_config=None, lifespan="off", access_log=False)
        self.server = uvicorn.Server(config)
        self.server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)


@pytest.fixture(scope="module")
def generator() -> Any:
    pytest.importorskip("torch")
    import torch

    from toolguard.local._generator import LocalGenerator
    from toolguard.local._serve import load_local_model

    previous = torch.get_num_threads()
    model, tokenizer = load_local_model(threads=1)
    yield LocalGenerator(model, tokenizer, model_name="toolguard-demo")
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def served(generator: Any) -> Iterator[str]:
    from toolguard.local._serve import create_serve_app

    with ServerThread(create_serve_app(generator)) as server:
        yield server.url + "/v1"


@pytest.fixture(scope="module")
def example_tools() -> dict[str, list[dict[str, Any]]]:
    from toolguard._models import demo_model_path

    return json.loads((demo_model_path() / "tools.json").read_text())


@pytest.fixture(scope="session")
def server_thread() -> type[ServerThread]:
    """The ``ServerThread`` class, for tests that start a second server (the proxy in front)."""
    return ServerThread
