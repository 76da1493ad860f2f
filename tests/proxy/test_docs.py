"""The proxy's example page runs as written: its config file loads, its client code talks to a real proxy."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support import ScriptedUpstream
from toolguard.proxy import load_config

from .helpers import good
from .proxy_server import ProxyServer

PAGE = Path(__file__).resolve().parents[2] / "examples" / "proxy_in_front_of_vllm.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_the_toml_config_loads(tmp_path: Path) -> None:
    (block,) = _blocks("toml")
    path = tmp_path / "proxy.toml"
    path.write_text(block)
    config = load_config(file=path)
    assert (config.upstream, config.mode, config.read_timeout) == ("http://localhost:8000/v1", "hold", 120)


def test_the_client_code_runs(hold: ProxyServer, upstream: ScriptedUpstream) -> None:
    (code,) = _blocks("python")
    assert "http://127.0.0.1:8787/v1" in code
    upstream.script(good())
    exec(compile(code.replace("http://127.0.0.1:8787/v1", hold.base_url), str(PAGE), "exec"), {})
    assert upstream.chat_requests[0].body["tools"][0]["function"]["name"] == "get_weather"
