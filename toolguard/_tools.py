"""Tools and tool sets: what a model may propose to call.

A ``Tool`` pairs a name and a JSON Schema for its arguments with (optionally) the Python callable that runs
it. A ``ToolSet`` is an ordered, name-unique collection built once from Python functions, OpenAI tool JSON or
MCP tool listings. Schemas are normalised on the way in (``toolguard._schema.normalize_schema``) and checked
against the metaschema of their draft, so every other component sees plain, valid JSON Schema and a bad schema
is refused at construction with an error naming the tool. A ``ToolCall`` is a *proposal* made by a model: it
runs only through the ``Executor``, which turns it into an ``ExecutionRecord``.

Construction costs one metaschema check per tool (the metaschema compiled once into closures,
``toolguard._schema._metacheck``, with jsonschema's own check behind it for every schema those do not pass,
so refusals keep jsonschema's reasons); nothing here does I/O.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, overload

from ._exceptions import SchemaError, ToolError
from ._regex import ecma_error
from ._schema import detect_draft, normalize_schema
from ._schema._metacheck import metaschema_check

__all__ = ["Tool", "ToolCall", "ToolSet", "tool"]

_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True, init=False)
class ToolCall:
    """A tool call *proposed* by a model. ``arguments`` is the raw JSON text the model wrote.

    The text is kept as written, never re-serialised (``toolguard.formats`` parses it as the span of the
    arguments object, so ``1e999``, ``1.0``, ``-0``, big integers and key order survive); decode it with
    ``parsed_arguments`` when a value is needed.

    Calls built by code carry objects (an Anthropic ``tool_use.input``, a test): ``arguments`` may be a
    mapping, serialised here once (``json.dumps``, key order kept, no NaN or infinity), so ``arguments`` is
    always text afterwards. Anything else (a list, bytes, a value JSON cannot hold) raises ``TypeError`` at
    construction, never later inside the executor.

    ``id`` is the call id the model (or API) gave, ``None`` when the wire format carries none. A proposal is
    not an execution: only ``Executor.execute`` turns it into an ``ExecutionRecord``.
    """

    name: str
    arguments: str
    id: str | None

    def __init__(self, name: str, arguments: str | Mapping[str, Any] = "{}", id: str | None = None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"ToolCall name must be a string, not {type(name).__name__}")
        if id is not None and not isinstance(id, str):
            raise TypeError(f"ToolCall id must be a string or None, not {type(id).__name__}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "arguments", arguments_text(arguments))
        object.__setattr__(self, "id", id)

    def parsed_arguments(self) -> Any:
        """``json.loads(arguments)`` (``{}`` for blank text); raises ``ValueError`` on malformed JSON."""
        return json.loads(self.arguments) if self.arguments.strip() else {}

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``tool_calls`` entry for this proposal."""
        return {
            "id": self.id or "",
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    @classmethod
    def from_openai(cls, entry: Mapping[str, Any]) -> ToolCall:
        """Read an OpenAI ``tool_calls`` entry (``{"id", "type", "function": {"name", "arguments"}}``).

        ``arguments`` given as an object (some servers do this) is serialised to JSON text: it has no text of
        its own, so that is the one place a call's arguments are re-serialised (pass the JSON string to keep
        number spellings).
        """
        fn = entry.get("function", entry)
        if not isinstance(fn, Mapping):
            raise ToolError(f"a tool call entry needs a 'function' object, got {fn!r}")
        arguments = fn.get("arguments", "{}")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, (str, Mapping)):
            raise ToolError(
                f"a tool call's arguments must be JSON text or an object, got {type(arguments).__name__}"
            )
        call_id = entry.get("id")
        return cls(name=str(fn.get("name") or ""), arguments=arguments, id=str(call_id) if call_id else None)


def arguments_text(arguments: str | Mapping[str, Any]) -> str:
    """The JSON text of a call's arguments: text as given, a mapping serialised once (key order kept).

    Raises ``TypeError`` for anything else, and for a mapping JSON cannot hold (a non-string key, a value
    that is not JSON, NaN or infinity), saying what to pass instead.
    """
    if isinstance(arguments, str):
        return arguments
    if not isinstance(arguments, Mapping):
        raise TypeError(
            f"ToolCall arguments must be JSON text or a mapping, not {type(arguments).__name__}; "
            "tool arguments are one JSON object"
        )
    if not all(isinstance(key, str) for key in arguments):
        raise TypeError("ToolCall arguments: every key of the mapping must be a string (JSON object keys)")
    try:
        return json.dumps(dict(arguments), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"ToolCall arguments cannot be written as JSON: {exc}") from None


