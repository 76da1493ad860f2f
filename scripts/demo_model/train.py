"""Train the embedded demo model: a byte-level BPE tokenizer and a small Llama-style causal LM, on CPU.

Theory of operation: ``train_demo_model`` draws synthetic dialogues (``synthetic.generate_dialogues``),
renders them with the demo chat template, trains a tokenizer on that text plus a little generated prose, then
trains a randomly initialised ``LlamaForCausalLM`` with plain torch (AdamW, warmup + cosine decay). The loss
covers assistant turns (weight 1), the arguments of their calls (``arguments_weight``: the values taken from
the request are what is learned last) and tool results (``result_weight``: they repeat the call's values);
never the user's words nor invalid proposals shown for a re-ask. Batches are drawn from length buckets to keep
padding small. Every random choice is seeded (``random.Random``, ``torch.manual_seed``); with the same thread
count and torch version the run is bit-for-bit repeatable. Cost is O(steps x batch x length) forward/backward
passes: about 12 minutes on two idle cores with the defaults.

The output folder holds ``config.json``, ``generation_config.json``, ``model.safetensors``, the tokenizer
files, ``chat_template.jinja``, ``tools.json`` (the tool sets the model was trained on) and ``training.json``
(the command's parameters, wall time and accuracy on held-out requests).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolguard.local._fixtures import (
    CHAT_TEMPLATE_TURNS,
    END_OF_TEXT,
    IM_END,
    IM_START,
    TOOL_TOKENS,
    build_tokenizer,
)

from .synthetic import (
    _SMALL_TALK,
    TOOLS_DIR,
    Dialogue,
    Example,
    Split,
    generate_dialogues,
    generate_requests,
    load_tool_sets,
    training_requests,
)

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

__all__ = [
    "DEMO_CHAT_TEMPLATE",
    "TrainConfig",
    "build_demo_tokenizer",
    "evaluate_guarded",
    "evaluate_requests",
    "heldout_requests",
    "train_demo_model",
]

# The hermes/Qwen template of toolguard.local._fixtures, with one change: tools are listed by name only, not
# as their whole JSON, so a prompt with ten tools costs ~40 tokens, which keeps CPU training short (the demo
# model knows its tools' arguments; the grammar enforces them). Calls, tool results and turns are rendered
# exactly as in the fixtures.
DEMO_CHAT_TEMPLATE = (
    "{% set nl = '\\n' %}"
    "{% set ns = namespace(system=none) %}"
    "{% if messages and messages[0]['role'] == 'system' %}"
    "{% set ns.system = messages[0]['content'] %}{% endif %}"
    "{% if tools %}"
    "<|im_start|>system\n"
    "{% if ns.system %}{{ ns.system }}{{ nl }}{{ nl }}{% endif %}"
    "# Tools\n<tools>"
    "{% for tool in tools %}"
    "{% set f = tool['function'] if tool['function'] is defined else tool %}"
    "{{ nl }}{{ f['name'] }}"
    "{% endfor %}{{ nl }}</tools><|im_end|>\n"
) + CHAT_TEMPLATE_TURNS

_ASSISTANT_OPEN = f"{IM_START}assistant\n"
# Token roles for the loss: assistant turns are the target. Tool results are trained with
# ``TrainConfig.result_weight``: they repeat the call's values (``{"city": "Paris", ...`` after a call for
# Paris), which teaches the copying that filling arguments needs. The rest (system prompt, user turns) is not
# trained: requests hold values no model can predict, whose loss would only add noise; invalid proposals shown
# for a re-ask are never trained.
# The arguments of a call (``TrainConfig.arguments_weight``) weigh more than the rest of an assistant turn:
# their structure is learned in a few hundred steps, their values (taken from the request) are what is left.
_ASSISTANT, _SKIPPED, _CONTEXT, _RESULT, _ARGUMENTS = 1, 0, 2, 3, 4
_RESULT_OPEN, _RESULT_CLOSE = "<tool_response>\n", "\n</tool_response>"
_ARGUMENTS_OPEN, _CALL_CLOSE = '"arguments": ', "}\n" + TOOL_TOKENS[1]


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Every knob of a training run (recorded in ``training.json``)."""

    seed: int = 0
    dialogues: int = 16_000
    vocab_size: int = 4096
    hidden_size: int = 128
    layers: int = 4
    heads: int = 4
    kv_heads: int = 4
    intermediate_size: int = 384
    steps: int = 1800
    batch_size: int = 16
    lr: float = 4e-3
    warmup: int = 100
    weight_decay: float = 0.05
    threads: int = 2
    result_weight: float = 0.5
    invented_fraction: float = 0.0
    arguments_weight: float = 3.0
    eval_requests: int = 200


