"""JSONSchemaBench for benchmarks/grammar.py (section ``jsb``): for a seeded sample of each subset, does
toolguard accept the schema and the engine compile it, and does the grammar classify the labelled instances
right (accepts iff valid)? outlines-core and xgrammar builds run in forked children killed past a limit."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
from pathlib import Path
from typing import Any

from toolguard import GrammarCompileTimeout, ToolguardError
from toolguard.engines._keywords import prepare_schema
from toolguard.local import _compile as compile_mod
from toolguard.local._engines import ENGINES, spec_for
from toolguard.local._turn import FORMATS, TurnGrammar
from toolguard.local._vocab import Vocab, end_token_ids

REPO = Path(__file__).resolve().parents[1]
JSB = Path(os.environ.get("TOOLGUARD_JSB", REPO.parent / "shared" / "corpora" / "jsonschemabench"))
SEPARATORS = (", ", ": ")

__all__ = ["JSB", "jsb_run", "jsb_sample"]


# ---- JSONSchemaBench -----------------------------------------------------------------------------------
def jsb_sample(per_subset: int) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for subset in sorted(p for p in JSB.iterdir() if p.is_dir()):
        files = sorted(subset.glob("*.json"))
        rng = random.Random(f"toolguard-{subset.name}")
        out[subset.name] = sorted(rng.sample(files, min(per_subset, len(files))))
    return out


def _ordered(value: Any, schema: Any, root: Any, depth: int = 0) -> Any:
    """Reorder object keys as the schema's ``properties`` list them (grammars fix property order)."""
    if depth > 30 or not isinstance(schema, dict):
        return value
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            target = target.get(key) if isinstance(target, dict) else None
        return _ordered(value, target, root, depth + 1)
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        keys = [k for k in props if k in value] + [k for k in value if k not in props]
        return {k: _ordered(value[k], props.get(k, schema.get("additionalProperties")), root, depth + 1)
                for k in keys}
    if isinstance(value, list):
        items = schema.get("items")
        prefix = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else []
        return [_ordered(v, prefix[i] if i < len(prefix) else items, root, depth + 1)
                for i, v in enumerate(value)]
    return value


def jsb_one(tok: Any, engine: str, path: Path, timeout: float) -> tuple[bool, int, int, str]:
    """(compiled, instances classified correctly, instances, why not compiled) for one schema file."""
    record = json.loads(path.read_text())
    schema, tests = record["schema"], record.get("tests", [])
    vocab = Vocab.of(tok)
    try:
        prepared = prepare_schema(schema, engine=engine)
        spec = spec_for([("t", prepared)], separators=SEPARATORS, close_objects=False)
        compiled = compile_mod.compile_call_grammar(ENGINES[engine], vocab, spec, vocab.size, timeout=timeout)
    except GrammarCompileTimeout:
        return False, 0, len(tests), "timeout"
    except ToolguardError as exc:
        return False, 0, len(tests), type(exc).__name__
    except Exception as exc:  # an engine crash counts as not compiled
        return False, 0, len(tests), type(exc).__name__
    grammar = TurnGrammar(vocab, ENGINES[engine], compiled, "required", FORMATS["json"], False,
                          end_token_ids(tok), vocab.size)
    right = 0
    for test in tests:
        doc = json.dumps(_ordered(test["data"], schema, schema), ensure_ascii=False, separators=SEPARATORS)
        state = grammar.new_state()
        ok = True
        for t in vocab.encode_literal(('{"name": "t", "arguments": ' + doc + "}").encode()):
            if not state.advance(t):
                ok = False
                break
        right += (ok and state.finished) == bool(test["valid"])
    return True, right, len(tests), ""


def _jsb_child(conn: Any, tok: Any, engine: str, path: Path, timeout: float) -> None:
    conn.send(jsb_one(tok, engine, path, timeout))
    conn.close()


def jsb_run(tok: Any, engine: str, sample: dict[str, list[Path]], timeout: float
            ) -> dict[str, tuple[int, int, int, int]]:
    """Per subset: (schemas, compiled, instances right, instances)."""
    ctx = multiprocessing.get_context("fork")
    out = {}
    for subset, files in sample.items():
        n_ok = right = total = 0
        for path in files:
            if engine != "llguidance":  # builds that can take long and cannot be stopped: a child we can kill
                parent, child = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_jsb_child, args=(child, tok, engine, path, timeout + 5))
                proc.start()
                result = parent.recv() if parent.poll(timeout + 2) else None
                proc.join(0.1)
                if proc.is_alive():
                    proc.kill()
                    proc.join()
                if result is None:
                    n_tests = len(json.loads(path.read_text()).get("tests", []))
                    result = (False, 0, n_tests, "timeout")
            else:
                result = jsb_one(tok, engine, path, timeout)
            compiled, r, n, _why = result
            n_ok += compiled
            right += r
            total += n
        out[subset] = (len(files), n_ok, right, total)
    return out
