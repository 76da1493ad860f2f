"""Build tests/data/toolsets/: real tool sets for the grammar's compile-time and refusal checks, from clones.

    python scripts/toolsets_corpus.py --gorilla G --acebench A --livemcpbench L        # writes the sample
    python scripts/toolsets_corpus.py ... --all /tmp/all-toolsets.jsonl              # every distinct set too

G, A and L are clones (a working tree or a bare git directory) of ShishirPatil/gorilla, ACEBench/ACEBench and
icip-cas/LiveMCPBench; the files are read at their ``HEAD`` with ``git show``, so nothing is checked out.

A *tool set* is what one request carries: BFCL's and ACEBench's ``function`` list of one test entry (distinct
lists only; BFCL's multi-turn function docs, one file per API, count as one set each), or one MCP server's
``tools/list`` result (LiveMCPBench captured 70 of them). The sample is deterministic (seeded by source and
category, so rerunning over the same commits writes the same files) and always keeps the entries named in
``KEEP``: the sets that exposed a refusal (an enum under the wrong type, a required property that is not
listed, an ECMA-262 pattern Python's ``re`` cannot parse, ``{"not": {}}`` in an ``anyOf``).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "toolsets"
BFCL_DATA = "berkeley-function-call-leaderboard/bfcl_eval/data/"
#: BFCL categories with a ``function`` list per entry, and how many distinct sets to sample from each.
BFCL_SAMPLE = {
    "simple_python": 10, "simple_java": 10, "simple_javascript": 10, "multiple": 10, "parallel": 6,
    "parallel_multiple": 10, "live_simple": 10, "live_multiple": 16, "live_parallel": 5,
    "live_parallel_multiple": 6, "live_irrelevance": 10, "live_relevance": 4, "irrelevance": 6, "memory": 1,
    "web_search": 1,
}
ACEBENCH_PER_FILE = 3
KEEP = {
    "live_simple_71-35-0", "live_irrelevance_428-103-0", "live_relevance_8-8-0", "agent_multi_turn_20",
    "special_error_param_15", "special_error_param_46",
}


def _git(repo: Path, *args: str) -> str:
    git_dir = repo / ".git" if (repo / ".git").exists() else repo
    out = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=True)
    return out.stdout.decode("utf-8")


def _show(repo: Path, path: str) -> str:
    return _git(repo, "show", f"HEAD:{path}")


def _ls(repo: Path, folder: str) -> list[str]:
    return _git(repo, "ls-tree", "--name-only", "HEAD", folder).split()


def _head(repo: Path) -> str:
    return _git(repo, "rev-parse", "HEAD").strip()


def _distinct(lines: str, category: str) -> Iterator[dict[str, Any]]:
    seen: set[str] = set()
    for line in lines.splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        tools = entry.get("function")
        if not tools:
            continue
        key = json.dumps(tools, sort_keys=True)
        if key not in seen:
            seen.add(key)
            yield {"id": entry["id"], "category": category, "tools": tools}


def bfcl(repo: Path) -> list[dict[str, Any]]:
    out = []
    for cat in BFCL_SAMPLE:
        out += _distinct(_show(repo, f"{BFCL_DATA}BFCL_v4_{cat}.json"), cat)
    for path in _ls(repo, f"{BFCL_DATA}multi_turn_func_doc/"):
        lines = _show(repo, path).splitlines()
        tools = [json.loads(line) for line in lines if line.strip()]
        out.append({"id": Path(path).stem, "category": "multi_turn_func_doc", "tools": tools})
    return out


def acebench(repo: Path) -> list[dict[str, Any]]:
    out = []
    for path in _ls(repo, "data_all/data_en/"):
        if path.endswith(".json"):
            out += _distinct(_show(repo, path), Path(path).stem.removeprefix("data_"))
    return out


def livemcpbench(repo: Path) -> list[dict[str, Any]]:
    out = []
    for server in json.loads(_show(repo, "tools/LiveMCPTool/tools.json")):
        for key, listing in server["tools"].items():
            tools = [{k: v for k, v in t.items() if v is not None} for t in listing["tools"]]
            out.append({"id": f"{server['name']}/{key}", "category": server.get("category", ""),
                        "web": server.get("web"), "tools": tools})
    return out


def sample(sets: list[dict[str, Any]], source: str, per_category: dict[str, int] | int | None
           ) -> list[dict[str, Any]]:
    if per_category is None:
        return sets
    by_cat: dict[str, list[dict[str, Any]]] = {}
    for s in sets:
        by_cat.setdefault(s["category"], []).append(s)
    out = []
    for cat, items in by_cat.items():
        n = per_category if isinstance(per_category, int) else per_category.get(cat, len(items))
        kept = [s for s in items if s["id"] in KEEP]
        rest = [s for s in items if s["id"] not in KEEP]
        rng = random.Random(f"toolguard-{source}-{cat}")
        picked = rng.sample(rest, max(0, min(n - len(kept), len(rest))))
        out += sorted(kept + picked, key=items.index)
    return out


def write(path: Path, sets: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for s in sets:
            fh.write(json.dumps(s, ensure_ascii=False, separators=(",", ":")) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gorilla", type=Path, required=True)
    ap.add_argument("--acebench", type=Path, required=True)
    ap.add_argument("--livemcpbench", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--all", type=Path, help="also write every distinct set (with a 'source' field) here")
    args = ap.parse_args(argv)
    sources = {
        "bfcl": (bfcl(args.gorilla), {**BFCL_SAMPLE, "multi_turn_func_doc": 99}, args.gorilla),
        "acebench": (acebench(args.acebench), ACEBENCH_PER_FILE, args.acebench),
        "mcp": (livemcpbench(args.livemcpbench), None, args.livemcpbench),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (sets, per, repo) in sources.items():
        picked = sample(sets, name, per)
        write(args.out / f"{name}.jsonl", picked)
        print(f"{name}: {len(picked)} of {len(sets)} distinct sets, HEAD {_head(repo)}")
    if args.all:
        write(args.all, [{"source": n, **s} for n, (sets, _, _) in sources.items() for s in sets])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
