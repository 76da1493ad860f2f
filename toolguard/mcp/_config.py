"""``McpPolicy``: what the MCP guard allows, how long it waits, what it retries, how much it passes on.

The defaults guard without refusing anything a correct client and server do: arguments are validated, unknown
tools answered -32602, outputs checked against ``outputSchema``, results capped, error text sanitised, calls
timed out after ``timeout`` seconds and retried (only for ``readOnlyHint``/``idempotentHint`` tools) after a
transport failure or a timeout. Allow/deny lists and the refusal of destructive tools are opt-in, usually from
a policy file (TOML or JSON, ``load_policy``)::

    allow = ["get_*", "git_*"]          # only these tools may be called (globs); unset: all
    deny = ["git_reset"]
    refuse_destructive = true           # tools that are not read-only and not destructiveHint: false
    allow_destructive = ["git_commit"]  # ... unless named here
    timeout = 30                        # seconds per call; tool_timeouts = {slow_tool = 120}
    retry_attempts = 3

Raises ``ConfigError`` for impossible values or unknown keys (a typo must not silently switch a rule off).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .._exceptions import ConfigError
from .._retry import RetryPolicy

__all__ = [
    "DEFAULT_MAX_ERROR_CHARS",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_TIMEOUT",
    "IDEMPOTENCY_META_KEYS",
    "McpPolicy",
    "load_policy",
]

DEFAULT_TIMEOUT = 60.0  # seconds a tools/call may take
DEFAULT_MAX_RESULT_BYTES = 1 << 20  # a result's JSON text; larger results are withheld with the reason
DEFAULT_MAX_ERROR_CHARS = 2000  # characters of a server's error text that reach the model
DEFAULT_MAX_REMEMBERED = 4096  # answered calls remembered per session (repeated ids) and per guard (keys)
IDEMPOTENCY_META_KEYS = ("io.toolguard/idempotency-key", "idempotencyKey")
"""``params._meta`` keys naming an idempotency key: a call repeated with the same key runs once."""


def _globs(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key} must be a list of tool names or glob patterns, got {value!r}")
    return tuple(value)


def _seconds(value: Any, key: str) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value > 0)
    ):
        raise ConfigError(f"{key} must be a positive number of seconds or null, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class McpPolicy:
    """The guard's rules. See the module docstring; every field is keyword-only and has a safe default."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    refuse_destructive: bool = False
    allow_destructive: tuple[str, ...] = ()
    timeout: float | None = DEFAULT_TIMEOUT
    tool_timeouts: Mapping[str, float | None] = field(default_factory=dict)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    max_error_chars: int = DEFAULT_MAX_ERROR_CHARS
    max_remembered: int = DEFAULT_MAX_REMEMBERED
    check_output: bool = True

    def __post_init__(self) -> None:
        if self.allow is not None:
            object.__setattr__(self, "allow", _globs(self.allow, "allow"))
        object.__setattr__(self, "deny", _globs(self.deny, "deny"))
        object.__setattr__(self, "allow_destructive", _globs(self.allow_destructive, "allow_destructive"))
        object.__setattr__(self, "timeout", _seconds(self.timeout, "timeout"))
        if not isinstance(self.tool_timeouts, Mapping):
            raise ConfigError("tool_timeouts must map tool names to seconds")
        object.__setattr__(
            self,
            "tool_timeouts",
            {str(k): _seconds(v, f"tool_timeouts.{k}") for k, v in self.tool_timeouts.items()},
        )
        for name in ("max_result_bytes", "max_error_chars", "max_remembered"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")


_RETRY_KEYS = {"retry_attempts": "attempts", "retry_backoff": "backoff", "retry_max_backoff": "max_backoff"}


def policy_from_mapping(data: Mapping[str, Any]) -> McpPolicy:
    """An ``McpPolicy`` from a decoded policy file. Unknown keys raise ``ConfigError``."""
    names = {f.name for f in fields(McpPolicy)} - {"retry"}
    unknown = sorted(set(data) - names - set(_RETRY_KEYS))
    if unknown:
        raise ConfigError(
            f"unknown policy keys: {', '.join(unknown)}; known: {', '.join(sorted(names | set(_RETRY_KEYS)))}"
        )
    retry_options = {_RETRY_KEYS[k]: v for k, v in data.items() if k in _RETRY_KEYS}
    options = {k: v for k, v in data.items() if k in names}
    try:
        retry = RetryPolicy(**retry_options) if retry_options else RetryPolicy()
        return McpPolicy(retry=retry, **options)
    except TypeError as exc:  # a value of the wrong kind inside a dataclass check
        raise ConfigError(f"invalid policy: {exc}") from exc


def load_policy(path: str | Path) -> McpPolicy:
    """Read a policy file: ``.toml`` (or anything else) as TOML, ``.json`` as JSON."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the policy file {file}: {exc.strerror or exc}") from exc
    try:
        if file.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import tomllib

            data = tomllib.loads(text)
    except ValueError as exc:
        raise ConfigError(
            f"the policy file {file} is not valid {file.suffix.lstrip('.') or 'TOML'}: {exc}"
        ) from exc
    if not isinstance(data, Mapping):
        raise ConfigError(f"the policy file {file} must hold an object (a table) of policy keys")
    return policy_from_mapping(data)
