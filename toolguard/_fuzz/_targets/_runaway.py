"""Fuzz target ``runaway``: ``toolguard.RunawayDetector`` on legitimate structures and on injected loops.

Legitimate text is assembled from generated blocks that repeat *legitimately*: markdown tables and rules,
dividers, code with similar lines and ``elif`` chains, JSON arrays (equal and varying items), CSV, logs,
bullet lists, base64 and hex dumps, large round numbers, ASCII art, prose. Loops are units of 1 to 400
characters (letters, tokens, ``?!``, words, sentences, paragraphs, code lines, whitespace, rules, list items,
digits, repetition inside a JSON string) repeated after such a prefix. Text is pushed in token-like pieces,
with or without fake token ids (a stable hash of the piece), and also whole and one character at a time.

Invariants:
- ``no-false-alarm``: legitimate text never fires, and a loop never fires before it starts;
- ``loop-stopped``: a loop fires within ``bound(period)`` characters of its start, where the bound is the
  documented absolute cap plus a few periods (``RunawayConfig.cap``; for units longer than ``max_period``,
  ``paragraph_copies`` copies);
- ``report-consistent``: ``unit == text[offset:offset+period]`` and ``text[offset:offset+length]`` has period
  ``period`` (periodic kinds), ``offset + length <= detected_at <= characters pushed``, ``copies >= 2``;
- ``split-invariance``: pushing text without token ids, whole, one character at a time or in random pieces
  gives the same ``Runaway`` (the detector documents chunking independence);
- ``sticky``: after firing, ``push`` returns the same ``Runaway``;
- ``no-unexpected-exception``.

Cost per case: O(n) pushes per chunking, n up to ~10,000 characters.
"""

from __future__ import annotations

import base64
import random
import re
import zlib
from typing import Any

from .._core import Target, Violation, register
from ._common import component, describe_exception, random_cuts, split_at, text_shrinks

__all__ = ["RunawayTarget", "legit_text"]

_WORDS = [
    "the",
    "weather",
    "in",
    "paris",
    "is",
    "mild",
    "today",
    "and",
    "the",
    "forecast",
    "says",
    "rain",
    "later",
    "so",
    "bring",
    "an",
    "umbrella",
    "when",
    "you",
    "go",
    "out",
    "tool",
    "call",
    "arguments",
    "must",
    "match",
    "the",
    "schema",
    "before",
    "anything",
    "runs",
    "we",
    "validate",
    "each",
    "field",
    "as",
    "it",
    "streams",
    "please",
    "book",
    "a",
    "table",
    "for",
    "two",
    "at",
    "eight",
    "with",
    "a",
    "window",
    "seat",
    "near",
    "the",
    "garden",
    "if",
    "possible",
    "thanks",
    "again",
    "model",
    "output",
    "may",
    "contain",
    "tables",
    "lists",
    "code",
    "and",
    "numbers",
    "which",
    "are",
    "not",
    "loops",
    "at",
    "all",
]
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]+")
_PERIODIC_KINDS = ("periodic", "char_run", "line_repeat")


def _sentence(rng: random.Random, words: int | None = None) -> str:
    out: list[str] = []
    for _ in range(words or rng.randint(4, 14)):
        word = rng.choice(_WORDS)
        while out and word == out[-1]:
            word = rng.choice(_WORDS)
        out.append(word)
    return out[0].capitalize() + " " + " ".join(out[1:]) + rng.choice([".", ".", "!", "?"])


