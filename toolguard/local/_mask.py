"""Apply an allowed-token mask to rows of logits, fast on CPU.

Applying the mask often costs more than computing it (boolean-index assignment over 128k floats takes
a few hundred microseconds). ``apply_mask`` works on a numpy view of a float32 CPU row and picks by the
mask's shape:

- ``single``: read the one allowed logit, fill the row with -inf, write it back;
- ``ban``: assign -inf to a short list of ids (free text next to a call marker);
- ``words`` with few non-zero words (digits, enums, punctuation): expand only those words to indices, fill
  with -inf and copy the allowed logits back;
- ``words`` otherwise (inside strings most of the vocabulary is allowed): one gather through a 256 x 8 table
  turns each mask byte into eight additive biases (0 or -inf), then one in-place add. Two sequential passes
  over the row, whatever the density.

Other dtypes and devices take the same decisions with torch operations. Every path is O(V) with a small
constant; ids at or past the tokenizer's size (padding rows some models add) are always disallowed.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ._turn import Mask

__all__ = ["SPARSE_WORD_FRACTION", "allowed_ids", "apply_mask", "apply_masks"]

#: Use the index path when at most this fraction of the bitmask words is non-zero.
SPARSE_WORD_FRACTION = 1 / 12
_NEG_INF = float("-inf")
_BIAS = np.where((np.arange(256)[:, None] >> np.arange(8)) & 1, 0.0, -np.inf).astype(np.float32)
_LOCAL = threading.local()


def allowed_ids(words: np.ndarray) -> np.ndarray:
    """The ids whose bit is set in ``words`` (int64, ascending)."""
    nz = np.flatnonzero(words)
    if not len(nz):
        return nz
    bits = np.unpackbits(words[nz].view(np.uint8), bitorder="little").reshape(-1, 32)
    rows, cols = np.nonzero(bits)
    return nz[rows] * 32 + cols


def _bias_buffer(n_bytes: int) -> np.ndarray:
    buf = getattr(_LOCAL, "buf", None)
    if buf is None or buf.shape[0] != n_bytes:
        buf = _LOCAL.buf = np.empty((n_bytes, 8), dtype=np.float32)
    return buf


def apply_mask(row: Any, mask: Mask, n_tokens: int) -> None:
    """Set the disallowed entries of ``row`` (a 1-D float torch tensor, length >= ``n_tokens``) to -inf."""
    import torch

    if row.dtype == torch.float32 and row.device.type == "cpu" and row.is_contiguous():
        _apply_numpy(row.numpy(), mask, n_tokens)
    else:
        _apply_torch(row, mask, n_tokens)


def apply_masks(scores: Any, masks: list[Mask], n_tokens: int) -> None:
    """``apply_mask`` for each row of a 2-D ``scores`` tensor (one numpy view for the whole batch)."""
    import torch

    if scores.dtype == torch.float32 and scores.device.type == "cpu" and scores.is_contiguous():
        view = scores.numpy()
        for i, mask in enumerate(masks):
            _apply_numpy(view[i], mask, n_tokens)
    else:
        for i, mask in enumerate(masks):
            _apply_torch(scores[i], mask, n_tokens)


def _apply_numpy(row: np.ndarray, mask: Mask, n_tokens: int) -> None:
    kind = mask.kind
    if kind == "single":
        keep = row[mask.token]
        row.fill(_NEG_INF)
        row[mask.token] = keep
        return
    if len(row) > n_tokens:
        row[n_tokens:] = _NEG_INF
    if kind == "all":
        return
    if kind == "ban":
        row[mask.ids] = _NEG_INF
        return
    words: np.ndarray = mask.ids
    if np.count_nonzero(words) <= len(words) * SPARSE_WORD_FRACTION:
        nz = np.flatnonzero(words)
        bits = np.unpackbits(words[nz].view(np.uint8), bitorder="little").reshape(-1, 32)
        rows, cols = np.nonzero(bits)
        idx = nz[rows] * 32 + cols
        keep = row[idx]
        row.fill(_NEG_INF)
        row[idx] = keep
        return
    buf = _bias_buffer(len(words) * 4)
    np.take(_BIAS, words.view(np.uint8), axis=0, out=buf)
    head = row[:n_tokens]
    np.add(head, buf.reshape(-1)[:n_tokens], out=head)


def _apply_torch(row: Any, mask: Mask, n_tokens: int) -> None:
    import torch

    kind = mask.kind
    if kind == "single":
        keep = row[mask.token].item()
        row.fill_(_NEG_INF)
        row[mask.token] = keep
        return
    if row.shape[0] > n_tokens:
        row[n_tokens:] = _NEG_INF
    if kind == "all":
        return
    if kind == "ban":
        row[torch.from_numpy(mask.ids).to(row.device)] = _NEG_INF
        return
    banned = np.unpackbits(np.invert(mask.ids).view(np.uint8), count=n_tokens, bitorder="little")
    row[:n_tokens].masked_fill_(torch.from_numpy(banned.view(np.bool_)).to(row.device), _NEG_INF)
