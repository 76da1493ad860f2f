"""Legitimate repetition that outside checks found firing the detector: built from real text on disk.

Each maker returns texts a model may well write, for the classes issue 15 names, from sources every install
of the dev environment has (the standard library, the packages ``constraints.txt`` pins, ``rich``'s own
renderers); ``held_out_extra()`` adds what only this kind of machine has (``/usr/share/doc``, Emacs Lisp),
measured by the benchmark, never asserted.

- ``unicode_layout``: tables rendered by ``rich`` in its box styles (``─━═│┃┌┐└┘╔╗``) over real data (the
  installed distributions and their versions), trees of a real package directory (``├──``, ``└──``), rules and
  progress bars (``━━━╸``, ``█▌``), tables of contents with leaders in other scripts (``・・・``, ``……``,
  ``．．．``), and excerpts of installed files that hold long runs of box-drawing or block characters.
- ``repeated_words``: prose from the docs with refrains of short words (``la la la la``, ``no, no, no``,
  ``ha-ha-ha``: no song lyrics are on disk, so these are built from real prose and the interjections found
  repeated in it, such as jsonschema's ``Ha ha ha ha``) and token diagrams from transformers' docstrings
  (``[V V V V V V V V V V V V T T T T T]``).
- ``sql``: SQL-bearing sources of installed packages (diskcache, the agents SDK's SQLite session) and INSERT
  statements with 4 to 40 ``?``/``%s`` placeholders over real column names.
- ``config_literals``: runs of one literal (``nil nil nil nil``, ``NULL, NULL``, ``return nil, nil, nil``,
  ``False, False``) in Lisp, Go, C and YAML shapes, and torchgen's ``derivatives.yaml``.
- ``json_equal_items``: JSON arrays of equal small items up to 2 KB (status lists, zero-filled coordinates,
  pretty-printed), the length the JSON files on this machine reach (p99 700 characters, a few past 2 KB).
"""

from __future__ import annotations

import importlib.metadata
import io
import json
import random
import re
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["held_out_extra", "makers", "site_packages"]

_BLOCKY = re.compile(r"[\u2500-\u259f\u2800-\u28ff]{24,}")


def site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _console(width: int) -> object:
    from rich.console import Console

    return Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False, record=True)


def _render(renderable: object, width: int) -> str:
    console = _console(width)
    console.print(renderable)  # type: ignore[attr-defined]
    return console.export_text()  # type: ignore[attr-defined,no-any-return]


def _distributions() -> list[tuple[str, str]]:
    found = {(d.metadata["Name"] or "?", d.version) for d in importlib.metadata.distributions()}
    return sorted(found)


def _rich_table(rng: random.Random) -> str:
    from rich import box
    from rich.table import Table

    styles = [
        box.ROUNDED,
        box.SQUARE,
        box.HEAVY,
        box.HEAVY_HEAD,
        box.DOUBLE,
        box.DOUBLE_EDGE,
        box.MINIMAL_DOUBLE_HEAD,
    ]
    dists = _distributions()
    start = rng.randrange(max(1, len(dists) - 40))
    table = Table(title="Installed packages", box=rng.choice(styles), expand=rng.random() < 0.5)
    table.add_column("package")
    table.add_column("version", justify="right")
    table.add_column("status")
    for name, version in dists[start : start + rng.randint(5, 40)]:
        table.add_row(name, version, rng.choice(["ok", "ok", "outdated", ""]))
    return _render(table, rng.choice([80, 100, 120, 160]))


def _rich_tree(rng: random.Random) -> str:
    from rich.tree import Tree

    root = site_packages() / rng.choice(["rich", "jsonschema", "httpx", "pydantic", "starlette", "click"])
    tree = Tree(root.name)
    for sub in sorted(p for p in root.iterdir() if p.name != "__pycache__")[:60]:
        branch = tree.add(sub.name)
        if sub.is_dir():
            for leaf in sorted(sub.iterdir())[:8]:
                branch.add(leaf.name)
    return _render(tree, 100)


def _rich_rules_and_bars(rng: random.Random) -> str:
    from pydoc_data.topics import topics

    from rich.progress_bar import ProgressBar
    from rich.rule import Rule

    parts = []
    for title in rng.sample(sorted(topics), 6):
        width = rng.choice([60, 80, 100, 120])
        parts.append(_render(Rule(title, characters=rng.choice(["─", "━", "═", "-", "="])), width))
        parts.append(f"{title}: see the reference.\n")
        bar = ProgressBar(total=100, completed=rng.randint(0, 100), width=rng.choice([40, 60, 80]))
        parts.append(_render(bar, width))
        blocks = rng.randint(0, 60)
        parts.append(
            f"{rng.randint(0, 100):3d}%|{'█' * blocks}{'▌' if blocks % 2 else ''}{' ' * (60 - blocks)}|\n"
        )
    return "\n".join(parts)