def _table(rng: random.Random) -> str:
    cols = rng.randint(2, 5)
    rows = [
        "| " + " | ".join(rng.choice(_WORDS) for _ in range(cols)) + " |",
        "|" + "|".join(rng.choice(["---", ":---:", "---:", "------"]) for _ in range(cols)) + "|",
    ]
    for r in range(rng.randint(2, 30)):
        cells = [
            str(r + 1),
            *[rng.choice([rng.choice(_WORDS), str(rng.randint(0, 10**6))]) for _ in range(cols - 1)],
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _code(rng: random.Random) -> str:
    lines = [f"def handle_{rng.choice(_WORDS)}(n, it):"]
    for i in range(rng.randint(2, 12)):
        lines.append(f"    {'if' if i == 0 else 'elif'} n == {i}:")
        lines.append(f"        return {rng.choice(_WORDS)!r}")
    lines += ["    next(it)"] * rng.randint(1, 4)
    lines += [f"    x{i} = compute({i}, scale={rng.randint(1, 9)})" for i in range(rng.randint(1, 10))]
    lines.append("    pass")
    return "\n".join(lines) + "\n"


def _json_equal_items(rng: random.Random) -> str:
    item = rng.choice(['{"a": 1}', '"x"', "0", "null", '{"id": 7, "ok": true}', "[0, 0]"])
    unit = len(item) + 2
    count = rng.randint(2, max(2, int(900 / unit)))  # well under the documented items threshold (2304 chars)
    return "[" + ", ".join([item] * count) + "]"


def _json_varying(rng: random.Random) -> str:
    items = [
        f'{{"id": {i}, "name": "{rng.choice(_WORDS)}", "score": {rng.randint(0, 100)}}}'
        for i in range(rng.randint(1, 40))
    ]
    return "[\n  " + ",\n  ".join(items) + "\n]"


def _csv(rng: random.Random) -> str:
    rows = ["id,name,price,qty"]
    rows += [
        f"{i},{rng.choice(_WORDS)},{rng.randint(1, 999)}.{rng.randint(0, 99):02d},{rng.randint(0, 9)}"
        for i in range(rng.randint(2, 40))
    ]
    return "\n".join(rows)


def _logs(rng: random.Random) -> str:
    start = rng.randint(0, 3000)
    return "\n".join(
        f"2024-05-01T10:{(start + i) // 60 % 60:02d}:{(start + i) % 60:02d}Z INFO worker-{rng.randint(1, 8)} "
        f"processed job {rng.randint(1000, 9999)} in {rng.randint(1, 900)}ms"
        for i in range(rng.randint(2, 40))
    )


def _bullets(rng: random.Random) -> str:
    return "\n".join(
        f"{rng.choice(['-', '*', '1.'])} {_sentence(rng, rng.randint(2, 6))}"
        for _ in range(rng.randint(2, 15))
    )


def _dividers(rng: random.Random) -> str:
    return rng.choice(["-", "=", "*", "_", "~", "#"]) * rng.randint(3, 80)


def _numbers(rng: random.Random) -> str:
    return rng.choice(
        [
            "1" + "0" * rng.randint(3, 40),
            "0." + "0" * rng.randint(3, 30) + "1",
            str(rng.randint(0, 10**30)),
            "3.14159265358979323846264338327950288",
        ]
    )


def _base64(rng: random.Random) -> str:
    blob = base64.b64encode(bytes(rng.randrange(256) for _ in range(rng.randint(10, 600)))).decode()
    return "\n".join(blob[i : i + 76] for i in range(0, len(blob), 76))


def _hexdump(rng: random.Random) -> str:
    lines = []
    for row in range(rng.randint(1, 20)):
        zero = rng.random() < 0.15
        data = [0 if zero else rng.randrange(256) for _ in range(16)]
        hexes = " ".join(f"{b:02x}" for b in data)
        ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in data)
        lines.append(f"{row * 16:08x}  {hexes}  |{ascii_}|")
    return "\n".join(lines)


def _ascii_art(rng: random.Random) -> str:
    width = rng.randint(4, 40)
    label = rng.choice(_WORDS)[:width].center(width)
    return f"+{'-' * width}+\n|{label}|\n+{'-' * width}+"


_BLOCKS = (
    _table,
    _code,
    _json_equal_items,
    _json_varying,
    _csv,
    _logs,
    _bullets,
    _dividers,
    _numbers,
    _base64,
    _hexdump,
    _ascii_art,
)


def legit_text(rng: random.Random) -> str:
    """Prose interleaved with legitimately repetitive blocks; no loop beyond the documented thresholds."""
    parts = [_sentence(rng)]
    for _ in range(rng.randint(1, 6)):
        parts.append(rng.choice(_BLOCKS)(rng))
        parts.append(" ".join(_sentence(rng) for _ in range(rng.randint(1, 3))))
    return "\n\n".join(parts)


