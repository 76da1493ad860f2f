"""Type aliases shared across toolguard."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

__all__ = ["JSON", "JSONSchema", "Message", "ToolChoice"]

JSON: TypeAlias = Any
JSONSchema: TypeAlias = Mapping[str, Any] | bool
Message: TypeAlias = dict[str, Any]
ToolChoice: TypeAlias = Literal["auto", "required", "none"] | str | dict[str, Any]
