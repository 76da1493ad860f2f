"""Schema pre-scan and preparation for grammar engines: refuse what an engine would ignore.

Grammar engines quietly drop JSON Schema keywords they do not implement (outlines-core ignores numeric bounds,
xgrammar falls back from ``oneOf`` to ``anyOf`` and ignores ``multipleOf`` on numbers, ``not``, ``if`` and
``dependentRequired``), so a "constrained" model can still produce arguments the schema forbids. Before a
schema reaches an engine, ``prepare_schema`` walks it once (O(size of the schema)) and:

1. raises ``RemoteRefRefused`` for a ``$ref`` that is not local, and ``UnsupportedKeyword`` (naming the
   keyword, the JSON pointer, the tool and the engine) for any assertion or applicator keyword the engine does
   not enforce, a ``format`` it does not know, or a combination it silently drops (xgrammar ignores
   ``minLength``/``maxLength`` next to a ``pattern`` or ``format``; outlines-core ignores the ``pattern``
   or ``format`` next to them; both ignore lookarounds in patterns). The tables below were measured on this
   machine: for each keyword, a valid and an invalid instance fed through the engine
   (tests/local/test_keywords.py re-checks every entry). Keywords that only *restrict* generation further
   (xgrammar anchoring ``pattern``) are kept: what the grammar lets through is still valid.
2. removes ``format`` names JSON Schema does not define (annotations nobody checks), and rewrites draft-4..7
   forms the engines misread (boolean ``exclusiveMinimum``/``exclusiveMaximum``, array
   ``items`` with ``additionalItems``) into their 2020-12 equivalents, declaring ``$schema`` 2020-12;
   before that, what the declared draft does not define is removed, because ``jsonschema`` ignores it there
   and the rewritten 2020-12 schema would enforce it: keywords of later (or earlier) drafts (``const`` in
   draft 4, ``dependencies`` in 2019-09+) and, up to draft 7, every sibling of ``$ref`` (only where
   ``$schema`` names the draft). A grammar narrower
   than the validator is not harmless: narrowing one ``oneOf`` branch lets a value through that matches two
   (a fuzz finding, tests/regressions/data);
3. optionally caps free strings (``max_string_length``) and closes objects that list ``properties``
   (``additionalProperties: false``), both of which only restrict generation.

Annotations (``title``, ``description``, ``default``, ``examples``...) pass through, or are removed with
``strip_annotations`` (no engine reads them, and they are most of a real tool schema's text); unknown
keywords (vendor extensions, which JSON Schema itself ignores) pass through untouched. The input is never
mutated.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, Literal

from .._exceptions import RemoteRefRefused, SchemaError, UnsupportedKeyword
from .._regex import engine_pattern
from .._schema._keywords import DRAFT_ORDER, ENFORCED
from .._schema._normalize import detect_draft

__all__ = ["ENGINE_FORMATS", "ENGINE_KEYWORDS", "STANDARD_FORMATS", "EngineName", "prepare_schema"]

EngineName = Literal["llguidance", "xgrammar", "outlines"]

# Every assertion/applicator keyword of drafts 4..2020-12. Anything else is an annotation or unknown.
_ASSERTIONS = frozenset({
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "format", "maxItems", "minItems", "uniqueItems", "maxContains",
    "minContains", "maxProperties", "minProperties", "required", "dependentRequired", "dependencies",
    "properties", "patternProperties", "additionalProperties", "propertyNames", "items", "prefixItems",
    "additionalItems", "contains", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
    "unevaluatedItems", "unevaluatedProperties", "$ref", "$dynamicRef", "$recursiveRef",
})

_COMMON = frozenset({
    "type", "enum", "const", "anyOf", "oneOf", "$ref", "properties", "additionalProperties", "required",
    "items", "prefixItems", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format",
})
ENGINE_KEYWORDS: dict[str, frozenset[str]] = {
    # llguidance also refuses, at compile time, oneOf it cannot prove disjoint, allOf it cannot intersect,
    # overlapping patternProperties and min/maxProperties on partly-optional objects (mapped to
    # UnsupportedKeyword by the engine adapter).
    "llguidance": _COMMON | {
        "allOf", "patternProperties", "minProperties", "maxProperties", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    },
    # multipleOf only on integers (xgrammar ignores it on numbers); oneOf only when provably disjoint.
    "xgrammar": _COMMON | {
        "minProperties", "maxProperties", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "multipleOf",
    },
    # outlines-core ignores numeric bounds, uniqueItems, contains, min/maxProperties and propertyNames.
    "outlines": _COMMON,
}
ENGINE_FORMATS: dict[str, frozenset[str]] = {
    "llguidance": frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6",
                             "uuid", "uri"}),
    # xgrammar's ipv4 lets octets with leading zeros through ("45.99.050.34"), which jsonschema refuses
    # (a fuzz finding): refused, like the formats it lacks
    "xgrammar": frozenset({"date-time", "time", "date", "duration", "email", "hostname", "uuid", "uri"}),
    "outlines": frozenset({"date-time", "time", "date", "email", "uuid", "uri"}),
}

#: The formats JSON Schema defines (2020-12 and earlier drafts). A validator may assert these; any other name
#: (``int64``, ``utc-millisec``...) is an annotation nobody checks, removed before the engine sees it.
STANDARD_FORMATS = frozenset({
    "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6",
    "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer",
    "relative-json-pointer", "regex",
})

_LOOKAROUND = re.compile(r"\(\?<?[=!]")
#: Annotation keywords no engine reads: removed from the prepared copy, which makes the grammar text (and the
#: compile, measured 15-30% faster over the real tool sets in tests/data/toolsets) smaller.
_ANNOTATIONS = frozenset({"title", "description", "examples", "default", "$comment", "deprecated", "readOnly",
                          "writeOnly"})

_SCHEMA_KEYS = ("additionalProperties", "items", "additionalItems", "contains", "not", "if", "then", "else",
                "propertyNames", "unevaluatedItems", "unevaluatedProperties")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_TYPE_OF_CONST = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null",
                  list: "array", dict: "object"}


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def prepare_schema(
    schema: Any,
    *,
    engine: str,
    tool: str | None = None,
    max_string_length: int | None = None,
    close_objects: bool = False,
    unenforced: list[str] | None = None,
    also_unsupported: frozenset[str] = frozenset(),
    strip_annotations: bool = False,
) -> Any:
    """Scan ``schema`` for ``engine`` and return a prepared copy (see the module docstring).

    Raises ``UnsupportedKeyword``, ``RemoteRefRefused`` or ``SchemaError`` (a ``$ref`` that does not resolve).
    With ``unenforced`` (a list), keywords the engine cannot enforce are removed from the copy instead, and
    their JSON pointers appended to the list: the caller must then validate the output itself.
    ``also_unsupported`` names keywords to treat as unenforced for this engine on top of its table (a
    caller that knows a keyword is enforced badly in its setting). ``strip_annotations`` removes
    ``description``, ``title``, ``default``... (no engine reads them; a local compile is 15-30% faster).
    """
    if engine not in ENGINE_KEYWORDS:
        raise ValueError(f"unknown engine {engine!r}; choose one of {sorted(ENGINE_KEYWORDS)}")
    out = copy.deepcopy(schema)
    walker = _Walker(engine, tool, max_string_length, close_objects, out, unenforced)
    walker.allowed = walker.allowed - also_unsupported
    walker.strip = strip_annotations
    walker.walk(out, "", in_all_of=False)
    return out


class _Walker:
    def __init__(self, engine: str, tool: str | None, cap: int | None, close: bool, root: Any,
                 dropped: list[str] | None) -> None:
        self.dropped = dropped
        self.engine = engine
        self.tool = tool
        self.cap = cap
        self.close = close
        self.root = root
        self.allowed = ENGINE_KEYWORDS[engine]
        self.formats = ENGINE_FORMATS[engine]
        self.strip = False
        # assertions the declared draft does not define (jsonschema ignores them there); a schema that
        # declares no draft keeps every keyword (tool schemas mix drafts' forms; the rewrite reads them all)
        declared = isinstance(root, dict) and isinstance(root.get("$schema"), str)
        draft = detect_draft(root)
        self.foreign = _ASSERTIONS - ENFORCED[draft] if declared else frozenset()
        self.ref_replaces_siblings = declared and DRAFT_ORDER[draft] <= 7

    def refuse(self, keyword: str, path: str) -> UnsupportedKeyword:
        return UnsupportedKeyword(keyword, path=f"{path}/{_esc(keyword)}", tool=self.tool, engine=self.engine)

    def walk(self, node: Any, path: str, *, in_all_of: bool) -> None:
        if not isinstance(node, dict):
            return
        self._drop_foreign(node)
        self._rewrite_drafts(node)
        if self.strip:
            for key in _ANNOTATIONS & node.keys():
                del node[key]
        _narrow_enum(node)
        _drop_never(node)
        if self.engine == "llguidance":
            _engine_patterns(node)
        elif isinstance(node.get("pattern"), str) and engine_pattern(node["pattern"]) != node["pattern"]:
            # only ECMA-262 parses it; the translation is written in the regex syntax llguidance reads
            self._unsupported(node, "pattern", path, f"{self.engine} cannot read this ECMA-262 pattern")
        if "uniqueItems" in node:
            # xgrammar writes array enum values with its own separators, not the grammar's: left refused
            _unique_items(node, arrays_as_enum=self.engine != "xgrammar")
        for key in list(node):
            if key in _ASSERTIONS and key not in self.allowed:
                self._unsupported(node, key, path, "")
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt not in self.formats:
            if fmt not in STANDARD_FORMATS or not _may_be_string(node):
                del node["format"]  # an annotation: no validator asserts it
            else:
                known = sorted(self.formats)
                note = f"format {fmt!r} is not one of {known} for {self.engine}"
                self._unsupported(node, "format", path, note)
        if self.engine != "llguidance" and _may_be_string(node):
            self._string_combinations(node, path)
        for key in ("enum", "const"):
            if key in node and _has_big_integer(node[key]):
                note = (f"{self.engine} reads integers beyond 2**53 in {key} as floats and would emit a "
                        "different number (RFC 8259 calls such integers non-interoperable)")
                self._unsupported(node, key, path, note)
        if self.engine == "xgrammar" and "multipleOf" in node:
            if not _only_integer(node):
                self._unsupported(node, "multipleOf", path,
                                  'xgrammar enforces multipleOf on integers only; add "type": "integer"')
            elif _BOUNDS & node.keys():
                # xgrammar's own log: "range + multipleOf combination not yet supported; ignoring multipleOf"
                note = "xgrammar ignores multipleOf on an integer that also has a minimum or maximum"
                self._unsupported(node, "multipleOf", path, note)
        if "oneOf" in node and self.engine != "llguidance" and not _disjoint(node["oneOf"], self.root, node):
            if self.dropped is not None:
                self.dropped.append(f"{path}/oneOf")
                node["anyOf"] = node.pop("oneOf")
            else:
                exc = self.refuse("oneOf", path)
                exc.add_note(f"{self.engine} treats oneOf as anyOf; toolguard accepts oneOf only when its "
                             "branches are provably disjoint (distinct types, or distinct const/enum on a "
                             "required property)")
                raise exc
        ref = node.get("$ref")
        if isinstance(ref, str):
            self._check_ref(ref, path)
        self._cap_and_close(node, in_all_of)
        for key in _SCHEMA_KEYS:
            if key in node and isinstance(node[key], dict):
                self.walk(node[key], f"{path}/{key}", in_all_of=False)
        for key in _SCHEMA_MAPS:
            sub = node.get(key)
            if isinstance(sub, dict):
                for name, child in sub.items():
                    self.walk(child, f"{path}/{key}/{_esc(str(name))}", in_all_of=False)
        for key in _SCHEMA_LISTS:
            sub = node.get(key)
            if isinstance(sub, list):
                for i, child in enumerate(sub):
                    self.walk(child, f"{path}/{key}/{i}", in_all_of=key == "allOf")

    def _drop_foreign(self, node: dict[str, Any]) -> None:
        for key in self.foreign & node.keys():
            del node[key]
        if self.ref_replaces_siblings and isinstance(node.get("$ref"), str):
            for key in (_ASSERTIONS - {"$ref"}) & node.keys():
                del node[key]

    @staticmethod
    def _rewrite_drafts(node: dict[str, Any]) -> None:
        if isinstance(node.get("$schema"), str):
            # the prepared schema is written in 2020-12 forms; left at draft-07, llguidance would read the
            # prefixItems below as an unknown keyword and let any item through (a fuzz finding)
            node["$schema"] = DRAFT_2020_12
        for bound, excl in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
            flag = node.get(excl)
            if isinstance(flag, bool):
                if flag and bound in node:
                    node[excl] = node.pop(bound)
                else:
                    del node[excl]
        items = node.get("items")
        if isinstance(items, list):
            node["prefixItems"] = node.pop("items")
            extra = node.pop("additionalItems", None)
            if extra is not None:
                node["items"] = extra
        elif "additionalItems" in node:
            del node["additionalItems"]  # without an items array it has no effect (all drafts)

    def _string_combinations(self, node: dict[str, Any], path: str) -> None:
        """xgrammar drops min/maxLength next to a pattern or format; outlines-core drops the pattern or format
        next to min/maxLength; both pass lookaround assertions through unenforced."""
        lengths = [k for k in ("minLength", "maxLength") if k in node]
        shapes = [k for k in ("pattern", "format") if k in node]
        if lengths and shapes:
            lost = lengths[0] if self.engine == "xgrammar" else shapes[0]
            kept = shapes[0] if self.engine == "xgrammar" else lengths[0]
            note = f"{self.engine} ignores {lost} on a string that also has {kept}"
            self._unsupported(node, lost, path, note)
        pattern = node.get("pattern")
        if isinstance(pattern, str) and _LOOKAROUND.search(pattern):
            note = f"{self.engine} ignores lookaround assertions in patterns"
            self._unsupported(node, "pattern", path, note)

    def _unsupported(self, node: dict[str, Any], key: str, path: str, note: str) -> None:
        if self.dropped is not None:
            self.dropped.append(f"{path}/{_esc(key)}")
            del node[key]
            return
        exc = self.refuse(key, path)
        if note:
            exc.add_note(note)
        raise exc

    def _check_ref(self, ref: str, path: str) -> None:
        if not ref.startswith("#"):
            raise RemoteRefRefused(f"$ref {ref!r} is not local; toolguard never fetches schemas",
                                   path=f"{path}/$ref", tool=self.tool)
        target: Any = self.root
        for part in ref[1:].lstrip("/").split("/") if ref not in ("#", "#/") else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                raise SchemaError(f"$ref {ref!r} does not resolve", path=f"{path}/$ref", tool=self.tool)

    def _cap_and_close(self, node: dict[str, Any], in_all_of: bool) -> None:
        types = node.get("type")
        is_string = types == "string" or (isinstance(types, list) and "string" in types)
        if (self.cap is not None and is_string and not {"enum", "const", "format", "pattern"} & node.keys()):
            floor = node.get("minLength", 0)
            node["maxLength"] = max(min(node.get("maxLength", self.cap), self.cap), floor)
        if (self.close and not in_all_of and isinstance(node.get("properties"), dict)
                and not {"additionalProperties", "patternProperties", "unevaluatedProperties",
                         "allOf", "anyOf", "oneOf", "$ref"} & node.keys()):
            node["additionalProperties"] = False
            # a required name the schema does not list may hold any value (BFCL and ACEBench have such
            # typos): closing the object must not make it unsatisfiable
            props = node["properties"]
            for name in node.get("required") or ():
                if isinstance(name, str) and name not in props:
                    props[name] = {}


DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})

#: Beyond this magnitude an integer does not survive a trip through an IEEE double (RFC 8259, section 6).
_EXACT_INTEGER_LIMIT = 2**53


def _has_big_integer(value: Any, depth: int = 0) -> bool:
    """True if ``value`` holds an integer an engine would round (``9007199254740993`` becomes ...992)."""
    if isinstance(value, bool) or depth > 64:
        return False
    if isinstance(value, int):
        return abs(value) > _EXACT_INTEGER_LIMIT
    if isinstance(value, list):
        return any(_has_big_integer(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_has_big_integer(v, depth + 1) for v in value.values())
    return False


#: ``uniqueItems`` over a small finite item domain is enforced by listing every array it allows (at most
#: this many arrangements: 1,957 for six values).
MAX_UNIQUE_ARRANGEMENTS = 2000
_NOT_WITH_UNIQUE = frozenset({"prefixItems", "contains", "enum", "const"})


def _unique_items(node: dict[str, Any], *, arrays_as_enum: bool) -> None:
    """``uniqueItems: false`` asserts nothing (removed). ``true`` over items drawn from a short ``enum`` or a
    ``const`` (``measures: [mean, median, stdev]``) becomes an ``enum`` of every array of distinct values that
    fits ``minItems``/``maxItems``, which every engine enforces; otherwise it stays, to be refused."""
    import itertools
    import json

    flag = node["uniqueItems"]
    if flag is False:
        del node["uniqueItems"]
        return
    items = node.get("items")
    if flag is not True or not arrays_as_enum or not isinstance(items, dict):
        return
    if not {"enum", "const"} & items.keys():
        return
    if not items.keys() <= {"enum", "const", "type"} or node.keys() & _NOT_WITH_UNIQUE:
        return
    values = items["enum"] if "enum" in items else [items["const"]]
    # scalars whose JSON equality is Python's (no floats: 1 and 1.0 are one JSON value)
    if not isinstance(values, list) or not all(v is None or isinstance(v, (str, int)) for v in values):
        return
    if "type" in items:
        types = set(items["type"] if isinstance(items["type"], list) else [items["type"]])
        if "number" in types:
            types.add("integer")
        values = [v for v in values if _json_type(v) in types]
    distinct = list({json.dumps(v): v for v in values}.values())
    low = node.get("minItems", 0)
    high = min(node.get("maxItems", len(distinct)), len(distinct))
    if not isinstance(low, int) or not isinstance(high, int):
        return
    sizes = range(max(low, 0), high + 1)
    count = sum(_arrangements(len(distinct), r) for r in sizes)
    if count > MAX_UNIQUE_ARRANGEMENTS:
        return
    node["enum"] = [list(p) for r in sizes for p in itertools.permutations(distinct, r)]
    del node["uniqueItems"]


def _arrangements(n: int, r: int) -> int:
    out = 1
    for k in range(n - r + 1, n + 1):
        out *= k
    return out


def _never(schema: Any) -> bool:
    """True for a schema no value satisfies that says so plainly: ``false``, ``{"not": {}}`` (zod's
    ``undefined``), ``{"enum": []}``."""
    if schema is False:
        return True
    if not isinstance(schema, dict):
        return False
    neg = schema.get("not", None)
    if neg is True or (isinstance(neg, dict) and not _ASSERTIONS & neg.keys()):
        return True
    return schema.get("enum") == []


def _drop_never(node: dict[str, Any]) -> None:
    """Remove ``anyOf``/``oneOf`` branches that match nothing, and write other never-schemas as ``false``
    (which every engine enforces; ``not`` itself is refused). Both rewrites keep the set of valid values."""
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            kept = [b for b in branches if not _never(b)]
            if kept and len(kept) < len(branches):
                node[key] = kept
    for key in _SCHEMA_KEYS:
        if key in node and node[key] is not False and _never(node[key]):
            node[key] = False
    for key in _SCHEMA_MAPS:
        sub = node.get(key)
        if isinstance(sub, dict):
            for name, child in sub.items():
                if child is not False and _never(child):
                    sub[name] = False


def _narrow_enum(node: dict[str, Any]) -> None:
    """Drop ``enum`` values the node's ``type`` rules out (none of them can validate): xgrammar let
    ``false`` through ``{"type": "string", "enum": [false, "abc"]}`` (a fuzz finding); an empty result
    leaves a never-schema, which ``explain_unsatisfiable`` names."""
    values, types = node.get("enum"), node.get("type")
    if not isinstance(values, list) or not values:
        return
    allowed = {types} if isinstance(types, str) else set(types) if isinstance(types, list) else None
    if allowed is None:
        return
    kept = [v for v in values if _type_allows(allowed, v)]
    if len(kept) < len(values):
        node["enum"] = kept


def _type_allows(types: set[Any], value: Any) -> bool:
    kind = _json_type(value)
    if kind in types or (kind == "integer" and "number" in types):
        return True
    return kind == "number" and "integer" in types and float(value).is_integer()  # 1.0 is an integer


def _engine_patterns(node: dict[str, Any]) -> None:
    """A pattern only ECMA-262 parses (``[^]``, ``\\cJ``...) reaches the engine translated, as it reaches the
    validator (``toolguard._regex``); every other pattern as written."""
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        node["pattern"] = engine_pattern(pattern)
    props = node.get("patternProperties")
    if isinstance(props, dict):
        node["patternProperties"] = {engine_pattern(k): v for k, v in props.items()}


def _may_be_string(node: Mapping[str, Any]) -> bool:
    t = node.get("type")
    return t is None or t == "string" or (isinstance(t, list) and "string" in t)


def _only_integer(node: Mapping[str, Any]) -> bool:
    return node.get("type") == "integer"


def _types_of(branch: Any, root: Any, depth: int = 0) -> set[str] | None:
    """The JSON types a branch can take, if the branch says so explicitly (None = unknown/any)."""
    if not isinstance(branch, dict) or depth > 8:
        return None
    if isinstance(branch.get("$ref"), str) and branch["$ref"].startswith("#/"):
        target: Any = root
        for part in branch["$ref"][2:].split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            target = target.get(key) if isinstance(target, dict) else None
        return _types_of(target, root, depth + 1)
    if "const" in branch:
        return {_TYPE_OF_CONST.get(type(branch["const"]), "?")}
    if isinstance(branch.get("enum"), list):
        return {_TYPE_OF_CONST.get(type(v), "?") for v in branch["enum"]}
    t = branch.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list) and all(isinstance(x, str) for x in t):
        return set(t)
    return None


def _discriminators(branch: Any) -> dict[str, set[str]]:
    """Required properties with const/enum values: name -> set of JSON-encoded values."""
    import json

    out: dict[str, set[str]] = {}
    if not isinstance(branch, dict):
        return out
    props = branch.get("properties") or {}
    for name in branch.get("required") or ():
        sub = props.get(name) if isinstance(props, dict) else None
        if isinstance(sub, dict):
            if "const" in sub:
                out[name] = {json.dumps(sub["const"], sort_keys=True)}
            elif isinstance(sub.get("enum"), list):
                out[name] = {json.dumps(v, sort_keys=True) for v in sub["enum"]}
    return out


def _disjoint(branches: Any, root: Any, parent: Mapping[str, Any]) -> bool:
    """True when no JSON value can match two branches of a oneOf (a conservative check)."""
    if not isinstance(branches, list):
        return False
    types = [_types_of(b, root) for b in branches]
    if all(t is not None for t in types):
        expanded = [t | ({"number"} if "integer" in t else set()) | ({"integer"} if "number" in t else set())
                    for t in types if t is not None]
        if all(not (expanded[i] & expanded[j]) for i in range(len(expanded)) for j in range(i)):
            return True
    # a discriminating property only separates objects: anything else would match every branch
    objects_only = parent.get("type") == "object" or all(t == {"object"} for t in types)
    discs = [_discriminators(b) for b in branches]
    if not objects_only or not discs or not all(discs):
        return False
    common = set(discs[0]).intersection(*discs[1:])
    pairs = [(i, j) for i in range(len(discs)) for j in range(i)]
    return any(all(not (discs[i][k] & discs[j][k]) for i, j in pairs) for k in common)


_BOUND_PAIRS = (("minimum", "maximum"), ("minLength", "maxLength"), ("minItems", "maxItems"),
                ("minProperties", "maxProperties"))


def explain_unsatisfiable(schema: Any, path: str = "", depth: int = 0) -> str | None:
    """Why no value satisfies ``schema``, for the plain cases real tool sets have (an ``enum`` written under
    the wrong ``type``, bounds that cross, a required property the closed object does not list, a required
    property whose own schema is empty); ``None`` when none of them applies. Each answer names the JSON
    pointer and what to change."""
    if depth > 32:
        return None
    if _never(schema):
        return f"{path or '/'} matches no value ({_brief(schema)})"
    if not isinstance(schema, dict):
        return None
    types = schema.get("type")
    allowed = {types} if isinstance(types, str) else set(types) if isinstance(types, list) else None
    if allowed is not None:
        if "number" in allowed:
            allowed.add("integer")  # 1 is a number; an integer type with 1.0 is left to the engine
        for key in ("enum", "const"):
            values = schema.get(key) if key == "enum" else [schema[key]] if key in schema else None
            if isinstance(values, list) and values:
                kinds = {_json_type(v) for v in values}
                if not kinds & allowed:
                    hint = " (did you mean items.enum?)" if allowed == {"array"} and key == "enum" else ""
                    return (f"{path or '/'}: type {types!r} but every {key} value is "
                            f"a{'n' if min(kinds)[0] in 'aeiou' else ''} {' or '.join(sorted(kinds))}{hint}")
    for low, high in _BOUND_PAIRS:
        a, b = schema.get(low), schema.get(high)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a > b:
            return f"{path or '/'}: {low} {a} is greater than {high} {b}"
    listed = schema.get("properties")
    props: dict[str, Any] = listed if isinstance(listed, dict) else {}
    for name in schema.get("required") or ():
        if not isinstance(name, str):
            continue
        where = f"{path}/properties/{_esc(name)}"
        if name not in props:
            if schema.get("additionalProperties") is False and not schema.get("patternProperties"):
                return (f"{path or '/'}: property {name!r} is required but not listed in properties, and "
                        "additionalProperties is false")
            continue
        found = explain_unsatisfiable(props[name], where, depth + 1)
        if found:
            return found + f" (required by {path or '/'})"
    return None


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return _TYPE_OF_CONST.get(type(value), "?")


def _brief(schema: Any) -> str:
    import json

    text = json.dumps(schema, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ += ["explain_unsatisfiable"]
