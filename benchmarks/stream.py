"""Benchmark: streaming validation of tool-call arguments, 16-character chunks.

Side by side in one process, on tool-argument-like documents of 10 KB, 100 KB and 1 MB with a matching schema:

- toolguard: ``StreamValidator.feed`` per chunk (schema-aware, incremental);
- pydantic_core: ``from_json(buffer, allow_partial=True)`` re-parsing the whole buffer after every chunk (what
  streaming SDK helpers do), no schema;
- partial_json_parser: ``loads(buffer)`` after every chunk, no schema;
- floor: one ``json.loads`` of the whole document (no streaming, no schema).

Times are CPU seconds of this process (``time.process_time``), so a busy shared machine skews them less
than wall time would. A re-parse baseline whose projected time exceeds ``--budget`` seconds (default 60) is
not run at that size: its time is extrapolated from the largest size measured (quadratic: time x (size
ratio)^2) and marked "~".

    python benchmarks/stream.py            # the table and the ratios
    python benchmarks/stream.py --quick    # 10 KB and 100 KB only
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from toolguard import StreamValidator
from toolguard._schema import compile_schema

CHUNK = 16

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "maxLength": 200},
        "mode": {"enum": ["fast", "thorough", "balanced"]},
        "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
        "files": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "pattern": "^[a-z0-9_/.-]+$"},
                    "language": {"enum": ["python", "rust", "go", "typescript", "markdown"]},
                    "lines": {"type": "integer", "minimum": 0},
                    "score": {"type": "number", "minimum": 0, "maximum": 1},
                    "content": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
                    "reviewed": {"type": "boolean"},
                    "owner": {"type": ["string", "null"]},
                },
                "required": ["path", "language", "content"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["query", "files"],
    "additionalProperties": False,
}

WORDS = (  # noqa: SIM905 - a word list reads better as text
    "alpha beta gamma delta return value self import def class for while if else try except with as lambda "
    "yield async await print range len dict list str int float None True False"
).split()


def make_document(size: int, seed: int = 7) -> str:
    """A tool-argument-like JSON document of about ``size`` characters, valid against ``SCHEMA``."""
    rng = random.Random(seed)
    files = []
    doc: dict[str, Any] = {
        "query": "find usages of the parser",
        "mode": "thorough",
        "limit": 50,
        "files": files,
    }
    length = len(json.dumps(doc))
    i = 0
    while length < size:
        content = "\n".join(
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(rng.randint(2, 10))
        )
        item = {
            "path": f"src/pkg_{i % 17}/module_{i}.py",
            "language": rng.choice(["python", "rust", "go", "typescript", "markdown"]),
            "lines": rng.randint(1, 5000),
            "score": round(rng.random(), 4),
            "content": content + '\n\t"quoted" \\ end',
            "tags": [rng.choice(WORDS) for _ in range(rng.randint(0, 5))],
            "reviewed": rng.random() < 0.5,
            "owner": None if rng.random() < 0.3 else f"user{i}",
        }
        files.append(item)
        length += len(json.dumps(item)) + 2
        i += 1
    return json.dumps(doc, indent=1)


def chunks(text: str) -> list[str]:
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]


def run_toolguard(parts: list[str]) -> None:
    validator = StreamValidator(SCHEMA)
    for part in parts:
        validator.feed(part)
    verdict = validator.close()
    assert verdict.state == "complete", verdict


def run_pydantic(parts: list[str]) -> None:
    from pydantic_core import from_json

    buf = ""
    for part in parts:
        buf += part
        from_json(buf, allow_partial=True)


def run_partial_json(parts: list[str]) -> None:
    import partial_json_parser

    buf = ""
    for part in parts:
        buf += part
        with contextlib.suppress(Exception):  # some prefixes (a lone '-') are refused; we time the cost
            partial_json_parser.loads(buf)


def run_floor(text: str) -> None:
    json.loads(text)


def timed(fn: Callable[[], None], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 KB and 100 KB only")
    parser.add_argument(
        "--budget", type=float, default=60.0, help="max seconds for one re-parse baseline run"
    )
    args = parser.parse_args(argv)
    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    compile_schema(SCHEMA)  # compiled once and cached, as in a server
    run_toolguard(chunks(make_document(2_000)))  # warm up (imports jsonschema's format checker once)
    rows = []
    last: dict[str, tuple[int, float]] = {}
    for size in sizes:
        text = make_document(size)
        parts = chunks(text)
        repeat = 3
        row: dict[str, Any] = {"size": len(text)}
        row["toolguard"] = (timed(lambda parts=parts: run_toolguard(parts), repeat), False)
        for name, fn in (("pydantic_core", run_pydantic), ("partial_json_parser", run_partial_json)):
            prev = last.get(name)
            projected = prev[1] * (len(text) / prev[0]) ** 2 if prev else 0.0
            if projected > args.budget:
                row[name] = (projected, True)
            else:
                t = timed(lambda fn=fn, parts=parts: fn(parts), 1 if size > 10_000 else repeat)
                row[name] = (t, False)
                last[name] = (len(text), t)
        row["json.loads"] = (timed(lambda text=text: run_floor(text), 5), False)
        rows.append(row)
    cols = ["toolguard", "pydantic_core", "partial_json_parser", "json.loads"]
    print(
        f"CPU seconds (time.process_time), chunk = {CHUNK} characters, best of 3 (re-parse baselines: 1 run "
        "above 10 KB); '~' = extrapolated (quadratic), not run"
    )
    print(f"{'size':>10} " + " ".join(f"{c:>20}" for c in cols))
    for row in rows:
        cells = []
        for c in cols:
            t, extrapolated = row[c]
            cells.append(f"{('~' if extrapolated else '') + f'{t:.4f} s':>20}")
        print(f"{row['size']:>10} " + " ".join(cells))
    print()
    print(
        f"{'size':>10} {'vs pydantic_core':>18} {'vs partial_json':>16} "
        f"{'/ json.loads floor':>19} {'MB/s':>8}"
    )
    for row in rows:
        tg = row["toolguard"][0]
        print(
            f"{row['size']:>10} {row['pydantic_core'][0] / tg:>17.1f}x "
            f"{row['partial_json_parser'][0] / tg:>15.1f}x "
            f"{tg / row['json.loads'][0]:>18.1f}x {row['size'] / tg / 1e6:>8.2f}"
        )
    if len(rows) >= 3:
        scale = rows[2]["toolguard"][0] / rows[1]["toolguard"][0]
        size_ratio = rows[2]["size"] / rows[1]["size"]
        print(f"\nscaling: 1 MB / 100 KB time = {scale:.2f} (size ratio {size_ratio:.2f}; goal <= 12)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
