"""What toolguard needs to know about a tokenizer, computed once per tokenizer and cached.

``Vocab.of(tokenizer)`` returns the exact bytes of every token (byte-level BPE, SentencePiece with byte
fallback, or a slow per-token decode as the last resort), the special ids, the declared end-of-turn ids and a
fingerprint used as the tokenizer half of compile-cache keys. On top of those bytes it offers the two lookups
the turn automaton needs:

- ``literal_tokens(text, pos)``: the ids whose bytes are a prefix of ``text[pos:]`` (framing literals such as
  ``"\\n</tool_call>"``): at most ``len(text)`` dictionary probes per query, cached;
- ``marker_bans(marker)``: for free text watched for a marker (``<tool_call>``), a table from the KMP state
  (how many marker bytes end the text) to the ids that would complete the marker *before their own last byte*,
  i.e. would smuggle text past the marker inside one token. Built with one sort of the vocabulary and a
  bisection per marker suffix: O(V log V) once per (tokenizer, marker).

Cost: building a ``Vocab`` is O(V) (about 0.1 s at 128k tokens); everything after is per-query and small.
"""

from __future__ import annotations

import bisect
import hashlib
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Vocab", "end_token_ids"]

_CACHE: weakref.WeakKeyDictionary[Any, Vocab] = weakref.WeakKeyDictionary()
_CACHE_BY_ID: dict[int, Vocab] = {}
_LOCK = threading.Lock()


def _byte_decoder() -> dict[str, int]:
    # GPT-2's reversible byte <-> printable-unicode map, as used by every byte-level BPE.
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=True)}


def _decoder_kind(tokenizer: Any) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return "slow"
    try:
        import json

        spec = json.loads(backend.to_str())
    except Exception:  # pragma: no cover - exotic backends
        return "slow"
    dec = spec.get("decoder") or {}
    kinds = {dec.get("type")} | {d.get("type") for d in dec.get("decoders", []) if isinstance(d, dict)}
    if "ByteLevel" in kinds:
        return "bytelevel"
    if "ByteFallback" in kinds or "Metaspace" in kinds:
        return "sentencepiece"
    return "slow"


def end_token_ids(tokenizer: Any, *extra: Any) -> tuple[int, ...]:
    """Every end-of-sequence id declared by ``tokenizer`` and by each of ``extra`` (a model, a
    ``GenerationConfig``, a config, an int or a list of ints), in first-seen order."""
    out: list[int] = []

    def add(value: Any) -> None:
        if value is None:
            return
        if isinstance(value, int):
            if value >= 0 and value not in out:
                out.append(value)
            return
        if isinstance(value, (list, tuple, set)):
            for v in value:
                add(v)
            return
        for attr in ("generation_config", "config"):
            sub = getattr(value, attr, None)
            if sub is not None and sub is not value:
                add(sub)
        add(getattr(value, "eos_token_id", None))

    add(getattr(tokenizer, "eos_token_id", None))
    for item in extra:
        add(item)
    return tuple(out)


