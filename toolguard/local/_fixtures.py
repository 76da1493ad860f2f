"""Build tokenizers and small random-weight models locally: no hub, nothing downloaded.

Tests, benchmarks and the demo-model trainer need a real tokenizer (byte-level BPE, like Llama 3 and Qwen)
with a chat template that knows about tools, and Llama-style causal LMs built from a config. This module
trains them from text on disk (by default the Python standard library's own sources) and caches the tokenizer
in a folder keyed by its parameters, so a second call costs a file read.

- ``build_tokenizer(texts, vocab_size, ...)``: train a byte-level BPE with ``tokenizers`` and wrap it as a
  transformers fast tokenizer with hermes/Qwen-style special tokens (``<|im_start|>``, ``<|im_end|>``,
  ``<|endoftext|>``), the non-special added tokens ``<tool_call>``/``</tool_call>`` and ``CHAT_TEMPLATE``.
- ``cached_tokenizer(cache_dir, vocab_size, ...)``: the same, trained once per parameter set and saved.
- ``build_tiny_llama(tokenizer, ...)``: a ``LlamaForCausalLM`` with random weights from a fixed seed, sized by
  keyword arguments (the defaults give ~0.3M parameters plus embeddings); ``hidden_size=768, layers=12`` gives
  a ~100M-parameter model for decode-step measurements.
- ``default_corpus()``: stdlib sources plus generated tool-call JSON, so JSON punctuation gets its own tokens.

Training cost grows with the corpus, not the vocabulary: about 10 s for the default corpus on one core.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sysconfig
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

__all__ = [
    "CHAT_TEMPLATE",
    "CHAT_TEMPLATE_TURNS",
    "DEFAULT_CORPUS_BYTES",
    "END_OF_TEXT",
    "IM_END",
    "IM_START",
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "build_tiny_llama",
    "build_tokenizer",
    "cached_tokenizer",
    "default_corpus",
]

END_OF_TEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
SPECIAL_TOKENS = (END_OF_TEXT, IM_START, IM_END)
# Non-special added tokens: they decode to their own text, as in Qwen 2.5 / Hermes tokenizers, so grammar
# engines can match them as ordinary bytes.
TOOL_TOKENS = (TOOL_CALL_OPEN, TOOL_CALL_CLOSE, "<tool_response>", "</tool_response>", "<tools>", "</tools>")

# Size of stdlib text read by default_corpus(): enough for a few thousand merges, small enough to train fast.
DEFAULT_CORPUS_BYTES = 3_000_000

# Everything after the tools block: the system prompt without tools, then every turn (calls as
# <tool_call> JSON, tool results as <tool_response> user turns); shared with the demo model's template.
CHAT_TEMPLATE_TURNS = (
    "{% elif ns.system %}"
    "<|im_start|>system\n{{ ns.system }}<|im_end|>{{ nl }}"
    "{% endif %}"
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}"
    "{% elif m['role'] == 'tool' %}"
    "<|im_start|>user\n<tool_response>\n{{ m['content'] }}\n</tool_response><|im_end|>{{ nl }}"
    "{% elif m['role'] == 'assistant' and m['tool_calls'] is defined and m['tool_calls'] %}"
    "<|im_start|>assistant\n"
    "{% if m['content'] %}{{ m['content'] }}{{ nl }}{% endif %}"
    "{% for tc in m['tool_calls'] %}"
    "{% set f = tc['function'] if tc['function'] is defined else tc %}"
    "{% if not loop.first %}{{ nl }}{% endif %}"
    '<tool_call>\n{"name": "{{ f["name"] }}", "arguments": '
    "{% if f['arguments'] is string %}{{ f['arguments'] }}{% else %}{{ f['arguments'] | tojson }}{% endif %}"
    "}{{ nl }}</tool_call>"
    "{% endfor %}"
    "<|im_end|>{{ nl }}"
    "{% else %}"
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] if m['content'] else '' }}<|im_end|>{{ nl }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant{{ nl }}{% endif %}"
)

# A hermes/Qwen-style template: tool definitions in the system prompt, calls as
# <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>, tool results as <tool_response> user turns.
CHAT_TEMPLATE = (
    # HF renders templates with trim_blocks, which eats a newline right after a block tag, so every newline
    # that follows a tag is written as an expression ({{ nl }}).
    "{% set nl = '\\n' %}"
    "{% set ns = namespace(system=none) %}"
    "{% if messages and messages[0]['role'] == 'system' %}"
    "{% set ns.system = messages[0]['content'] %}{% endif %}"
    "{% if tools %}"
    "<|im_start|>system\n"
    "{% if ns.system %}{{ ns.system }}{{ nl }}{{ nl }}{% endif %}"
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
    "{% for tool in tools %}{{ nl }}"
    "{{ (tool['function'] if tool['function'] is defined else tool) | tojson }}"
    "{% endfor %}{{ nl }}</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
) + CHAT_TEMPLATE_TURNS


def _stdlib_files(*, recursive: bool = False) -> list[Path]:
    """The stdlib's top-level modules, then (``recursive``) those of its packages, each group sorted."""
    root = Path(sysconfig.get_paths()["stdlib"])
    top = sorted(p for p in root.glob("*.py") if p.is_file())
    if not recursive:
        return top
    deeper = sorted(p for p in root.glob("*/**/*.py") if p.is_file() and "site-packages" not in p.parts)
    return top + deeper


