"""Mask application: every plan (keep / ban / bias), the single-token and ban masks and the torch fallback
leave exactly the allowed logits untouched and set every other entry (padding columns past the vocabulary
included) to -inf; plans are cached by the bitmask's content and evicted by size."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from toolguard.local._mask import ID_PLAN_FRACTION, MaskApplier, allowed_ids  # noqa: E402
from toolguard.local._turn import Mask  # noqa: E402
from toolguard.local._vocab import ids_to_bitmask  # noqa: E402

pytestmark = pytest.mark.local

N = 3000  # not a multiple of 32: the last bitmask word is partly padding


def expected(row: torch.Tensor, allowed: set[int]) -> torch.Tensor:
    out = torch.full_like(row, float("-inf"))
    for i in allowed:
        out[i] = row[i]
    return out


def shapes(rng: np.random.Generator) -> dict[str, set[int]]:
    few = int(N * ID_PLAN_FRACTION)
    return {
        "keep": set(rng.choice(N, few // 2, replace=False).tolist()),
        "ban": set(range(N)) - set(rng.choice(N, few // 2, replace=False).tolist()),
        "bias": set(rng.choice(N, N // 2, replace=False).tolist()),
        "none allowed": set(),
        "all allowed": set(range(N)),
    }


@pytest.mark.parametrize("width", [N, N + 61])  # models may pad the logits past the tokenizer's size
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_every_plan_masks_exactly(width: int, dtype: torch.dtype) -> None:
    rng = np.random.default_rng(0)
    applier = MaskApplier(N)
    for name, allowed in shapes(rng).items():
        words = ids_to_bitmask(sorted(allowed), N)
        if name in ("keep", "ban", "bias"):
            assert applier.plan(words).kind == name
        row = torch.randn(width).to(dtype)
        want = expected(row, allowed)
        applier.apply(row, Mask("words", words))
        assert torch.equal(row, want), name


def test_batch_rows_get_their_own_masks() -> None:
    rng = np.random.default_rng(1)
    applier = MaskApplier(N)
    sets = list(shapes(rng).values())
    masks = [Mask("words", ids_to_bitmask(sorted(s), N)) for s in sets]
    masks.append(Mask("single", token=17))
    masks.append(Mask("ban", ids=np.array([3, 5, 2999])))
    masks.append(Mask("all"))
    scores = torch.randn(len(masks), N + 5)
    want = [expected(scores[i], s) for i, s in enumerate(sets)]
    want.append(expected(scores[len(sets)], {17}))
    want.append(expected(scores[len(sets) + 1], set(range(N)) - {3, 5, 2999}))
    want.append(expected(scores[len(sets) + 2], set(range(N))))
    applier.apply_batch(scores, masks)
    for i, w in enumerate(want):
        assert torch.equal(scores[i], w), i


def test_plans_are_cached_by_content_and_evicted_by_size() -> None:
    applier = MaskApplier(N, cache_bytes=20_000)
    rng = np.random.default_rng(2)
    a = ids_to_bitmask(sorted(rng.choice(N, 10, replace=False).tolist()), N)
    first = applier.plan(a)
    assert applier.plan(a.copy()) is first  # same content, another buffer: a hit
    assert (applier.hits, applier.misses) == (1, 1)
    b = a.copy()
    b[0] ^= 1 << 3  # one bit differs: another plan
    assert not np.array_equal(applier.plan(b).data, first.data)
    for _ in range(20):  # bias plans (12 KB each at N=3000) push the oldest out
        applier.plan(ids_to_bitmask(sorted(rng.choice(N, N // 2, replace=False).tolist()), N))
    assert applier._bytes <= 20_000 or len(applier._plans) == 1
    before = applier.misses
    applier.plan(a)
    assert applier.misses == before + 1  # evicted, made again


def test_allowed_ids_round_trips() -> None:
    ids = [0, 1, 31, 32, 63, 64, 2999]
    assert allowed_ids(ids_to_bitmask(ids, N)).tolist() == ids
