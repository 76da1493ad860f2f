"""The compiled metaschema (``toolguard._schema._metacheck``) against jsonschema's ``check_schema``.

    .venv/bin/python benchmarks/metaschema.py                      # tests/data/toolsets + JSONSchemaBench
    .venv/bin/python benchmarks/metaschema.py --jsb ../shared/corpora/jsonschemabench   # (TOOLGUARD_JSB too)

For every schema of the corpora, with the validator class its ``$schema`` picks (2020-12 when none): the
closures' verdict and time, and ``check_schema``'s (the anchor, same run, same schema, right after). Reports
how many schemas the closures decide (``valid``), how many they leave to the full check, and any schema they
call valid that the full check refuses (``unsound``: must be 0). Times are CPU seconds of the process
(``time.process_time``), summed over the corpus: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "local"))

from _local_toolsets import real_toolsets  # noqa: E402
from jsonschema import SchemaError as JSONSchemaError  # noqa: E402
from jsonschema.validators import validator_for  # noqa: E402

from toolguard import SchemaError  # noqa: E402
from toolguard._schema import normalize_schema  # noqa: E402
from toolguard._schema._metacheck import metaschema_check  # noqa: E402
from toolguard._tools import _format_checker  # noqa: E402

DEFAULT_JSB = Path(os.environ.get("TOOLGUARD_JSB", REPO.parent / "shared" / "corpora" / "jsonschemabench"))
CLOCK = time.process_time


def toolset_schemas() -> list[Any]:
    out = []
    for s in real_toolsets():
        for entry in s.tools:
            fn = entry.get("function", entry)
            try:
                out.append(normalize_schema(fn.get("inputSchema", fn.get("parameters", {"type": "object"}))))
            except SchemaError:
                continue  # ToolSet refuses it before any metaschema check
    return out


def jsb_schemas(folder: Path) -> list[Any]:
    out = []
    for path in sorted(folder.glob("*/*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        schema = doc.get("schema", doc) if isinstance(doc, dict) else doc
        if isinstance(schema, (dict, bool)):
            out.append(schema)
    return out


def compare(label: str, schemas: list[Any]) -> None:
    default = validator_for({"$schema": "https://json-schema.org/draft/2020-12/schema"})
    fast_s = full_s = 0.0
    counts: Counter[str] = Counter()
    drafts: Counter[str] = Counter()
    for schema in schemas:
        declared = schema.get("$schema") if isinstance(schema, dict) else None
        if declared is not None and not isinstance(declared, str):
            counts["$schema not a string (refused before the check)"] += 1
            continue
        cls = validator_for(schema, default=default)
        drafts[cls.__name__] += 1
        checker = _format_checker(cls)
        check = metaschema_check(cls, checker)
        t0 = CLOCK()
        fast = check(schema) if check is not None else False
        t1 = CLOCK()
        try:
            cls.check_schema(schema, format_checker=checker)
            full = True
        except JSONSchemaError:
            full = False
        t2 = CLOCK()
        fast_s += t1 - t0
        full_s += t2 - t1
        if fast and not full:
            counts["unsound"] += 1
            print(f"UNSOUND ({cls.__name__}): {json.dumps(schema)[:300]}")
        elif fast:
            counts["valid, decided by the closures"] += 1
        elif full:
            counts["valid, left to check_schema"] += 1
        else:
            counts["invalid"] += 1
    print(f"| {label} | {len(schemas)} | {counts['valid, decided by the closures']} | "
          f"{counts['valid, left to check_schema']} | {counts['invalid']} | "
          f"{counts['unsound']} | {fast_s:.2f} | {full_s:.2f} | {full_s / max(fast_s, 1e-9):.1f}× |")
    print(f"<!-- drafts: {dict(drafts)}; other: "
          f"{ {k: v for k, v in counts.items() if k.startswith('$schema')} } -->")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jsb", type=Path, default=DEFAULT_JSB, help="JSONSchemaBench (skipped if absent)")
    args = ap.parse_args()
    a, b, c = os.getloadavg()
    print(f"# metaschema check ({time.strftime('%Y-%m-%d %H:%M')}, load {a:.2f}/{b:.2f}/{c:.2f})\n")
    print("| corpus | schemas | valid, decided by the closures | valid, left to check_schema | invalid | "
          "unsound | closures CPU s | check_schema CPU s (anchor) | ratio |\n"
          "|---|---|---|---|---|---|---|---|---|")
    compare("tests/data/toolsets (normalised)", toolset_schemas())
    if args.jsb.exists():
        compare("JSONSchemaBench", jsb_schemas(args.jsb))
    print("\nclosures: `metaschema_check(cls, checker)(schema)` (compiled once per draft before the loop); "
          "check_schema: jsonschema's, with the same format checker. Times summed over the corpus.")


if __name__ == "__main__":
    main()
