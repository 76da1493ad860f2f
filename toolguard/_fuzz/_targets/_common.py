"""Helpers shared by the fuzz targets: component lookup, outcome formatting, split generation."""

from __future__ import annotations

import importlib
import itertools
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "component",
    "corpus_dir",
    "describe_exception",
    "json_shrinks",
    "random_cuts",
    "split_at",
    "text_shrinks",
]


def component(module: str, name: str) -> tuple[Any, str | None]:
    """``(object, None)`` when ``module`` exports ``name`` in its ``__all__``; else ``(None, reason)``."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        return None, f"{module} cannot be imported here ({exc})"
    except Exception as exc:  # a module being edited may fail to import for any reason
        return None, f"{module} failed to import ({type(exc).__name__}: {exc})"
    if name not in getattr(mod, "__all__", ()):
        return None, f"{module}.{name} is not built yet"
    return getattr(mod, name), None


def describe_exception(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"


def random_cuts(rng: random.Random, size: int, *, most: int = 12) -> list[int]:
    """Sorted distinct cut points strictly inside ``range(1, size)``."""
    if size < 2:
        return []
    count = rng.randint(1, min(most, size - 1))
    return sorted(rng.sample(range(1, size), count))


def split_at(data: Any, cuts: list[int]) -> list[Any]:
    """``data`` cut at ``cuts`` (sorted, may be unsorted or out of range in a hand-edited case)."""
    points = [0, *sorted(c for c in set(cuts) if 0 < c < len(data)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(points)]


def corpus_dir() -> Path | None:
    """The seed corpus: ``$TOOLGUARD_FUZZ_CORPUS``, else ``fuzz/corpus`` of a source checkout, else None."""
    env = os.environ.get("TOOLGUARD_FUZZ_CORPUS")
    if env:
        return Path(env)
    guess = Path(__file__).resolve().parents[3] / "fuzz" / "corpus"
    return guess if guess.is_dir() else None


def json_shrinks(value: Any) -> Iterator[Any]:
    """Copies of a JSON value with one object member or array item removed (outermost first)."""
    if isinstance(value, dict):
        for key in list(value):
            yield {k: v for k, v in value.items() if k != key}
        for key, item in value.items():
            for smaller in json_shrinks(item):
                yield {**value, key: smaller}
    elif isinstance(value, list):
        for index in range(len(value)):
            yield value[:index] + value[index + 1 :]
        for index, item in enumerate(value):
            for smaller in json_shrinks(item):
                yield [*value[:index], smaller, *value[index + 1 :]]


def text_shrinks(text: str) -> Iterator[str]:
    """Copies of ``text`` with a span removed: halves first, then smaller spans (ddmin-style)."""
    step = len(text) // 2
    while step >= 1:
        for start in range(0, len(text), step):
            yield text[:start] + text[start + step :]
        step //= 2
