"""The embedded demo model: shipped whole, small, trained on the repository's tool sets, and accurate enough
on held-out synthetic requests (a modest floor: it is a demo model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolguard._models import demo_model_path

pytestmark = pytest.mark.local

MAX_BYTES = 20 * 1024 * 1024
#: Tools whose argument values are words, names, paths, URLs or dates (not free numbers or JSON bodies).
WORD_VALUED = {
    "get_weather", "get_forecast", "read_file", "write_file", "list_dir", "http_get", "list_events"
}
REPO_TOOLS = Path(__file__).resolve().parents[2] / "schemas" / "tools"


def test_model_folder_is_complete_and_small() -> None:
    folder = demo_model_path()
    names = {p.name for p in folder.iterdir()}
    assert {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
        "tools.json",
        "training.json",
    } <= names
    assert sum(p.stat().st_size for p in folder.iterdir()) <= MAX_BYTES


@pytest.mark.skipif(not REPO_TOOLS.is_dir(), reason="needs the repository's schemas/tools")
def test_model_was_trained_on_the_repository_tool_sets() -> None:
    from scripts.demo_model.synthetic import load_tool_sets

    shipped = json.loads((demo_model_path() / "tools.json").read_text())
    assert shipped == load_tool_sets(REPO_TOOLS), (
        "schemas/tools changed: retrain (scripts/train_demo_model.py)"
    )


def test_heldout_accuracy_under_the_grammar() -> None:
    pytest.importorskip("torch")
    from scripts.demo_model.train import evaluate_guarded, heldout_requests
    from toolguard.local._generator import LocalGenerator
    from toolguard.local._serve import load_local_model

    model, tokenizer = load_local_model(threads=1)
    examples = heldout_requests(demo_model_path(), count=40, seed=1)
    scores = evaluate_guarded(LocalGenerator(model, tokenizer), examples)
    assert scores["parsed"] >= 0.95, scores
    assert scores["tool_name"] >= 0.95, scores
    # Modest floors, below what the shipped model measures (benchmarks/RESULTS.md: 44% overall on 200
    # requests, 87% where the values are words, names, paths, URLs or dates; numbers and JSON bodies it mostly
    # misses).
    assert scores["arguments"] >= 0.35, scores
    right = total = 0
    for name, tally in scores["arguments_by_tool"].items():
        if name in WORD_VALUED:
            r, t = map(int, tally.split("/"))
            right, total = right + r, total + t
    assert total >= 10 and right / total >= 0.7, scores
