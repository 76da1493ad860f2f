"""SmolLM2's GGUF: converted once into the content-addressed cache, loaded as the model it is."""

from __future__ import annotations

import json
from typing import Any

from toolguard.local._load import gguf_cache_dir, smollm2_gguf
from toolguard.local._prompt import template_handles_tools


def test_the_conversion_is_cached_under_the_files_hash(smollm2: tuple[Any, Any]) -> None:
    import hashlib

    source = smollm2_gguf()
    assert source is not None
    folder = gguf_cache_dir(source)
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    record = json.loads((folder / "toolguard.json").read_text())
    assert record["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert record["sha256"].startswith(folder.name.split("-")[0])
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config  # a plain float32 Llama, loadable anywhere


def test_the_model_is_smollm2_with_a_template_that_ignores_tools(smollm2: tuple[Any, Any]) -> None:
    model, tokenizer = smollm2
    assert type(model).__name__ == "LlamaForCausalLM"
    assert round(sum(p.numel() for p in model.parameters()) / 1e6, 1) == 134.5
    assert not template_handles_tools(tokenizer)  # plain ChatML: toolguard renders the tools itself
