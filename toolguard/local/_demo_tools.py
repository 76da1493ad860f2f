"""The tools of ``toolguard demo``: the example tool sets bound to small Python implementations.

Weather, calendar, http and math are fake but deterministic functions of their arguments (``FAKE_BACKENDS``;
fake data is fine, they are the *tools*, not the model); the file tools are real, confined to one workspace
folder (``_Workspace``). The synthetic training dialogues (``scripts/demo_model/synthetic.py``) take their
tool results from the same fake backends, so the demo model knows the shapes of the results it reads. No I/O
beyond the workspace, no network; each call is O(size of its arguments).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._tools import Tool, ToolSet

__all__ = ["FAKE_BACKENDS", "demo_toolset", "run_fake_tool"]

# ----------------------------------------------------------------------------------------------------
# Fake backends: deterministic functions of their arguments, the demo's tools (fake data is fine). The
# synthetic training dialogues take their tool results from these, so the model knows their shapes.

_CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "snowy", "foggy", "clear", "partly cloudy"]
_EVENT_TITLES = ["Team sync", "Standup", "Dentist", "Lunch with Sam", "Code review", "Gym", "Book club"]
_FILE_TEXTS = [
    "hello world",
    "buy milk and eggs",
    "meeting at noon",
    "TODO: fix the tests",
    "ship it",
    "done",
]
_FILE_NAMES = ["notes.txt", "todo.md", "config.yaml", "report.csv", "README.md", "data.json", "main.py"]


def _stable_hash(value: str) -> int:
    return zlib.crc32(value.encode("utf-8"))


def _temp(celsius: int, unit: str) -> int:
    return celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)


def fake_get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
    h = _stable_hash(city.lower())
    return {
        "city": city,
        "temperature": _temp(h % 35 - 5, unit),
        "unit": unit,
        "conditions": _CONDITIONS[(h >> 8) % 8],
    }


def fake_get_forecast(city: str, days: int, unit: str = "celsius") -> dict[str, Any]:
    h = _stable_hash(city.lower())
    daily = [
        {"day": d + 1, "high": _temp((h >> d) % 35 - 5, unit), "conditions": _CONDITIONS[(h >> (d + 3)) % 8]}
        for d in range(days)
    ]
    return {"city": city, "unit": unit, "days": daily}


def fake_create_event(
    title: str,
    start: str,
    duration_minutes: int,
    attendees: list[str] | None = None,
    location: str | None = None,
) -> dict[str, Any]:
    event = {
        "id": f"evt_{_stable_hash(title + start) % 1000:03d}",
        "title": title,
        "start": start,
        "duration_minutes": duration_minutes,
    }
    return {"created": True, "event": event}


def fake_list_events(date: str) -> dict[str, Any]:
    h = _stable_hash(date)
    events = [
        {
            "title": _EVENT_TITLES[(h >> (4 * i)) % len(_EVENT_TITLES)],
            "start": f"{date}T{9 + (h >> i) % 8:02d}:00:00Z",
        }
        for i in range(h % 3)
    ]
    return {"date": date, "events": events}


def fake_cancel_event(event_id: str) -> dict[str, Any]:
    return {"cancelled": True, "event_id": event_id}


def fake_read_file(path: str, max_bytes: int = 65536) -> dict[str, Any]:
    return {"path": path, "content": _FILE_TEXTS[_stable_hash(path) % len(_FILE_TEXTS)][:max_bytes]}


def fake_write_file(path: str, content: str, overwrite: bool = False) -> dict[str, Any]:
    return {"path": path, "bytes_written": len(content.encode("utf-8"))}


def fake_list_dir(path: str = ".") -> dict[str, Any]:
    h = _stable_hash(path)
    return {
        "path": path,
        "entries": sorted({_FILE_NAMES[(h >> (3 * i)) % len(_FILE_NAMES)] for i in range(1 + h % 4)}),
    }


def fake_http_get(url: str, headers: dict[str, str] | None = None, timeout: float = 10) -> dict[str, Any]:
    status = 200 if _stable_hash(url) % 5 else 404
    return {"url": url, "status": status, "body": "OK" if status == 200 else "Not Found"}


def fake_http_post(url: str, json: dict[str, Any], idempotency_key: str | None = None) -> dict[str, Any]:
    return {"url": url, "status": 201, "body": "Created"}


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(x, 6)


def fake_add(a: float, b: float) -> dict[str, Any]:
    return {"result": _num(a + b)}


def fake_evaluate(expression: str) -> dict[str, Any]:
    """Arithmetic only: the schema's pattern admits digits, + - * / ( ) . and spaces, nothing else."""
    if not set(expression) <= set("0123456789+-*/(). "):
        raise ValueError("only numbers and + - * / ( ) are allowed")
    return {"result": _num(round(float(eval(expression, {"__builtins__": {}}, {})), 6))}


