"""The server's tools as toolguard sees them: schemas checked once, calls and results judged without I/O.

Theory of operation
-------------------
``Catalog.absorb(page, first=...)`` reads one ``tools/list`` result page. Each entry becomes a ``Tool``
through ``ToolSet.from_mcp`` (schemas normalised and checked against their draft's metaschema once) and an
``ArgumentChecker`` (the ``StreamValidator``, with ``jsonschema`` where a keyword is not streamable). An entry
whose ``inputSchema`` is bad is kept as a *broken* tool with the reason, naming the tool and the server, so a
call to it is refused with that reason instead of being forwarded unchecked. ``outputSchema`` is compiled the
same way, for ``structuredContent``.

``Catalog.check_call(name, arguments)`` answers a ``tools/call`` before anything is sent: ``Unknown`` (the
JSON-RPC -32602 the spec and the reference servers use), ``Refused`` (policy, broken schema, invalid
arguments: a tool result with ``isError: true`` the model can act on) or ``Allowed`` (with the tool's retry
safety and timeout). ``Catalog.check_result(entry, result)`` validates ``structuredContent`` against the
output schema and the size cap, and sanitises the text of error results.

Everything here is a pure function of the listing and the policy: no I/O, no clock. A check costs one
serialisation of the arguments plus one linear validation pass.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from .._arguments import ArgumentChecker
from .._exceptions import SchemaError, ToolError, UnsupportedKeyword
from .._sanitize import sanitize
from .._stream import StreamValidator
from .._tools import Tool, ToolSet
from ._config import McpPolicy

__all__ = ["Allowed", "CallCheck", "Catalog", "Refused", "ResultCheck", "ToolEntry", "Unknown"]


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One listed tool: its checked form, its hints, and why it cannot be used (``broken``), if so."""

    name: str
    raw: Mapping[str, Any]
    tool: Tool | None = None
    checker: ArgumentChecker | None = None
    output: StreamValidator | None = field(default=None, compare=False)
    output_schema: Any = None
    broken: str | None = None
    read_only: bool = False
    idempotent: bool = False
    destructive: bool = True

    @property
    def retry_safe(self) -> bool:
        """``idempotentHint`` or ``readOnlyHint``: repeating it after an unknown outcome changes nothing."""
        return self.read_only or self.idempotent


@dataclass(frozen=True, slots=True)
class Unknown:
    """No such tool: a JSON-RPC error -32602, as the spec and the reference servers answer."""

    name: str
    message: str


@dataclass(frozen=True, slots=True)
class Refused:
    """Not sent to the server; answered with a tool result ``isError: true``. ``kind``: the decision kind."""

    kind: Literal["invalid_arguments", "policy_refused", "bad_schema"]
    message: str
    path: str | None = None
    offset: int | None = None


@dataclass(frozen=True, slots=True)
class Allowed:
    entry: ToolEntry
    timeout: float | None


CallCheck: TypeAlias = Unknown | Refused | Allowed


@dataclass(frozen=True, slots=True)
class ResultCheck:
    """``result`` is what the client gets; ``kind``/``reason`` say what toolguard changed, if anything."""

    result: dict[str, Any]
    kind: Literal["ok", "tool_error", "output_invalid", "result_too_large"] = "ok"
    reason: str | None = None


def _hints(raw: Mapping[str, Any]) -> tuple[bool, bool, bool]:
    """(read_only, idempotent, destructive) with the spec's defaults: a tool that is not read-only is
    destructive unless it says ``destructiveHint: false``."""
    annotations = raw.get("annotations")
    if not isinstance(annotations, Mapping):
        annotations = {}
    read_only = annotations.get("readOnlyHint") is True
    idempotent = annotations.get("idempotentHint") is True
    destructive = not read_only and annotations.get("destructiveHint") is not False
    return read_only, idempotent, destructive


def _output_validator(name: str, schema: Any) -> tuple[StreamValidator | None, str | None]:
    if not isinstance(schema, (Mapping, bool)):
        return None, f"its outputSchema is not a JSON Schema object ({type(schema).__name__})"
    try:
        return StreamValidator(dict(schema) if isinstance(schema, Mapping) else schema), None
    except UnsupportedKeyword as exc:
        return (
            None,
            f"its outputSchema uses {exc.keyword!r}, which toolguard cannot check; output not checked",
        )
    except SchemaError as exc:
        return None, f"its outputSchema is invalid ({exc.message}); output not checked"


