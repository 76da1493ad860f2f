"""Shared pytest configuration. Torch-based tests live in tests/local/ and carry the ``local`` marker."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
