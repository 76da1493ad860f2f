"""``toolguard.wrap``: guard an OpenAI-compatible client (or a ``LocalGenerator``) behind its own surface.

Kept light: importing this package imports neither openai nor anyio (they load when a client is wrapped).
"""

from __future__ import annotations

from ._drivers import AsyncGuardedStream as AsyncGuardedStream
from ._drivers import GuardedStream as GuardedStream
from ._drivers import GuardReport, guard_report
from ._wrap import wrap

# Re-exported by ``toolguard``; the stream classes stay here (``toolguard.sdk.GuardedStream``).
__all__ = ["GuardReport", "guard_report", "wrap"]
