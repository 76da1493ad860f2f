"""``run``: serve the proxy with uvicorn (what ``toolguard proxy`` calls)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from ._config import ProxyConfig, load_config

__all__ = ["run"]

log = logging.getLogger("toolguard.proxy")


def _decision_logging(config: ProxyConfig) -> None:
    """Send toolguard's own lines (one per decision, ``toolguard._decisions``) to stderr beside uvicorn's:
    timestamped logfmt, or bare JSON objects with ``log_format = "json"``."""
    logger = logging.getLogger("toolguard")
    logger.setLevel(config.log_level.upper())
    if not any(getattr(h, "_toolguard", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler._toolguard = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    plain = "%(asctime)s %(levelname)s %(name)s %(message)s"
    fmt = "%(message)s" if config.log_format == "json" else plain
    for existing in logger.handlers:
        if getattr(existing, "_toolguard", False):
            existing.setFormatter(logging.Formatter(fmt))


def run(
    *,
    config: ProxyConfig | None = None,
    config_file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    **overrides: Any,
) -> None:
    """Serve the proxy until interrupted. Options merge as in ``load_config`` (file < env < keywords).

    Binds ``127.0.0.1`` unless told otherwise. Raises ``ConfigError`` for invalid options.
    """
    import uvicorn

    from ._app import ProxyApp

    if config is None:
        config = load_config(file=config_file, env=env, overrides=overrides)
    app = ProxyApp(config)
    _decision_logging(config)
    if config.host not in ("127.0.0.1", "localhost", "::1") and not config.auth_token:
        log.warning(
            "toolguard proxy: binding %s without auth_token: anyone who can reach it can use it", config.host
        )
    uvicorn.run(
        app,
        host=config.host,
        port=config.port,
        log_level=config.log_level,
        lifespan="on",
        # SSE needs no proxy-side buffering; keep-alive lets clients reuse connections.
        timeout_keep_alive=30,
    )
