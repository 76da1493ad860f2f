"""toolguard: make LLM tool calling reliable.

Four mechanisms, one core: grammar-enforced decoding (``toolguard.local``), runaway stop
(``RunawayDetector``), streaming validation (``StreamValidator``) and a safe ``Executor``, all sharing the
sans-IO ``Guard``. Front doors: ``toolguard.wrap`` (SDK), ``toolguard.proxy`` (ASGI proxy) and ``toolguard fuzz``.

``import toolguard`` never imports torch, transformers, a grammar engine, openai or asyncio-bound servers.
"""

from __future__ import annotations

from ._exceptions import *  # noqa: F403
from ._executor import *  # noqa: F403
from ._guard import *  # noqa: F403
from ._loop import *  # noqa: F403
from ._runaway import *  # noqa: F403
from ._stream import *  # noqa: F403
from ._tools import *  # noqa: F403
from ._version import __version__
from .sdk import *  # noqa: F403

from . import _exceptions, _executor, _guard, _loop, _runaway, _stream, _tools, sdk  # noqa: E402, I001

__all__ = sorted(
    {
        *_exceptions.__all__,
        *_executor.__all__,
        *_guard.__all__,
        *_loop.__all__,
        *_runaway.__all__,
        *_stream.__all__,
        *_tools.__all__,
        *sdk.__all__,
        "__version__",
    }
)

# Reprs and docs read ``toolguard.StreamValidator``, not ``toolguard._stream._validator.StreamValidator``.
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or callable(_obj):
        try:
            _obj.__module__ = "toolguard"
        except (AttributeError, TypeError):  # pragma: no cover - builtins
            pass
del _name, _obj
