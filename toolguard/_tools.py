"""Tools and tool sets: what a model may propose to call.

A ``Tool`` pairs a name and a JSON Schema for its arguments with (optionally) the Python callable that runs it.
A ``ToolSet`` is an ordered, name-unique collection built once from Python functions, OpenAI tool JSON or MCP
tool listings; schemas are normalised on the way in (``toolguard._schema.normalize_schema``) so every other
component sees plain JSON Schema. A ``ToolCall`` is a *proposal* made by a model: it runs only through the
``Executor``, which turns it into an ``ExecutionRecord``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from ._exceptions import SchemaError, ToolError
from ._schema import normalize_schema

__all__ = ["Tool", "ToolCall", "ToolSet", "tool"]

_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call *proposed* by a model. ``arguments`` is the raw JSON text the model wrote."""

    name: str
    arguments: str = "{}"
    id: str | None = None

    def parsed_arguments(self) -> Any:
        """``json.loads(arguments)``; raises ``ValueError`` on malformed JSON."""
        return json.loads(self.arguments) if self.arguments.strip() else {}

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``tool_calls`` entry for this proposal."""
        return {
            "id": self.id or "",
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True, eq=False)
class Tool:
    """One tool: a name, a description, the JSON Schema of its arguments, and optionally its implementation.

    ``idempotent`` tells the executor that re-running after an ambiguous failure (timeout) is safe;
    ``timeout`` (seconds) overrides the executor's default for this tool.
    """

    name: str
    parameters: Any = field(default_factory=lambda: dict(_EMPTY_OBJECT))
    description: str = ""
    fn: Callable[..., Any] | None = None
    idempotent: bool = False
    timeout: float | None = None
    strict: bool = False
    model: Any = None  # pydantic model used to coerce arguments before calling ``fn`` (from @tool)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ToolError(f"a tool needs a non-empty string name, got {self.name!r}")
        object.__setattr__(self, "parameters", normalize_schema(self.parameters, tool=self.name))

    @property
    def is_async(self) -> bool:
        return self.fn is not None and inspect.iscoroutinefunction(self.fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fn is None:
            raise ToolError(f"tool {self.name!r} has no implementation")
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"

    def to_openai(self) -> dict[str, Any]:
        function: dict[str, Any] = {"name": self.name, "parameters": self.parameters}
        if self.description:
            function["description"] = self.description
        if self.strict:
            function["strict"] = True
        return {"type": "function", "function": function}


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = ..., description: str | None = ..., idempotent: bool = ..., timeout: float | None = ...
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed Python function (sync or async) into a ``Tool``.

    The argument schema comes from the signature via pydantic; the description from the docstring's first
    paragraph. Arguments are coerced by pydantic before the call.
    """

    def build(f: Callable[..., Any]) -> Tool:
        from ._signature import model_from_signature

        model, schema, doc = model_from_signature(f)
        return Tool(
            name=name or f.__name__,
            parameters=schema,
            description=description if description is not None else doc,
            fn=f,
            idempotent=idempotent,
            timeout=timeout,
            model=model,
        )

    if fn is not None:
        return build(fn)
    return build


class ToolSet:
    """An ordered collection of tools with unique names."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            t = item if isinstance(item, Tool) else tool(item)
            if t.name in self._tools:
                raise ToolError(f"duplicate tool name {t.name!r}")
            self._tools[t.name] = t

    # construction -----------------------------------------------------------------------------------------
    @classmethod
    def from_openai(cls, tools: Iterable[Mapping[str, Any]]) -> ToolSet:
        """Build from OpenAI ``tools`` JSON (``{"type": "function", "function": {...}}``) or bare functions."""
        out = []
        for i, entry in enumerate(tools):
            if not isinstance(entry, Mapping):
                raise ToolError(f"tools[{i}] must be an object, not {type(entry).__name__}")
            fn = entry.get("function", entry) if entry.get("type", "function") == "function" else None
            if not isinstance(fn, Mapping):
                raise ToolError(f"tools[{i}] is not a function tool: {entry.get('type')!r}")
            try:
                out.append(
                    Tool(
                        name=fn.get("name", ""),
                        parameters=fn.get("parameters", _EMPTY_OBJECT),
                        description=fn.get("description") or "",
                        strict=bool(fn.get("strict", False)),
                    )
                )
            except SchemaError:
                raise
        return cls(out)

    @classmethod
    def from_mcp(cls, tools: Iterable[Mapping[str, Any]]) -> ToolSet:
        """Build from an MCP ``tools/list`` result (each tool has ``name``, ``description``, ``inputSchema``).

        MCP's ``annotations.idempotentHint`` sets ``idempotent``.
        """
        out = []
        for i, entry in enumerate(tools):
            if not isinstance(entry, Mapping):
                raise ToolError(f"tools[{i}] must be an object, not {type(entry).__name__}")
            annotations = entry.get("annotations") or {}
            out.append(
                Tool(
                    name=entry.get("name", ""),
                    parameters=entry.get("inputSchema", _EMPTY_OBJECT),
                    description=entry.get("description") or "",
                    idempotent=bool(annotations.get("idempotentHint", False)),
                )
            )
        return cls(out)

    def to_openai(self) -> list[dict[str, Any]]:
        return [t.to_openai() for t in self._tools.values()]

    # collection protocol ----------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __getitem__(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise KeyError(f"unknown tool {name!r}; known tools: {', '.join(self._tools) or '(none)'}") from None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def __repr__(self) -> str:
        return f"ToolSet({self.names!r})"