@dataclass(eq=False)
class Vocab:
    """Token bytes and lookups for one tokenizer (see the module docstring)."""

    tokenizer: Any
    size: int  # ids 0..size-1 exist in the tokenizer
    token_bytes: list[bytes | None]  # None for special tokens (never matched as text)
    special_ids: frozenset[int]
    fingerprint: str
    _by_bytes: dict[bytes, list[int]] = field(default_factory=dict, repr=False)
    _literal_cache: dict[tuple[bytes, int], list[int]] = field(default_factory=dict, repr=False)
    _encode_cache: dict[bytes, list[int]] = field(default_factory=dict, repr=False)
    _ban_cache: dict[bytes, list[list[int]]] = field(default_factory=dict, repr=False)
    _first_byte_cache: dict[bytes, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, tokenizer: Any) -> Vocab:
        """The cached ``Vocab`` of ``tokenizer`` (built on first use)."""
        with _LOCK:
            try:
                hit = _CACHE.get(tokenizer)
            except TypeError:
                hit = _CACHE_BY_ID.get(id(tokenizer))
            if hit is not None:
                return hit
        vocab = cls._build(tokenizer)
        with _LOCK:
            try:
                _CACHE[tokenizer] = vocab
            except TypeError:  # pragma: no cover - not weak-referenceable
                _CACHE_BY_ID[id(tokenizer)] = vocab
        return vocab

    @classmethod
    def _build(cls, tokenizer: Any) -> Vocab:
        size = len(tokenizer)
        special = frozenset(int(i) for i in getattr(tokenizer, "all_special_ids", ()) if i is not None)
        added: dict[int, Any] = dict(getattr(tokenizer, "added_tokens_decoder", {}) or {})
        special |= frozenset(i for i, t in added.items() if getattr(t, "special", False))
        kind = _decoder_kind(tokenizer)
        tokens = tokenizer.convert_ids_to_tokens(list(range(size)))
        table: list[bytes | None] = [None] * size
        bdec = _byte_decoder() if kind == "bytelevel" else {}
        for i, piece in enumerate(tokens):
            if i in special or piece is None:
                continue
            if i in added:
                table[i] = str(getattr(added[i], "content", piece)).encode("utf-8")
            elif kind == "bytelevel":
                try:
                    table[i] = bytes(bdec[c] for c in piece)
                except KeyError:
                    table[i] = piece.encode("utf-8")
            elif kind == "sentencepiece":
                if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
                    table[i] = bytes([int(piece[3:5], 16)])
                else:
                    table[i] = piece.replace("▁", " ").encode("utf-8")
            else:
                table[i] = tokenizer.decode([i]).encode("utf-8")
        h = hashlib.sha256()
        h.update(type(tokenizer).__name__.encode())
        for i, b in enumerate(table):
            h.update(b"\xff" if b is None else b)
            h.update(i.to_bytes(4, "little"))
        vocab = cls(tokenizer, size, table, special, h.hexdigest()[:24])
        for i, b in enumerate(table):
            if b:
                vocab._by_bytes.setdefault(b, []).append(i)
        return vocab

    # ---- lookups ---------------------------------------------------------------------------------------
    def ids_for_bytes(self, data: bytes) -> list[int]:
        """Token ids whose bytes are exactly ``data``."""
        return self._by_bytes.get(data, [])

    def literal_tokens(self, text: bytes, pos: int) -> list[int]:
        """Ids whose bytes are a non-empty prefix of ``text[pos:]``."""
        key = (text, pos)
        hit = self._literal_cache.get(key)
        if hit is None:
            hit = []
            for end in range(pos + 1, len(text) + 1):
                hit.extend(self._by_bytes.get(text[pos:end], ()))
            self._literal_cache[key] = hit
        return hit

    def encode_literal(self, text: bytes) -> list[int]:
        """A tokenization of ``text`` (the tokenizer's own, checked byte for byte; greedy longest match
        over the vocabulary if the tokenizer's differs, e.g. because it adds a BOS)."""
        hit = self._encode_cache.get(text)
        if hit is not None:
            return hit
        ids: list[int] = []
        try:
            ids = list(self.tokenizer.encode(text.decode("utf-8"), add_special_tokens=False))
        except Exception:  # pragma: no cover - tokenizers that cannot encode bare text
            ids = []
        if b"".join(self.token_bytes[i] or b"\x00" for i in ids) != text:
            ids = []
            pos = 0
            while pos < len(text):
                for end in range(len(text), pos, -1):
                    cand = self._by_bytes.get(text[pos:end])
                    if cand:
                        ids.append(cand[0])
                        pos = end
                        break
                else:  # pragma: no cover - a byte no token covers
                    raise ValueError(f"the vocabulary cannot spell {text!r}")
        self._encode_cache[text] = ids
        return ids

    def decode(self, ids: Iterable[int]) -> bytes:
        return b"".join(self.token_bytes[i] or b"" for i in ids if 0 <= i < self.size)

    def marker_bans(self, marker: bytes) -> list[list[int]]:
        """Per KMP state ``k`` (0..len(marker)-1): ids that complete ``marker`` before their last byte."""
        hit = self._ban_cache.get(marker)
        if hit is not None:
            return hit
        m = len(marker)
        fail = _kmp_failure(marker)
        ordered = sorted((b, i) for i, b in enumerate(self.token_bytes) if b)
        keys = [b for b, _ in ordered]

        def starting_with(prefix: bytes) -> list[int]:
            lo = bisect.bisect_left(keys, prefix)
            out = []
            for j in range(lo, len(keys)):
                if not keys[j].startswith(prefix):
                    break
                out.append(j)
            return out

        # A token holding the whole marker with bytes after its first occurrence is banned in every state.
        always = [i for i, b in enumerate(self.token_bytes) if b and 0 <= b.find(marker) < len(b) - m]
        bans: list[list[int]] = []
        for k in range(m):
            banned = set(always)
            j = k
            while True:
                if j > 0:
                    for idx in starting_with(marker[j:]):
                        b, tid = ordered[idx]
                        if len(b) > m - j:
                            banned.add(tid)
                if j == 0:
                    break
                j = fail[j - 1]
            bans.append(sorted(banned))
        self._ban_cache[marker] = bans
        return bans

    def marker_completions(self, marker: bytes) -> list[list[int]]:
        """For each KMP state, ids that complete ``marker`` exactly at their last byte (or contain it)."""
        m = len(marker)
        fail = _kmp_failure(marker)
        containing = [i for i, b in enumerate(self.token_bytes) if b and marker in b]
        out: list[list[int]] = []
        for k in range(m):
            found = set(containing)
            j = k
            while j > 0:
                found.update(self._by_bytes.get(marker[j:], ()))
                j = fail[j - 1]
            out.append(sorted(found))
        return out

    def text_mask(self) -> np.ndarray:
        """A bitmask of the ids that are ordinary text (not special tokens)."""
        hit = self._first_byte_cache.get(b"")
        if hit is None:
            hit = ids_to_bitmask([i for i, b in enumerate(self.token_bytes) if b], self.size)
            self._first_byte_cache[b""] = hit
        return hit

    def first_byte_mask(self, first_bytes: bytes) -> np.ndarray:
        """A bitmask (int32 words) of ids whose bytes start with one of ``first_bytes``."""
        hit = self._first_byte_cache.get(first_bytes)
        if hit is None:
            ids = [i for i, b in enumerate(self.token_bytes) if b and b[0] in first_bytes]
            hit = ids_to_bitmask(ids, self.size)
            self._first_byte_cache[first_bytes] = hit
        return hit