def _check_schema(schema: Any, tool: str) -> None:
    """Refuse a schema that is not valid under its draft's metaschema, or does not describe an object."""
    from jsonschema import SchemaError as JSONSchemaError
    from jsonschema.validators import validator_for

    if isinstance(schema, bool):
        return
    declared_draft = schema.get("$schema")
    if declared_draft is not None and not isinstance(declared_draft, str):
        # jsonschema's validator_for would fail on it with an AttributeError, not a SchemaError.
        raise SchemaError(
            f"$schema must be a metaschema URI (a string), got {declared_draft!r}", path="/$schema", tool=tool
        )
    draft = detect_draft(schema)
    cls = validator_for(schema, default=validator_for({"$schema": _DRAFT_URI[draft]}))
    checker = _format_checker(cls)
    fast = metaschema_check(cls, checker)
    if fast is None or not fast(schema):  # not decided by the compiled metaschema: jsonschema decides
        try:
            cls.check_schema(schema, format_checker=checker)
        except JSONSchemaError as exc:
            path = "".join(f"/{p}" for p in exc.absolute_path)
            raise SchemaError(f"invalid {draft} schema: {exc.message}", path=path, tool=tool) from exc
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else declared
    if isinstance(types, list) and "object" not in types:
        raise SchemaError(
            f"tool arguments are a JSON object, but the parameters schema has type {declared!r}; "
            "wrap the value in an object property",
            path="/type",
            tool=tool,
        )


_FORMAT_CHECKERS: dict[Any, Any] = {}


def _format_checker(cls: Any) -> Any:
    """The metaschema's format checker with ``regex`` read as JSON Schema says: an ECMA-262 pattern
    (jsonschema's own check uses Python's ``re``, which rejects Annex B forms such as ``[\\w-\\.]``)."""
    checker = _FORMAT_CHECKERS.get(cls)
    if checker is None:
        from jsonschema import FormatChecker

        checker = FormatChecker(formats=())
        checker.checkers = {**cls.FORMAT_CHECKER.checkers, "regex": (_is_ecma_regex, ValueError)}
        _FORMAT_CHECKERS[cls] = checker
    return checker


def _is_ecma_regex(instance: object) -> bool:
    if isinstance(instance, str) and (why := ecma_error(instance)) is not None:
        raise ValueError(why)
    return True


_DRAFT_URI = {
    "draft4": "http://json-schema.org/draft-04/schema#",
    "draft6": "http://json-schema.org/draft-06/schema#",
    "draft7": "http://json-schema.org/draft-07/schema#",
    "draft2019-09": "https://json-schema.org/draft/2019-09/schema",
    "draft2020-12": "https://json-schema.org/draft/2020-12/schema",
}