def fake_statistics(values: list[float], measures: list[str] | None = None) -> dict[str, Any]:
    import statistics

    out: dict[str, Any] = {}
    for m in measures or ["mean"]:
        if m == "mean":
            out["mean"] = _num(round(statistics.fmean(values), 4))
        elif m == "median":
            out["median"] = _num(statistics.median(values))
        elif m == "stdev":
            out["stdev"] = _num(round(statistics.pstdev(values), 4))
    return out


FAKE_BACKENDS: dict[str, Callable[..., dict[str, Any]]] = {
    "get_weather": fake_get_weather,
    "get_forecast": fake_get_forecast,
    "create_event": fake_create_event,
    "list_events": fake_list_events,
    "cancel_event": fake_cancel_event,
    "read_file": fake_read_file,
    "write_file": fake_write_file,
    "list_dir": fake_list_dir,
    "http_get": fake_http_get,
    "http_post": fake_http_post,
    "add": fake_add,
    "evaluate": fake_evaluate,
    "statistics": fake_statistics,
}


def run_fake_tool(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Run the fake backend for ``name`` (``KeyError``: unknown tool, ``TypeError``: bad arguments)."""
    return FAKE_BACKENDS[name](**arguments)


# -- tools -------------------------------------------------------------------------------------------


class _Workspace:
    """Real file tools confined to one folder (paths are relative; nothing escapes the folder)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def _path(self, path: str) -> Path:
        target = (self.root / path).resolve()
        if target != self.root and self.root not in target.parents:
            raise ValueError(f"path {path!r} leaves the workspace")
        return target

    def read_file(self, path: str, max_bytes: int = 65536) -> dict[str, Any]:
        target = self._path(path)
        if not target.is_file():
            raise FileNotFoundError(f"no such file: {path}")
        return {"path": path, "content": target.read_bytes()[:max_bytes].decode("utf-8", errors="replace")}

    def write_file(self, path: str, content: str, overwrite: bool = False) -> dict[str, Any]:
        target = self._path(path)
        if target.exists() and not overwrite:
            raise FileExistsError(f"{path} exists; pass overwrite=true to replace it")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return {"path": path, "bytes_written": len(content.encode("utf-8"))}

    def list_dir(self, path: str = ".") -> dict[str, Any]:
        target = self._path(path)
        if not target.is_dir():
            raise FileNotFoundError(f"no such directory: {path}")
        return {"path": path, "entries": sorted(p.name for p in target.iterdir())}


def demo_toolset(tool_sets: Mapping[str, Sequence[Mapping[str, Any]]], workspace: Path) -> ToolSet:
    """The example tool sets bound to the demo's implementations (files in ``workspace``, the rest fake)."""
    files = _Workspace(workspace)
    impl: dict[str, Callable[..., Any]] = dict(FAKE_BACKENDS)
    impl.update(read_file=files.read_file, write_file=files.write_file, list_dir=files.list_dir)
    idempotent = {
        "get_weather",
        "get_forecast",
        "list_events",
        "read_file",
        "list_dir",
        "http_get",
        "add",
        "evaluate",
        "statistics",
    }
    tools = []
    for spec in (t for ts in tool_sets.values() for t in ts):
        fn = spec["function"]
        tool = Tool(
            name=fn["name"], parameters=fn.get("parameters", {}), description=fn.get("description", "")
        )
        tools.append(tool.bind(impl[fn["name"]], idempotent=fn["name"] in idempotent))
    return ToolSet(tools)