def _loop_unit(rng: random.Random) -> str:
    kind = rng.choice(
        [
            "char",
            "token",
            "qe",
            "word",
            "sentence",
            "paragraph",
            "code",
            "whitespace",
            "rule",
            "items",
            "digits",
            "json-string",
            "long-line",
            "long-block",
        ]
    )
    if kind == "char":
        return rng.choice("SG!?a.")
    if kind == "token":
        return rng.choice([" S", " lock", "ha", " the", "\u2581", "😀"])
    if kind == "qe":
        return rng.choice(["?!", "!?", "..!"])
    if kind == "word":
        return rng.choice(_WORDS) + " "
    if kind == "sentence":
        return _sentence(rng) + " "
    if kind == "paragraph":
        return " ".join(_sentence(rng) for _ in range(rng.randint(1, 3))) + "\n\n"
    if kind == "code":
        return rng.choice(["    x = x + 1\n", "return None\n", "}\n", "print(x)\n"])
    if kind == "whitespace":
        return rng.choice(["\n", " ", "\t", "\n ", "\r\n"])
    if kind == "rule":
        return rng.choice(["-", "=", "|---", "* "])
    if kind == "items":
        return rng.choice(['{"a": 1}, ', '"x", ', "0, ", "null,\n"])
    if kind == "digits":
        return rng.choice(["0", "9", "00 ", "12"])
    if kind == "json-string":
        return rng.choice(["c/", "ab", "\\n", "-1"])
    if kind == "long-line":
        text = ""
        while len(text) < rng.randint(120, 400):
            text += _sentence(rng) + " "
        return text
    text = ""
    while len(text) < rng.randint(150, 400):
        text += _sentence(rng) + "\n"
    return text


def _bound(config: Any, period: int) -> int:
    """Characters of loop after which the documented thresholds guarantee a detection."""
    cap = max(getattr(config, "cap", 2560), getattr(config, "whitespace_chars", 0))
    if period <= getattr(config, "max_period", 256):
        return cap + 2 * period + 64
    copies = getattr(config, "paragraph_copies", getattr(config, "block_copies", 3))
    return int(max(cap, copies * period)) + 3 * period + 64


