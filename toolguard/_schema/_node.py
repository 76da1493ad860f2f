"""The compiled form of a schema: ``Node`` records, the ``CompiledSchema`` that owns them, kinds and roles.

A ``Node`` stores each keyword pre-digested for the streaming checks: a kind bitmask for ``type``, enum
members grouped by kind, sorted property names for early key rejection, compiled ``regex`` patterns, and the
in-place applicators as an ordered tuple ``inplace`` of ``(role, node, key)``. ``_compile`` builds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._normalize import Draft

__all__ = [
    "ALL_KINDS",
    "ARR",
    "BOOL",
    "FALSE_NODE",
    "KIND_BITS",
    "NULL",
    "NUM",
    "OBJ",
    "STR",
    "TRUE_NODE",
    "Choice",
    "CompiledSchema",
    "Node",
    "Role",
]

OBJ, ARR, STR, NUM, BOOL, NULL = 1, 2, 4, 8, 16, 32
ALL_KINDS = 63
KIND_BITS = {
    "object": OBJ,
    "array": ARR,
    "string": STR,
    "number": NUM,
    "true": BOOL,
    "false": BOOL,
    "null": NULL,
}
_TYPE_BITS = {
    "object": OBJ,
    "array": ARR,
    "string": STR,
    "number": NUM,
    "integer": NUM,
    "boolean": BOOL,
    "null": NULL,
}


class Role:
    """How a child evaluation's result feeds its parent (ints, compared on the hot path)."""

    ROOT = 0
    CHILD = 1  # properties / patternProperties / additionalProperties / items / prefixItems / additionalItems
    NAMES = 2  # propertyNames, on a key
    KEYNAME = 3  # the allowed-name filter of a closed object, on a key
    CONTAINS = 4
    UNEVAL = 5  # unevaluatedProperties / unevaluatedItems, speculative
    ALLOF = 6
    ANYOF = 7
    ONEOF = 8
    NOT = 9
    IF = 10
    THEN = 11
    ELSE = 12
    REF = 13
    DEP = 14  # dependentSchemas / schema-form dependencies, speculative until the key shows up
    DYN = 15  # $dynamicRef


class Node:
    """One compiled subschema. Fields are ``None``/empty when the keyword is absent."""

    __slots__ = (
        "additional",
        "always",
        "any_pos",
        "choice_items",
        "choice_max_props",
        "choice_props",
        "choice_sigs",
        "choices",
        "contains",
        "contains_legacy",
        "dep_required",
        "dep_schemas",
        "draft",
        "dyn_name",
        "else_pos",
        "ex_max",
        "ex_min",
        "format",
        "has_arr",
        "has_final",
        "has_obj",
        "holds_for",
        "if_pos",
        "inplace",
        "int_only",
        "int_strict",
        "items",
        "kinds",
        "light",
        "loc",
        "max_contains",
        "max_items",
        "max_len",
        "max_props",
        "maximum",
        "min_contains",
        "min_items",
        "min_len",
        "min_props",
        "minimum",
        "multiple_of",
        "names",
        "names_closed",
        "needs_ann",
        "not_pos",
        "num_early",
        "one_pos",
        "pattern",
        "pattern_early",
        "pattern_props",
        "pattern_src",
        "prefix",
        "prop_names",
        "props",
        "required",
        "resource",
        "str_early",
        "then_pos",
        "type_names",
        "uneval_items",
        "uneval_props",
        "unique",
    )

    def __init__(self, loc: str, draft: Draft, resource: str) -> None:
        self.loc = loc
        self.draft = draft
        self.resource = resource
        self.always: bool | None = None
        self.kinds = ALL_KINDS
        self.int_only = False
        self.int_strict = False
        self.type_names: tuple[str, ...] = ()
        self.choices: tuple[Choice, ...] = ()
        # derived from the choices' object/array/number members (``_choices``): per-key and per-index
        # member nodes, the most keys a member has, and the numeric members' significant digits
        self.choice_props: dict[str, Node] | None = None
        self.choice_max_props: int | None = None
        self.choice_items: tuple[Node, ...] | None = None
        self.choice_sigs: tuple[tuple[Choice, tuple[tuple[int, tuple[str, ...]], ...]], ...] | None = None
        self.holds_for = 0  # kinds every value of which satisfies this node
        self.min_len: int | None = None
        self.max_len: int | None = None
        self.pattern: Any = None
        self.pattern_src: str | None = None
        self.pattern_early = False
        self.format: str | None = None
        self.minimum: int | float | None = None
        self.maximum: int | float | None = None
        self.ex_min: int | float | None = None
        self.ex_max: int | float | None = None
        self.multiple_of: int | float | None = None
        self.num_early = False
        self.str_early = False
        self.props: dict[str, Node] = {}
        self.pattern_props: tuple[tuple[Any, str, Node], ...] = ()
        self.additional: Node | None = None
        self.prop_names: Node | None = None
        self.required: tuple[str, ...] = ()
        self.min_props: int | None = None
        self.max_props: int | None = None
        self.dep_required: tuple[tuple[str, tuple[str, ...]], ...] = ()
        self.dep_schemas: tuple[tuple[str, Node], ...] = ()
        self.names_closed = False
        self.names: tuple[str, ...] = ()
        self.prefix: tuple[Node, ...] = ()
        self.items: Node | None = None
        self.contains: Node | None = None
        self.contains_legacy = False
        self.min_contains = 1
        self.max_contains: int | None = None
        self.min_items: int | None = None
        self.max_items: int | None = None
        self.unique = False
        self.uneval_props: Node | None = None
        self.uneval_items: Node | None = None
        self.inplace: tuple[tuple[int, Node, Any], ...] = ()
        self.dyn_name: str | None = None
        self.any_pos: tuple[int, ...] = ()
        self.one_pos: tuple[int, ...] = ()
        self.if_pos = self.then_pos = self.else_pos = self.not_pos = -1
        self.has_obj = False
        self.has_arr = False
        self.has_final = False
        self.needs_ann = False
        self.light = True

    def __repr__(self) -> str:
        return f"<Node {self.loc}>"


@dataclass(frozen=True, slots=True)
class Choice:
    """An ``enum`` or ``const``: the members, the kinds they cover, and the string members sorted."""

    keyword: str
    values: tuple[Any, ...]
    kinds: int
    strings: tuple[str, ...]


@dataclass(frozen=True, slots=True, eq=False)
class CompiledSchema:
    """The compiled graph of one schema; share it across validators (it is immutable once built)."""

    root: Node
    draft: Draft
    uses_dynamic: bool
    dynamic_anchors: Mapping[str, Mapping[str, Node]]
    canonical: str


TRUE_NODE = Node("#", "draft2020-12", "")
TRUE_NODE.always = True
TRUE_NODE.holds_for = ALL_KINDS
FALSE_NODE = Node("#", "draft2020-12", "")
FALSE_NODE.always = False
FALSE_NODE.kinds = 0
