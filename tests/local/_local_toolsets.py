"""Tool sets for the local decoding tests: nested objects, arrays, enums, anyOf, numeric bounds, patterns.

Strings are bounded (``maxLength``, patterns, enums) or capped by the processor's ``max_string_length`` so a
random-weight model, which almost never picks the closing quote, still finishes its calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
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


# ---- real tool sets (tests/data/toolsets, see its SOURCE.md), for compile-time and refusal checks ----------
REAL_TOOLSETS = REPO / "tests" / "data" / "toolsets"


@dataclass(frozen=True)
class RealToolSet:
    """One tool set as a request carries it: ``tools`` in OpenAI function form (BFCL, ACEBench, the shipped
    schemas/tools) or as an MCP ``tools/list`` (``source == "mcp"``)."""

    source: str  # "bfcl" | "acebench" | "mcp" | "shipped"
    id: str
    category: str
    tools: list[dict[str, Any]]

    def toolset(self) -> Any:
        from toolguard import ToolSet

        return ToolSet.from_mcp(self.tools) if self.source == "mcp" else ToolSet.from_openai(self.tools)

    @property
    def bfcl_language(self) -> bool:
        """BFCL's Java/JavaScript categories, whose type names (``String``, ``HashMap``...) need a mapping."""
        return self.category in ("simple_java", "simple_javascript")


def real_toolsets(folder: Path = REAL_TOOLSETS, extra: Path | None = None) -> list[RealToolSet]:
    """Every set in ``folder``'s ``*.jsonl`` files, then the shipped schemas/tools; with ``extra`` (a JSONL
    file with a ``source`` field per line, as ``scripts/toolsets_corpus.py --all`` writes) those instead."""
    out: list[RealToolSet] = []
    files = [(extra, None)] if extra is not None else [(p, p.stem) for p in sorted(folder.glob("*.jsonl"))]
    for path, source in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                e = json.loads(line)
                out.append(RealToolSet(source or e["source"], e["id"], e["category"], e["tools"]))
    if extra is None:
        for path in sorted((REPO / "schemas" / "tools").glob("*.json")):
            out.append(RealToolSet("shipped", path.stem, "schemas/tools", json.loads(path.read_text())))
    return out
