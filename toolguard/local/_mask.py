"""Apply an allowed-token mask to rows of logits, fast on CPU.

Applying a mask at a 128k vocabulary costs more than computing it when done naively (a boolean-index
assignment over 128k floats takes hundreds of microseconds; llguidance's own mask takes ~20). Measured on
grammar walks of real calls (benchmarks/grammar.py), the bitmasks a JSON grammar produces are nearly all
either *sparse* (punctuation, digits, enum values, keys: at most a few hundred ids) or *dense* (inside a
string: everything but the few thousand tokens holding a quote, a backslash or a control byte), and about
70% of them repeat an earlier mask exactly. So each distinct bitmask gets a *plan*, cached by content:

- ``keep`` (at most ``n / 16`` ids allowed): the allowed ids; apply = gather them, fill the row with -inf,
  scatter them back (one write pass over the row);
- ``ban`` (at most ``n / 16`` ids disallowed): the disallowed ids; apply = scatter -inf there (no pass);
- ``bias`` (the rare half-full mask): a float32 row of 0 / -inf; apply = one in-place add.

Looking a plan up costs a hash of the bitmask (16 KB at 128k) and a comparison with the cached copy, a few
microseconds; a miss expands the bitmask once (numpy, O(n)). ``single`` masks (one allowed id) and ``ban``
masks from the turn automaton (a short id list) need no plan. Other dtypes and devices take the same
decisions with torch operations. Ids at or past the tokenizer's size (padding rows some models add) are always
disallowed. ``MaskApplier`` is thread-safe (its cache is behind a lock); a batch is applied row by row, each
row one of the operations above (measured cheaper than one vectorised pass over the whole batch, since the
plans skip the allowed or the disallowed part of each row).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._turn import Mask

__all__ = ["DEFAULT_PLAN_CACHE_BYTES", "MaskApplier", "allowed_ids", "applier_for", "apply_mask",
           "apply_masks"]

#: Memory the plan cache of one vocabulary size may hold (a ``bias`` plan at 128k is 512 KB, an id plan
#: at most 64 KB).
DEFAULT_PLAN_CACHE_BYTES = 32 << 20
#: A plan lists ids when at most this fraction of the vocabulary is allowed (or disallowed).
ID_PLAN_FRACTION = 1 / 16
_NEG_INF = float("-inf")
_BIAS = np.where((np.arange(256)[:, None] >> np.arange(8)) & 1, 0.0, -np.inf).astype(np.float32)


def allowed_ids(words: np.ndarray) -> np.ndarray:
    """The ids whose bit is set in ``words`` (int64, ascending)."""
    return _set_bits(words)


def _set_bits(words: np.ndarray) -> np.ndarray:
    nz = np.flatnonzero(words)
    if not len(nz):
        return nz
    bits = np.unpackbits(words[nz].view(np.uint8), bitorder="little").reshape(-1, 32)
    rows, cols = np.nonzero(bits)
    return nz[rows] * 32 + cols


@dataclass(frozen=True, slots=True)
class _Plan:
    kind: str  # "keep" | "ban" | "bias"
    data: np.ndarray  # ids (int64) or the bias row (float32, n_tokens long)


class MaskApplier:
    """Applies ``Mask`` values to logits of one vocabulary size ``n_tokens`` (see the module docstring)."""

    def __init__(self, n_tokens: int, *, cache_bytes: int = DEFAULT_PLAN_CACHE_BYTES) -> None:
        self.n_tokens = n_tokens
        self.cache_bytes = cache_bytes
        # keyed by the bitmask's bytes: the dictionary hashes them once and confirms a hit with a memcmp
        self._plans: OrderedDict[bytes, _Plan] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    # ---- plans -------------------------------------------------------------------------------------------
    def plan(self, words: np.ndarray) -> _Plan:
        """The cached plan for bitmask ``words`` (made now on a miss)."""
        key = words.tobytes()
        with self._lock:
            hit = self._plans.get(key)
            if hit is not None:
                self._plans.move_to_end(key)
                self.hits += 1
                return hit
        plan = self._make(words)
        with self._lock:
            self.misses += 1
            if key not in self._plans:
                self._plans[key] = plan
                self._bytes += plan.data.nbytes + len(key)
            while self._bytes > self.cache_bytes and len(self._plans) > 1:
                old, gone = self._plans.popitem(last=False)
                self._bytes -= gone.data.nbytes + len(old)
        return plan

    def _make(self, words: np.ndarray) -> _Plan:
        n = self.n_tokens
        allowed = int(np.bitwise_count(words.view(np.uint32)).sum())
        limit = max(1, int(n * ID_PLAN_FRACTION))
        if allowed <= limit:
            ids = _set_bits(words)
            return _Plan("keep", ids[ids < n])
        # bits past n_tokens (the last word's padding) are never set by the engines; count them anyway
        if n - allowed <= limit:  # nearly every word has a banned bit: expand them all at once
            bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:n]
            return _Plan("ban", np.flatnonzero(bits == 0))
        bias = np.take(_BIAS, words.view(np.uint8), axis=0).reshape(-1)[:n].copy()
        return _Plan("bias", bias)

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()
            self._bytes = 0

    # ---- applying ----------------------------------------------------------------------------------------
    def apply(self, row: Any, mask: Mask) -> None:
        """Set the disallowed entries of ``row`` (a 1-D float tensor, length >= ``n_tokens``) to -inf."""
        import torch

        if row.dtype == torch.float32 and row.device.type == "cpu" and row.is_contiguous():
            self._apply_numpy(row.numpy(), mask)
        else:
            self._apply_torch(row, mask)

    def apply_batch(self, scores: Any, masks: list[Mask]) -> None:
        """``apply`` for each row of a 2-D ``scores`` tensor (one numpy view for the whole batch)."""
        import torch

        if scores.dtype == torch.float32 and scores.device.type == "cpu" and scores.is_contiguous():
            view = scores.numpy()
            for i, mask in enumerate(masks):
                self._apply_numpy(view[i], mask)
        else:
            for i, mask in enumerate(masks):
                self._apply_torch(scores[i], mask)

    def _apply_numpy(self, row: np.ndarray, mask: Mask) -> None:
        kind = mask.kind
        n = self.n_tokens
        if kind == "single":
            keep = row[mask.token]
            row.fill(_NEG_INF)
            row[mask.token] = keep
            return
        if kind == "all":
            if len(row) > n:
                row[n:] = _NEG_INF
            return
        if kind == "ban":
            row[mask.ids] = _NEG_INF
            if len(row) > n:
                row[n:] = _NEG_INF
            return
        plan = self.plan(mask.ids)
        if plan.kind == "keep":
            keep = row[plan.data]
            row.fill(_NEG_INF)
            row[plan.data] = keep
            return
        if len(row) > n:
            row[n:] = _NEG_INF
        if plan.kind == "ban":
            row[plan.data] = _NEG_INF
        else:
            head = row[:n]
            np.add(head, plan.data, out=head)

    def _apply_torch(self, row: Any, mask: Mask) -> None:
        import torch

        kind = mask.kind
        n = self.n_tokens
        if kind == "single":
            keep = row[mask.token].item()
            row.fill_(_NEG_INF)
            row[mask.token] = keep
            return
        if row.shape[0] > n:
            row[n:] = _NEG_INF
        if kind == "all":
            return
        if kind == "ban":
            row[torch.from_numpy(mask.ids).to(row.device)] = _NEG_INF
            return
        plan = self.plan(mask.ids)
        if plan.kind == "keep":
            ids = torch.from_numpy(plan.data).to(row.device)
            keep = row[ids]
            row[:n].fill_(_NEG_INF)
            row[ids] = keep
        elif plan.kind == "ban":
            row[torch.from_numpy(plan.data).to(row.device)] = _NEG_INF
        else:
            row[:n] += torch.from_numpy(plan.data).to(device=row.device, dtype=row.dtype)


_APPLIERS: dict[int, MaskApplier] = {}
_APPLIERS_LOCK = threading.Lock()


def applier_for(n_tokens: int) -> MaskApplier:
    """The process-wide ``MaskApplier`` of a vocabulary size (grammars of one tokenizer share plans)."""
    hit = _APPLIERS.get(n_tokens)
    if hit is None:
        with _APPLIERS_LOCK:
            hit = _APPLIERS.setdefault(n_tokens, MaskApplier(n_tokens))
    return hit


def apply_mask(row: Any, mask: Mask, n_tokens: int) -> None:
    """Set the disallowed entries of ``row`` (a 1-D float torch tensor, length >= ``n_tokens``) to -inf."""
    applier_for(n_tokens).apply(row, mask)


def apply_masks(scores: Any, masks: list[Mask], n_tokens: int) -> None:
    """``apply_mask`` for each row of a 2-D ``scores`` tensor."""
    applier_for(n_tokens).apply_batch(scores, masks)
