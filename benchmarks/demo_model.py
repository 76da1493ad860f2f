"""Benchmark the embedded demo model: size, held-out accuracy and decode speed, with and without the guard.

Both decoders run greedily on the same held-out requests in one process (``scripts/demo_model/train.py``):

- **unguarded**: ``model.generate`` with no grammar, the call parsed from the text afterwards;
- **guarded**: ``LocalGenerator.chat`` (the grammar of ``toolguard serve``: whole-turn grammar, calls
  terminated to end tokens, jump-forward over forced tokens, runaway stop), ``tool_choice`` auto.

Held-out requests are drawn with their own seed and exclude every request text of the training dialogues
(rebuilt from the model's ``training.json``); ``--unseen`` also measures requests whose values (cities,
titles, paths, numbers) were kept out of training altogether, which only true copying gets right. The ratio
guarded / unguarded tokens per second is the anchor-relative figure; tokens per second counts generated
tokens, forced ones included.

    .venv/bin/python benchmarks/demo_model.py                 # 200 requests (about 3 minutes on 2 cores)
    .venv/bin/python benchmarks/demo_model.py --count 40 --unseen 40
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.demo_model.train import evaluate_guarded, evaluate_requests, heldout_requests  # noqa: E402
from toolguard._models import demo_model_path  # noqa: E402
from toolguard.local._generator import LocalGenerator  # noqa: E402
from toolguard.local._serve import load_local_model  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(demo_model_path()), help="model folder (default: the shipped one)")
    ap.add_argument("--count", type=int, default=200, help="held-out requests")
    ap.add_argument("--unseen", type=int, default=0, help="requests with values never seen in training")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)

    folder = Path(args.model)
    model, tokenizer = load_local_model(folder, threads=args.threads)
    params = sum(p.numel() for p in model.parameters())
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    record = json.loads((folder / "training.json").read_text())
    print(f"model {folder}: {params:,} parameters, {size / 1e6:.2f} MB on disk, vocab {len(tokenizer):,}")
    wall, total = record["train_seconds"], record["total_seconds"]
    print(f"trained in {wall} s wall ({total} s with data and evaluation)")
    print(f"load average at start: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")

    generator = LocalGenerator(model, tokenizer)
    for split, count in (("test", args.count), ("unseen", args.unseen)):
        if count <= 0:
            continue
        t0 = time.perf_counter()
        examples = heldout_requests(folder, count=count, seed=args.seed, split=split)
        plain = evaluate_requests(model, tokenizer, examples)
        guarded = evaluate_guarded(generator, examples)
        print(f"\n{split} split: {len(examples)} requests ({time.perf_counter() - t0:.0f} s)")
        print("| decoder | tool name | arguments exact | parsed call | tokens/s |")
        print("|---|---|---|---|---|")
        for label, r in (("unguarded (generate)", plain), ("guarded (LocalGenerator)", guarded)):
            print(
                f"| {label} | {r['tool_name']:.1%} | {r['arguments']:.1%} | {r['parsed']:.1%} "
                f"| {r['tokens_per_second']:.0f} |"
            )
        ratio = guarded["tokens_per_second"] / max(plain["tokens_per_second"], 1e-9)
        print(f"guarded / unguarded tokens per second: {ratio:.2f}x")
        print("arguments exact by tool (guarded):", json.dumps(guarded["arguments_by_tool"]))
    stats = generator.stats
    print(
        f"\nguarded decoding: {stats.tokens_forced / max(stats.tokens_generated, 1):.0%} of tokens forced, "
        f"{stats.forward_passes / max(stats.tokens_generated, 1):.2f} forward passes per token"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