# -- tokenizer ---------------------------------------------------------------------------------------


def _prose(seed: int) -> list[str]:
    """A little English beyond the dialogues, so ordinary words get tokens (generated: reproducible)."""
    rng = random.Random(seed)
    replies = [reply for _, reply in _SMALL_TALK]
    subjects = ["The model", "A tool", "The user", "This assistant", "The weather", "Every request", "A file"]
    verbs = ["reads", "writes", "checks", "answers", "calls", "returns", "shows", "finds", "creates", "lists"]
    objects = [
        "the forecast",
        "a short answer",
        "the calendar",
        "the result",
        "a web page",
        "the numbers",
        "an event",
        "the directory",
        "the temperature",
        "a message",
    ]
    lines = [f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}." for _ in range(2000)]
    return replies + lines


def build_demo_tokenizer(texts: Sequence[str], *, vocab_size: int) -> PreTrainedTokenizerFast:
    """A byte-level BPE like ``_fixtures.build_tokenizer`` (same special and added tokens, same ids), with a
    pre-tokenizer made for copying: words, digit runs (up to four digits), punctuation runs and whitespace
    runs are separate pieces, so a space never merges into the word after it. "Paris" is then the same token
    in the request (``in Paris``) and in the call (``"city": "Paris"``), and ``62`` or ``2025`` is one token
    in both: filling an argument is then picking a token of the request, which a small model learns in
    minutes, whereas copying digit by digit (an induction circuit) takes it far longer than the training
    budget, and GPT-2's `` Paris`` vs ``Paris`` would need a learned mapping per word."""
    return build_tokenizer(
        texts, vocab_size, chat_template=DEMO_CHAT_TEMPLATE, pieces=r"\p{L}+|\p{N}{1,4}|[^\s\p{L}\p{N}]+|\s+"
    )


# -- data --------------------------------------------------------------------------------------------


def _encode(
    tokenizer: Any, text: str, *, max_len: int, skip: frozenset[int] = frozenset()
) -> tuple[list[int], list[int]]:
    """Token ids and a role per token: ``_ASSISTANT`` for the tokens of assistant turns (including their
    ``<|im_end|>``), ``_ARGUMENTS`` inside their calls' arguments, ``_SKIPPED`` for assistant turns whose
    ordinal is in ``skip``, ``_RESULT`` inside tool results, ``_CONTEXT`` otherwise."""
    enc = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
    spans: list[tuple[int, int]] = []
    skipped: list[tuple[int, int]] = []
    start = text.find(_ASSISTANT_OPEN)
    while start >= 0:
        body = start + len(_ASSISTANT_OPEN)
        end = text.find(IM_END, body)
        end = len(text) if end < 0 else end + len(IM_END)
        if len(spans) + len(skipped) in skip:
            skipped.append((body, end))
        else:
            spans.append((body, end))
        start = text.find(_ASSISTANT_OPEN, end)
    results = []
    start = text.find(_RESULT_OPEN)
    while start >= 0:
        end = text.find(_RESULT_CLOSE, start)
        results.append((start + len(_RESULT_OPEN), len(text) if end < 0 else end))
        start = text.find(_RESULT_OPEN, start + 1)
    arguments = []
    for s, e in spans:
        start = text.find(_ARGUMENTS_OPEN, s, e)
        while start >= 0:
            end = text.find(_CALL_CLOSE, start, e)
            arguments.append((start + len(_ARGUMENTS_OPEN), e if end < 0 else end))
            start = text.find(_ARGUMENTS_OPEN, start + 1, e)
    ids: list[int] = enc["input_ids"][:max_len]
    roles = []
    for a, _b in enc["offset_mapping"][:max_len]:
        if any(s <= a < e for s, e in arguments):
            roles.append(_ARGUMENTS)
        elif any(s <= a < e for s, e in spans):
            roles.append(_ASSISTANT)
        elif any(s <= a < e for s, e in skipped):
            roles.append(_SKIPPED)
        elif any(s <= a < e for s, e in results):
            roles.append(_RESULT)
        else:
            roles.append(_CONTEXT)
    return ids, roles


