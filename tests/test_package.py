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


# The whole public surface: what the README, DESIGN.md and the examples use, and the exception tree. A name
# added to or dropped from toolguard.__all__ must be added or dropped here too, on purpose.
PUBLIC = [
    "AgentLoop", "AsyncAgentLoop", "AsyncExecutor", "ConfigError", "ContentDelta", "ExecutionRecord",
    "Executor", "Finish", "FlowEvent", "GrammarCompileTimeout", "GrammarError", "Guard", "GuardError",
    "GuardReport", "GuardVerdict", "LoopResult", "Policy", "RemoteRefRefused", "RetryPolicy", "Runaway",
    "RunawayDetector", "RunawayGeneration", "RunawayPolicy", "SchemaError", "SchemaLimitExceeded",
    "StreamValidator", "TokenDelta", "Tool", "ToolCall", "ToolCallDelta", "ToolCallRejected", "ToolError",
    "ToolSet", "ToolguardError", "TruncatedToolCall", "UnsupportedKeyword", "UpstreamError",
    "UpstreamProtocolError", "UpstreamStatusError", "UpstreamTimeout", "UsageError", "ValidationLimits",
    "Verdict", "Violation", "__version__", "guard_report", "tool", "validate_json", "wrap",
]


def test_all_is_the_pinned_public_surface() -> None:
    assert toolguard.__all__ == PUBLIC


def test_every_exception_of_the_tree_is_public() -> None:
    from toolguard import _exceptions

    assert set(_exceptions.__all__) <= set(toolguard.__all__)


def test_internals_stay_importable_from_their_modules() -> None:
    from toolguard._policy import StreamMode
    from toolguard._runaway import (
        FINISH_REASON_REPETITION,
        MAX_RUNAWAY_RETRIES,
        RunawayConfig,
        loop_in_prompt,
    )
    from toolguard._verdict import GuardLimits

    assert FINISH_REASON_REPETITION == "repetition" and MAX_RUNAWAY_RETRIES >= 1
    assert callable(loop_in_prompt) and GuardLimits() and RunawayConfig() and StreamMode


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