def _leaders(rng: random.Random) -> str:
    from pydoc_data.topics import topics

    leader = rng.choice(["・", "…", "·", "．", "‥", "。", "—", "―", "─", "⋯"])
    width = rng.choice([30, 40, 60])
    lines = [rng.choice(["目次", "Contents", "Índice", "Inhalt", "Содержание"])]
    for page, title in enumerate(rng.sample(sorted(topics), rng.randint(5, 25)), start=rng.randint(1, 9)):
        fill = max(3, width - len(title))
        lines.append(f"{title} {leader * fill} {page * 3}")
    return "\n".join(lines) + "\n"


# Installed files (pinned by constraints.txt) that hold runs of 24+ box-drawing, block or braille characters,
# found with grep over site-packages; listed so that building the corpus does not scan 50,000 files.
_BLOCKY_FILES = (
    "transformers/generation/continuous_batching/utils.py",
    "transformers/exporters/utils.py",
    "transformers/models/whisper/generation_whisper.py",
    "transformers/models/gpt_neox_japanese/tokenization_gpt_neox_japanese.py",
    "transformers/integrations/deepgemm.py",
    "transformers/testing_utils.py",
    "huggingface_hub/hf_api.py",
    "huggingface_hub/utils/tqdm.py",
    "rich/_spinners.py",
    "torch/_higher_order_ops/while_loop.py",
    "torch/_vendor/quack/pipeline.py",
    "tvm_ffi/_dunder.py",
)
# transformers models whose docstrings draw token layouts ("[V V V V V V V V V V V V T T T T T]").
_DIAGRAM_FILES = (
    "qwen2_5_omni/modeling_qwen2_5_omni.py",
    "qwen3_omni_moe/modeling_qwen3_omni_moe.py",
    "qwen2_audio/modeling_qwen2_audio.py",
    "diffusion_gemma/modular_diffusion_gemma.py",
)


def _blocky_files() -> list[tuple[str, str]]:
    """Excerpts of installed files around their first long run of box-drawing, block or braille characters."""
    out = []
    for rel in _BLOCKY_FILES:
        text = _read(site_packages() / rel)
        m = _BLOCKY.search(text)
        if m:
            start = max(0, m.start() - 4000)
            out.append((rel, text[start : start + 8000]))
    return out


def unicode_layout(rng: random.Random) -> Iterator[tuple[str, str]]:
    for make in (_rich_table, _rich_tree, _rich_rules_and_bars, _leaders):
        for i in range(4):
            yield f"{make.__name__.strip('_')}-{i}", make(rng)
    yield from _blocky_files()[:12]


_REFRAINS = ("la", "na", "ha", "oh", "yeah", "da", "bla", "no", "hey", "doo", "tra", "lo", "yes", "go")


def _refrain(rng: random.Random) -> str:
    word = rng.choice(_REFRAINS)
    word = word.capitalize() if rng.random() < 0.3 else word
    copies = rng.randint(4, 8)
    sep = rng.choice([" ", " ", " ", ", ", "-"])
    return sep.join([word] * copies)


def _token_diagrams() -> list[str]:
    """Docstring lines of installed transformers models that draw token layouts ("V V V V T T T")."""
    out = []
    for rel in _DIAGRAM_FILES:
        text = _read(site_packages() / "transformers" / "models" / rel)
        for m in re.finditer(r"[^\n]*\b([A-Z])(?: \1){3,}\b[^\n]*", text):
            out.append(m.group())
    return sorted(set(out))


def repeated_words(rng: random.Random, docs: list[str]) -> Iterator[tuple[str, str]]:
    paragraphs = [p for d in docs for p in d.split("\n\n") if 80 < len(p) < 600 and not p.startswith(" ")]
    for i in range(24):
        parts = []
        for _ in range(rng.randint(2, 5)):
            parts.append(rng.choice(paragraphs))
            parts.append(
                ", ".join(_refrain(rng) for _ in range(rng.randint(1, 3))) + rng.choice([".", "!", "…"])
            )
        yield f"refrains-{i}", "\n\n".join(parts)
    diagrams = _token_diagrams()
    for i in range(0, len(diagrams), 8):
        yield (
            f"token-diagrams-{i // 8}",
            "Here is how the sequence is laid out:\n" + "\n".join(diagrams[i : i + 8]),
        )
    validators = _read(site_packages() / "jsonschema" / "validators.py")
    if "Ha ha ha ha" in validators:
        at = validators.index("Ha ha ha ha")
        yield "jsonschema-validators", validators[max(0, at - 3000) : at + 3000]