# -- model -------------------------------------------------------------------------------------------


def _build_model(tokenizer: Any, cfg: TrainConfig) -> LlamaForCausalLM:
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    eos_ids = [tokenizer.convert_tokens_to_ids(IM_END), tokenizer.convert_tokens_to_ids(END_OF_TEXT)]
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        num_key_value_heads=cfg.kv_heads,
        max_position_embeddings=2048,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=eos_ids,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    torch.manual_seed(cfg.seed)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=eos_ids, pad_token_id=tokenizer.pad_token_id, bos_token_id=None, do_sample=False
    )
    return model


def _batches(
    rows: list[tuple[list[int], list[int]]],
    *,
    batch_size: int,
    steps: int,
    seed: int,
    pad_id: int,
    result_weight: float,
    arguments_weight: float,
) -> Any:
    """Yield (input_ids, loss weights): each batch drawn from one length bucket, padded to its longest row."""
    import torch

    rng = random.Random(f"batches:{seed}")
    order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
    buckets = [order[i : i + batch_size * 8] for i in range(0, len(order), batch_size * 8)]
    for _ in range(steps):
        bucket = rng.choice(buckets)
        picked = rng.sample(bucket, min(batch_size, len(bucket)))
        width = max(len(rows[i][0]) for i in picked)
        ids = torch.full((len(picked), width), pad_id, dtype=torch.long)
        weights = torch.zeros((len(picked), width), dtype=torch.float32)
        table = {
            _ASSISTANT: 1.0,
            _ARGUMENTS: arguments_weight,
            _SKIPPED: 0.0,
            _CONTEXT: 0.0,
            _RESULT: result_weight,
        }
        for r, i in enumerate(picked):
            row_ids, row_roles = rows[i]
            ids[r, : len(row_ids)] = torch.tensor(row_ids)
            weights[r, : len(row_ids)] = torch.tensor([table[role] for role in row_roles])
        yield ids, weights


def _assistant_ordinals(dialogue: Dialogue) -> frozenset[int]:
    """The ordinals (among assistant messages) of the dialogue's untrained assistant messages."""
    ordinals, k = set(), 0
    for i, m in enumerate(dialogue.messages):
        if m["role"] == "assistant":
            if i in dialogue.untrained:
                ordinals.add(k)
            k += 1
    return frozenset(ordinals)


