"""Train toolguard's embedded demo model (tokenizer + ~1.2M-parameter Llama) on CPU, reproducibly.

    python scripts/train_demo_model.py                      # writes toolguard/_models/demo/ (about 13 min)
    python scripts/train_demo_model.py --out /tmp/demo --steps 200   # a quick, worse model
    python scripts/train_demo_model.py --eval-only          # accuracy and tokens/s of the shipped model
    python benchmarks/demo_model.py                         # the same, as tables, with unseen values too

Needs toolguard[local]. scripts/demo_model/train.py says what it does; TrainConfig lists every knob.
Bit-for-bit reproducible for a given torch version and thread count (--threads, default 2).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.demo_model.train import TrainConfig, evaluate_model, train_demo_model  # noqa: E402
from toolguard._models import DEMO_MODEL_DIR  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default=str(DEMO_MODEL_DIR), help="output folder (default: %(default)s)")
    parser.add_argument("--tools-dir", default=str(ROOT / "schemas" / "tools"), help="tool sets to train on")
    parser.add_argument("--eval-only", action="store_true", help="only evaluate the model in --out")
    parser.add_argument("--eval-count", type=int, default=200, help="held-out requests to evaluate")
    for f in dataclasses.fields(TrainConfig):
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    args = parser.parse_args(argv)
    if args.eval_only:
        print(json.dumps(evaluate_model(args.out, count=args.eval_count, threads=args.threads), indent=1))
        return 0
    config = TrainConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)})
    record = train_demo_model(args.out, config=config, tools_dir=args.tools_dir)
    keys = ("parameters", "train_seconds", "train_cpu_seconds", "total_seconds", "heldout_unconstrained")
    print(json.dumps({k: record[k] for k in keys}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
