"""The MCP guard's fixtures live in ``tests.mcp.helpers`` (imported by the tests); ``call_log`` is here."""

from __future__ import annotations

from tests.mcp.helpers import call_log

__all__ = ["call_log"]
