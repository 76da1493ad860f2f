"""JSON Schema from a Python function signature, via pydantic.

One pydantic model per function (``extra="forbid"``, so the schema says ``additionalProperties: false``); its
JSON Schema is what the model sees and what the executor validates against, and the model itself coerces the
validated arguments (str to ``datetime``, dicts to nested models) before the call. Parameter descriptions come
from ``Annotated[..., Field(description=...)]`` or, failing that, from a Google-style ``Args:`` docstring
section.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, create_model

from ._exceptions import ToolError

__all__ = ["model_from_signature"]

_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$", re.IGNORECASE)
_OTHER_SECTION = re.compile(r"^(Returns?|Raises?|Yields?|Examples?|Notes?|See Also|Attributes)\s*:\s*$", re.I)
_PARAM_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def model_from_signature(
    fn: Callable[..., Any], *, localns: Mapping[str, Any] | None = None
) -> tuple[type[BaseModel], dict[str, Any], str]:
    """(pydantic model of the arguments, its JSON Schema, the docstring's first paragraph).

    ``localns`` resolves string annotations naming classes local to the scope that defined ``fn``. Raises
    ``ToolError`` for ``*args``/``**kwargs``, unresolvable type hints or types pydantic cannot describe.
    """
    name = getattr(fn, "__name__", type(fn).__name__)
    try:
        hints = get_type_hints(fn, localns=dict(localns) if localns else None, include_extras=True)
    except Exception as exc:  # unresolved forward refs etc.
        raise ToolError(f"cannot read the type hints of {name!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolError(f"tool {name!r}: *args/**kwargs cannot be described by a schema")
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolError(f"tool {name!r}: positional-only parameter {pname!r} cannot be passed by name")
        annotation = hints.get(pname, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, default)
    try:
        model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        schema: dict[str, Any] = model.model_json_schema()
    except Exception as exc:  # pydantic cannot describe a type or a default
        raise ToolError(f"tool {name!r}: cannot build a JSON Schema from the signature: {exc}") from exc
    schema.pop("title", None)
    doc = inspect.getdoc(fn) or ""
    params_doc = _param_docs(doc)
    for pname, prop in schema.get("properties", {}).items():
        if isinstance(prop, dict):
            prop.pop("title", None)
            if "description" not in prop and pname in params_doc:
                prop["description"] = params_doc[pname]
    description = _summary(doc)
    return model, schema, description


def _summary(doc: str) -> str:
    """The first paragraph, stopping at a section header."""
    lines = []
    for line in doc.strip().splitlines():
        if not line.strip() or _SECTION.match(line.strip()) or _OTHER_SECTION.match(line.strip()):
            break
        lines.append(line.strip())
    return " ".join(lines)


def _param_docs(doc: str) -> dict[str, str]:
    """Descriptions from a Google-style ``Args:`` section: ``name (type): text``, continuations indented."""
    out: dict[str, str] = {}
    in_section = False
    current: str | None = None
    base_indent = 0
    for raw in doc.splitlines():
        stripped = raw.strip()
        if _SECTION.match(stripped):
            in_section, current = True, None
            continue
        if not in_section:
            continue
        if _OTHER_SECTION.match(stripped):
            break
        if not stripped:
            current = None
            continue
        indent = len(raw) - len(raw.lstrip())
        match = _PARAM_LINE.match(stripped)
        if match and (current is None or indent <= base_indent):
            current = match.group(1).lstrip("*")
            base_indent = indent
            out[current] = match.group(2).strip()
        elif current is not None:
            out[current] = f"{out[current]} {stripped}".strip()
    return out
