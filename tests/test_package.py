"""The public surface: exported names, and the promise that the core imports no heavy dependency."""

from __future__ import annotations

import subprocess
import sys

import toolguard

# DESIGN.md's public names: outside checks call these.
REQUIRED = {
    "StreamValidator",
    "Verdict",
    "RunawayDetector",
    "Runaway",
    "tool",
    "Tool",
    "ToolSet",
    "ToolCall",
    "Executor",
    "AsyncExecutor",
    "RetryPolicy",
    "ExecutionRecord",
    "AgentLoop",
    "Guard",
    "wrap",
    "ToolguardError",
    "UsageError",
}


def test_all_is_sorted_and_complete() -> None:
    assert toolguard.__all__ == sorted(toolguard.__all__)
    missing = REQUIRED - set(toolguard.__all__)
    assert not missing, f"public names missing from toolguard.__all__: {sorted(missing)}"
    for name in toolguard.__all__:
        assert hasattr(toolguard, name), name


def test_all_matches_the_modules_public_names() -> None:
    from toolguard import _exceptions, _executor, _guard, _loop, _runaway, _stream, _tools, sdk

    modules = (_exceptions, _executor, _guard, _loop, _runaway, _stream, _tools, sdk)
    expected = {name for module in modules for name in module.__all__} | {"__version__"}
    assert set(toolguard.__all__) == expected


def test_public_classes_read_as_toolguard() -> None:
    assert toolguard.StreamValidator.__module__ == "toolguard"
    assert repr(toolguard.ToolSet([])) == "ToolSet([])"


def test_core_import_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, toolguard, toolguard.formats, toolguard.proxy, toolguard.sdk;"
        "heavy = [m for m in ('torch', 'transformers', 'xgrammar', 'llguidance', 'outlines', 'openai')"
        " if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_sans_io_core_imports_no_io_stack() -> None:
    code = (
        "import sys; import toolguard._guard, toolguard._stream, toolguard._runaway, toolguard.formats;"
        "bad = [m for m in ('asyncio', 'httpx', 'torch', 'uvicorn', 'starlette') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
