"""Shared torch fixtures for tests/local/ (local decoding, stopping criteria, serve and demo tests).

Everything is built here, offline: no hub, nothing downloaded.

- ``bpe_tokenizer`` (session): a byte-level BPE with 3,000 tokens trained with ``tokenizers`` on the running
  Python's standard library sources plus generated tool-call JSON (``toolguard.local._fixtures``). It has the
  hermes/Qwen chat template (tools in the system prompt, ``<tool_call>`` blocks), eos ``<|im_end|>``, pad
  ``<|endoftext|>``, and the non-special added tokens ``<tool_call>``/``</tool_call>``. Trained once and
  cached on disk under ``fixture_cache_dir`` (about 2 s the first time).
- ``tiny_llama`` (session): a random-weight ``LlamaForCausalLM`` (hidden 64, 2 layers, seed 0) over that
  tokenizer; its generation config declares ``<|im_end|>`` and ``<|endoftext|>`` as eos.
- ``make_tiny_llama`` (session): a factory, ``make_tiny_llama(seed=..., hidden_size=..., layers=...)``, cached
  per argument set.
- ``fixture_cache_dir`` (session): ``$TOOLGUARD_TEST_CACHE`` or ``<tmp>/toolguard-test-cache``.
- ``one_torch_thread`` (session, used by the model fixtures): torch runs on one thread, which is faster than
  two on a shared 2-core machine.

``pytest.importorskip`` keeps this file importable without torch: the fixtures skip instead.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

FIXTURE_VOCAB = 3000


@pytest.fixture(scope="session")
def fixture_cache_dir() -> Path:
    default = Path(tempfile.gettempdir()) / "toolguard-test-cache"
    root = Path(os.environ.get("TOOLGUARD_TEST_CACHE") or default)
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture(scope="session")
def one_torch_thread() -> Any:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def bpe_tokenizer(fixture_cache_dir: Path) -> Any:
    pytest.importorskip("tokenizers")
    pytest.importorskip("transformers")
    from toolguard.local._fixtures import cached_tokenizer

    return cached_tokenizer(fixture_cache_dir, FIXTURE_VOCAB)


@pytest.fixture(scope="session")
def make_tiny_llama(bpe_tokenizer: Any, one_torch_thread: Any) -> Callable[..., Any]:
    from toolguard.local._fixtures import build_tiny_llama

    made: dict[tuple[tuple[str, Any], ...], Any] = {}

    def make(**kwargs: Any) -> Any:
        key = tuple(sorted(kwargs.items()))
        if key not in made:
            made[key] = build_tiny_llama(bpe_tokenizer, **kwargs)
        return made[key]

    return make


@pytest.fixture(scope="session")
def tiny_llama(make_tiny_llama: Callable[..., Any]) -> Any:
    return make_tiny_llama()
