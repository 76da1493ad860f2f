"""Seeded generators for the fuzz targets: schemas, JSON text in random styles, and mutations.

Theory of operation
-------------------
Everything here draws from one ``random.Random`` so a case is a pure function of its seed. Instances of a
schema come from hypothesis-jsonschema (``_instances``): it generates values for string, number, enum and
array keywords with their patterns, formats and bounds, better than the generator that lived here. What it
cannot do stays here:

- **schemas** (``gen_schema``): hypothesis-jsonschema generates instances, not schemas. These use the
  keywords the StreamValidator promises (types, enum/const, string/number/array/object constraints,
  anyOf/oneOf/allOf/not, if/then/else, local ``$ref`` including recursion, a few formats) in drafts 2020-12,
  7 and 4, with property names that share prefixes (``a``, ``ab``, ``abc``) to stress prefix decisions;
- **JSON text**: ``dump`` writes a value with random whitespace, escapes (``\\uXXXX``, surrogate pairs,
  ``\\/``) and number spellings; hypothesis produces values, not their spellings;
- **damage**: ``mutate`` breaks a text the ways streams break (deletions, insertions, truncation, trailing
  data, deep nesting, giant numbers).

Cost: generation is O(size of the output); sizes are capped by the named defaults below.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

__all__ = [
    "FORMATS",
    "MAX_ITEMS",
    "MAX_STRING",
    "PATTERNS",
    "PROPERTY_NAMES",
    "dump",
    "gen_schema",
    "mutate",
    "small_value",
]

MAX_DEPTH = 3
MAX_PROPERTIES = 5
MAX_ITEMS = 6
MAX_STRING = 12

PROPERTY_NAMES = ("a", "ab", "abc", "b", "name", "names", "id", "x-y", "é", 'k"q', "日本", "a\\b", "n1", "")
_ALPHABETS = (
    "abcxyz",
    "ABC012 ",
    '"\\/',
    "\n\t\r\b\f\x00\x1f",
    "éß€ñ中文",
    "😀𝄞",
    "\u2028\u00a0\ufeff",
)

# Patterns every engine should handle; hypothesis-jsonschema generates strings that match them.
PATTERNS: tuple[str, ...] = (
    "^[a-z]+$",
    "^[0-9]{3}-[0-9]{4}$",
    "^(foo|bar)baz",
    "a",
    "^[A-Z][a-z]*$",
    "^\\S+$",
    "^.{2,5}$",
    "^[a-f0-9]{8}$",
    "(ab)+",
    "^\\d+(\\.\\d+)?$",
)
FORMATS: tuple[str, ...] = ("date", "date-time", "email", "ipv4", "ipv6", "time", "uuid")


def _weighted(rng: random.Random, options: list[tuple[str, int]]) -> str:
    total = sum(w for _, w in options)
    pick = rng.uniform(0, total)
    for name, weight in options:
        pick -= weight
        if pick <= 0:
            return name
    return options[-1][0]


def _random_string(rng: random.Random, lo: int = 0, hi: int = MAX_STRING) -> str:
    size = rng.randint(lo, max(lo, hi))
    alphabet = "".join(rng.sample(_ALPHABETS, rng.randint(1, 3)))
    return "".join(rng.choice(alphabet) for _ in range(size))


def small_value(rng: random.Random) -> Any:
    """A small JSON value for enum and const members (drawn here: schemas must not depend on hypothesis)."""
    kind = rng.randrange(7)
    if kind == 0:
        return _random_string(rng, 0, 6)
    if kind == 1:
        return rng.choice([0, -1, 1, 3, 7, 10**20])
    if kind == 2:
        return rng.choice([0.5, -2.25, 3.0])
    if kind == 3:
        return rng.random() < 0.5
    if kind == 4:
        return None
    if kind == 5:
        return {rng.choice(PROPERTY_NAMES): _random_string(rng, 0, 3) for _ in range(rng.randint(0, 2))}
    return [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]


class _Ctx:
    def __init__(self, rng: random.Random, draft: str) -> None:
        self.rng = rng
        self.draft = draft  # "2020-12" | "7" | "4"
        self.defs: list[str] = []

    @property
    def defs_key(self) -> str:
        return "$defs" if self.draft == "2020-12" else "definitions"


def gen_schema(rng: random.Random, *, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """A random schema; the root is an object (tool arguments) most of the time."""
    draft = _weighted(rng, [("2020-12", 14), ("7", 4), ("4", 2)])
    ctx = _Ctx(rng, draft)
    root: dict[str, Any] = {}
    if draft == "7":
        root["$schema"] = "http://json-schema.org/draft-07/schema#"
    elif draft == "4":
        root["$schema"] = "http://json-schema.org/draft-04/schema#"
    elif rng.random() < 0.3:
        root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    defs: dict[str, Any] = {}
    if rng.random() < 0.25:
        ref = f"#/{ctx.defs_key}/node"
        defs["node"] = {
            "type": "object",
            "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": ref}, "maxItems": 3},
            },
            "required": ["value"],
            "additionalProperties": False,
        }
        ctx.defs.append("node")
    if rng.random() < 0.2:
        defs["leaf"] = _schema(ctx, max_depth - 1, max_depth)
        ctx.defs.append("leaf")
    body = _object_schema(ctx, 0, max_depth) if rng.random() < 0.7 else _schema(ctx, 0, max_depth)
    root.update(body)
    if defs:
        root[ctx.defs_key] = defs
    return root


def _schema(ctx: _Ctx, depth: int, max_depth: int) -> dict[str, Any]:
    rng = ctx.rng
    deeper = depth < max_depth
    kind = _weighted(
        rng,
        [
            ("string", 14),
            ("integer", 10),
            ("number", 7),
            ("boolean", 4),
            ("null", 2),
            ("enum", 6),
            ("const", 3),
            ("object", 12 if deeper else 0),
            ("array", 10 if deeper else 0),
            ("anyOf", 5 if deeper else 0),
            ("oneOf", 4 if deeper else 0),
            ("allOf", 3 if deeper else 0),
            ("not", 2),
            ("if", 2 if deeper else 0),
            ("typelist", 4),
            ("ref", 4 if ctx.defs else 0),
            ("any", 1),
        ],
    )
    if kind == "string":
        return _string_schema(ctx)
    if kind in ("integer", "number"):
        return _number_schema(ctx, kind)
    if kind in ("boolean", "null"):
        return {"type": kind}
    if kind == "enum":
        values = [small_value(rng) for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.5:  # members sharing prefixes
            stem = rng.choice(["ab", "abc", "a", "x"])
            values += [stem, stem + "c", stem + "cd"]
        out: dict[str, Any] = {"enum": _dedupe(values)}
        if rng.random() < 0.3:
            out["type"] = "string"
        return out
    if kind == "const":
        return {"const": small_value(rng)}
    if kind == "object":
        return _object_schema(ctx, depth + 1, max_depth)
    if kind == "array":
        return _array_schema(ctx, depth + 1, max_depth)
    if kind in ("anyOf", "oneOf", "allOf"):
        return {kind: [_schema(ctx, depth + 1, max_depth) for _ in range(rng.randint(1, 3))]}
    if kind == "not":
        return {"not": _schema(ctx, max_depth, max_depth)}
    if kind == "if":
        return {
            "if": _schema(ctx, max_depth, max_depth),
            "then": _schema(ctx, depth + 1, max_depth),
            "else": _schema(ctx, depth + 1, max_depth),
        }
    if kind == "typelist":
        types = rng.sample(
            ["string", "integer", "number", "boolean", "null", "array", "object"], rng.randint(1, 3)
        )
        out = {"type": types}
        if "string" in types and rng.random() < 0.5:
            out["maxLength"] = rng.randint(0, 6)
        return out
    if kind == "ref":
        return {"$ref": f"#/{ctx.defs_key}/{rng.choice(ctx.defs)}"}
    return {}


def _dedupe(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if not any(_same(v, w) for w in out):
            out.append(v)
    return out


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) and type(a) is type(b)


def _string_schema(ctx: _Ctx) -> dict[str, Any]:
    rng = ctx.rng
    out: dict[str, Any] = {"type": "string"}
    roll = rng.random()
    if roll < 0.25:
        out["pattern"] = rng.choice(PATTERNS)
    elif roll < 0.4:
        out["format"] = rng.choice(FORMATS)
    if rng.random() < 0.4:
        lo = rng.randint(0, 4)
        out["minLength"] = lo
        if rng.random() < 0.7:
            out["maxLength"] = lo + rng.randint(0, 8)
    elif rng.random() < 0.2:
        out["maxLength"] = rng.randint(0, 5)
    return out


def _number_schema(ctx: _Ctx, kind: str) -> dict[str, Any]:
    rng = ctx.rng
    out: dict[str, Any] = {"type": kind}
    lo: float = rng.choice([-10, 0, 1, 5, 100, -1000])
    hi: float = lo + rng.choice([0, 1, 9, 50, 1000])
    if kind == "number" and rng.random() < 0.3:
        lo, hi = lo + 0.5, hi + 0.25
    if rng.random() < 0.6:
        if ctx.draft == "4":
            out["minimum"] = lo
            if rng.random() < 0.5:
                out["exclusiveMinimum"] = rng.random() < 0.5
        elif rng.random() < 0.3:
            out["exclusiveMinimum"] = lo
        else:
            out["minimum"] = lo
    if rng.random() < 0.6:
        if ctx.draft == "4":
            out["maximum"] = hi
            if rng.random() < 0.5:
                out["exclusiveMaximum"] = rng.random() < 0.5
        elif rng.random() < 0.3:
            out["exclusiveMaximum"] = hi
        else:
            out["maximum"] = hi
    if rng.random() < 0.2:
        out["multipleOf"] = rng.choice([2, 3, 5, 10] if kind == "integer" else [0.5, 2, 0.25, 3])
    return out


def _object_schema(ctx: _Ctx, depth: int, max_depth: int) -> dict[str, Any]:
    rng = ctx.rng
    names = rng.sample(PROPERTY_NAMES, rng.randint(1, MAX_PROPERTIES))
    props = {name: _schema(ctx, depth, max_depth) for name in names}
    out: dict[str, Any] = {"type": "object", "properties": props}
    if rng.random() < 0.7:
        out["required"] = sorted(rng.sample(names, rng.randint(0 if ctx.draft != "4" else 1, len(names))))
    roll = rng.random()
    if roll < 0.45:
        out["additionalProperties"] = False
    elif roll < 0.55:
        out["additionalProperties"] = _schema(ctx, max_depth, max_depth)
    if rng.random() < 0.1:
        out["patternProperties"] = {"^x-": {"type": "string"}}
    if rng.random() < 0.08:
        out["propertyNames"] = {"maxLength": 3}
    if rng.random() < 0.1:
        out["minProperties"] = rng.randint(0, 2)
    if rng.random() < 0.1 and len(names) >= 2:
        dependent = {names[0]: [names[1]]}
        if ctx.draft == "2020-12":
            out["dependentRequired"] = dependent
        else:
            out["dependencies"] = dependent
    return out


def _array_schema(ctx: _Ctx, depth: int, max_depth: int) -> dict[str, Any]:
    rng = ctx.rng
    out: dict[str, Any] = {"type": "array"}
    roll = rng.random()
    if roll < 0.2:
        prefix = [_schema(ctx, depth, max_depth) for _ in range(rng.randint(1, 3))]
        rest: Any = rng.choice([False, {"type": "integer"}, None])
        if ctx.draft == "2020-12":
            out["prefixItems"] = prefix
            if rest is not None:
                out["items"] = rest
        else:
            out["items"] = prefix
            if rest is not None:
                out["additionalItems"] = rest
    elif roll < 0.9:
        out["items"] = _schema(ctx, depth, max_depth)
    if rng.random() < 0.4:
        lo = rng.randint(0, 2)
        out["minItems"] = lo
        if rng.random() < 0.7:
            out["maxItems"] = lo + rng.randint(0, 4)
    if rng.random() < 0.15:
        out["uniqueItems"] = True
    if ctx.draft != "4" and rng.random() < 0.1:
        out["contains"] = {"type": "integer"}
        if ctx.draft == "2020-12" and rng.random() < 0.5:
            out["minContains"] = rng.randint(0, 2)
            out["maxContains"] = out["minContains"] + rng.randint(0, 2)
    return out


def _escape_char(rng: random.Random, c: str, p_escape: float) -> str:
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    code = ord(c)
    if c in short and (code < 0x20 or c in '"\\') and rng.random() < 0.7:
        return short[c]
    if code < 0x20 or c in '"\\' or rng.random() < p_escape:
        if c == "/" and rng.random() < 0.5:
            return "\\/"
        if code > 0xFFFF:
            high = 0xD800 + ((code - 0x10000) >> 10)
            low = 0xDC00 + ((code - 0x10000) & 0x3FF)
            fmt = "\\u{:04x}\\u{:04x}" if rng.random() < 0.5 else "\\u{:04X}\\u{:04X}"
            return fmt.format(high, low)
        return ("\\u{:04x}" if rng.random() < 0.5 else "\\u{:04X}").format(code)
    return c


def dump(rng: random.Random, value: Any) -> str:
    """``value`` as JSON text in a random style (whitespace, escapes, number spelling)."""
    style = rng.choice(["compact", "spaced", "pretty", "wild"])
    p_escape = rng.choice([0.0, 0.0, 0.05, 0.5])
    parts: list[str] = []

    def ws() -> str:
        if style == "compact":
            return ""
        if style == "spaced":
            return " "
        if style == "wild":
            return "".join(rng.choice(" \t\n\r") for _ in range(rng.randint(0, 3)))
        return ""

    def emit(v: Any, level: int) -> None:
        nl = ("\n" + "  " * (level + 1)) if style == "pretty" else ""
        end = ("\n" + "  " * level) if style == "pretty" else ""
        if isinstance(v, dict):
            parts.append("{")
            for index, (key, item) in enumerate(v.items()):
                if index:
                    parts.append("," + ws())
                parts.append(nl + ws())
                parts.append('"' + "".join(_escape_char(rng, c, p_escape) for c in key) + '"')
                parts.append(ws() + ":" + ws())
                emit(item, level + 1)
            parts.append((end if v else "") + ws() + "}")
        elif isinstance(v, list):
            parts.append("[")
            for index, item in enumerate(v):
                if index:
                    parts.append("," + ws())
                parts.append(nl + ws())
                emit(item, level + 1)
            parts.append((end if v else "") + ws() + "]")
        elif isinstance(v, str):
            parts.append('"' + "".join(_escape_char(rng, c, p_escape) for c in v) + '"')
        elif v is True:
            parts.append("true")
        elif v is False:
            parts.append("false")
        elif v is None:
            parts.append("null")
        elif isinstance(v, int):
            parts.append(str(v))
        elif isinstance(v, float):
            parts.append(_float_text(rng, v))
        else:  # pragma: no cover - generators only make JSON values
            parts.append("null")

    lead = ws() if style == "wild" else ""
    emit(value, 0)
    trail = ws() if style == "wild" else rng.choice(["", "", "\n"])
    return lead + "".join(parts) + trail


def _float_text(rng: random.Random, v: float) -> str:
    if not math.isfinite(v):
        return "0"
    text = repr(v)
    if rng.random() < 0.2 and v == int(v) and abs(v) < 1e15:
        text = rng.choice([f"{int(v)}.0", f"{int(v)}e0", f"{int(v)}E+0", f"{v:.3e}"])
    elif rng.random() < 0.1:
        text = text.upper()
    return text


_MUTATION_CHARS = '{}[]",:\\ 0123456789-+.eEtfnaxu\n\x00é😀'


def mutate(rng: random.Random, text: str) -> tuple[str, str]:
    """Damage ``text`` once; returns (new text, name of the mutation)."""
    n = len(text)
    op = _weighted(
        rng,
        [
            ("delete", 4),
            ("insert", 4),
            ("replace", 4),
            ("truncate", 3),
            ("duplicate", 2),
            ("trailing", 2),
            ("swap-type", 2),
            ("deep", 1),
            ("whitespace", 1),
            ("big-number", 1),
        ],
    )
    i = rng.randint(0, n)
    if op == "delete" and n:
        j = min(n, i + rng.randint(1, 3))
        return text[:i] + text[j:], op
    if op == "insert":
        return text[:i] + rng.choice(_MUTATION_CHARS) + text[i:], op
    if op == "replace" and n:
        i = min(i, n - 1)
        return text[:i] + rng.choice(_MUTATION_CHARS) + text[i + 1 :], op
    if op == "truncate":
        return text[:i], op
    if op == "duplicate" and n:
        j = min(n, i + rng.randint(1, 8))
        return text[:j] + text[i:j] + text[j:], op
    if op == "trailing":
        return text + rng.choice(["x", "{}", " 1", ",", "]", '{"b":2}', "\n\n", "null"]), op
    if op == "swap-type":
        for old, new in (('"', "1"), ("1", '"1"'), ("true", '"true"'), ("[", "{"), ("null", "0")):
            k = text.find(old, i) if rng.random() < 0.5 else text.rfind(old, 0, i)
            if k >= 0:
                return text[:k] + new + text[k + len(old) :], op
        return text, op
    if op == "deep":
        depth = rng.choice([20, 127, 128, 129, 200])
        return text[:i] + "[" * depth + "]" * depth + text[i:], op
    if op == "whitespace":
        return text[:i] + rng.choice([" ", "\t", "\r\n", "\u00a0", "\u2028"]) + text[i:], op
    digits = "9" * rng.choice([20, 400, 5000]) if rng.random() < 0.7 else "1e99999"
    return text[:i] + digits + text[i:], op
