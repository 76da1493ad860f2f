"""Request limits: what a client may ask the proxy to hold and validate.

Every cap is a named default, gathered in ``RequestLimits``. ``check_chat_request`` walks the request once,
O(size of the request without its tools), and ``check_tools`` walks the tools (only when a ``tools`` JSON is
new to the proxy's cache), before any schema is compiled, so an oversized or absurdly nested schema is
refused with a 400 before it can cost CPU. The nesting cap on the whole body (``max_body_depth``) keeps every
later step that recurses (encoding the body for the upstream) far from Python's recursion limit. What a
schema *means* (remote ``$ref`` refused, regex and size limits) is the validator's business: a
``SchemaError`` it raises becomes a 400 too, in ``_app``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_BODY_DEPTH",
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_MAX_SCHEMA_BYTES",
    "DEFAULT_MAX_SCHEMA_DEPTH",
    "DEFAULT_MAX_TOOLS",
    "DEFAULT_MAX_UPSTREAM_BODY_BYTES",
    "RequestLimits",
    "check_chat_request",
    "check_tools",
]

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
#: JSON nesting of a whole chat request: well above a tool schema at ``DEFAULT_MAX_SCHEMA_DEPTH`` inside
#: ``tools[i].function.parameters``, well below what ``json`` can encode before Python's recursion limit.
DEFAULT_MAX_BODY_DEPTH = 128
DEFAULT_MAX_TOOLS = 128
DEFAULT_MAX_SCHEMA_BYTES = 64 * 1024
DEFAULT_MAX_SCHEMA_DEPTH = 32
DEFAULT_MAX_MESSAGES = 4096
DEFAULT_MAX_UPSTREAM_BODY_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """Caps on one client request (bytes, counts, JSON nesting) and on one buffered upstream answer."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_tools: int = DEFAULT_MAX_TOOLS
    max_schema_bytes: int = DEFAULT_MAX_SCHEMA_BYTES
    max_schema_depth: int = DEFAULT_MAX_SCHEMA_DEPTH
    max_messages: int = DEFAULT_MAX_MESSAGES
    max_upstream_body_bytes: int = DEFAULT_MAX_UPSTREAM_BODY_BYTES
    max_body_depth: int = DEFAULT_MAX_BODY_DEPTH


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value, iteratively; stops counting past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        if isinstance(node, Mapping):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


def check_chat_request(body: Any, limits: RequestLimits) -> str | None:
    """The first limit (or shape rule) ``body`` breaks, as a message for the client; ``None`` when it fits."""
    if not isinstance(body, Mapping):
        return "the request body must be a JSON object"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    if len(messages) > limits.max_messages:
        return f"too many messages: {len(messages)} > {limits.max_messages}"
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        return "'tools' must be an array"
    rest = {k: v for k, v in body.items() if k != "tools"}  # the tools are measured by check_tools
    if _depth(rest, limits.max_body_depth) > limits.max_body_depth:
        return f"the request body nests deeper than {limits.max_body_depth} levels"
    return None


def check_tools(tools: list[Any], limits: RequestLimits) -> str | None:
    """The first limit the ``tools`` array breaks (count, schema bytes, schema nesting); ``None`` if none.

    Callers cache the answer per distinct ``tools`` JSON: the walk is O(size of the schemas)."""
    if len(tools) > limits.max_tools:
        return f"too many tools: {len(tools)} > {limits.max_tools} (raise max_tools in the proxy config)"
    if _depth(tools, limits.max_body_depth - 1) > limits.max_body_depth - 1:  # 'tools' is one level down
        return f"the request body nests deeper than {limits.max_body_depth} levels (in 'tools')"
    for i, entry in enumerate(tools):
        if not isinstance(entry, Mapping):
            return f"tools[{i}] must be an object"
        fn = entry.get("function")
        if not isinstance(fn, Mapping):
            return f"tools[{i}].function must be an object"
        params = fn.get("parameters", {})
        size = len(json.dumps(params, separators=(",", ":")))
        if size > limits.max_schema_bytes:
            return (
                f"tools[{i}] ({fn.get('name')!r}): parameters schema is {size} bytes"
                f" > {limits.max_schema_bytes}"
                " (raise max_schema_bytes in the proxy config)"
            )
        depth = _depth(params, limits.max_schema_depth)
        if depth > limits.max_schema_depth:
            return (
                f"tools[{i}] ({fn.get('name')!r}): parameters schema nests deeper than"
                f" {limits.max_schema_depth} levels (raise max_schema_depth in the proxy config)"
            )
    return None
