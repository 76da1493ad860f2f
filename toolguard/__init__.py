"""toolguard: make LLM tool calling reliable.

Four mechanisms, one core: grammar-enforced decoding (``toolguard.local``), runaway stop
(``RunawayDetector``), streaming validation (``StreamValidator``) and a safe ``Executor``, all sharing the
sans-IO ``Guard``. Front doors: ``toolguard.wrap`` (SDK), ``toolguard.proxy`` (ASGI proxy) and
``toolguard fuzz``.

``import toolguard`` never imports torch, transformers, a grammar engine, openai or a server.
"""

from __future__ import annotations

import contextlib

from ._events import ContentDelta, Finish, TokenDelta, ToolCallDelta
from ._exceptions import (
    ConfigError,
    GrammarCompileTimeout,
    GrammarError,
    GuardError,
    RemoteRefRefused,
    RunawayGeneration,
    SchemaError,
    SchemaLimitExceeded,
    ToolCallRejected,
    ToolError,
    ToolguardError,
    TruncatedToolCall,
    UnsupportedKeyword,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamStatusError,
    UpstreamTimeout,
    UsageError,
)
from ._executor import AsyncExecutor, ExecutionRecord, Executor, RetryPolicy
from ._guard import Guard
from ._loop import AgentLoop, AsyncAgentLoop, LoopResult
from ._policy import Policy
from ._reask import FlowEvent
from ._runaway import Runaway, RunawayDetector, RunawayPolicy
from ._stream import StreamValidator, ValidationLimits, Verdict, Violation, validate_json
from ._tools import Tool, ToolCall, ToolSet, tool
from ._verdict import GuardVerdict
from ._version import __version__
from .sdk import GuardReport, guard_report, wrap

# The public surface, sorted: what the README, DESIGN.md and the examples use, and the exception tree (callers
# catch at any depth). Everything else stays importable from its module (``toolguard._runaway.RunawayConfig``,
# ``toolguard._verdict.GuardLimits``, ``toolguard._policy.StreamMode``...). tests/test_package.py pins it.
__all__ = [
    "AgentLoop",
    "AsyncAgentLoop",
    "AsyncExecutor",
    "ConfigError",
    "ContentDelta",
    "ExecutionRecord",
    "Executor",
    "Finish",
    "FlowEvent",
    "GrammarCompileTimeout",
    "GrammarError",
    "Guard",
    "GuardError",
    "GuardReport",
    "GuardVerdict",
    "LoopResult",
    "Policy",
    "RemoteRefRefused",
    "RetryPolicy",
    "Runaway",
    "RunawayDetector",
    "RunawayGeneration",
    "RunawayPolicy",
    "SchemaError",
    "SchemaLimitExceeded",
    "StreamValidator",
    "TokenDelta",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallRejected",
    "ToolError",
    "ToolSet",
    "ToolguardError",
    "TruncatedToolCall",
    "UnsupportedKeyword",
    "UpstreamError",
    "UpstreamProtocolError",
    "UpstreamStatusError",
    "UpstreamTimeout",
    "UsageError",
    "ValidationLimits",
    "Verdict",
    "Violation",
    "__version__",
    "guard_report",
    "tool",
    "validate_json",
    "wrap",
]

# Reprs and docs read ``toolguard.StreamValidator``, not ``toolguard._stream._validator.StreamValidator``.
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or callable(_obj):
        with contextlib.suppress(AttributeError, TypeError):
            _obj.__module__ = "toolguard"
del _name, _obj
