"""``Frame``: one JSON value being parsed, on the open path from the root to the scalar being written.

A frame holds the Python value being built (so ``StreamValidator.value`` costs nothing), the evaluations
(``Ev``) of the schemas that apply to it, and, between a key (or comma) and the next value, the *pending*
schemas the next child must satisfy. Its JSON pointer is computed once, on demand, from its parent's. When a
value closes, ``release`` breaks the Frame <-> Ev reference cycles so reference counting frees them at once.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EMPTY", "Frame", "escape", "release"]

EMPTY: Any = ()


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def release(f: Frame) -> None:
    """Break the Frame <-> Ev and parent <-> in-place kid cycles of a finished value, so reference counting
    frees them at once (cyclic garbage makes the collector run, and scan the growing value tree, often)."""
    for ev in f.evs:
        ev.kids = None
    f.evs = EMPTY


class Frame:
    """One value being parsed (a container on the open path, or the scalar being written)."""

    __slots__ = (
        "_path",
        "announced",
        "count",
        "cur_key",
        "early",
        "evs",
        "key",
        "kf",
        "kind",
        "kparts",
        "nchecked",
        "ntext",
        "parent",
        "pending",
        "sjoin",
        "slen",
        "value",
    )

    def __init__(self, kind: str, parent: Frame | None, key: Any) -> None:
        self.kind = kind
        self.parent = parent
        self.key = key
        self.evs: list[Any] = []
        self.value: Any = None
        self.count = 0
        self.pending: Any = EMPTY
        self.announced = False
        self.slen = 0
        self.sjoin = ""
        self.early: list[Any] | None = None
        self.kparts: Any = EMPTY
        self.kf: Frame | None = None
        self.cur_key: Any = None
        self.ntext = ""
        self.nchecked = 0
        self._path: str | None = None

    def path(self) -> str:
        """JSON pointer of this value ("" for the root; a key frame reports its object's pointer)."""
        p = self._path
        if p is None:
            parent = self.parent
            if parent is None:
                p = ""
            elif self.key is None:
                p = parent.path()
            else:
                p = f"{parent.path()}/{escape(str(self.key))}"
            self._path = p
        return p
