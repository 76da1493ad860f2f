"""A labelled runaway corpus, made by code from text on disk, deterministic for a given seed.

Sources (all present on a fresh CPython 3.11 install): the standard library's sources, the reference docs
bundled as ``pydoc_data.topics``, ``LICENSE.txt`` and the binary icons under ``idlelib/Icons`` (for hex and
base64 dumps). Man pages under /usr/share/man are used only by ``held_out()``, when present.

- **Positives** inject a loop after a real prefix (prose, code, or a JSON document cut inside a string, an
  object or an array) and let it run to the end of a long generation: single characters, tokens, words,
  ``?!`` alternation, sentences and paragraphs taken from the docs, code lines from the sources, equal JSON
  items, whitespace inside a JSON object, Unicode. Periods go from 1 to about 450 characters.
- **Negatives** are legitimate repetitive text: stdlib sources (also escaped into a JSON tool call), the docs
  (rst tables, ``*****`` underlines, grammar listings), and generated markdown/rst tables, dividers, CSV,
  logs, hex dumps and base64 of real files, JSON arrays of equal items, big numbers, ASCII art, bullet
  lists, elif chains; and the classes outside checks found firing (``legit.py``): Unicode layout (``rich``
  tables, trees, rules, bars, leaders in other scripts, installed files with box drawing), refrains of short
  words and token diagrams, SQL placeholders, runs of one literal (``nil nil``), equal JSON items up to 2 KB.
  The stdlib's test files (``stdlib_tests()``) and ``held_out()`` (man pages, stdlib data, /usr/share/doc,
  Emacs Lisp, when present) are measured by the benchmark only.

``pieces(text)`` cuts text the way a byte-level BPE roughly does (GPT-2 pre-tokenisation, then 1-8 character
pieces chosen by a hash of the pre-token, so equal text gives equal pieces) and numbers pieces like token ids.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import random
import sysconfig
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import regex

from . import legit

__all__ = [
    "Sample",
    "build_corpus",
    "held_out",
    "held_out_positives",
    "pieces",
    "stdlib_root",
    "stdlib_tests",
]

_PRETOKEN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


@dataclass(frozen=True)
class Sample:
    """One corpus text. ``loop_start`` is None for a negative, else where the injected loop begins."""

    name: str
    text: str
    category: str
    loop_start: int | None = None
    unit: str = ""


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def pieces(text: str, vocab: dict[str, int] | None = None) -> list[tuple[str, int]]:
    """Cut ``text`` into (piece, id) pairs of 1-8 characters, deterministically, like a BPE tokenizer."""
    ids = vocab if vocab is not None else {}
    out: list[tuple[str, int]] = []
    for pre in _PRETOKEN.findall(text):
        if len(pre) <= 6:
            out.append((pre, ids.setdefault(pre, len(ids))))
            continue
        rng = random.Random(zlib.crc32(pre[:64].encode()) ^ len(pre))
        i = 0
        while i < len(pre):
            k = rng.randint(1, 8)
            part = pre[i : i + k]
            out.append((part, ids.setdefault(part, len(ids))))
            i += k
    return out


# -- sources -------------------------------------------------------------------------------------------------


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


_SKIP_DIRS = frozenset({"site-packages", "lib2to3", "__pycache__", "config-3.11-x86_64-linux-gnu"})
_TEST_DIRS = frozenset({"test", "tests", "idle_test"})


def _walk(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """Files under ``root`` ending with ``suffixes``, sorted, skipping site-packages and caches."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        found += [Path(folder) / f for f in files if f.endswith(suffixes)]
    return sorted(found)


def _sources(root: Path, *, tests: bool) -> list[Path]:
    keep = []
    for f in _walk(root, (".py",)):
        is_test = any(p in _TEST_DIRS for p in f.relative_to(root).parts)
        if is_test == tests:
            keep.append(f)
    return keep


def _docs() -> list[str]:
    from pydoc_data.topics import topics

    return [topics[k] for k in sorted(topics)]


