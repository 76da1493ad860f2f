"""The built-in fuzz targets; importing this package registers them with the runner."""

from __future__ import annotations

from . import _formats, _grammar, _mcp, _proxy, _runaway, _sse, _stream

__all__: list[str] = []

del _formats, _grammar, _mcp, _proxy, _runaway, _sse, _stream
