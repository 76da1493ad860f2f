"""Proxy configuration: one JSON Schema, three sources (flags, environment, file), one frozen record.

``CONFIG_SCHEMA`` is the single truth about every option: its type, range and default.
``schemas/config.schema.json`` is this dict written out (``write_schema("schemas/config.schema.json")``; a
test checks they agree), so editors can validate a config file. ``load_config`` merges, lowest first: the
schema's defaults, the config file (JSON or TOML; a TOML file may nest the keys under ``[proxy]``), the
environment (``TOOLGUARD_PROXY_<KEY>``, converted by the schema's type) and explicit overrides (CLI flags,
keyword arguments), then validates the result against the schema and returns a ``ProxyConfig``. Secrets
(``auth_token``, ``upstream_api_key``) are kept out of ``repr`` and never logged.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from .._exceptions import ConfigError
from .._policy import DEFAULT_POLICY as _P
from .._policy import Policy
from .._reask import DEFAULT_UPSTREAM_RETRIES
from ..engines._requests import ENGINES
from ..formats import FORMATS
from ._limits import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_MESSAGES,
    DEFAULT_MAX_SCHEMA_BYTES,
    DEFAULT_MAX_SCHEMA_DEPTH,
    DEFAULT_MAX_TOOLS,
    DEFAULT_MAX_UPSTREAM_BODY_BYTES,
    RequestLimits,
)

__all__ = [
    "CONFIG_SCHEMA",
    "ENV_PREFIX",
    "FabricatedAction",
    "GuardMode",
    "HintStyle",
    "ProtocolMode",
    "ProxyConfig",
    "RunawayAction",
    "load_config",
    "schema_text",
    "write_schema",
]

ENV_PREFIX = "TOOLGUARD_PROXY_"

GuardMode = Literal["hold", "pass"]
RunawayAction = Literal["retry", "stop", "error"]
HintStyle = Literal["structured_outputs", "guided_json"]
FabricatedAction = Literal["cut", "reask"]
ProtocolMode = Literal["auto", "native", "translate"]


def _num(default: float, minimum: float, description: str, *, integer: bool = False) -> dict[str, Any]:
    return {
        "type": "integer" if integer else "number",
        "minimum": minimum,
        "default": default,
        "description": description,
    }


_PROPERTIES: dict[str, Any] = {
    "upstream": {
        "type": "string",
        "pattern": "^https?://",
        "description": "Base URL of the OpenAI-compatible upstream, as you would give the openai SDK"
        " (e.g. http://localhost:8000/v1). A URL with no path gets /v1.",
    },
    "host": {
        "type": "string",
        "default": "127.0.0.1",
        "description": "Interface to bind. 0.0.0.0 exposes it.",
    },
    "port": {
        "type": "integer",
        "minimum": 0,
        "maximum": 65535,
        "default": 8787,
        "description": "Port to bind.",
    },
    "mode": {
        "enum": ["hold", "pass"],
        "default": "hold",
        "description": "hold: buffer each tool call until it validates (a failed call is retried, the client"
        " never sees it). pass: forward validated prefixes at once; a violation ends the stream with an error"
        " event.",
    },
    "max_reasks": _num(
        _P.max_reasks,
        0,
        "Re-asks after an invalid call (rejected arguments, unknown tool, a call written"
        " into the text, a required call missing).",
        integer=True,
    ),
    "runaway_action": {
        "enum": ["retry", "stop", "error"],
        "default": "retry",
        "description": "On a repetition loop: retry with changed sampling (up to max_runaway_retries, when"
        " nothing of the loop was shown yet), else stop with finish_reason 'repetition'; 'stop' never"
        " retries; 'error' ends with an error instead.",
    },
    "max_runaway_retries": _num(_P.max_runaway_retries, 0, "Retries after a repetition loop.", integer=True),
    "max_truncation_retries": _num(
        _P.max_truncation_retries,
        0,
        "Retries with a larger max_tokens after a call cut by the token limit.",
        integer=True,
    ),
    "max_attempts": _num(
        _P.max_attempts, 1, "Upstream attempts per request, every reason together.", integer=True
    ),
    "on_fabricated": {
        "enum": ["cut", "reask"],
        "default": _P.on_fabricated,
        "description": "Text after a tool call: cut it (the calls stand) or re-ask.",
    },
    "repair_calls": {
        "type": "boolean",
        "default": _P.repair_calls,
        "description": "A valid call the upstream left in the message text (<tool_call>{...}, [TOOL_CALLS],"
        " <|python_tag|>, a bare JSON call naming an offered tool) is delivered as a tool call on the first"
        " attempt; --no-repair-calls re-asks it instead.",
    },
    "call_format": {
        "enum": list(FORMATS),
        "default": _P.call_format,
        "description": "The wire format of calls written as text (auto: detected from the marker).",
    },
    "call_formats": {
        "type": "object",
        "additionalProperties": {"enum": list(FORMATS)},
        "default": {},
        "description": "Call format per model name (shell patterns, e.g. {'*Llama-3*': 'llama3'}); the first"
        " match wins over call_format. Config file or JSON in TOOLGUARD_PROXY_CALL_FORMATS.",
    },
    "engine_constraints": {
        "enum": ["auto", "off"],
        "default": "auto",
        "description": "auto: ask engines that can (vLLM, SGLang) to enforce the whole turn with a structural"
        " tag built from the tools (never over the client's own response_format/structured_outputs; a"
        " refused constraint is dropped and the request sent again); off: send requests as they came.",
    },
    "engine": {
        "enum": ["auto", *ENGINES],
        "default": "auto",
        "description": "The upstream engine (auto: detected from /v1/models owned_by and server headers,"
        " once per upstream).",
    },
    "engine_call_format": {
        "enum": ["hermes", "llama3", "mistral"],
        "default": "hermes",
        "description": "The call syntax the served model's chat template uses, for the engine constraint.",
    },
    "protocols": {
        "enum": ["auto", "native", "translate"],
        "default": "auto",
        "description": "How /v1/messages and /v1/responses reach the upstream. auto: in the protocol's own"
        " terms at the upstream's /v1/messages or /v1/responses; an upstream that answers 404/405/501 there"
        " lacks the endpoint: the request is served over its chat completions at once, and that is"
        " remembered for the protocol. native: never translated (a 404 reaches the client). translate:"
        " always over chat completions (the engine constraint applies).",
    },
    "structured_output_hints": {
        "type": "boolean",
        "default": False,
        "description": "For a named or 'required' tool_choice, add the upstream's structured-output parameter"
        " so it constrains the arguments at the source (vLLM-style upstreams).",
    },
    "hint_style": {
        "enum": ["structured_outputs", "guided_json"],
        "default": "structured_outputs",
        "description": "structured_outputs: {'structured_outputs': {'json': schema}} (vLLM >= 0.10.2);"
        " guided_json: {'guided_json': schema} (older vLLM).",
    },
    "auth_token": {
        "type": ["string", "null"],
        "default": None,
        "description": "When set, clients must send 'Authorization: Bearer <token>'.",
    },
    "upstream_api_key": {
        "type": ["string", "null"],
        "default": None,
        "description": "Key sent upstream as a bearer token. Unset: the client's Authorization header is"
        " forwarded (unless auth_token is set, in which case none is sent).",
    },
    "upstream_retries": _num(
        DEFAULT_UPSTREAM_RETRIES,
        0,
        "Retries after an upstream 408/409/429/5xx, timeout, dropped connection or broken stream.",
        integer=True,
    ),
    "backoff_initial": _num(_P.backoff_initial, 0, "First retry delay in seconds; doubles each retry."),
    "backoff_max": _num(_P.backoff_max, 0, "Largest computed retry delay in seconds."),
    "max_retry_after": _num(
        _P.max_retry_after, 0, "Longest upstream retry-after honoured; a longer one is handed to the client."
    ),
    "connect_timeout": _num(5.0, 0.001, "Seconds to connect to the upstream."),
    "read_timeout": _num(60.0, 0.001, "Seconds to wait for the upstream's next bytes (first byte included)."),
    "deadline": _num(600.0, 0.001, "Overall seconds per client request, retries included."),
    "max_connections": _num(256, 1, "Upstream connection pool size.", integer=True),
    "trust_env": {
        "type": "boolean",
        "default": False,
        "description": "Let the upstream client read HTTP(S)_PROXY and SSL variables from the environment.",
    },
    "max_body_bytes": _num(DEFAULT_MAX_BODY_BYTES, 1, "Largest client request body.", integer=True),
    "max_tools": _num(DEFAULT_MAX_TOOLS, 0, "Most tools in one request.", integer=True),
    "max_schema_bytes": _num(
        DEFAULT_MAX_SCHEMA_BYTES, 2, "Largest parameters schema of one tool.", integer=True
    ),
    "max_schema_depth": _num(
        DEFAULT_MAX_SCHEMA_DEPTH, 1, "Deepest JSON nesting of one schema.", integer=True
    ),
    "max_messages": _num(DEFAULT_MAX_MESSAGES, 1, "Most messages in one request.", integer=True),
    "max_upstream_body_bytes": _num(
        DEFAULT_MAX_UPSTREAM_BODY_BYTES,
        1,
        "Largest non-streamed upstream answer the proxy will buffer.",
        integer=True,
    ),
    "log_level": {
        "enum": ["critical", "error", "warning", "info", "debug"],
        "default": "info",
        "description": "Log level of the server.",
    },
    "log_format": {
        "enum": ["logfmt", "json"],
        "default": "logfmt",
        "description": "Shape of the one log line per decision (released, cut, re-asked, retried, gave-up).",
    },
    "log_arguments": {
        "type": "boolean",
        "default": False,
        "description": "Add the violation's JSON pointer and message (which may quote argument keys and"
        " values) to decision log lines. Off: lines carry the verdict kind, tool, keyword and offset only.",
    },
}

CONFIG_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://github.com/toolguard/toolguard/schemas/config.schema.json",
    "title": "toolguard proxy configuration",
    "description": "Options of `toolguard proxy`: a JSON or TOML file (keys at the top level, or under"
    " [proxy] in TOML), TOOLGUARD_PROXY_<KEY> environment variables, or --<key> flags (underscores become"
    " dashes).",
    "type": "object",
    "properties": _PROPERTIES,
    "required": ["upstream"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    """Every option of the proxy; see ``CONFIG_SCHEMA`` for meanings. Validated on construction."""

    upstream: str
    host: str = "127.0.0.1"
    port: int = 8787
    mode: GuardMode = "hold"
    max_reasks: int = _P.max_reasks
    runaway_action: RunawayAction = "retry"
    max_runaway_retries: int = _P.max_runaway_retries
    max_truncation_retries: int = _P.max_truncation_retries
    max_attempts: int = _P.max_attempts
    on_fabricated: FabricatedAction = _P.on_fabricated
    repair_calls: bool = _P.repair_calls
    call_format: str = _P.call_format
    call_formats: dict[str, str] = field(default_factory=dict)
    engine_constraints: str = "auto"
    engine: str = "auto"
    engine_call_format: str = "hermes"
    protocols: ProtocolMode = "auto"
    structured_output_hints: bool = False
    hint_style: HintStyle = "structured_outputs"
    auth_token: str | None = field(default=None, repr=False)
    upstream_api_key: str | None = field(default=None, repr=False)
    upstream_retries: int = DEFAULT_UPSTREAM_RETRIES
    backoff_initial: float = _P.backoff_initial
    backoff_max: float = _P.backoff_max
    max_retry_after: float = _P.max_retry_after
    connect_timeout: float = 5.0
    read_timeout: float = 60.0
    deadline: float = 600.0
    max_connections: int = 256
    trust_env: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_tools: int = DEFAULT_MAX_TOOLS
    max_schema_bytes: int = DEFAULT_MAX_SCHEMA_BYTES
    max_schema_depth: int = DEFAULT_MAX_SCHEMA_DEPTH
    max_messages: int = DEFAULT_MAX_MESSAGES
    max_upstream_body_bytes: int = DEFAULT_MAX_UPSTREAM_BODY_BYTES
    log_level: str = "info"
    log_format: str = "logfmt"
    log_arguments: bool = False

    def __post_init__(self) -> None:
        _validate(asdict(self))
        upstream = self.upstream.rstrip("/")
        rest = upstream.partition("://")[2]
        if "/" not in rest:
            upstream += "/v1"
        object.__setattr__(self, "upstream", upstream)

    @property
    def policy(self) -> Policy:
        """The re-ask/retry ``Policy`` these options give (shared with the SDK wrapper)."""
        return Policy(
            max_reasks=self.max_reasks,
            max_runaway_retries=self.max_runaway_retries if self.runaway_action == "retry" else 0,
            max_truncation_retries=self.max_truncation_retries,
            max_upstream_retries=self.upstream_retries,
            max_attempts=self.max_attempts,
            stream=self.mode,
            on_fabricated=self.on_fabricated,
            repair_calls=self.repair_calls,
            call_format=self.call_format,
            backoff_initial=self.backoff_initial,
            backoff_max=self.backoff_max,
            max_retry_after=self.max_retry_after,
        )

    @property
    def limits(self) -> RequestLimits:
        return RequestLimits(
            max_body_bytes=self.max_body_bytes,
            max_tools=self.max_tools,
            max_schema_bytes=self.max_schema_bytes,
            max_schema_depth=self.max_schema_depth,
            max_messages=self.max_messages,
            max_upstream_body_bytes=self.max_upstream_body_bytes,
        )

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> ProxyConfig:
        """Build from a plain mapping (a parsed config file); unknown keys raise ``ConfigError``."""
        data = dict(values)
        _validate(data)
        return cls(**data)


def _validate(data: Mapping[str, Any]) -> None:
    from jsonschema import Draft202012Validator

    errors = sorted(
        Draft202012Validator(CONFIG_SCHEMA).iter_errors(dict(data)), key=lambda e: list(e.absolute_path)
    )
    if errors:
        lines = []
        for err in errors:
            where = ".".join(str(p) for p in err.absolute_path) or "(config)"
            lines.append(f"{where}: {_redact(err.message, data)}")
        raise ConfigError("invalid proxy configuration: " + "; ".join(lines))


def _redact(message: str, data: Mapping[str, Any]) -> str:
    for key in ("auth_token", "upstream_api_key"):
        secret = data.get(key)
        if isinstance(secret, str) and secret:
            message = message.replace(secret, "***")
    return message


def _read_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {str(p)!r}: {exc.strerror or exc}") from exc
    try:
        if p.suffix.lower() == ".toml":
            data: Any = tomllib.loads(text)
            if isinstance(data, dict) and isinstance(data.get("proxy"), dict) and len(data) == 1:
                data = data["proxy"]
        else:
            data = json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"config file {str(p)!r} is not valid {p.suffix.lstrip('.') or 'JSON'}: {exc}"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {str(p)!r} must hold an object of options")
    return data


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, prop in _PROPERTIES.items():
        raw = env.get(ENV_PREFIX + key.upper())
        if raw is None:
            continue
        kind = prop.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        try:
            if "boolean" in kinds:
                lowered = raw.strip().lower()
                if lowered not in {"1", "0", "true", "false", "yes", "no", "on", "off"}:
                    raise ValueError(raw)
                out[key] = lowered in {"1", "true", "yes", "on"}
            elif "object" in kinds:
                out[key] = json.loads(raw)
            elif "integer" in kinds:
                out[key] = int(raw)
            elif "number" in kinds:
                out[key] = float(raw)
            else:
                out[key] = raw
        except ValueError:
            shown = "***" if key in ("auth_token", "upstream_api_key") else repr(raw)
            raise ConfigError(f"{ENV_PREFIX}{key.upper()}={shown} is not a valid {kinds[0]}") from None
    return out


def load_config(
    *,
    file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> ProxyConfig:
    """Merge defaults < ``file`` < ``env`` (``TOOLGUARD_PROXY_*``) < ``overrides``; validate; return it.

    ``env`` defaults to no environment (pass ``os.environ`` to read it). Raises ``ConfigError`` naming the bad
    key.
    """
    merged: dict[str, Any] = {}
    if file is not None:
        merged.update(_read_file(file))
    if env is not None:
        merged.update(_from_env(env))
    merged.update({k: v for k, v in (overrides or {}).items() if v is not None})
    known = {f.name for f in fields(ProxyConfig)}
    unknown = sorted(set(merged) - known)
    if unknown:
        raise ConfigError(f"unknown proxy option(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if "upstream" not in merged:
        raise ConfigError(
            "no upstream: pass --upstream URL, set TOOLGUARD_PROXY_UPSTREAM or 'upstream' in the file"
        )
    return ProxyConfig.from_mapping(merged)


def schema_text() -> str:
    """``CONFIG_SCHEMA`` as the text of ``schemas/config.schema.json``."""
    return json.dumps(CONFIG_SCHEMA, indent=2) + "\n"


def write_schema(path: str | os.PathLike[str]) -> None:
    """Regenerate ``schemas/config.schema.json`` after changing an option."""
    Path(path).write_text(schema_text(), encoding="utf-8")