def _kmp_failure(pattern: bytes) -> list[int]:
    fail = [0] * len(pattern)
    k = 0
    for i in range(1, len(pattern)):
        while k and pattern[i] != pattern[k]:
            k = fail[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        fail[i] = k
    return fail


class MarkerWatch:
    """Incremental KMP matcher: ``feed(bytes)`` returns the index just past the first full match, or -1."""

    __slots__ = ("_fail", "marker", "state")

    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self._fail = _kmp_failure(marker)
        self.state = 0

    def feed(self, data: bytes) -> int:
        m, k, marker, fail = len(self.marker), self.state, self.marker, self._fail
        for pos, byte in enumerate(data):
            while k and byte != marker[k]:
                k = fail[k - 1]
            if byte == marker[k]:
                k += 1
            if k == m:
                self.state = 0
                return pos + 1
        self.state = k
        return -1


def words_for(n_tokens: int) -> int:
    return (n_tokens + 31) // 32


def ids_to_bitmask(ids: Sequence[int], n_tokens: int) -> np.ndarray:
    """An int32 bitmask (little-endian bit order inside each word, as llguidance and xgrammar use)."""
    words = np.zeros(words_for(n_tokens), dtype=np.int32)
    if len(ids):
        arr = np.asarray(ids, dtype=np.int64)
        np.bitwise_or.at(words.view(np.uint32), arr >> 5, (np.uint32(1) << (arr & 31).astype(np.uint32)))
    return words


__all__ += ["MarkerWatch", "ids_to_bitmask", "words_for"]
