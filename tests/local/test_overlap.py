"""Computing the next step's masks beside the forward pass changes nothing but timing: the same seed gives the
same tokens with overlap on and off, in ``generate()`` (batched, through the processor's stopping criteria)
and in ``LocalGenerator``; llguidance's batch fill writes the same bitmasks as one matcher at a time."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from _local_toolsets import NESTED, SMALL, example_tools  # noqa: E402

from toolguard.local import LocalGenerator, ToolCallLogitsProcessor  # noqa: E402
from toolguard.local._vocab import words_for  # noqa: E402

pytestmark = pytest.mark.local


def _generate(model: Any, tok: Any, tools: Any, choice: str, *, overlap: bool | None, seed: int,
              batch: int = 6) -> tuple[list[list[int]], ToolCallLogitsProcessor]:
    proc = ToolCallLogitsProcessor(tok, tools, choice, overlap=overlap, max_string_length=8)
    ids = tok.apply_chat_template([{"role": "user", "content": "go"}], tools=tools,
                                  add_generation_prompt=True, tokenize=True, return_dict=False)
    input_ids = torch.tensor([ids] * batch)
    torch.manual_seed(seed)
    out = model.generate(input_ids, attention_mask=torch.ones_like(input_ids), logits_processor=[proc],
                         stopping_criteria=[proc.stopping_criteria()], do_sample=True, temperature=1.0,
                         top_k=0, max_new_tokens=60, pad_token_id=tok.pad_token_id)
    return out[:, len(ids):].tolist(), proc


@pytest.mark.parametrize("tools,choice", [(NESTED, "required"), (SMALL, "auto"),
                                          (example_tools("weather"), "required")])
def test_generate_same_tokens_with_and_without_overlap(bpe_tokenizer: Any, tiny_llama: Any, tools: Any,
                                                       choice: str) -> None:
    for seed in (0, 1):
        plain, p0 = _generate(tiny_llama, bpe_tokenizer, tools, choice, overlap=False, seed=seed)
        ahead, p1 = _generate(tiny_llama, bpe_tokenizer, tools, choice, overlap=True, seed=seed)
        assert plain == ahead
        assert p0.stats.ahead == 0 and p0.stats.steps == p1.stats.steps
        if choice == "required":  # every row is inside a call: its bitmasks were computed ahead
            assert p1.stats.ahead > 0


def test_a_second_generate_call_starts_fresh_after_work_ahead(bpe_tokenizer: Any, tiny_llama: Any) -> None:
    proc = ToolCallLogitsProcessor(bpe_tokenizer, SMALL, "required", overlap=True, max_string_length=8)
    ids = torch.tensor([[5, 6, 7]] * 2)
    rows = []
    for _ in range(2):
        torch.manual_seed(3)
        out = tiny_llama.generate(ids, attention_mask=torch.ones_like(ids), logits_processor=[proc],
                                  stopping_criteria=[proc.stopping_criteria()], do_sample=True, top_k=0,
                                  max_new_tokens=40, pad_token_id=bpe_tokenizer.pad_token_id)
        rows.append(out.tolist())
    assert rows[0] == rows[1]


def test_local_generator_same_result_with_and_without_overlap(bpe_tokenizer: Any, tiny_llama: Any) -> None:
    tools = example_tools("weather")
    results = []
    for overlap in (False, True):
        gen = LocalGenerator(tiny_llama, bpe_tokenizer, max_string_length=10, overlap=overlap)
        r = gen.chat([{"role": "user", "content": "weather?"}], tools=tools, tool_choice="required", seed=4,
                     max_new_tokens=80)
        results.append((r["choices"], r["usage"], r["toolguard"]["stats"]["forward_passes"]))
    assert results[0] == results[1]


def test_llguidance_batch_fill_matches_one_at_a_time(bpe_tokenizer: Any) -> None:
    proc = ToolCallLogitsProcessor(bpe_tokenizer, NESTED, "required")
    g = proc.grammar
    text = '<tool_call>\n{"name": "plan_trip", "arguments": {"traveller": {"name": "Ada", "age": 3'
    tokens = bpe_tokenizer.encode(text, add_special_tokens=False)
    states = []
    for cut in range(3, len(tokens), 3):  # rows at different points of the call
        st = g.new_state()
        for t in tokens[:cut]:
            assert st.advance(t)
        if st.engine_matcher is not None:
            states.append(st)
    assert len(states) >= 4
    words = np.zeros((len(states), words_for(g.n_vocab)), dtype=np.int32)
    g.engine.fill_batch([(st.engine_matcher, i) for i, st in enumerate(states)], words)  # type: ignore[misc]
    for i, st in enumerate(states):
        one = np.zeros(words_for(g.n_vocab), dtype=np.int32)
        st.engine_matcher.fill(one)  # type: ignore[union-attr]
        assert np.array_equal(words[i], one), i


def test_calling_the_criterion_twice_prepares_the_step_once(bpe_tokenizer: Any, tiny_llama: Any) -> None:
    from transformers import StoppingCriteriaList

    tools = example_tools("weather")
    plain, _ = _generate(tiny_llama, bpe_tokenizer, tools, "required", overlap=False, seed=2)
    proc = ToolCallLogitsProcessor(bpe_tokenizer, tools, "required", overlap=True, max_string_length=8)
    ids = bpe_tokenizer.apply_chat_template([{"role": "user", "content": "go"}], tools=tools,
                                            add_generation_prompt=True, tokenize=True, return_dict=False)
    input_ids = torch.tensor([ids] * 6)
    torch.manual_seed(2)
    criteria = StoppingCriteriaList([proc.stopping_criteria(), proc.stopping_criteria()])
    out = tiny_llama.generate(input_ids, attention_mask=torch.ones_like(input_ids), logits_processor=[proc],
                              stopping_criteria=criteria, do_sample=True, temperature=1.0, top_k=0,
                              max_new_tokens=60, pad_token_id=bpe_tokenizer.pad_token_id)
    assert out[:, len(ids):].tolist() == plain


def test_by_default_a_cpu_model_decodes_without_the_worker(bpe_tokenizer: Any, tiny_llama: Any) -> None:
    """On a CPU model the forward pass keeps the cores busy; measured, the worker only takes turns with it
    (benchmarks/grammar.py, gil section). The default (overlap=None) therefore hands nothing over on CPU."""
    default, proc = _generate(tiny_llama, bpe_tokenizer, NESTED, "required", overlap=None, seed=5)
    plain, _ = _generate(tiny_llama, bpe_tokenizer, NESTED, "required", overlap=False, seed=5)
    assert default == plain and proc.stats.ahead == 0
