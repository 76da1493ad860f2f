"""Compile a JSON Schema into a graph of ``Node`` records the stream validator walks.

Theory of operation. ``compile_schema`` canonicalises the schema (sorted-key JSON), looks the text up in an
LRU cache, and otherwise: (1) checks depth and size iteratively (a hostile schema cannot blow the stack), (2)
indexes identifiers (``_refs.ResourceIndex``), (3) fills one ``Node`` per subschema from a work list, so
``$ref`` cycles (``{"$ref": "#"}``, recursive trees) become cycles in the node graph instead of recursion,
and (4) checks that in-place applicator chains (allOf/anyOf/oneOf/not/if/$ref/...) are finite and small:
a cycle that never consumes input (``{"$ref": "#"}`` at the root) is a ``SchemaError``, a chain expanding to
more than ``max_inplace_expansion`` schemas is ``SchemaLimitExceeded``. Compile time is linear in the schema
size plus the metaschemas it references.

A ``Node`` stores each keyword pre-digested for the streaming checks: a kind bitmask for ``type``, enum
members grouped by kind, sorted property names for early key rejection, compiled ``regex`` patterns, and the
in-place applicators as an ordered tuple ``inplace`` of ``(role, node, key)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import regex

from .._exceptions import SchemaError, SchemaLimitExceeded
from .._regex import compile_pattern
from ._choices import choice_record, finish_choice_node, holds_for
from ._keywords import DRAFT_ORDER, check_keywords
from ._limits import DEFAULT_LIMITS, ValidationLimits
from ._node import (
    _TYPE_BITS,
    ALL_KINDS,
    FALSE_NODE,
    STR,
    TRUE_NODE,
    CompiledSchema,
    Node,
    Role,
)
from ._normalize import Draft, detect_draft
from ._refs import ResourceIndex, join_uri

__all__ = ["compile_schema"]


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_shape(schema: Any, limits: ValidationLimits) -> None:
    """Depth and size of the raw schema JSON, iteratively (before anything recursive touches it)."""
    stack: list[tuple[Any, int]] = [(schema, 0)]
    count = 0
    cap = limits.max_schema_nodes * 20
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > cap:
            raise SchemaLimitExceeded(f"the schema has more than {cap} JSON values (max_schema_nodes)")
        if depth > limits.max_schema_depth:
            raise SchemaLimitExceeded(f"the schema nests deeper than {limits.max_schema_depth} levels")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def compile_schema(schema: Any, *, limits: ValidationLimits | None = None) -> CompiledSchema:
    """Compile ``schema`` (cached by its canonical JSON text and the limits).

    Raises ``SchemaError`` for a malformed schema, ``RemoteRefRefused`` for a reference that would need the
    network, ``UnsupportedKeyword`` for a keyword toolguard cannot enforce and ``SchemaLimitExceeded`` past a
    cap of ``limits``.
    """
    limits = limits or DEFAULT_LIMITS
    if isinstance(schema, CompiledSchema):
        return schema
    if not isinstance(schema, (Mapping, bool)):
        raise SchemaError(f"a schema must be an object or a boolean, not {type(schema).__name__}")
    _check_shape(schema, limits)
    try:
        canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"the schema is not JSON: {exc}") from exc
    return _compile_cached(canonical, limits)


@lru_cache(maxsize=256)
def _compile_cached(canonical: str, limits: ValidationLimits) -> CompiledSchema:
    schema = json.loads(canonical)
    return _Compiler(schema, limits, canonical).run()


class _Compiler:
    def __init__(self, schema: Any, limits: ValidationLimits, canonical: str) -> None:
        self.limits = limits
        self.canonical = canonical
        self.draft: Draft = detect_draft(schema)
        self.index = ResourceIndex(schema, self.draft)
        self.memo: dict[int, Node] = {}
        self.queue: list[tuple[Node, Any, str]] = []
        self.count = 0
        self.uses_dynamic = False

    def run(self) -> CompiledSchema:
        root = self.node(self.index.root, "#", self.index.root_uri)
        self.drain()
        dynamic: dict[str, dict[str, Node]] = {}
        if self.uses_dynamic:
            for uri, anchors in list(self.index.dynamic_anchors.items()):
                dynamic[uri] = {name: self.node(sub, f"{uri}#{name}", uri) for name, sub in anchors.items()}
            self.drain()
        _check_inplace(root, list(self.memo.values()), self.limits)
        return CompiledSchema(root, self.draft, self.uses_dynamic, dynamic, self.canonical)

    def drain(self) -> None:
        while self.queue:
            node, obj, base = self.queue.pop()
            self.fill(node, obj, base)

    def node(self, obj: Any, loc: str, base: str) -> Node:
        if obj is True:
            return TRUE_NODE
        if obj is False:
            return FALSE_NODE
        if not isinstance(obj, dict):
            raise SchemaError(
                f"a subschema must be an object or a boolean, not {json.dumps(obj)[:40]}", path=loc
            )
        found = self.memo.get(id(obj))
        if found is not None:
            return found
        self.count += 1
        if self.count > self.limits.max_schema_nodes:
            raise SchemaLimitExceeded(f"the schema has more than {self.limits.max_schema_nodes} subschemas")
        resource = self.index.resource_of.get(id(obj), base)
        draft = self.index.draft_of.get(resource, self.draft)
        node = Node(loc, draft, resource)
        self.memo[id(obj)] = node
        self.queue.append((node, obj, self.index.base_of.get(id(obj), base)))
        return node

    # -- one subschema ---------------------------------------------------------------------------------------

    def fill(self, n: Node, s: dict[str, Any], base: str) -> None:
        draft = n.draft
        order = DRAFT_ORDER[draft]
        loc = n.loc
        check_keywords(s, draft, loc)
        inplace: list[tuple[int, Node, Any]] = []
        if "$ref" in s:
            ref = s["$ref"]
            if not isinstance(ref, str):
                raise SchemaError("$ref must be a string", path=loc)
            target, resource = self.index.resolve(ref, base, loc)
            inplace.append((Role.REF, self.node(target, join_uri(base, ref), resource), None))
            if order <= 7:  # up to draft 7, $ref replaces its siblings
                self._finish_inplace(n, inplace)
                return
        if order >= 9 and "$dynamicRef" in s:
            self._dynamic_ref(n, s["$dynamicRef"], base, inplace)
        self._types(n, s, order)
        self._choices(n, s)
        self._strings(n, s)
        self._numbers(n, s, order)
        self._objects(n, s, order, base)
        self._arrays(n, s, order, base)
        self._applicators(n, s, order, base, inplace)
        self._finish_inplace(n, inplace)

    def _dynamic_ref(self, n: Node, ref: Any, base: str, inplace: list[tuple[int, Node, Any]]) -> None:
        if not isinstance(ref, str):
            raise SchemaError("$dynamicRef must be a string", path=n.loc)
        target, resource = self.index.resolve(ref, base, n.loc)
        fragment = join_uri(base, ref).partition("#")[2]
        name = None
        if (
            fragment
            and not fragment.startswith("/")
            and fragment in self.index.dynamic_anchors.get(resource, {})
        ):
            name = fragment
            self.uses_dynamic = True
        inplace.append((Role.DYN, self.node(target, join_uri(base, ref), resource), name))

    def _types(self, n: Node, s: dict[str, Any], order: int) -> None:
        if "type" not in s:
            return
        names = s["type"]
        names = [names] if isinstance(names, str) else names
        if not isinstance(names, list) or not all(isinstance(t, str) for t in names):
            raise SchemaError("type must be a string or a list of strings", path=n.loc + "/type")
        kinds = 0
        for t in names:
            if t not in _TYPE_BITS:
                raise SchemaError(f"unknown type {t!r}", path=n.loc + "/type")
            kinds |= _TYPE_BITS[t]
        n.kinds = kinds
        n.type_names = tuple(names)
        n.int_only = "integer" in names and "number" not in names
        n.int_strict = n.int_only and order == 4

    def _choices(self, n: Node, s: dict[str, Any]) -> None:
        choices = []
        if "enum" in s:
            values = s["enum"]
            if not isinstance(values, list):
                raise SchemaError("enum must be an array", path=n.loc + "/enum")
            if len(values) > self.limits.max_enum_size:
                raise SchemaLimitExceeded(
                    f"enum has {len(values)} members, more than max_enum_size={self.limits.max_enum_size}",
                    path=n.loc + "/enum",
                )
            choices.append(("enum", tuple(values)))
        if "const" in s and DRAFT_ORDER[n.draft] >= 6:
            choices.append(("const", (s["const"],)))
        out = [choice_record(keyword, values) for keyword, values in choices]
        n.choices = tuple(out)
        if out:
            n.has_final = True
            if any(c.kinds & STR for c in out):
                n.str_early = True

    def _strings(self, n: Node, s: dict[str, Any]) -> None:
        for key in ("minLength", "maxLength"):
            if key in s:
                value = s[key]
                if not (_is_int(value) or (isinstance(value, float) and value.is_integer())) or value < 0:
                    raise SchemaError(f"{key} must be a non-negative integer", path=f"{n.loc}/{key}")
                setattr(n, "min_len" if key == "minLength" else "max_len", int(value))
        if n.max_len is not None:
            n.str_early = True
        if "pattern" in s:
            n.pattern_src = s["pattern"]
            n.pattern = self._regex(s["pattern"], n.loc + "/pattern")
            n.pattern_early = n.pattern_src.startswith("^")
            n.str_early = n.str_early or n.pattern_early
        if "format" in s and isinstance(s["format"], str):
            n.format = s["format"]
        if n.min_len is not None or n.max_len is not None or n.pattern is not None or n.format is not None:
            n.has_final = True

    def _regex(self, pattern: Any, path: str) -> Any:
        if not isinstance(pattern, str):
            raise SchemaError("a pattern must be a string", path=path)
        if len(pattern) > self.limits.max_pattern_length:
            raise SchemaLimitExceeded(
                f"pattern of {len(pattern)} characters exceeds "
                f"max_pattern_length={self.limits.max_pattern_length}",
                path=path,
            )
        try:
            return compile_pattern(pattern)  # as written, or its ECMA-262 translation where only that parses
        except regex.error as exc:
            raise SchemaError(f"invalid regular expression {pattern!r}: {exc}", path=path) from exc

    def _numbers(self, n: Node, s: dict[str, Any], order: int) -> None:
        for key in ("minimum", "maximum", "multipleOf"):
            if key in s and not _is_num(s[key]):
                raise SchemaError(f"{key} must be a number", path=f"{n.loc}/{key}")
        for key in ("exclusiveMinimum", "exclusiveMaximum"):
            if key in s:
                value = s[key]
                if order == 4:
                    if not isinstance(value, bool):
                        raise SchemaError(f"{key} must be a boolean in draft 4", path=f"{n.loc}/{key}")
                elif not _is_num(value):
                    raise SchemaError(f"{key} must be a number", path=f"{n.loc}/{key}")
        if order == 4:
            if "minimum" in s:
                if s.get("exclusiveMinimum") is True:
                    n.ex_min = s["minimum"]
                else:
                    n.minimum = s["minimum"]
            if "maximum" in s:
                if s.get("exclusiveMaximum") is True:
                    n.ex_max = s["maximum"]
                else:
                    n.maximum = s["maximum"]
        else:
            n.minimum = s.get("minimum")
            n.maximum = s.get("maximum")
            n.ex_min = s.get("exclusiveMinimum")
            n.ex_max = s.get("exclusiveMaximum")
        if "multipleOf" in s:
            if s["multipleOf"] <= 0:
                raise SchemaError("multipleOf must be greater than 0", path=n.loc + "/multipleOf")
            n.multiple_of = s["multipleOf"]
        bounded = any(v is not None for v in (n.minimum, n.maximum, n.ex_min, n.ex_max))
        n.num_early = bounded or n.int_strict
        if bounded or n.multiple_of is not None or n.int_only:
            n.has_final = True

    def _sub(self, s: Any, loc: str, base: str) -> Node:
        return self.node(s, loc, base)

    def _objects(self, n: Node, s: dict[str, Any], order: int, base: str) -> None:
        loc = n.loc
        if "properties" in s:
            props = s["properties"]
            if not isinstance(props, dict):
                raise SchemaError("properties must be an object", path=loc + "/properties")
            n.props = {k: self._sub(v, f"{loc}/properties/{k}", base) for k, v in props.items()}
        if "patternProperties" in s:
            pp = s["patternProperties"]
            if not isinstance(pp, dict):
                raise SchemaError("patternProperties must be an object", path=loc + "/patternProperties")
            n.pattern_props = tuple(
                (
                    self._regex(k, f"{loc}/patternProperties"),
                    k,
                    self._sub(v, f"{loc}/patternProperties/{k}", base),
                )
                for k, v in pp.items()
            )
        if "additionalProperties" in s:
            n.additional = self._sub(s["additionalProperties"], loc + "/additionalProperties", base)
        if order >= 6 and "propertyNames" in s:
            n.prop_names = self._sub(s["propertyNames"], loc + "/propertyNames", base)
        if "required" in s:
            req = s["required"]
            if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
                raise SchemaError("required must be an array of strings", path=loc + "/required")
            n.required = tuple(dict.fromkeys(req))
        for key in ("minProperties", "maxProperties"):
            if key in s:
                value = s[key]
                if not (_is_int(value) or (isinstance(value, float) and value.is_integer())) or value < 0:
                    raise SchemaError(f"{key} must be a non-negative integer", path=f"{loc}/{key}")
                setattr(n, "min_props" if key == "minProperties" else "max_props", int(value))
        dep_req: list[tuple[str, tuple[str, ...]]] = []
        dep_sch: list[tuple[str, Node]] = []
        if order <= 7 and isinstance(s.get("dependencies"), dict):
            for key, dep in s["dependencies"].items():
                if isinstance(dep, list):
                    dep_req.append((key, tuple(dep)))
                else:
                    dep_sch.append((key, self._sub(dep, f"{loc}/dependencies/{key}", base)))
        if order >= 8:
            if isinstance(s.get("dependentRequired"), dict):
                dep_req.extend((k, tuple(v)) for k, v in s["dependentRequired"].items())
            if isinstance(s.get("dependentSchemas"), dict):
                dep_sch.extend(
                    (k, self._sub(v, f"{loc}/dependentSchemas/{k}", base))
                    for k, v in s["dependentSchemas"].items()
                )
            if "unevaluatedProperties" in s:
                n.uneval_props = self._sub(s["unevaluatedProperties"], loc + "/unevaluatedProperties", base)
        n.dep_required = tuple(dep_req)
        n.dep_schemas = tuple(dep_sch)
        if n.additional is FALSE_NODE:  # names are closed: declared ones, or matching a patternProperties key
            n.names_closed = True
            n.names = tuple(sorted(n.props))
        n.has_obj = bool(
            n.props
            or n.pattern_props
            or n.additional is not None
            or n.prop_names is not None
            or n.required
            or n.min_props is not None
            or n.max_props is not None
            or dep_req
            or dep_sch
            or n.uneval_props is not None
        )

    def _arrays(self, n: Node, s: dict[str, Any], order: int, base: str) -> None:
        loc = n.loc
        items = s.get("items")
        if order >= 9:
            if "prefixItems" in s:
                if not isinstance(s["prefixItems"], list):
                    raise SchemaError("prefixItems must be an array", path=loc + "/prefixItems")
                n.prefix = tuple(
                    self._sub(v, f"{loc}/prefixItems/{i}", base) for i, v in enumerate(s["prefixItems"])
                )
            if "items" in s:
                if isinstance(items, list):
                    raise SchemaError(
                        "in draft 2020-12 items must be a schema: use prefixItems for a tuple, or "
                        "declare an older $schema",
                        path=loc + "/items",
                    )
                n.items = self._sub(items, loc + "/items", base)
        else:
            if isinstance(items, list):
                n.prefix = tuple(self._sub(v, f"{loc}/items/{i}", base) for i, v in enumerate(items))
                if "additionalItems" in s:
                    n.items = self._sub(s["additionalItems"], loc + "/additionalItems", base)
            elif "items" in s:
                n.items = self._sub(items, loc + "/items", base)
        if order >= 6 and "contains" in s:
            n.contains = self._sub(s["contains"], loc + "/contains", base)
            n.contains_legacy = order <= 7
            if order >= 8:
                for key in ("minContains", "maxContains"):
                    if key in s:
                        value = s[key]
                        if (
                            not (_is_int(value) or (isinstance(value, float) and value.is_integer()))
                            or value < 0
                        ):
                            raise SchemaError(f"{key} must be a non-negative integer", path=f"{loc}/{key}")
                n.min_contains = int(s.get("minContains", 1))
                n.max_contains = int(s["maxContains"]) if "maxContains" in s else None
        for key in ("minItems", "maxItems"):
            if key in s:
                value = s[key]
                if not (_is_int(value) or (isinstance(value, float) and value.is_integer())) or value < 0:
                    raise SchemaError(f"{key} must be a non-negative integer", path=f"{loc}/{key}")
                setattr(n, "min_items" if key == "minItems" else "max_items", int(value))
        n.unique = s.get("uniqueItems") is True
        if order >= 8 and "unevaluatedItems" in s:
            n.uneval_items = self._sub(s["unevaluatedItems"], loc + "/unevaluatedItems", base)
        n.has_arr = bool(
            n.prefix
            or n.items is not None
            or n.contains is not None
            or n.min_items is not None
            or n.max_items is not None
            or n.unique
            or n.uneval_items is not None
        )

    def _applicators(
        self, n: Node, s: dict[str, Any], order: int, base: str, inplace: list[tuple[int, Node, Any]]
    ) -> None:
        loc = n.loc
        for key, role in (("allOf", Role.ALLOF), ("anyOf", Role.ANYOF), ("oneOf", Role.ONEOF)):
            if key in s:
                subs = s[key]
                if not isinstance(subs, list) or not subs:
                    raise SchemaError(f"{key} must be a non-empty array", path=f"{loc}/{key}")
                positions = []
                for i, sub in enumerate(subs):
                    positions.append(len(inplace))
                    inplace.append((role, self._sub(sub, f"{loc}/{key}/{i}", base), i))
                if role == Role.ANYOF:
                    n.any_pos = tuple(positions)
                elif role == Role.ONEOF:
                    n.one_pos = tuple(positions)
        if "not" in s:
            n.not_pos = len(inplace)
            inplace.append((Role.NOT, self._sub(s["not"], loc + "/not", base), None))
        if order >= 7 and "if" in s:
            n.if_pos = len(inplace)
            inplace.append((Role.IF, self._sub(s["if"], loc + "/if", base), None))
            if "then" in s:
                n.then_pos = len(inplace)
                inplace.append((Role.THEN, self._sub(s["then"], loc + "/then", base), None))
            if "else" in s:
                n.else_pos = len(inplace)
                inplace.append((Role.ELSE, self._sub(s["else"], loc + "/else", base), None))
        for key, sub in n.dep_schemas:
            inplace.append((Role.DEP, sub, key))

    def _finish_inplace(self, n: Node, inplace: list[tuple[int, Node, Any]]) -> None:
        if n.choices:
            finish_choice_node(n)
        n.inplace = tuple(inplace)
        if n.uneval_props is not None or n.uneval_items is not None:
            n.needs_ann = True
        n.light = not n.inplace and not n.needs_ann
        plain = (
            n.kinds == ALL_KINDS
            and not n.choices
            and not n.has_final
            and not n.has_obj
            and not n.has_arr
            and not n.inplace
            and not n.str_early
        )
        if plain:
            n.always = True
        n.holds_for = holds_for(n)


def _check_inplace(root: Node, nodes: list[Node], limits: ValidationLimits) -> None:
    """Reject in-place cycles (they never consume input) and chains that expand past the cap.

    Iterative DFS over the in-place edges with memoised expansion sizes: linear in the node graph.
    """
    size: dict[int, int] = {}
    state: dict[int, int] = {}  # 1 = on the DFS stack, 2 = done
    for start in nodes:
        if id(start) in state:
            continue
        stack: list[tuple[Node, int]] = [(start, 0)]
        state[id(start)] = 1
        while stack:
            node, i = stack[-1]
            if i < len(node.inplace):
                stack[-1] = (node, i + 1)
                child = node.inplace[i][1]
                st = state.get(id(child))
                if st == 1:
                    raise SchemaError(
                        "a $ref/allOf/anyOf chain refers back to itself without consuming any "
                        "input (infinite in-place recursion)",
                        path=child.loc,
                    )
                if st is None:
                    state[id(child)] = 1
                    stack.append((child, 0))
                continue
            stack.pop()
            state[id(node)] = 2
            total = 1 + sum(size.get(id(c[1]), 1) for c in node.inplace)
            if total > limits.max_inplace_expansion:
                raise SchemaLimitExceeded(
                    f"one value would be checked against more than {limits.max_inplace_expansion} schemas "
                    "through allOf/anyOf/oneOf/$ref chains (max_inplace_expansion)",
                    path=node.loc,
                )
            size[id(node)] = total
    del root
