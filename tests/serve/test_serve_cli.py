"""The ``toolguard serve`` command: options, a refused model folder, and a real process answering /health."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from toolguard.cli import EXIT_USAGE, main


def test_help_lists_the_options() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    for option in ("--model", "--host", "--port", "--engine", "--threads", "--unenforced"):
        assert option in result.output
    assert "127.0.0.1" in result.output
    assert ".gguf" in result.output and "[default: check]" in result.output


@pytest.mark.local
def test_a_folder_that_is_not_a_model_is_a_usage_error(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    result = CliRunner().invoke(main, ["serve", "--model", str(tmp_path)])
    assert result.exit_code == EXIT_USAGE
    assert "not a model folder" in result.output


@pytest.mark.local
def test_a_file_that_is_not_gguf_is_a_usage_error(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    path = tmp_path / "model.gguf"
    path.write_text("not a model")
    result = CliRunner().invoke(main, ["serve", "--model", str(path)])
    assert result.exit_code == EXIT_USAGE
    assert "not a GGUF file" in result.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.local
def test_serve_process_binds_localhost_and_answers() -> None:
    pytest.importorskip("torch")
    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolguard", "serve", "--port", str(port), "--threads", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    output = proc.stdout.read().decode() if proc.stdout else ""
                    pytest.fail(f"toolguard serve did not come up:\n{output}")
                time.sleep(0.25)
        assert health.json()["model"] == "toolguard-demo"
        reply = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            timeout=60,
            json={
                "model": "toolguard-demo",
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 20,
            },
        ).json()
        assert reply["object"] == "chat.completion"
        assert reply["choices"][0]["finish_reason"] in ("stop", "length")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()
