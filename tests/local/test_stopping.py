"""RunawayStoppingCriteria inside a real ``model.generate()``: a tiny random-weight Llama and a byte-level BPE
tokenizer trained here from the standard library's sources. The only fake is the model's *behaviour*, set at
the logits boundary by a LogitsProcessor (a bias toward one token, or a scripted token sequence)."""

from __future__ import annotations

import sysconfig
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from transformers import (  # noqa: E402
    LlamaConfig,
    LlamaForCausalLM,
    LogitsProcessor,
    LogitsProcessorList,
    PreTrainedTokenizerFast,
    StoppingCriteriaList,
)

from toolguard import RunawayDetector  # noqa: E402
from toolguard._runaway import RunawayConfig  # noqa: E402
from toolguard.local import RunawayStoppingCriteria  # noqa: E402

pytestmark = pytest.mark.local

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PROSE = (
    "It selects exactly one of the suites by evaluating the expressions.\n\n"
    "def kind(x):\n    if x == 0:\n        return 0\n    elif x == 1:\n        return 1\n"
    "# ----------------------------------------\n| a | 0 |\n|---|---|\n| b | 0 |\n"
)


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Any:
    """A tiny model decodes fastest on one thread; on a shared machine more threads only wait."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A byte-level BPE (vocab 1000) trained on a few stdlib files, saved to and loaded from tmp."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    texts = [
        (STDLIB / name).read_text(encoding="utf-8")
        for name in ("argparse.py", "textwrap.py", "json/encoder.py")
    ]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1000,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    folder = tmp_path_factory.mktemp("bpe")
    PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>"
    ).save_pretrained(str(folder))
    return PreTrainedTokenizerFast.from_pretrained(str(folder))


@pytest.fixture(scope="session")
def model(tokenizer: Any) -> Any:
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval()


class BiasToken(LogitsProcessor):
    """Fake model behaviour: a strong bias toward one token (the ``S S S S`` failure)."""

    def __init__(self, token_id: int, bias: float = 1e4) -> None:
        self.token_id = token_id
        self.bias = bias

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        scores[:, self.token_id] += self.bias
        return scores


class Script(LogitsProcessor):
    """Fake model behaviour: row ``i`` emits ``scripts[i]`` token by token, then end of text."""

    def __init__(self, scripts: list[list[int]], prompt_length: int, eos: int) -> None:
        self.scripts = scripts
        self.prompt_length = prompt_length
        self.eos = eos

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        step = input_ids.shape[1] - self.prompt_length
        forced = torch.full_like(scores, float("-inf"))
        for row, script in enumerate(self.scripts):
            forced[row, script[step] if step < len(script) else self.eos] = 0.0
        return forced


def generate(
    model: Any,
    tokenizer: Any,
    criteria: RunawayStoppingCriteria,
    processor: LogitsProcessor,
    *,
    batch: int = 1,
    max_new_tokens: int = 300,
) -> Any:
    prompt = tokenizer(["Answer:"] * batch, return_tensors="pt")
    out = model.generate(
        **prompt,
        max_new_tokens=max_new_tokens,
        do_sample=False,
        logits_processor=LogitsProcessorList([processor]),
        stopping_criteria=StoppingCriteriaList([criteria]),
        pad_token_id=tokenizer.pad_token_id,
    )
    return out[:, prompt["input_ids"].shape[1] :]


def loop_script(tokenizer: Any, prefix: str, unit: str, copies: int) -> list[int]:
    ids: list[int] = tokenizer.encode(prefix)
    for _ in range(copies):
        ids += tokenizer.encode(unit)
    return ids


def test_a_biased_token_stops_after_token_run_short_copies(model: Any, tokenizer: Any) -> None:
    token = tokenizer.encode(" S")
    assert len(token) == 1
    criteria = RunawayStoppingCriteria(tokenizer)
    out = generate(model, tokenizer, criteria, BiasToken(token[0]), max_new_tokens=50)
    runaway = criteria.runaways[0]
    assert runaway is not None and runaway.kind == "token_run" and runaway.unit == " S"
    # " S" is a short word: stopped at the 12th identical token (token_run_short), not at max_new_tokens
    assert out.shape[1] == RunawayConfig().token_run_short == 12
    assert criteria.finish_reasons == ["repetition"]
    assert criteria.keep_tokens(0) == 1


def test_text_only_mode_finds_the_same_loop_in_the_text(model: Any, tokenizer: Any) -> None:
    criteria = RunawayStoppingCriteria(tokenizer, use_token_ids=False)
    out = generate(model, tokenizer, criteria, BiasToken(tokenizer.encode(" S")[0]))
    runaway = criteria.runaways[0]
    assert runaway is not None and runaway.kind == "periodic" and runaway.unit == " S"
    assert 4 < out.shape[1] < 100


def test_a_normal_generation_runs_to_the_end(model: Any, tokenizer: Any) -> None:
    script = tokenizer.encode(PROSE)
    prompt_length = tokenizer("Answer:", return_tensors="pt")["input_ids"].shape[1]
    criteria = RunawayStoppingCriteria(tokenizer)
    out = generate(
        model,
        tokenizer,
        criteria,
        Script([script], prompt_length, tokenizer.eos_token_id),
        max_new_tokens=len(script),
    )
    assert criteria.runaways == [None]
    assert criteria.finish_reasons == [None]
    assert tokenizer.decode(out[0]) == PROSE


def test_each_sequence_of_a_batch_stops_on_its_own(model: Any, tokenizer: Any) -> None:
    normal = tokenizer.encode(PROSE)
    looping = loop_script(tokenizer, "Well", "?!", 100)
    prompt_length = tokenizer("Answer:", return_tensors="pt")["input_ids"].shape[1]
    criteria = RunawayStoppingCriteria(tokenizer)
    n = len(normal)
    out = generate(
        model,
        tokenizer,
        criteria,
        Script([looping, normal], prompt_length, tokenizer.eos_token_id),
        batch=2,
        max_new_tokens=n,
    )
    first, second = criteria.runaways
    assert first is not None and first.kind in ("periodic", "token_run") and first.unit in ("?!", "!?")
    assert second is None
    assert tokenizer.decode(out[1], skip_special_tokens=True) == PROSE  # the other row went on to the end
    kept = criteria.keep_tokens(0)
    assert kept is not None and kept < n
    text = tokenizer.decode(out[0][:kept], skip_special_tokens=True)
    assert text.startswith("Well") and len(text) <= len("Well") + 2 + first.period + 16


def test_a_loop_of_characters_split_across_byte_tokens(model: Any, tokenizer: Any) -> None:
    unit = "\u4f60\u597d\U0001f600"  # CJK and an emoji: several byte-level tokens per character
    script = loop_script(tokenizer, "Say:", unit, 30)
    assert len(tokenizer.encode(unit)) > len(unit)
    prompt_length = tokenizer("Answer:", return_tensors="pt")["input_ids"].shape[1]
    criteria = RunawayStoppingCriteria(tokenizer)
    generate(
        model,
        tokenizer,
        criteria,
        Script([script], prompt_length, tokenizer.eos_token_id),
        max_new_tokens=len(script),
    )
    runaway = criteria.runaways[0]
    assert runaway is not None and runaway.period == 3
    assert sorted(runaway.unit) == sorted(unit)
    assert runaway.offset == len("Say:")


def test_reset_and_a_custom_detector_factory(model: Any, tokenizer: Any) -> None:
    criteria = RunawayStoppingCriteria(
        tokenizer, detector_factory=lambda: RunawayDetector(token_run=8, token_run_short=8)
    )
    token = tokenizer.encode(" S")[0]
    out = generate(model, tokenizer, criteria, BiasToken(token))
    assert out.shape[1] == 8
    criteria.reset()
    assert criteria.runaways == []
    out = generate(model, tokenizer, criteria, BiasToken(token))
    assert out.shape[1] == 8