def _entry(raw: Mapping[str, Any], server: str) -> ToolEntry:
    name = raw.get("name")
    read_only, idempotent, destructive = _hints(raw)
    if not isinstance(name, str) or not name:
        return ToolEntry(
            name=str(name), raw=raw, broken=f"the server {server!r} listed a tool without a name"
        )
    try:
        tool = next(iter(ToolSet.from_mcp([raw])))
        checker = ArgumentChecker([tool])
    except (SchemaError, ToolError) as exc:
        reason = f"the server {server!r} advertises tool {name!r} with an unusable inputSchema: {exc}"
        return ToolEntry(
            name=name,
            raw=raw,
            broken=reason,
            read_only=read_only,
            idempotent=idempotent,
            destructive=destructive,
        )
    output_schema = raw.get("outputSchema")
    output = None
    if output_schema is not None:
        output, _problem = _output_validator(name, output_schema)
    return ToolEntry(
        name=name,
        raw=raw,
        tool=tool,
        checker=checker,
        output=output,
        output_schema=output_schema,
        read_only=read_only,
        idempotent=idempotent,
        destructive=destructive,
    )


def output_problem(raw: Mapping[str, Any]) -> str | None:
    """Why a listed tool's ``outputSchema`` cannot be checked (reported once per listing), or None."""
    schema = raw.get("outputSchema")
    return None if schema is None else _output_validator(str(raw.get("name")), schema)[1]


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