def _synthetic_calls(n: int, seed: int) -> Iterator[str]:
    """Tool-call shaped JSON text, so `{"`, `": "`, `"}` and friends become tokens."""
    rng = random.Random(seed)
    words = ["name", "arguments", "location", "unit", "query", "path", "city", "date", "count", "items",
             "celsius", "Paris", "Tokyo", "limit", "id", "value", "type", "start", "end", "title"]
    for _ in range(n):
        args = {rng.choice(words): rng.choice([rng.choice(words), rng.randint(0, 999), True, None,
                                               [rng.randint(0, 9)] * rng.randint(0, 3)])
                for _ in range(rng.randint(1, 4))}
        call = json.dumps({"name": rng.choice(words), "arguments": args})
        yield f"{TOOL_CALL_OPEN}\n{call}\n{TOOL_CALL_CLOSE}"


def default_corpus(*, max_bytes: int = DEFAULT_CORPUS_BYTES, seed: int = 0) -> list[str]:
    """Text to train on: the running Python's standard library sources (sorted, deterministic) plus
    generated tool-call JSON. ``max_bytes`` caps the stdlib part; past the top-level modules (about 5 MB) the
    packages' sources are read too (a 128k vocabulary wants ~40 MB)."""
    texts: list[str] = []
    total = 0
    for path in _stdlib_files(recursive=max_bytes > DEFAULT_CORPUS_BYTES):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        texts.append(text)
        total += len(text)
        if total >= max_bytes:
            break
    texts.append("\n".join(_synthetic_calls(2000, seed)))
    return texts


def build_tokenizer(
    texts: Iterable[str],
    vocab_size: int,
    *,
    min_frequency: int = 2,
    chat_template: str | None = CHAT_TEMPLATE,
    extra_tokens: Sequence[str] = TOOL_TOKENS,
    pieces: str | None = None,
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer on ``texts`` and wrap it for transformers.

    Special tokens take the first ids (``<|endoftext|>`` = 0, ``<|im_start|>`` = 1, ``<|im_end|>`` = 2);
    ``extra_tokens`` are added as non-special tokens after the learned merges. ``eos_token`` is
    ``<|im_end|>`` (end of an assistant turn), ``pad_token`` is ``<|endoftext|>``. ``pieces``, a regex,
    replaces GPT-2's pre-tokenizer split: merges never cross the pieces it matches.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    if pieces is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(pieces), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=max(vocab_size - len(extra_tokens), 300),
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in extra_tokens])
    hf = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=END_OF_TEXT,
        bos_token=None,
        unk_token=None,
        additional_special_tokens=[IM_START],
    )
    if chat_template is not None:
        hf.chat_template = chat_template
    return hf


def _cache_key(vocab_size: int, max_bytes: int, seed: int, min_frequency: int) -> str:
    extra = [] if min_frequency == 2 else [min_frequency]
    key = [vocab_size, max_bytes, seed, CHAT_TEMPLATE, TOOL_TOKENS, len(_stdlib_files()), 2, *extra]
    payload = json.dumps(key)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def cached_tokenizer(
    cache_dir: str | Path,
    vocab_size: int,
    *,
    max_bytes: int = DEFAULT_CORPUS_BYTES,
    seed: int = 0,
    min_frequency: int = 2,
) -> PreTrainedTokenizerFast:
    """``build_tokenizer(default_corpus(...), vocab_size)``, trained once and kept under ``cache_dir``.

    The stdlib holds about 32 MB of sources: enough for 32k merges at ``min_frequency=2``; a 128k vocabulary
    needs ``min_frequency=1``."""
    from transformers import PreTrainedTokenizerFast

    folder = Path(cache_dir) / f"bpe-{vocab_size}-{_cache_key(vocab_size, max_bytes, seed, min_frequency)}"
    if (folder / "tokenizer.json").exists():
        hf: PreTrainedTokenizerFast = PreTrainedTokenizerFast.from_pretrained(str(folder))
        if hf.chat_template is None:  # pragma: no cover - older caches
            hf.chat_template = CHAT_TEMPLATE
        return hf
    texts = default_corpus(max_bytes=max_bytes, seed=seed)
    hf = build_tokenizer(texts, vocab_size, min_frequency=min_frequency)
    tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}")
    hf.save_pretrained(str(tmp))
    try:
        tmp.replace(folder)
    except OSError:  # another process saved it first
        shutil.rmtree(tmp, ignore_errors=True)
    return hf


def build_tiny_llama(
    tokenizer: Any,
    *,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate_size: int | None = None,
    max_position_embeddings: int = 4096,
    seed: int = 0,
    vocab_size: int | None = None,
) -> LlamaForCausalLM:
    """A ``LlamaForCausalLM`` with random weights (``torch.manual_seed(seed)``), in eval mode.

    The vocabulary size is ``len(tokenizer)`` unless given; eos/pad ids and the generation config's
    ``eos_token_id`` (``<|im_end|>`` and ``<|endoftext|>``) come from the tokenizer.
    """
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    candidates = (tokenizer.convert_tokens_to_ids(IM_END), tokenizer.convert_tokens_to_ids(END_OF_TEXT))
    eos_ids = [i for i in candidates if isinstance(i, int) and i >= 0]
    config = LlamaConfig(
        vocab_size=vocab_size or len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size or hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_position_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=eos_ids or tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.eval()  # type: ignore[no-untyped-call]
    model.generation_config = GenerationConfig(  # type: ignore[no-untyped-call]
        eos_token_id=eos_ids, pad_token_id=tokenizer.pad_token_id, bos_token_id=None
    )
    return model
