"""``ProxyServer``: the real toolguard proxy, served by uvicorn in a thread on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from toolguard.proxy import ProxyApp, create_app

__all__ = ["ProxyServer"]


class ProxyServer:
    """``with ProxyServer(upstream=url, mode="pass") as proxy: proxy.base_url``; ``proxy.app``: the app."""

    def __init__(self, **options: Any) -> None:
        self.app: ProxyApp = create_app(**options)
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ProxyServer:
        # proto IPPROTO_TCP, not 0: asyncio turns on TCP_NODELAY only for sockets that say they are TCP
        # (with 0, each reused connection stalls ~40 ms on delayed ACKs)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="error", lifespan="on", access_log=False)
        server = uvicorn.Server(config)
        server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self._server = server
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the proxy did not start")
            time.sleep(0.005)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
            assert not self._thread.is_alive(), "the proxy did not shut down"
