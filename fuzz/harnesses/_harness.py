"""Shared driver for the coverage-guided harnesses: atheris when installed, else a pure-Python mutation loop.

Each harness defines ``test_one_input(data: bytes)``, which raises ``AssertionError`` when an invariant breaks
(and lets any unexpected exception escape: that is a crash too). ``main(test_one_input, instrument)``
then runs:

- with atheris (``pip install atheris``): libFuzzer with coverage of the toolguard modules imported inside
  ``instrument()``. Arguments are libFuzzer's: ``python fuzz/harnesses/sse_harness.py -max_total_time=60
  fuzz/corpus/sse`` (crashes are written as ``crash-<sha1>`` files in the current folder);
- without atheris, or with ``--no-atheris``: a seeded mutation loop over the corpus folders given (bit flips,
  byte insertions and deletions, splices of two seeds, chunks of JSON and SSE punctuation) that honours
  ``-max_total_time=N`` (default 60) and ``-seed=N`` and writes a failing input as ``crash-<sha1>``.

Replay one input: ``python fuzz/harnesses/sse_harness.py crash-<sha1>`` (a file argument runs it once).
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from a source checkout without installing
    sys.path.insert(0, str(ROOT))

_TOKENS = (
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b":",
    b",",
    b"\\",
    b"\\u00e9",
    b"\\ud83d\\ude00",
    b"data: ",
    b"\n\n",
    b"\r\n",
    b"\r",
    b"<tool_call>",
    b"</tool_call>",
    b"[TOOL_CALLS]",
    b"<|python_tag|>",
    b"Action: ",
    b"<|im_end|>",
    b"true",
    b"null",
    b"-0.5e+3",
    b"\xff",
    b"\xc3",
    b"Observation:",
    b'{"name": "f", "arguments": {}}',
)


def _mutate(rng: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        i = rng.randint(0, len(out))
        if op == 0 and out:
            j = min(i, len(out) - 1)
            out[j] ^= 1 << rng.randrange(8)
        elif op == 1:
            out[i:i] = bytes([rng.randrange(256)])
        elif op == 2 and out:
            del out[i : i + rng.randint(1, 8)]
        elif op == 3:
            out[i:i] = rng.choice(_TOKENS)
        elif op == 4 and seeds:
            other = rng.choice(seeds)
            k = rng.randint(0, len(other))
            out = out[:i] + other[k:]
        else:
            j = rng.randint(0, len(out))
            out[j:j] = out[i : i + rng.randint(1, 16)]
    return bytes(out[:4096])


def _fallback(test_one_input: Callable[[bytes], None], argv: list[str]) -> int:
    budget, seed, paths = 60.0, int(time.time()), []
    for arg in argv:
        if arg.startswith("-max_total_time="):
            budget = float(arg.split("=", 1)[1])
        elif arg.startswith("-seed="):
            seed = int(arg.split("=", 1)[1])
        elif arg.startswith("-"):
            continue
        else:
            paths.append(Path(arg))
    files = [p for p in paths if p.is_file()]
    if files:  # replay mode
        for path in files:
            test_one_input(path.read_bytes())
            print(f"ok: {path}")
        return 0
    seeds = [
        p.read_bytes() for folder in paths if folder.is_dir() for p in sorted(folder.iterdir()) if p.is_file()
    ]
    seeds = seeds or [b""]
    rng = random.Random(seed)
    deadline = time.monotonic() + budget
    runs = 0
    for data in seeds:
        _run_one(test_one_input, data)
    while time.monotonic() < deadline:
        data = _mutate(rng, rng.choice(seeds), seeds)
        _run_one(test_one_input, data)
        runs += 1
    print(f"fallback mutation loop (no atheris): {runs} inputs in {budget:g}s, seed {seed}, no crash")
    return 0


def _run_one(test_one_input: Callable[[bytes], None], data: bytes) -> None:
    try:
        test_one_input(data)
    except Exception:
        name = f"crash-{hashlib.sha1(data).hexdigest()}"
        Path(name).write_bytes(data)
        traceback.print_exc()
        print(f"crash: input written to {name}", file=sys.stderr)
        raise SystemExit(1) from None


def main(test_one_input: Callable[[bytes], None], instrument: Callable[[], Any]) -> None:
    argv = sys.argv[1:]
    use_atheris = "--no-atheris" not in argv and not os.environ.get("TOOLGUARD_NO_ATHERIS")
    argv = [a for a in argv if a != "--no-atheris"]
    if use_atheris:
        try:
            import atheris
        except ImportError:
            print("atheris is not installed: running the pure-Python mutation loop", file=sys.stderr)
        else:
            with atheris.instrument_imports(include=["toolguard"]):
                instrument()
            atheris.Setup([sys.argv[0], *argv], test_one_input)
            atheris.Fuzz()
            return
    instrument()
    raise SystemExit(_fallback(test_one_input, argv))
