"""Package data: the embedded demo model (``demo/``), trained by ``scripts/train_demo_model.py``.

It is a *demo* model: a ~2M-parameter Llama-style causal LM trained for minutes on synthetic tool-calling
dialogues over the example tool sets (weather, calendar, files, math, http). It picks sensible tools and
arguments for simple requests in that domain and nothing more.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEMO_MODEL_DIR", "demo_model_path"]

DEMO_MODEL_DIR = Path(__file__).resolve().parent / "demo"


def demo_model_path() -> Path:
    """The folder of the embedded demo model (config, safetensors weights, tokenizer, chat template)."""
    return DEMO_MODEL_DIR
