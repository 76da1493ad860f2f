"""The toolguard exception tree.

Exceptions are for misuse, bad configuration or schemas, and infrastructure. Model misbehaviour (a
rejected tool call, a runaway generation, a fabricated or truncated call, a failed tool run) is *data*: it
comes back as a ``Verdict``, a ``Runaway`` or an ``ExecutionRecord`` status, never as an exception from
the sans-IO core. The SDK wrapper raises the ``GuardError`` family only once its retries are spent.

    ToolguardError
    ├── SchemaError (ValueError)
    │   ├── RemoteRefRefused
    │   ├── SchemaLimitExceeded
    │   └── UnsupportedKeyword
    ├── GrammarError
    │   └── GrammarCompileTimeout
    ├── UpstreamError
    │   ├── UpstreamTimeout
    │   ├── UpstreamStatusError
    │   └── UpstreamProtocolError
    ├── GuardError                 (retries exhausted in the SDK wrapper)
    │   ├── ToolCallRejected
    │   ├── RunawayGeneration
    │   └── TruncatedToolCall
    ├── ToolError                  (tool definition problems)
    ├── ConfigError (ValueError)
    └── UsageError                 (the API was misused, like h11's LocalProtocolError)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "GrammarCompileTimeout",
    "GrammarError",
    "GuardError",
    "RemoteRefRefused",
    "RunawayGeneration",
    "SchemaError",
    "SchemaLimitExceeded",
    "ToolCallRejected",
    "ToolError",
    "ToolguardError",
    "TruncatedToolCall",
    "UnsupportedKeyword",
    "UpstreamError",
    "UpstreamProtocolError",
    "UpstreamStatusError",
    "UpstreamTimeout",
    "UsageError",
]


class ToolguardError(Exception):
    """Root of every exception toolguard raises on purpose."""


class SchemaError(ToolguardError, ValueError):
    """A JSON Schema is malformed, or uses something toolguard refuses to run.

    ``path`` is a JSON pointer into the schema, ``tool`` the tool whose schema it is (when known).
    """

    def __init__(self, message: str, *, path: str = "", tool: str | None = None) -> None:
        self.message = message
        self.path = path
        self.tool = tool
        where = f" at {path or '/'}" if path else ""
        who = f"tool {tool!r}: " if tool else ""
        super().__init__(f"{who}{message}{where}")


class RemoteRefRefused(SchemaError):
    """The schema needs a ``$ref`` that is not local; toolguard never fetches remote documents."""


class SchemaLimitExceeded(SchemaError):
    """The schema exceeds a safety cap (size, depth, enum size, pattern length or cost)."""


class UnsupportedKeyword(SchemaError):
    """A keyword that this component cannot enforce. Reported, never silently ignored."""

    def __init__(self, keyword: str, *, path: str = "", tool: str | None = None, engine: str | None = None):
        self.keyword = keyword
        self.engine = engine
        by = f" by the {engine} grammar engine" if engine else ""
        super().__init__(f"keyword {keyword!r} cannot be enforced{by}", path=path, tool=tool)


class GrammarError(ToolguardError):
    """A grammar engine could not compile or run a grammar."""


class GrammarCompileTimeout(GrammarError):
    """Compiling a grammar took longer than the configured limit."""


class UpstreamError(ToolguardError):
    """The upstream model endpoint failed (network, status or protocol)."""

    status_hint: int = 502


class UpstreamTimeout(UpstreamError):
    status_hint = 504


class UpstreamStatusError(UpstreamError):
    """The upstream answered with an error status."""

    def __init__(self, message: str, *, status_code: int, body: Any = None) -> None:
        self.status_code = status_code
        self.body = body
        super().__init__(message)


class UpstreamProtocolError(UpstreamError):
    """The upstream broke the wire protocol (malformed SSE framing, invalid JSON chunk, early close)."""


class GuardError(ToolguardError):
    """The model kept misbehaving after every retry the policy allowed.

    ``violation`` is the last verdict's error (or runaway), ``attempts`` the list of attempt records.
    """

    def __init__(self, message: str, *, violation: Any = None, attempts: list[Any] | None = None) -> None:
        self.violation = violation
        self.attempts = list(attempts or [])
        super().__init__(message)


class ToolCallRejected(GuardError):
    """Every attempt produced a tool call that failed validation."""


class RunawayGeneration(GuardError):
    """Every attempt ran into a repetition loop."""


class TruncatedToolCall(GuardError):
    """Every attempt ended (max tokens) in the middle of a tool call."""


class ToolError(ToolguardError):
    """A tool is defined wrongly (bad schema, duplicate name, unsupported signature)."""


class ConfigError(ToolguardError, ValueError):
    """Configuration is invalid (flags, environment, config file)."""


class UsageError(ToolguardError):
    """The API was used in a way it does not allow (e.g. feeding a validator after close())."""