class Catalog:
    """The current tool listing of one server connection, and the policy applied to it."""

    def __init__(self, policy: McpPolicy, *, server: str = "the MCP server") -> None:
        self.policy = policy
        self.server = server
        self.entries: dict[str, ToolEntry] = {}
        self._pending: dict[str, ToolEntry] = {}
        self.complete = False

    # listing ------------------------------------------------------------------------------------------
    def absorb(self, result: Mapping[str, Any], *, first: bool) -> list[str]:
        """Read one ``tools/list`` result page; returns the problems found (bad schemas), one line each.

        ``first`` is True for a listing without a cursor (a fresh listing); the catalog switches to the new
        listing when the page without ``nextCursor`` arrives: a half-read listing never replaces a whole one.
        """
        if first:
            self._pending = {}
        problems: list[str] = []
        tools = result.get("tools")
        for raw in tools if isinstance(tools, list) else ():
            if not isinstance(raw, Mapping):
                problems.append(f"the server {self.server!r} listed a tool that is not an object")
                continue
            entry = _entry(raw, self.server)
            if entry.broken:
                problems.append(entry.broken)
            elif (why := output_problem(raw)) is not None:
                problems.append(f"the server {self.server!r} tool {entry.name!r}: {why}")
            self._pending[entry.name] = entry
        if not result.get("nextCursor"):
            self.entries, self._pending = self._pending, {}
            self.complete = True
        return problems

    def visible(self, result: dict[str, Any]) -> dict[str, Any]:
        """The listing page the client sees: tools the policy would refuse whatever the arguments are left out
        (a model should not be offered a tool it may not call). The page is returned as is when nothing is."""
        tools = result.get("tools")
        if not isinstance(tools, list) or not (
            self.policy.allow is not None or self.policy.deny or self.policy.refuse_destructive
        ):
            return result
        kept = [
            t for t in tools if not isinstance(t, Mapping) or self._policy_refusal(_entry_hints(t)) is None
        ]
        if len(kept) == len(tools):
            return result
        return {**result, "tools": kept}

    # calls --------------------------------------------------------------------------------------------
    def _policy_refusal(self, entry: ToolEntry) -> str | None:
        p = self.policy
        name = entry.name
        if _matches(name, p.deny):
            return f"the toolguard policy denies the tool {name!r}"
        if p.allow is not None and not _matches(name, p.allow):
            return f"the toolguard policy does not allow the tool {name!r}"
        if p.refuse_destructive and entry.destructive and not _matches(name, p.allow_destructive):
            return (
                f"the tool {name!r} may make destructive changes (it is not marked readOnlyHint or "
                "destructiveHint: false) and the toolguard policy refuses destructive tools unless allowed"
            )
        return None

    def check_call(self, name: Any, arguments: Any) -> CallCheck:
        """Judge one ``tools/call`` (``params.name``, ``params.arguments``) before anything is sent."""
        if not isinstance(name, str):
            return Unknown(str(name), f"Unknown tool: {name!r} (params.name must be a string)")
        entry = self.entries.get(name)
        if entry is None:
            return Unknown(name, f"Unknown tool: {name}")
        if (why := self._policy_refusal(entry)) is not None:
            return Refused("policy_refused", f"The call to {name!r} was refused: {why}.")
        if entry.broken is not None or entry.checker is None or entry.tool is None:
            return Refused(
                "bad_schema",
                f"The call to {name!r} was not sent: {entry.broken}. toolguard cannot check calls to it.",
            )
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return Refused(
                "invalid_arguments",
                f"Invalid arguments for tool {name!r}: params.arguments must be a JSON object, not "
                f"{type(arguments).__name__}. The call was not sent to the server; correct it and call "
                "again.",
                path="",
            )
        text = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
        _kwargs, problem = entry.checker.check(entry.tool, text)
        if problem is not None:
            path, offset = _locate(entry.tool.parameters, text)
            return Refused(
                "invalid_arguments",
                f"Invalid arguments for tool {name!r}: {problem}. The call was not sent to the server; "
                "correct the arguments and call again.",
                path=path,
                offset=offset,
            )
        timeout = self.policy.tool_timeouts.get(name, self.policy.timeout)
        return Allowed(entry, timeout)

    # results ------------------------------------------------------------------------------------------
    def check_result(self, entry: ToolEntry, result: dict[str, Any], size: int) -> ResultCheck:
        """Judge a ``tools/call`` result (``size``: its length as JSON text) before the client sees it."""
        cap = self.policy.max_result_bytes
        if size > cap:
            reason = (
                f"the result of {entry.name!r} is {size} bytes, over toolguard's cap of {cap} bytes; "
                "ask for less (a narrower query, fewer items)"
            )
            return ResultCheck(tool_result(f"The result was withheld: {reason}."), "result_too_large", reason)
        if result.get("isError") is True:
            return ResultCheck(self._sanitised(result), "tool_error", "the tool reported an error")
        if entry.output is None and entry.output_schema is None:
            return ResultCheck(result)
        if entry.output is None:
            return ResultCheck(result)  # an output schema toolguard cannot check (reported when listed)
        structured = result.get("structuredContent")
        if structured is None:
            reason = f"the tool {entry.name!r} declares an outputSchema but returned no structuredContent"
        else:
            violation = _output_violation(entry.output_schema, structured)
            if violation is None:
                return ResultCheck(result)
            reason = f"the structuredContent of {entry.name!r} does not match its outputSchema: {violation}"
        return ResultCheck(
            tool_result(f"The server's result was withheld: {reason}."), "output_invalid", reason
        )

    def _sanitised(self, result: dict[str, Any]) -> dict[str, Any]:
        limit = self.policy.max_error_chars
        content = result.get("content")
        if not isinstance(content, list):
            return result
        cleaned = []
        changed = False
        for block in content:
            if (
                isinstance(block, Mapping)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ):
                text = sanitize(block["text"], max_chars=limit)
                if text != block["text"]:
                    block, changed = {**block, "text": text}, True
            cleaned.append(block)
        return {**result, "content": cleaned} if changed else result


def _entry_hints(raw: Mapping[str, Any]) -> ToolEntry:
    """A hints-only entry for policy checks on a listing (no schema work)."""
    read_only, idempotent, destructive = _hints(raw)
    return ToolEntry(
        name=str(raw.get("name")),
        raw=raw,
        read_only=read_only,
        idempotent=idempotent,
        destructive=destructive,
    )


def _locate(schema: Any, text: str) -> tuple[str | None, int | None]:
    """The JSON pointer and offset of the first violation the StreamValidator finds in ``text``."""
    try:
        validator = StreamValidator(schema)
    except SchemaError:
        return None, None
    validator.feed(text)
    verdict = validator.close()
    if verdict.error is None:
        return None, None
    return verdict.error.path, verdict.error.offset


def _output_violation(schema: Any, value: Any) -> str | None:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"it is not JSON ({exc})"
    validator = StreamValidator(dict(schema) if isinstance(schema, Mapping) else schema)
    validator.feed(text)
    verdict = validator.close()
    if verdict.error is None:
        return None
    err = verdict.error
    return (
        err.message if err.message.startswith(err.path or "\0") else f"{err.path or '(root)'}: {err.message}"
    )


def tool_result(text: str, *, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A ``CallToolResult`` with ``isError: true`` and one text block: what toolguard answers itself."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
    if meta:
        result["_meta"] = dict(meta)
    return result
