"""Apply an allowed-token mask to one row of logits, fast on CPU.

Applying the mask often costs more than computing it. ``apply_mask`` picks by the mask's shape:

- ``single``: read the one allowed logit, fill the row with -inf, write it back (O(V) fill, no bit work);
- ``ban``: index-assign -inf to a short list of ids (free text next to a call marker);
- ``words`` with few non-zero words (digits, enums, punctuation): expand only those words to indices, then
  fill with -inf and copy the allowed logits back;
- ``words`` otherwise (inside strings most of the vocabulary is allowed): invert the words, unpack them to a
  byte per token with numpy and ``masked_fill_`` the disallowed positions.

Every path is O(V) with a small constant; ids at or past the tokenizer's size (padding rows some models add
to their vocabulary) are always disallowed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._turn import Mask

__all__ = ["SPARSE_WORD_FRACTION", "allowed_ids", "apply_mask"]

#: Use the index path when at most this fraction of the bitmask words is non-zero.
SPARSE_WORD_FRACTION = 1 / 16
_NEG_INF = float("-inf")
_BIT = np.arange(32, dtype=np.int64)


def allowed_ids(words: np.ndarray) -> np.ndarray:
    """The ids whose bit is set in ``words`` (int64, ascending)."""
    nz = np.flatnonzero(words)
    if not len(nz):
        return nz
    bits = np.unpackbits(words[nz].view(np.uint8), bitorder="little").reshape(-1, 32)
    rows, cols = np.nonzero(bits)
    return nz[rows] * 32 + cols


def apply_mask(row: Any, mask: Mask, n_tokens: int) -> None:
    """Set the disallowed entries of ``row`` (a 1-D float torch tensor, length >= ``n_tokens``) to -inf."""
    import torch

    kind = mask.kind
    if kind == "all":
        if row.shape[0] > n_tokens:
            row[n_tokens:] = _NEG_INF
        return
    if kind == "single":
        keep = row[mask.token].item()
        row.fill_(_NEG_INF)
        row[mask.token] = keep
        return
    if kind == "ban":
        row[torch.from_numpy(mask.ids)] = _NEG_INF
        if row.shape[0] > n_tokens:
            row[n_tokens:] = _NEG_INF
        return
    words: np.ndarray = mask.ids
    nz = np.flatnonzero(words)
    if len(nz) <= len(words) * SPARSE_WORD_FRACTION:
        if not len(nz):
            row.fill_(_NEG_INF)
            return
        bits = np.unpackbits(words[nz].view(np.uint8), bitorder="little").reshape(-1, 32)
        rows, cols = np.nonzero(bits)
        idx = torch.from_numpy(nz[rows] * 32 + cols)
        keep = row[idx]
        row.fill_(_NEG_INF)
        row[idx] = keep
        return
    banned = np.unpackbits(np.invert(words).view(np.uint8), count=n_tokens, bitorder="little")
    row[:n_tokens].masked_fill_(torch.from_numpy(banned.view(np.bool_)), _NEG_INF)
    if row.shape[0] > n_tokens:
        row[n_tokens:] = _NEG_INF
