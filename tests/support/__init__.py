"""Shared test helpers. ``ScriptedUpstream`` is a fake at the true external boundary (the model server)."""

from __future__ import annotations

from .scripted_upstream import Call, RecordedRequest, Reply, ScriptedUpstream

__all__ = ["Call", "RecordedRequest", "Reply", "ScriptedUpstream"]
