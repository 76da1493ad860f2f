"""Check a proposal's arguments before anything runs, with messages a model can act on.

Order: the text must be one JSON object (duplicate keys refused: which one did the model mean?) valid under
the tool's schema, then (for ``@tool`` functions) accepted by the pydantic model, which also coerces values (a
date string to ``datetime``). The first failing step gives the message.

The schema check is ``toolguard.StreamValidator``: the same validator that guards streaming generation, so a
call the Guard let through is never refused here and vice versa. It decides; the message then lists every
violation ``jsonschema`` (its reference) finds, up to ``MAX_REPORTED_ERRORS``, so one retry can fix them all.
A schema whose keywords the StreamValidator cannot enforce (``UnsupportedKeyword``) is checked by
``jsonschema`` alone, and ``engines`` says so; other schema errors (remote ``$ref``, a limit exceeded) are
raised when the checker is built.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

from ._exceptions import SchemaError, UnsupportedKeyword
from ._stream import StreamValidator, Violation
from ._tools import Tool

__all__ = ["MAX_REPORTED_ERRORS", "ArgumentChecker"]

MAX_REPORTED_ERRORS = 5


def _pointer(path: Iterable[Any]) -> str:
    return "".join(f"/{p}" for p in path)


class ArgumentChecker:
    """Validates and coerces arguments for a fixed set of tools; validators are prepared at construction.

    Raises ``SchemaError`` (naming the tool) for a schema no validator can run.
    """

    def __init__(self, tools: Iterable[Tool]) -> None:
        self.engines: dict[str, Literal["stream", "jsonschema"]] = {}
        self._jsonschema: dict[str, Any] = {}
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self._tools[tool.name] = tool
            try:
                StreamValidator(
                    tool.parameters
                )  # compiles (and caches) the schema; refuses what it cannot run
                self.engines[tool.name] = "stream"
            except UnsupportedKeyword:
                self.engines[tool.name] = "jsonschema"
            except SchemaError as exc:  # a remote $ref, a limit: refuse now, naming the tool
                if exc.tool is None:
                    exc.tool = tool.name
                    exc.args = (f"tool {tool.name!r}: {exc.args[0] if exc.args else exc.message}",)
                raise

    def _reference(self, tool: Tool) -> Any:
        validator = self._jsonschema.get(tool.name)
        if validator is None:
            from jsonschema import FormatChecker
            from jsonschema.validators import validator_for

            cls = validator_for(tool.parameters)
            validator = self._jsonschema[tool.name] = cls(tool.parameters, format_checker=FormatChecker())
        return validator

    def _jsonschema_errors(self, tool: Tool, value: Any) -> list[tuple[str, str, str]]:
        """(JSON pointer, keyword, message) for every violation ``jsonschema`` finds, most relevant first."""
        from jsonschema.exceptions import relevance

        errors = sorted(self._reference(tool).iter_errors(value), key=relevance)
        out = []
        for e in errors:
            path = _pointer(e.absolute_path)
            out.append((path, str(e.validator), f"{path or '(root)'}: {e.message}"))
        return out

    def check(self, tool: Tool, arguments: str) -> tuple[dict[str, Any] | None, str | None]:
        """``(keyword arguments for the tool, None)`` or ``(None, message for the model)``."""
        text = arguments if arguments.strip() else "{}"
        if self.engines.get(tool.name, "stream") == "stream":
            validator = StreamValidator(tool.parameters)
            validator.feed(text)
            verdict = validator.close()
            if verdict.error is not None:
                return None, self._rejection(tool, text, verdict.error)
            value = json.loads(text)
        else:
            try:
                value = json.loads(text, object_pairs_hook=_no_duplicates)
            except ValueError as exc:
                return None, f"the arguments are not valid JSON ({exc}); send one JSON object"
            problems = self._jsonschema_errors(tool, value)
            if problems:
                return None, _schema_message([message for _, _, message in problems])
        if not isinstance(value, dict):  # pragma: no cover - every tool schema requires an object
            return None, f"the arguments must be a JSON object, not {type(value).__name__}"
        return self._coerce(tool, value)

    def _rejection(self, tool: Tool, text: str, error: Violation) -> str:
        if error.keyword == "syntax":
            return f"the arguments are not valid JSON: {error.message}; send one JSON object"
        if error.keyword == "limit":
            return f"the arguments are too large: {error.message}"
        try:
            value = json.loads(text)
        except ValueError:  # pragma: no cover - a non-syntax rejection means the text parsed
            return _schema_message([error.message])
        # The validator decided; for the wording, jsonschema's messages about whole values ("'kelvin' is not
        # one of [...]") read better than the earliest-rejection ones ("'k' cannot become ..."), and it lists
        # every violation, so one retry can fix them all. Its error at the rejected path comes first.
        found = self._jsonschema_errors(tool, value)
        found.sort(key=lambda e: e[0] != error.path)
        return _schema_message([message for _, _, message in found] or [error.message])

    @staticmethod
    def _coerce(tool: Tool, value: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        if tool.model is None:
            return value, None
        from pydantic import ValidationError

        try:
            model = tool.model.model_validate(value)
        except ValidationError as exc:
            parts = [
                f"{_pointer(e['loc'])}: {e['msg']}" if e["loc"] else str(e["msg"])
                for e in exc.errors(include_url=False)[:MAX_REPORTED_ERRORS]
            ]
            return None, "the arguments were rejected: " + "; ".join(parts)
        return {name: getattr(model, name) for name in type(model).model_fields if name in value}, None


def _schema_message(problems: list[str]) -> str:
    shown = problems[:MAX_REPORTED_ERRORS]
    more = len(problems) - len(shown)
    return (
        "the arguments do not match the tool's schema: "
        + "; ".join(shown)
        + (f"; and {more} more" if more else "")
    )


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out