def _sentences(docs: list[str]) -> list[str]:
    out = []
    for doc in docs:
        for para in doc.split("\n\n"):
            if para.startswith(" ") or "*" * 3 in para or "::" in para:
                continue
            text = " ".join(para.split())
            for sent in text.split(". "):
                if 20 <= len(sent) <= 200 and sent[0].isupper():
                    out.append(sent + ". ")
    return out


def _paragraphs(docs: list[str]) -> list[str]:
    out = []
    for doc in docs:
        for para in doc.split("\n\n"):
            if 120 <= len(para) <= 450 and not para.startswith(" ") and "*" * 3 not in para:
                out.append(para + "\n\n")
    return out


def _code_lines(files: list[Path], rng: random.Random) -> list[str]:
    out = []
    for f in rng.sample(files, min(40, len(files))):
        for line in _read(f).splitlines():
            if 12 <= len(line.strip()) <= 100 and not line.lstrip().startswith("#"):
                out.append(line + "\n")
    return out


def _tool_json(rng: random.Random, words: list[str]) -> dict[str, object]:
    return {
        "name": rng.choice(words),
        "arguments": {
            "query": " ".join(rng.choice(words) for _ in range(rng.randint(3, 12))),
            "path": "/".join(rng.choice(words) for _ in range(rng.randint(1, 4))),
            "limit": rng.randint(1, 100),
            "tags": [rng.choice(words) for _ in range(rng.randint(0, 5))],
            "options": {"recursive": rng.random() < 0.5, "depth": rng.randint(0, 9)},
        },
    }


# -- positives -----------------------------------------------------------------------------------------------

_CHARS = ["S", "G", "!", "?", "A", "x", "\u00e4", "\u4f60", "\U0001f600", "-", ".", "0", "=", "*", "|"]
_TOKENS = [" S", " lock", "lock", " the", "ing", "ha", " very", " 0", "\u4f60\u597d", " \U0001f600", "..."]
_ALTERNATIONS = ["?!", "!?", "?!?", "?!!", ". ", "! ", "-=", "ab"]
_WHITESPACE = "\n\n\n  \t "


