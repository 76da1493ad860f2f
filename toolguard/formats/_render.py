"""Write tool calls in a wire format: the inverse of ``parse``.

``parse(render(calls, format=f), format=f)`` gives back the calls: names, arguments (JSON-equal; identical
text when they are not a JSON object) and, for the formats that carry them (``openai``, ``mistral``), ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .._exceptions import UsageError
from .._tools import ToolCall
from ._calls import embed_arguments
from ._core import HERMES_CLOSE, HERMES_OPEN, MISTRAL_CALLS
from ._records import Format

__all__ = ["render"]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def render(calls: Iterable[ToolCall], *, format: Format = "openai", content: str = "") -> str:
    """The text a model would write for ``calls`` in ``format``, after ``content`` (prose before the calls).

    ``format="auto"`` is refused (``UsageError``): rendering needs one concrete format. ReAct writes one
    ``Action:``/``Action Input:`` pair per call; its arguments should be JSON objects.
    """
    calls = list(calls)
    if format == "openai":
        objs = [{"name": c.name, "arguments": embed_arguments(c.arguments)} | _id(c) for c in calls]
        body = _dumps(objs[0]) if len(objs) == 1 else _dumps(objs)
    elif format == "hermes":
        objs = [{"name": c.name, "arguments": embed_arguments(c.arguments)} for c in calls]
        body = "\n".join(f"{HERMES_OPEN}\n{_dumps(obj)}\n{HERMES_CLOSE}" for obj in objs)
    elif format == "llama3":
        body = "; ".join(_dumps({"name": c.name, "parameters": embed_arguments(c.arguments)}) for c in calls)
    elif format == "mistral":
        objs = [{"name": c.name, "arguments": embed_arguments(c.arguments)} | _id(c) for c in calls]
        body = MISTRAL_CALLS + _dumps(objs)
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


def _id(call: ToolCall) -> dict[str, str]:
    return {"id": call.id} if call.id else {}


def _react_input(arguments: str) -> str:
    value = embed_arguments(arguments)
    return _dumps(value) if isinstance(value, dict) else arguments