def _sql_files() -> list[tuple[str, str]]:
    root = site_packages()
    out = []
    for rel in ("diskcache/core.py", "agents/extensions/memory/advanced_sqlite_session.py"):
        text = _read(root / rel)
        if text:
            out.append((rel, text[:30_000]))
    return out


def sql(rng: random.Random) -> Iterator[tuple[str, str]]:
    yield from _sql_files()
    columns = sorted(
        {
            m
            for _, t in _sql_files()
            for m in re.findall(r"\b([a-z_]{3,20})\b\s+(?:TEXT|INTEGER|REAL|BLOB)", t)
        }
    )
    columns = columns or [
        "key",
        "raw",
        "store_time",
        "expire_time",
        "access_time",
        "access_count",
        "tag",
        "size",
    ]
    for i in range(12):
        n = rng.randint(4, 40)
        cols = [rng.choice(columns) + (f"_{k}" if k else "") for k in range(n)]
        mark = rng.choice(["?", "%s", "?"])
        table = rng.choice(["Cache", "Settings", "events", "metrics"])
        stmt = f"INSERT INTO {table} ({', '.join(cols)})\nVALUES ({', '.join([mark] * n)})"
        yield f"insert-{i}", f"Run this statement with the values bound:\n\n```sql\n{stmt};\n```\n"


def config_literals(rng: random.Random) -> Iterator[tuple[str, str]]:
    for i in range(12):
        n = rng.randint(4, 10)
        shape = i % 4
        if shape == 0:
            nils = " ".join(["nil"] * n)
            body = f"(make-frame-parameters {nils})\n(setq defaults (list {nils}))"
        elif shape == 1:
            body = f"func load() (a, b, c, d *T, err error) {{\n\treturn {', '.join(['nil'] * n)}, err\n}}"
        elif shape == 2:
            body = f"static void *handlers[] = {{{', '.join(['NULL'] * n)}}};"
        else:
            body = "flags:\n" + "".join(
                f"  - {rng.choice(['false', 'False', 'no', '0'])}\n" for _ in range(n)
            )
            body += f"defaults: [{', '.join(['null'] * n)}]\n"
        yield f"literals-{i}", f"The configuration reads:\n\n{body}\n"
    yaml = _read(site_packages() / "torchgen" / "packaged" / "autograd" / "derivatives.yaml")
    if yaml:
        yield "torchgen-derivatives.yaml", yaml[:30_000]


def json_equal_items(rng: random.Random) -> Iterator[tuple[str, str]]:
    items: list[object] = [
        {"status": "ok"},
        {"x": 0, "y": 0},
        {"x": 0.0, "y": 0.0, "z": 0.0},
        {"done": False},
        "pending",
        0,
        None,
        [0, 0],
        {"id": None, "error": None},
    ]
    for i in range(18):
        item = rng.choice(items)
        indent = rng.choice([None, 2, 4])
        one = len(json.dumps({"v": [item, item]}, indent=indent)) - len(
            json.dumps({"v": [item]}, indent=indent)
        )
        count = max(4, rng.randint(1200, 2048) // max(one, 1))
        doc = {"results": [item] * count, "total": count}
        yield f"equal-items-{i}", json.dumps(doc, indent=indent)


def makers(docs: list[str]) -> list[tuple[str, Callable[[random.Random], Iterator[tuple[str, str]]]]]:
    """(category, maker) pairs; each maker yields (name, text)."""
    return [
        ("unicode-layout", unicode_layout),
        ("repeated-words", lambda rng: repeated_words(rng, docs)),
        ("sql", sql),
        ("config-literals", config_literals),
        ("json-equal-items-2k", json_equal_items),
    ]


def held_out_extra(limit: int = 300, seed: int = 2) -> Iterator[tuple[str, str]]:
    """Files only some machines have: /usr/share/doc text (Markdown, plain text, compressed), Emacs Lisp."""
    import gzip

    rng = random.Random(seed)
    docs = sorted(Path("/usr/share/doc").glob("**/*.md")) + sorted(Path("/usr/share/doc").glob("**/*.txt.gz"))
    for path in rng.sample(docs, min(limit, len(docs))):
        try:
            data = path.read_bytes()
            text = (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")
        except (OSError, EOFError, UnicodeDecodeError, ValueError):
            continue
        yield f"doc-{path.name}", text[:30_000]
    for path in sorted(Path("/usr/share").glob("**/*.el"))[:40]:
        text = _read(path)
        if text:
            yield f"elisp-{path.name}", text[:30_000]
