"""Tool sets for the local decoding tests: nested objects, arrays, enums, anyOf, numeric bounds, patterns.

Strings are bounded (``maxLength``, patterns, enums) or capped by the processor's ``max_string_length`` so a
random-weight model, which almost never picks the closing quote, still finishes its calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _fn(name: str, parameters: dict[str, Any], description: str = "") -> dict[str, Any]:
    function = {"name": name, "description": description, "parameters": parameters}
    return {"type": "function", "function": function}


NESTED = [
    _fn("plan_trip", {
        "type": "object",
        "properties": {
            "traveller": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 8},
                    "age": {"type": "integer", "minimum": 0, "maximum": 120},
                },
                "required": ["name"],
            },
            "legs": {
                "type": "array",
                "minItems": 1,
                "maxItems": 2,
                "items": {
                    "type": "object",
                    "properties": {
                        "from": {"type": "string", "pattern": "^[A-Z]{3}$"},
                        "to": {"type": "string", "pattern": "^[A-Z]{3}$"},
                        "class": {"enum": ["economy", "business"]},
                    },
                    "required": ["from", "to"],
                },
            },
            "budget": {"anyOf": [{"type": "number", "minimum": 0, "maximum": 5000}, {"type": "null"}]},
            "flexible": {"type": "boolean"},
        },
        "required": ["traveller", "legs"],
    }, "Plan a trip."),
    _fn("set_alarm", {
        "type": "object",
        "properties": {
            "time": {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
            "repeat": {"enum": ["never", "daily", "weekdays"]},
            "label": {"anyOf": [{"type": "string", "maxLength": 6},
                                {"type": "integer", "minimum": 1, "maximum": 9}]},
        },
        "required": ["time"],
    }, "Set an alarm."),
]

# No numeric bounds and no oneOf: every engine, outlines-core included, enforces all of it.
SMALL = [
    _fn("lookup", {
        "type": "object",
        "properties": {
            "key": {"type": "string", "maxLength": 6},
            "mode": {"enum": ["fast", "exact"]},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 2},
        },
        "required": ["key", "mode"],
    }),
    _fn("ping", {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}),
]


def example_tools(name: str) -> list[dict[str, Any]]:
    """A tool set from schemas/tools (written for the examples and the demo)."""
    data: list[dict[str, Any]] = json.loads((REPO / "schemas" / "tools" / f"{name}.json").read_text())
    return data


TOOLSETS = {"nested": NESTED, "small": SMALL}
