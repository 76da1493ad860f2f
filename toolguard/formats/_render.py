"""Write tool calls in a wire format: the inverse of ``parse``.

``parse(render(calls, format=f), format=f)`` gives back the calls: names, arguments and, for the formats that
carry them (``openai``, ``mistral``), ids. Arguments that are one JSON object are written verbatim (never
re-serialised, so number spellings, escapes and key order survive) and parse back as that object's text
(surrounding whitespace aside); any other arguments text is written as a JSON string and parses back
identical. The JSON around the arguments is built by hand so the arguments' text is spliced in as written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from .._exceptions import UsageError
from .._tools import ToolCall
from ._calls import embedded_arguments, is_json_object
from ._core import HERMES_CLOSE, HERMES_OPEN, MISTRAL_CALLS
from ._records import Format

__all__ = ["render"]


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _object(call: ToolCall, *, key: str = "arguments", with_id: bool = False) -> str:
    """``{"name": ..., "<key>": <arguments as written>[, "id": ...]}``."""
    body = f'{{"name": {_string(call.name)}, "{key}": {embedded_arguments(call.arguments)}'
    if with_id and call.id:
        body += f', "id": {_string(call.id)}'
    return body + "}"


def render(calls: Iterable[ToolCall], *, format: Format = "openai", content: str = "") -> str:
    """The text a model would write for ``calls`` in ``format``, after ``content`` (prose before the calls).

    ``format="auto"`` is refused (``UsageError``): rendering needs one concrete format. ReAct writes one
    ``Action:``/``Action Input:`` pair per call; its arguments should be JSON objects.
    """
    calls = list(calls)
    if format == "openai":
        objs = [_object(c, with_id=True) for c in calls]
        body = objs[0] if len(objs) == 1 else "[" + ", ".join(objs) + "]"
    elif format == "hermes":
        body = "\n".join(f"{HERMES_OPEN}\n{_object(c)}\n{HERMES_CLOSE}" for c in calls)
    elif format == "llama3":
        body = "; ".join(_object(c, key="parameters") for c in calls)
    elif format == "mistral":
        body = MISTRAL_CALLS + "[" + ", ".join(_object(c, with_id=True) for c in calls) + "]"
    elif format == "react":
        body = "\n".join(f"Action: {c.name}\nAction Input: {_react_input(c.arguments)}" for c in calls)
    else:
        raise UsageError(f"cannot render format {format!r}; choose openai, hermes, llama3, mistral or react")
    if not calls:
        return content
    if content and format in ("openai", "llama3") and content.strip():
        return content + "\n" + body
    if content and not content.endswith("\n"):
        content += "\n"
    return content + body


def _react_input(arguments: str) -> str:
    if not arguments.strip():
        return "{}"
    return arguments.strip() if is_json_object(arguments) else arguments
