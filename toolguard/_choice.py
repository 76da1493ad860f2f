"""``tool_choice`` read once: every door and engine asks this module what a request's choice means.

Theory of operation. ``parse_tool_choice(tool_choice, tools)`` turns the spellings clients send into one
``ParsedToolChoice`` (``toolguard._types``): a mode (``auto``, ``required``, ``none``), the names a call may
use and, for a named choice, the one tool it demands. The Guard (which names a call may use, whether a turn
without a call is a violation), the local processor and ``serve`` (which grammar to build), the vLLM plugin
and the structural-tag builder (which tags, ``at_least_one``), the proxy and the SDK (a 400 before anything
goes upstream) all read that value, so they cannot disagree.

Accepted spellings:

- ``None``/``"auto"``, ``"none"``, ``"required"`` and ``"any"`` (Anthropic's and Mistral's word for it);
- ``{"type": "function", "function": {"name": ...}}`` (OpenAI), ``{"type": "tool", "name": ...}``
  (Anthropic) and ``{"name": ...}``; ``{"type": "auto" | "any" | "none" | "required"}`` (Anthropic);
- ``{"type": "allowed_tools", "allowed_tools": {"mode": "auto" | "required", "tools": [...]}}`` (OpenAI):
  calls limited to the listed tools;
- a bare tool name, as the local API has always taken it (``tool_choice="get_weather"``).

Anything else, a name that is not one of the offered tools, and ``required`` or a named tool without tools,
raise ``UsageError`` with a message that says what is accepted; the proxy and ``serve`` answer it with a 400
``invalid_request`` before any upstream request or generation. ``auto`` without tools reads as ``none``.
Pure and cheap: O(number of tools).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._exceptions import UsageError
from ._types import ParsedToolChoice

__all__ = ["parse_tool_choice"]

_KEYWORDS = {"auto": "auto", "none": "none", "required": "required", "any": "required"}
_ACCEPTED = "'auto', 'none', 'required' (or 'any') or {'type': 'function', 'function': {'name': ...}}"


def parse_tool_choice(tool_choice: Any, tools: Iterable[str] | Any) -> ParsedToolChoice:
    """``tool_choice`` (any accepted spelling, see the module docstring) read against ``tools`` (a
    ``ToolSet`` or the offered names); a ``ParsedToolChoice`` comes back as it is. Raises ``UsageError``
    for a choice the request cannot keep."""
    if isinstance(tool_choice, ParsedToolChoice):
        return tool_choice
    names = tuple(getattr(tools, "names", tools))
    if tool_choice is None:
        tool_choice = "auto"
    if isinstance(tool_choice, Mapping):
        return _parse_object(tool_choice, names)
    if not isinstance(tool_choice, str):
        raise UsageError(f"tool_choice must be {_ACCEPTED}, not {tool_choice!r}")
    mode = _KEYWORDS.get(tool_choice)
    if mode is None:
        if tool_choice in names:  # a bare tool name (the local API's shorthand)
            return ParsedToolChoice("required", (tool_choice,), tool_choice)
        raise UsageError(
            f"tool_choice {tool_choice!r} is neither a keyword nor an offered tool: use {_ACCEPTED}"
        )
    return _keyword(mode, names)


def _keyword(mode: str, names: tuple[str, ...]) -> ParsedToolChoice:
    if mode == "none" or (mode == "auto" and not names):
        return ParsedToolChoice("none", ())
    if mode == "required":
        if not names:
            raise UsageError("tool_choice 'required' needs at least one tool, and the request offers none")
        return ParsedToolChoice("required", names)
    return ParsedToolChoice("auto", names)


def _parse_object(choice: Mapping[str, Any], names: tuple[str, ...]) -> ParsedToolChoice:
    kind = choice.get("type")
    if not isinstance(kind, str | None):
        raise UsageError(f"tool_choice type must be a string, not {kind!r}: use {_ACCEPTED}")
    if kind == "allowed_tools":
        return _allowed_tools(choice.get("allowed_tools"), names)
    if kind in _KEYWORDS and "name" not in choice and "function" not in choice:
        return _keyword(_KEYWORDS[kind], names)
    if kind not in (None, "function", "tool"):
        raise UsageError(f"tool_choice type {kind!r} is not 'function' or 'allowed_tools': use {_ACCEPTED}")
    fn = choice.get("function")
    name = fn.get("name") if isinstance(fn, Mapping) else choice.get("name")
    if not isinstance(name, str):
        raise UsageError(f"a tool_choice object needs function.name, got {dict(choice)!r}")
    return _named(name, names)


def _named(name: str, names: tuple[str, ...]) -> ParsedToolChoice:
    if not names:
        raise UsageError(f"tool_choice names the tool {name!r}, but the request offers no tools")
    if name not in names:
        raise UsageError(f"tool_choice names {name!r}, which is not one of the tools {list(names)}")
    return ParsedToolChoice("required", (name,), name)


def _allowed_tools(spec: Any, names: tuple[str, ...]) -> ParsedToolChoice:
    if not isinstance(spec, Mapping) or not isinstance(spec.get("tools"), list):
        raise UsageError("tool_choice allowed_tools needs {'mode': 'auto' | 'required', 'tools': [...]}")
    mode = spec.get("mode", "auto")
    if mode not in ("auto", "required"):
        raise UsageError(f"tool_choice allowed_tools mode must be 'auto' or 'required', not {mode!r}")
    allowed: list[str] = []
    for entry in spec["tools"]:
        entry = entry if isinstance(entry, Mapping) else {}
        fn = entry.get("function")
        name = fn.get("name") if isinstance(fn, Mapping) else entry.get("name")
        if not isinstance(name, str):
            raise UsageError(f"each allowed_tools entry needs a function name, got {entry!r}")
        allowed.append(_named(name, names).names[0])
    if not allowed:
        raise UsageError("tool_choice allowed_tools lists no tools")
    subset = tuple(n for n in names if n in set(allowed))
    return ParsedToolChoice("required" if mode == "required" else "auto", subset)
