"""toolguard: make LLM tool calling reliable.

Four mechanisms, one core: grammar-enforced decoding (``toolguard.local``), runaway stop
(``RunawayDetector``), streaming validation (``StreamValidator``) and a safe ``Executor``, all sharing the
sans-IO ``Guard``. Front doors: ``toolguard.wrap`` (SDK), ``toolguard.proxy`` (ASGI proxy) and
``toolguard fuzz``.

``import toolguard`` never imports torch, transformers, a grammar engine, openai or a server.
"""

from __future__ import annotations

import contextlib

from ._exceptions import *  # noqa: F403
from ._executor import *  # noqa: F403
from ._guard import *  # noqa: F403
from ._loop import *  # noqa: F403
from ._runaway import *  # noqa: F403
from ._stream import *  # noqa: F403
from ._tools import *  # noqa: F403
from ._version import __version__
from .sdk import *  # noqa: F403

# The public surface, sorted; tests/test_package.py checks it against the modules' own ``__all__``.
__all__ = [
    "AgentLoop",
    "AsyncAgentLoop",
    "AsyncExecutor",
    "AttemptRecord",
    "ConfigError",
    "ContentDelta",
    "ExecutionRecord",
    "Executor",
    "FINISH_REASON_REPETITION",
    "Finish",
    "FlowEvent",
    "GrammarCompileTimeout",
    "GrammarError",
    "Guard",
    "GuardError",
    "GuardEvent",
    "GuardLimits",
    "GuardReport",
    "GuardVerdict",
    "LoopResult",
    "MAX_RUNAWAY_RETRIES",
    "Policy",
    "RemoteRefRefused",
    "RetryPolicy",
    "Runaway",
    "RunawayConfig",
    "RunawayDetector",
    "RunawayGeneration",
    "RunawayKind",
    "RunawayPolicy",
    "SchemaError",
    "SchemaLimitExceeded",
    "StreamMode",
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
    "UnitClass",
    "UnsupportedKeyword",
    "UpstreamError",
    "UpstreamProtocolError",
    "UpstreamStatusError",
    "UpstreamTimeout",
    "UsageError",
    "ValidationLimits",
    "Verdict",
    "VerdictKind",
    "Violation",
    "__version__",
    "guard_report",
    "loop_in_prompt",
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