@dataclass(frozen=True, slots=True, eq=False)
class Tool:
    """One tool: a name, a description, the JSON Schema of its arguments, and optionally its implementation.

    ``idempotent`` tells the executor that re-running after an ambiguous failure (a timeout, a dropped
    connection) is safe; ``timeout`` (seconds) overrides the executor's default for this tool. ``model`` is
    the pydantic model ``@tool`` built from the signature; the executor coerces arguments through it.

    Raises ``ToolError`` for a missing name and ``SchemaError`` (naming the tool) for a bad schema.
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
        if not isinstance(self.name, str) or not self.name.strip():
            raise ToolError(f"a tool needs a non-empty string name, got {self.name!r}")
        if self.timeout is not None and not self.timeout > 0:
            raise ToolError(
                f"tool {self.name!r}: timeout must be a positive number of seconds, got {self.timeout!r}"
            )
        if self.fn is not None and not callable(self.fn):
            raise ToolError(f"tool {self.name!r}: fn must be callable, got {type(self.fn).__name__}")
        schema = normalize_schema(self.parameters, tool=self.name)
        _check_schema(schema, self.name)
        object.__setattr__(self, "parameters", schema)

    @property
    def is_async(self) -> bool:
        """True when the implementation is a coroutine function."""
        return self.fn is not None and inspect.iscoroutinefunction(self.fn)

    def bind(
        self, fn: Callable[..., Any], *, idempotent: bool | None = None, timeout: float | None = None
    ) -> Tool:
        """A copy of this tool implemented by ``fn`` (called with the validated arguments as keywords).

        Use it to give tools read from OpenAI or MCP JSON an implementation.
        """
        return replace(
            self,
            fn=fn,
            idempotent=self.idempotent if idempotent is None else idempotent,
            timeout=self.timeout if timeout is None else timeout,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fn is None:
            raise ToolError(f"tool {self.name!r} has no implementation; give it one with Tool.bind(fn)")
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry."""
        function: dict[str, Any] = {"name": self.name, "parameters": self.parameters}
        if self.description:
            function["description"] = self.description
        if self.strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    def to_mcp(self) -> dict[str, Any]:
        """The MCP ``tools/list`` entry."""
        entry: dict[str, Any] = {"name": self.name, "inputSchema": self.parameters}
        if self.description:
            entry["description"] = self.description
        if self.idempotent:
            entry["annotations"] = {"idempotentHint": True}
        return entry


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = ...,
    description: str | None = ...,
    idempotent: bool = ...,
    timeout: float | None = ...,
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

    The argument schema comes from the signature via pydantic (``Annotated[..., Field(description=...)]`` and
    a Google-style ``Args:`` docstring section describe parameters); the description is the docstring's first
    paragraph. The executor validates arguments against the schema, then coerces them through pydantic before
    the call. Usable bare (``@tool``) or with options (``@tool(idempotent=True, timeout=5)``).

    Raises ``ToolError`` for a signature no schema can describe (``*args``, ``**kwargs``, unresolvable hints).
    """

    def build(f: Callable[..., Any], localns: Mapping[str, Any] | None = None) -> Tool:
        from ._signature import model_from_signature

        if localns is None:  # called as @tool(...): our caller is the scope that defined f
            localns = sys._getframe(1).f_locals
        model, schema, doc = model_from_signature(f, localns=localns)
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
        return build(fn, sys._getframe(1).f_locals)  # string annotations may name classes local to the caller
    return build


class ToolSet:
    """An ordered collection of tools with unique names.

    Build it from ``Tool`` objects or plain typed functions (wrapped with ``tool``), from OpenAI tool JSON
    (``from_openai``) or from an MCP listing (``from_mcp``). Raises ``ToolError`` for duplicate names.
    """

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
        """Build from OpenAI ``tools`` JSON (``{"type": "function", "function": {...}}``) or bare functions.

        Raises ``ToolError`` for an entry that is not a function tool and ``SchemaError`` (naming the tool)
        for a bad ``parameters`` schema.
        """
        out = []
        for i, entry in enumerate(tools):
            if not isinstance(entry, Mapping):
                raise ToolError(f"tools[{i}] must be an object, not {type(entry).__name__}")
            kind = entry.get("type", "function")
            fn = entry.get("function", entry) if kind == "function" else None
            if not isinstance(fn, Mapping):
                raise ToolError(f"tools[{i}] is not a function tool (type {kind!r})")
            if not fn.get("name"):
                raise ToolError(f"tools[{i}] has no function name")
            out.append(
                Tool(
                    name=fn["name"],
                    parameters=fn.get("parameters", _EMPTY_OBJECT),
                    description=fn.get("description") or "",
                    strict=bool(fn.get("strict", False)),
                )
            )
        return cls(out)

    @classmethod
    def from_mcp(cls, tools: Iterable[Mapping[str, Any]]) -> ToolSet:
        """Build from an MCP ``tools/list`` result (each tool has ``name``, ``description``, ``inputSchema``).

        MCP's ``annotations.idempotentHint`` sets ``idempotent``. A ``{"tools": [...]}`` wrapper is accepted.
        """
        if isinstance(tools, Mapping) and "tools" in tools:
            tools = tools["tools"]
        out = []
        for i, entry in enumerate(tools):
            if not isinstance(entry, Mapping):
                raise ToolError(f"tools[{i}] must be an object, not {type(entry).__name__}")
            if not entry.get("name"):
                raise ToolError(f"tools[{i}] has no name")
            annotations = entry.get("annotations") or {}
            out.append(
                Tool(
                    name=entry["name"],
                    parameters=entry.get("inputSchema", _EMPTY_OBJECT),
                    description=entry.get("description") or "",
                    idempotent=bool(annotations.get("idempotentHint", False)),
                )
            )
        return cls(out)

    def to_openai(self) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` list."""
        return [t.to_openai() for t in self._tools.values()]

    def to_mcp(self) -> list[dict[str, Any]]:
        """The MCP ``tools/list`` entries."""
        return [t.to_mcp() for t in self._tools.values()]

    def bind(self, implementations: Mapping[str, Callable[..., Any]]) -> ToolSet:
        """A copy where the named tools are implemented by the given callables; unknown names: ToolError."""
        unknown = [n for n in implementations if n not in self._tools]
        if unknown:
            raise ToolError(f"cannot bind unknown tools {unknown}; known tools: {', '.join(self._tools)}")
        return ToolSet(
            t.bind(implementations[t.name]) if t.name in implementations else t for t in self._tools.values()
        )

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
            raise KeyError(
                f"unknown tool {name!r}; known tools: {', '.join(self._tools) or '(none)'}"
            ) from None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def __repr__(self) -> str:
        return f"ToolSet({self.names!r})"
