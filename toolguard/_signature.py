"""JSON Schema from a Python function signature, via pydantic."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, create_model

from ._exceptions import ToolError

__all__ = ["model_from_signature"]


def model_from_signature(fn: Callable[..., Any]) -> tuple[type[BaseModel], dict[str, Any], str]:
    """(pydantic model of the arguments, its JSON Schema, the docstring's first paragraph)."""
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:  # unresolved forward refs etc.
        raise ToolError(f"cannot read the type hints of {fn.__name__!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolError(f"tool {fn.__name__!r}: *args/**kwargs cannot be described by a schema")
        annotation = hints.get(pname, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, default)
    model = create_model(  # type: ignore[call-overload]
        f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    doc = inspect.getdoc(fn) or ""
    description = doc.split("\n\n", 1)[0].strip()
    return model, schema, description