def train_demo_model(
    out_dir: str | Path,
    *,
    config: TrainConfig | None = None,
    tools_dir: str | Path = TOOLS_DIR,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train the demo tokenizer and model and save them (with ``tools.json`` and ``training.json``) in
    ``out_dir``. Returns the ``training.json`` record."""
    import torch

    cfg = config or TrainConfig()
    torch.set_num_threads(cfg.threads)
    t0 = time.perf_counter()
    random.seed(cfg.seed)

    tool_sets = load_tool_sets(tools_dir)
    dialogues = list(
        generate_dialogues(
            tool_sets,
            count=cfg.dialogues,
            seed=cfg.seed,
            split="train",
            invented_fraction=cfg.invented_fraction,
        )
    )
    # Render once with a throwaway template-only tokenizer pass: the template needs no vocabulary.
    from jinja2 import Environment  # transformers depends on jinja2

    render = _renderer(Environment)
    texts = [render(d.messages, d.tools) for d in dialogues]
    tokenizer = build_demo_tokenizer(
        texts[: cfg.dialogues // 2] + _prose(cfg.seed), vocab_size=cfg.vocab_size
    )
    check = [tokenizer.apply_chat_template(d.messages, tools=d.tools, tokenize=False) for d in dialogues[:50]]
    if check != texts[:50]:  # pragma: no cover - the two renderers must agree
        raise RuntimeError("the demo chat template renders differently under transformers")
    rows = [
        _encode(tokenizer, text, max_len=512, skip=_assistant_ordinals(d))
        for d, text in zip(dialogues, texts, strict=True)
    ]
    n_tokens = sum(len(r[0]) for r in rows)
    n_loss = sum(role in (_ASSISTANT, _ARGUMENTS) for r in rows for role in r[1])
    log(
        f"data: {len(rows)} dialogues, {n_tokens} tokens ({n_loss} in assistant turns), "
        f"mean length {n_tokens / len(rows):.0f}; tokenizer {len(tokenizer)} tokens "
        f"({time.perf_counter() - t0:.1f}s)"
    )

    model = _build_model(tokenizer, cfg)
    params = sum(p.numel() for p in model.parameters())
    log(f"model: {params / 1e6:.2f}M parameters")
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
        betas=(0.9, 0.98),
    )

    def lr_at(step: int) -> float:
        if step < cfg.warmup:
            return cfg.lr * (step + 1) / cfg.warmup
        progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
        return cfg.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))

    model.train()
    t_train = time.perf_counter()
    cpu_train = time.process_time()
    seen = 0
    running = 0.0
    for step, (ids, weights) in enumerate(
        _batches(
            rows,
            batch_size=cfg.batch_size,
            steps=cfg.steps,
            seed=cfg.seed,
            pad_id=tokenizer.pad_token_id,
            result_weight=cfg.result_weight,
            arguments_weight=cfg.arguments_weight,
        )
    ):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        attention = (ids != tokenizer.pad_token_id).long()
        logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1]
        target, weight = ids[:, 1:], weights[:, 1:]
        token_loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, reduction="none")
        loss = (token_loss * weight).sum() / weight.sum()
        is_target = weight >= 1.0
        target_loss = float((token_loss.detach() * is_target).sum() / is_target.sum().clamp(min=1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        seen += int(ids.numel())
        running = target_loss if step == 0 else 0.95 * running + 0.05 * target_loss
        if step % 25 == 0 or step == cfg.steps - 1:
            elapsed = time.perf_counter() - t_train
            log(
                f"step {step:5d}  loss {running:.4f}  lr {lr_at(step):.2e}  "
                f"{seen / max(elapsed, 1e-9):.0f} tok/s"
                f"  {elapsed:.0f}s"
            )
    train_seconds = time.perf_counter() - t_train
    train_cpu_seconds = time.process_time() - cpu_train
    model.eval()

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), safe_serialization=True)
    tokenizer.save_pretrained(str(out))
    (out / "tools.json").write_text(json.dumps(tool_sets, indent=1) + "\n")
    seen_texts = training_requests(dialogues)
    examples = generate_requests(
        tool_sets, count=cfg.eval_requests, seed=cfg.seed, split="test", exclude=seen_texts
    )
    accuracy = evaluate_requests(model, tokenizer, examples)
    record = {
        "config": asdict(cfg),
        "parameters": params,
        "tokens_seen": seen,
        "train_seconds": round(train_seconds, 1),
        "train_cpu_seconds": round(train_cpu_seconds, 1),
        "total_seconds": round(time.perf_counter() - t0, 1),
        "heldout_unconstrained": accuracy,
        "torch": torch.__version__,
    }
    (out / "training.json").write_text(json.dumps(record, indent=1) + "\n")
    log(f"held-out accuracy (greedy, no grammar): {accuracy}")
    return record


def _renderer(environment: Any) -> Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], str]:
    """The chat template compiled once (as transformers does: trim_blocks, lstrip_blocks, JSON tojson)."""
    env = environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x: json.dumps(x, ensure_ascii=False)
    template = env.from_string(DEMO_CHAT_TEMPLATE)

    def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        return template.render(messages=messages, tools=tools, add_generation_prompt=False)

    return render


# -- evaluation --------------------------------------------------------------------------------------


def _parse_call(text: str) -> tuple[str | None, Any]:
    open_tag, close_tag = TOOL_TOKENS[0], TOOL_TOKENS[1]
    start = text.find(open_tag)
    if start < 0:
        return None, None
    end = text.find(close_tag, start)
    body = text[start + len(open_tag) : end if end >= 0 else len(text)].strip()
    try:
        obj = json.loads(body)
    except ValueError:
        return None, None
    if not isinstance(obj, dict):
        return None, None
    return obj.get("name"), obj.get("arguments")


def evaluate_requests(
    model: Any, tokenizer: Any, examples: Sequence[Example], *, max_new_tokens: int = 96
) -> dict[str, float]:
    """Greedy ``model.generate`` *without* a grammar: fractions of examples with the right tool name, with
    exactly the expected arguments, and with a parseable call; and generated tokens per second."""
    import torch

    names = args = parsed = tokens = 0
    t0 = time.perf_counter()
    for ex in examples:
        prompt = tokenizer.apply_chat_template(
            ex.messages, tools=ex.tools, add_generation_prompt=True, tokenize=False
        )
        ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            out = model.generate(
                ids, max_new_tokens=max_new_tokens, do_sample=False, attention_mask=torch.ones_like(ids)
            )
        tokens += out.shape[1] - ids.shape[1]
        text = tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=False)
        name, arguments = _parse_call(text)
        parsed += name is not None
        names += name == ex.name
        args += name == ex.name and arguments == ex.arguments
    n = max(len(examples), 1)
    seconds = time.perf_counter() - t0
    return {
        "n": len(examples),
        "tool_name": round(names / n, 4),
        "arguments": round(args / n, 4),
        "parsed": round(parsed / n, 4),
        "tokens_per_second": round(tokens / max(seconds, 1e-9), 1),
    }


def evaluate_guarded(
    generator: Any, examples: Sequence[Example], *, tool_choice: Any = "auto", max_new_tokens: int = 96
) -> dict[str, float]:
    """Greedy decoding through a ``LocalGenerator`` (grammar on): the same fractions as ``evaluate_requests``,
    plus ``tokens_per_second`` (generated tokens, forced ones included, over wall time)."""
    from toolguard.local._demo import grammar_tools

    names = args = parsed = 0
    tokens = 0
    by_tool: dict[str, list[int]] = {}
    t0 = time.perf_counter()
    cache: dict[str, Any] = {}
    for ex in examples:
        key = json.dumps(ex.tools, sort_keys=True)
        if key not in cache:
            cache[key] = grammar_tools(ex.tools, engine=generator.engine)[0]
        reply = generator.chat(
            ex.messages,
            tools=cache[key],
            tool_choice=tool_choice,
            temperature=0.0,
            max_new_tokens=max_new_tokens,
        )
        tokens += reply["usage"]["completion_tokens"]
        calls = reply["choices"][0]["message"].get("tool_calls") or []
        right = False
        if calls:
            parsed += 1
            fn = calls[0]["function"]
            names += fn["name"] == ex.name
            right = fn["name"] == ex.name and json.loads(fn["arguments"]) == ex.arguments
            args += right
        tally = by_tool.setdefault(ex.name, [0, 0])
        tally[0] += right
        tally[1] += 1
    n = max(len(examples), 1)
    seconds = time.perf_counter() - t0
    return {
        "n": len(examples),
        "tool_name": round(names / n, 4),
        "arguments": round(args / n, 4),
        "parsed": round(parsed / n, 4),
        "tokens_per_second": round(tokens / max(seconds, 1e-9), 1),
        "arguments_by_tool": {k: f"{r}/{t}" for k, (r, t) in sorted(by_tool.items())},
    }


def heldout_requests(
    folder: str | Path, *, count: int, seed: int = 1, split: Split = "test"
) -> list[Example]:
    """Requests a trained model folder has not seen: its ``tools.json``, and the training dialogues rebuilt
    from its ``training.json`` (same seed and count) so that none of their requests is drawn. ``split``
    ``"unseen"`` draws only values kept out of training."""
    folder = Path(folder)
    tool_sets = json.loads((folder / "tools.json").read_text())
    cfg = json.loads((folder / "training.json").read_text())["config"]
    trained = generate_dialogues(
        tool_sets,
        count=cfg["dialogues"],
        seed=cfg["seed"],
        split="train",
        invented_fraction=cfg.get("invented_fraction", 0.0),
    )
    seen = training_requests(trained)
    return generate_requests(tool_sets, count=count, seed=seed, split=split, exclude=seen)


def evaluate_model(
    folder: str | Path, *, count: int = 200, seed: int = 1, threads: int | None = None
) -> dict[str, Any]:
    """Held-out accuracy and decode speed of a trained model folder, without and with the grammar."""
    from toolguard.local._generator import LocalGenerator
    from toolguard.local._serve import load_local_model

    model, tokenizer = load_local_model(folder, threads=threads)
    examples = heldout_requests(folder, count=count, seed=seed)
    generator = LocalGenerator(model, tokenizer)
    guarded = evaluate_guarded(generator, examples)
    stats = generator.stats
    return {
        "unconstrained": evaluate_requests(model, tokenizer, examples),
        "guarded": guarded,
        "guarded_required": evaluate_guarded(generator, examples, tool_choice="required"),
        "forced_fraction": round(stats.tokens_forced / max(stats.tokens_generated, 1), 3),
        "forward_passes_per_token": round(stats.forward_passes / max(stats.tokens_generated, 1), 3),
    }