def _loop_text(unit: str, length: int) -> str:
    return (unit * (length // len(unit) + 1))[:length]


def _positives(rng: random.Random, count: int, docs: list[str], code: list[Path]) -> Iterator[Sample]:
    sentences = _sentences(docs)
    paragraphs = _paragraphs(docs)
    lines = _code_lines(code, rng)
    words = sorted({w.strip(".,;:()\"'") for s in sentences[:400] for w in s.split() if w.isalpha()})

    def prose_prefix() -> str:
        doc = rng.choice(docs)
        end = rng.randint(min(200, len(doc)), min(len(doc), 2000))
        return doc[:end]

    def code_prefix() -> str:
        text = _read(rng.choice(code))
        end = rng.randint(min(200, len(text)), min(len(text), 3000))
        return text[:end]

    def json_prefix(where: str) -> str:
        doc = json.dumps(_tool_json(rng, words), indent=rng.choice([None, 2]))
        if where == "string":
            cut = doc.index('"query": "') + len('"query": "')
            return doc[:cut] + doc[cut : cut + rng.randint(0, 20)]
        if where == "array":
            return doc[: doc.index('"tags": [') + len('"tags": [')]
        cut = doc.index('"limit"')
        return doc[:cut]

    makers: list[tuple[str, Callable[[], tuple[str, str]]]] = [
        ("char/prose", lambda: (prose_prefix(), rng.choice(_CHARS))),
        ("token/prose", lambda: (prose_prefix(), rng.choice(_TOKENS))),
        ("word/prose", lambda: (prose_prefix(), " " + rng.choice(words))),
        ("alternation/prose", lambda: (prose_prefix(), rng.choice(_ALTERNATIONS))),
        ("sentence/prose", lambda: (prose_prefix(), rng.choice(sentences))),
        ("paragraph/prose", lambda: (prose_prefix(), rng.choice(paragraphs))),
        ("line/code", lambda: (code_prefix(), rng.choice(lines))),
        ("lines/code", lambda: (code_prefix(), "".join(rng.sample(lines, rng.randint(2, 4))))),
        ("char/code", lambda: (code_prefix(), rng.choice(_CHARS))),
        ("word/json-string", lambda: (json_prefix("string"), rng.choice(words) + " ")),
        ("sentence/json-string", lambda: (json_prefix("string"), rng.choice(sentences))),
        ("char/json-string", lambda: (json_prefix("string"), rng.choice(_CHARS))),
        ("item/json-array", lambda: (json_prefix("array"), f'"{rng.choice(words)}", ')),
        ("object/json-array", lambda: (json_prefix("array"), f'{{"id": {rng.randint(0, 9)}, "ok": true}}, ')),
        ("whitespace/json-object", lambda: (json_prefix("object"), "")),
    ]
    for i in range(count):
        category, make = makers[i % len(makers)]
        prefix, unit = make()
        if not unit:  # whitespace without content: a random mix, not a fixed period
            loop = "".join(rng.choice(_WHITESPACE) for _ in range(rng.randint(600, 3000)))
        else:
            loop = _loop_text(unit, max(3200, 6 * len(unit)) + rng.randint(0, 400))
        yield Sample(f"pos-{i:04d}-{category}", prefix + loop, category, len(prefix), unit)


# -- negatives -----------------------------------------------------------------------------------------------


def _markdown_table(rng: random.Random) -> str:
    cols = rng.randint(2, 9)
    widths = [rng.randint(3, 14) for _ in range(cols)]
    head = "| " + " | ".join(f"col{c}".ljust(w) for c, w in enumerate(widths)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    rows = []
    for _ in range(rng.randint(5, 60)):
        cells = [rng.choice(["0", "0", "yes", "", "1.0", "n/a", str(rng.randint(0, 999))]) for _ in widths]
        rows.append("| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |")
    return "\n".join([head, rule, *rows]) + "\n"


def _rst_table(rng: random.Random) -> str:
    widths = [rng.randint(4, 20) for _ in range(rng.randint(2, 6))]
    sep = "+" + "+".join("-" * w for w in widths) + "+"
    eq = "+" + "+".join("=" * w for w in widths) + "+"
    out = [sep, "|" + "|".join(" " * w for w in widths) + "|", eq]
    for _ in range(rng.randint(3, 25)):
        out.append("|" + "|".join(str(rng.choice(["", "x", 0, 1])).ljust(w) for w in widths) + "|")
        out.append(sep)
    simple = "  ".join("=" * w for w in widths)
    return (
        "\n".join(out)
        + "\n\n"
        + simple
        + "\n"
        + "  ".join("a".ljust(w) for w in widths)
        + "\n"
        + simple
        + "\n"
    )


def _dividers(rng: random.Random) -> str:
    out = []
    for i in range(rng.randint(5, 30)):
        ch = rng.choice("-=*#~_+")
        title = f"Section {i}"
        out.append(
            title + "\n" + ch * rng.choice([len(title), 40, 72, 79, 80, 100, 120]) + "\n\nSome text.\n"
        )
        if rng.random() < 0.3:
            out.append("# " + ch * rng.randint(20, 77) + "\n")
    return "\n".join(out)


def _csv(rng: random.Random) -> str:
    cols = rng.randint(3, 12)
    lines = [",".join(f"c{i}" for i in range(cols))]
    for _ in range(rng.randint(50, 300)):
        lines.append(",".join(rng.choice(["0", "0", "0", "", "1", "NA", "0.0"]) for _ in range(cols)))
    return "\n".join(lines) + "\n"


def _log(rng: random.Random) -> str:
    lines = []
    t = 1_700_000_000
    msg = rng.choice(["GET /health 200", "retrying connection", "heartbeat ok", "worker idle"])
    for i in range(rng.randint(50, 300)):
        t += rng.randint(0, 3)
        level = rng.choice(["INFO", "INFO", "INFO", "WARN"])
        lines.append(
            f"2024-01-01T00:{t // 60 % 60:02d}:{t % 60:02d}.{i * 7 % 1000:03d}Z {level} [pid 42] {msg}"
        )
    return "\n".join(lines) + "\n"


def _hexdump(data: bytes) -> str:
    lines = []
    for off in range(0, len(data), 16):
        chunk = data[off : off + 16]
        hexes = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{off:08x}: {hexes:<39}  {text}")
    return "\n".join(lines) + "\n"


def _json_arrays(rng: random.Random) -> str:
    item = rng.choice([0, 1, 0.0, None, True, "x", "", {"a": 1}, [0, 0], {"id": 0, "ok": False}, "n/a"])
    indent = rng.choice([None, 2])
    per_item = len(json.dumps({"v": [item] * 2}, indent=indent)) - len(
        json.dumps({"v": [item]}, indent=indent)
    )
    size = max(4, min(300, 900 // per_item))  # at most ~900 characters of equal items
    doc = {"values": [item] * rng.randint(4, size), "matrix": [[0] * 8 for _ in range(8)]}
    return json.dumps(doc, indent=indent)


def _numbers(rng: random.Random) -> str:
    nums = [str(10 ** rng.randint(3, 60)) for _ in range(20)] + [
        f"{rng.random() / 10**9:.20f}" for _ in range(5)
    ]
    return "values = [" + ", ".join(nums) + "]\nmask = 0x" + "f" * 16 + "\nbits = 0b" + "0" * 31 + "1\n"


def _ascii_art(rng: random.Random) -> str:
    w = rng.randint(10, 70)
    box = (
        ["+" + "-" * w + "+"]
        + ["|" + " " * w + "|" for _ in range(rng.randint(1, 6))]
        + ["+" + "-" * w + "+"]
    )
    banner = ["#" * (w + 2), "#" + " " * w + "#", "#" * (w + 2)]
    arrow = ["    " + "=" * rng.randint(3, 40) + ">", "  <" + "-" * rng.randint(3, 40)]
    return "\n".join([*box, "", *banner, "", *arrow]) + "\n"


def _bullets(rng: random.Random, words: list[str]) -> str:
    marker = rng.choice(["- ", "* ", "  - ", "1. "])
    return "".join(f"{marker}{' '.join(rng.sample(words, 3))}\n" for _ in range(rng.randint(5, 40)))


def _elif_chain(rng: random.Random) -> str:
    out = ["def kind(x):"]
    for i in range(rng.randint(5, 40)):
        out.append(f"    {'if' if i == 0 else 'elif'} x == {i}:")
        out.append(f"        return {i!r}")
    out.append("    else:\n        return None")
    return "\n".join(out) + "\n"


def _negatives(rng: random.Random, count: int, docs: list[str], code: list[Path]) -> Iterator[Sample]:
    root = stdlib_root()
    words = sorted({w for d in docs[:20] for w in d.split() if w.isalpha() and len(w) > 3})
    binaries = [_read_bytes(p) for p in sorted((root / "idlelib" / "Icons").glob("*")) if p.suffix != ".txt"]
    synthetic: list[tuple[str, Callable[[], str]]] = [
        ("markdown-table", lambda: _markdown_table(rng)),
        ("rst-table", lambda: _rst_table(rng)),
        ("dividers", lambda: _dividers(rng)),
        ("csv", lambda: _csv(rng)),
        ("log", lambda: _log(rng)),
        ("hexdump", lambda: _hexdump(rng.choice(binaries)[:4096])),
        ("base64", lambda: base64.encodebytes(rng.choice(binaries)[:6000]).decode()),
        ("json-equal-items", lambda: _json_arrays(rng)),
        ("numbers", lambda: _numbers(rng)),
        ("ascii-art", lambda: _ascii_art(rng)),
        ("bullets", lambda: _bullets(rng, words)),
        ("elif-chain", lambda: _elif_chain(rng)),
    ]
    for i, path in enumerate(rng.sample(code, min(len(code), count // 3))):
        yield Sample(f"neg-{i:04d}-stdlib-{path.name}", _read(path)[:30_000], "stdlib")
    for i, path in enumerate(rng.sample(code, min(len(code), count // 10))):
        call = {"name": "write_file", "arguments": {"path": str(path.name), "content": _read(path)[:8_000]}}
        yield Sample(f"neg-{i:04d}-json-code-{path.name}", json.dumps(call), "json-escaped-code")
    doc_stride = max(1, len(docs) * 3 // max(count, 1))
    for j, k in enumerate(range(0, len(docs), doc_stride)):
        yield Sample(f"neg-docs-{j:04d}", docs[k], "docs")
    yield Sample("neg-license", _read(root / "LICENSE.txt"), "docs")
    for j in range(max(count // 3, len(synthetic))):
        category, make = synthetic[j % len(synthetic)]
        # Surround the structure with prose, as a model would.
        yield Sample(
            f"neg-synth-{j:04d}-{category}", "Here is the result:\n\n" + make() + "\nDone.\n", category
        )
    # The classes outside checks found firing (issue 15), from real text (legit.py).
    for category, make_texts in legit.makers(docs):
        for name, text in make_texts(rng):
            yield Sample(f"neg-{category}-{name}", text, category)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def build_corpus(*, positives: int = 300, negatives: int = 150, seed: int = 0) -> list[Sample]:
    """The labelled corpus: ``positives`` loops and about ``negatives`` real files, docs and structures."""
    rng = random.Random(seed)
    root = stdlib_root()
    docs = _docs()
    code = _sources(root, tests=False)
    out = list(_positives(rng, positives, docs, code))
    out += list(_negatives(rng, negatives, docs, code))
    return out


def stdlib_tests() -> list[Sample]:
    """The standard library's own test files, as negatives for the benchmark only: they hold deliberate
    repetition (``'a' * 200`` written out, ``spam spam spam spam``, generated tables) that no threshold can
    tell from a loop without also missing real loops, so they are reported apart, not asserted."""
    root = stdlib_root()
    return [Sample(str(p.relative_to(root)), _read(p), "stdlib-tests") for p in _sources(root, tests=True)]


def held_out(*, limit: int = 400, seed: int = 1) -> list[Sample]:
    """Negatives never looked at while choosing thresholds: man pages (when installed) and the stdlib's
    non-Python text files (decimal test data, email test data, XML, TOML, JSON)."""
    rng = random.Random(seed)
    out: list[Sample] = []
    man = sorted(Path("/usr/share/man").glob("man[1-8]/*.gz"))
    for path in rng.sample(man, min(limit // 2, len(man))):
        try:
            text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        except (OSError, EOFError, zlib.error):
            continue
        out.append(Sample(f"man-{path.name}", text[:30_000], "man"))
    root = stdlib_root()
    others = _walk(root, (".txt", ".json", ".decTest", ".xml", ".toml", ".rst", ".html", ".cfg", ".csv"))
    for path in rng.sample(others, min(limit - len(out), len(others))):
        text = _read(path)
        if text:
            out.append(Sample(f"file-{path.name}", text[:30_000], "stdlib-data"))
    out += [Sample(name, text, "share-doc") for name, text in legit.held_out_extra()]
    return out


def held_out_positives(samples: list[Sample], *, count: int = 300, seed: int = 3) -> list[Sample]:
    """Loops made from held-out text, never used to choose thresholds: a real prefix from a held-out file,
    then a sentence (20-200 characters), a line, a word or a short token from the same file, repeated."""
    rng = random.Random(seed)
    texts = [s.text for s in samples if len(s.text) > 400]
    out: list[Sample] = []
    kinds = ("sentence", "line", "word", "token")
    while texts and len(out) < count:
        text = rng.choice(texts)
        kind = kinds[len(out) % len(kinds)]
        if kind == "sentence":
            units = [
                u.strip() + ". " for u in " ".join(text.split()).split(". ") if 20 <= len(u.strip()) <= 200
            ]
        elif kind == "line":
            units = [line + "\n" for line in text.splitlines() if 12 <= len(line.strip()) <= 100]
        elif kind == "word":
            units = [" " + w for w in text.split() if w.isalpha() and len(w) >= 3]
        else:
            units = [" " + w for w in text.split() if w.isalpha() and len(w) <= 2]
        if not units:
            continue
        unit = rng.choice(units)
        cut = rng.randint(min(200, len(text)), min(len(text), 3000))
        prefix = text[:cut]
        loop = _loop_text(unit, max(3200, 6 * len(unit)))
        out.append(
            Sample(f"held-pos-{len(out):04d}-{kind}", prefix + loop, f"{kind}/held-out", len(prefix), unit)
        )
    return out
