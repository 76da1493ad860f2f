"""toolguard's OpenAI-compatible proxy: put it in front of any endpoint, keep the client as it is.

``toolguard proxy --upstream URL`` or ``create_app(upstream=URL)``: an ASGI app that guards
``POST /v1/chat/completions`` (stream and non-stream) with the ``Guard``, passes other ``/v1/*`` requests
through, and serves ``/healthz`` and ``/metrics``. ``run(...)`` serves it with uvicorn. Options:
``ProxyConfig`` (flags, ``TOOLGUARD_PROXY_*`` environment variables, or a JSON/TOML file validated by
``schemas/config.schema.json``).

The app and the server are imported on first use (``create_app``, ``ProxyApp``, ``run``), so reading the
configuration (the CLI's ``--help``) does not load httpx or uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._config import CONFIG_SCHEMA, ProxyConfig, load_config
from ._limits import RequestLimits

if TYPE_CHECKING:
    from ._app import ProxyApp, create_app
    from ._run import run

__all__ = ["CONFIG_SCHEMA", "ProxyApp", "ProxyConfig", "RequestLimits", "create_app", "load_config", "run"]


def __getattr__(name: str) -> Any:
    if name in ("ProxyApp", "create_app"):
        from . import _app

        return getattr(_app, name)
    if name == "run":
        from ._run import run

        return run
    raise AttributeError(f"module 'toolguard.proxy' has no attribute {name!r}")