def _pieces(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _token_id(piece: str) -> int:
    return zlib.crc32(piece.encode("utf-8", "surrogatepass"))


class RunawayTarget(Target):
    name = "runaway"
    description = "RunawayDetector: no false alarms, loops always stopped"

    def _cls(self) -> tuple[Any, str | None]:
        return component("toolguard._runaway", "RunawayDetector")

    def unavailable(self) -> str | None:
        return self._cls()[1]

    def generate(self, rng: random.Random) -> dict[str, Any]:
        prefix = legit_text(rng)
        if rng.random() < 0.5:
            unit, loop_chars = "", 0
        else:
            cls, _ = self._cls()
            config = cls().config
            unit = _loop_unit(rng)
            if rng.random() < 0.2:  # a loop inside a JSON string argument
                prefix += '\n{"name": "write_file", "arguments": {"path": "/tmp/a/'
            loop_chars = _bound(config, len(unit)) + rng.randint(0, 200)
        return {
            "prefix": prefix,
            "unit": unit,
            "loop_chars": loop_chars,
            "token_ids": rng.random() < 0.5,
            "cuts": [],
            "cuts_seed": rng.randrange(2**32),
        }

    def check(self, case: dict[str, Any]) -> list[Violation]:
        cls, reason = self._cls()
        if cls is None:
            return [Violation("unavailable", "RunawayDetector exists", str(reason))]
        prefix, unit = case["prefix"], case["unit"]
        loop = (unit * (case["loop_chars"] // max(len(unit), 1) + 1))[: case["loop_chars"]] if unit else ""
        text = prefix + loop
        loop_start = len(prefix)
        cuts = case.get("cuts") or random_cuts(random.Random(case.get("cuts_seed", 0)), len(text), most=400)
        try:
            config = cls().config
            main = self._push(cls, _pieces(text), case["token_ids"], sticky_check=True)
            runs = {
                "whole": self._push(cls, [text], False),
                "one character at a time": self._push(cls, list(text), False),
                "random pieces": self._push(cls, split_at(text, cuts), False),
            }
        except _Crash as exc:
            return [
                Violation(
                    "no-unexpected-exception",
                    "push() returns a Runaway or None",
                    str(exc),
                    signature=f"exception:{type(exc.exc).__qualname__}",
                )
            ]
        out: list[Violation] = []
        found, sticky = main
        if sticky:
            out.append(Violation("sticky", "push() after firing returns the same Runaway", sticky))
        if found is not None and found.detected_at <= loop_start:
            out.append(
                Violation(
                    "no-false-alarm",
                    "legitimate text never fires" + (f" (the loop starts at {loop_start})" if unit else ""),
                    f"fired: {_show(found)}; "
                    f"text near it: {text[max(0, found.offset - 60) : found.detected_at]!r}",
                    signature=f"no-false-alarm:{found.kind}:{found.unit_class}",
                )
            )
        elif unit and (found is None or found.detected_at > loop_start + _bound(config, len(unit))):
            period = len(unit)
            out.append(
                Violation(
                    "loop-stopped",
                    f"a loop of a {period}-character unit fires within {_bound(config, period)} characters",
                    "never fired" if found is None else f"fired late: {_show(found)}",
                    signature="loop-stopped:period"
                    f"{'<=' if period <= getattr(config, 'max_period', 256) else '>'}"
                    "max_period"
                    f":{'newline' if chr(10) in unit else 'no-newline'}",
                )
            )
        if found is not None:
            out += self._consistent(found, text)
        base = runs["whole"][0]
        for label, (other, _) in runs.items():
            if other != base:
                out.append(
                    Violation(
                        "split-invariance",
                        "the same Runaway (or none) however the text is cut",
                        f"whole: {_show(base)}\n{label}: {_show(other)}",
                    )
                )
                break
        return out

    def _push(
        self, cls: Any, pieces: list[str], token_ids: bool, *, sticky_check: bool = False
    ) -> tuple[Any, str]:
        detector = cls()
        try:
            for piece in pieces:
                found = detector.push(piece, _token_id(piece) if token_ids else None)
                if found is not None:
                    if sticky_check:
                        again = detector.push("x", 1 if token_ids else None)
                        if again != found:
                            return found, f"first {_show(found)}, then {_show(again)}"
                    return found, ""
        except Exception as exc:
            raise _Crash(exc) from exc
        return None, ""

    def _consistent(self, found: Any, text: str) -> list[Violation]:
        problems = []
        if found.copies < 2 and found.kind != "ngram":
            problems.append(f"copies is {found.copies}")
        if not found.offset + found.length <= found.detected_at <= len(text):
            problems.append(
                f"offset+length {found.offset + found.length}, detected_at {found.detected_at}, "
                f"pushed {len(text)}"
            )
        if found.kind in _PERIODIC_KINDS:
            start, end, p = found.offset, found.offset + found.length, found.period
            if text[start : start + p] != found.unit:
                problems.append(
                    f"unit {found.unit!r} != text[offset:offset+period] {text[start : start + p]!r}"
                )
            if p < 1 or text[start + p : end] != text[start : end - p]:
                problems.append(f"text[{start}:{end}] does not have period {p}")
        if not problems:
            return []
        return [
            Violation(
                "report-consistent",
                "the Runaway describes the text it was found in",
                f"{_show(found)}: " + "; ".join(problems),
            )
        ]

    def shrink(self, case: dict[str, Any]) -> Any:
        for smaller in text_shrinks(case["prefix"]):
            yield {**case, "prefix": smaller}
        if case.get("token_ids"):
            yield {**case, "token_ids": False}


class _Crash(Exception):
    def __init__(self, exc: BaseException) -> None:
        super().__init__(describe_exception(exc))
        self.exc = exc


def _show(found: Any) -> str:
    if found is None:
        return "None"
    return (
        f"Runaway(kind={found.kind!r}, unit={found.unit[:60]!r}, period={found.period}, "
        f"copies={found.copies}, "
        f"offset={found.offset}, length={found.length}, detected_at={found.detected_at}, "
        f"unit_class={getattr(found, 'unit_class', '?')!r})"
    )


register("runaway", RunawayTarget)
