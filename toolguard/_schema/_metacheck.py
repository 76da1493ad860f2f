"""A fast, one-sided metaschema check: ``True`` means jsonschema's ``check_schema`` would accept the schema.

jsonschema evaluates a schema against its draft's metaschema by interpreting the metaschema on every call
(for 2020-12: seven vocabulary metaschemas joined through ``$dynamicRef``, resolved through ``referencing``),
about a millisecond per tool schema and up to 100 ms for a large MCP listing. The metaschemas use a dozen
keywords, so ``metaschema_check(cls)`` compiles the metaschema of a jsonschema validator class once into
nested Python closures, each answering "does this instance satisfy this metaschema node?":

- ``$ref`` is resolved once, at compile time, against the metaschemas jsonschema ships
  (``jsonschema_specifications``), with the base URI each ``$id`` sets; draft 4-7 ignore a ``$ref``'s
  siblings, as those drafts say.
- ``$dynamicRef: "#meta"`` (2020-12) and ``$recursiveRef: "#"`` (2019-09) resolve to the root metaschema:
  the dynamic scope of a metaschema validating a schema starts and ends at its root.
- ``format`` asks the very format checker the full check uses (so ``regex`` stays ECMA-262), ``pattern``
  uses ``re.search`` as jsonschema does, ``type`` follows jsonschema's type checks.

The check is one-sided on purpose: wherever an exact answer would need jsonschema's finer semantics (a
float where an integer is expected, a value of a type JSON has no name for) it answers ``False``, and
``False`` only means "run the full check", which then accepts or refuses with its own message.
``uniqueItems`` (draft 4's ``enum``, ``required``, ``type`` lists) compares values as jsonschema's ``equal``
does (``True`` is not ``1``, ``1`` is ``1.0``, arrays and objects member by member). A metaschema using a
keyword this module does not know is not compiled at all (``metaschema_check`` returns ``None``): the full
check runs every time. So every refusal, and its reason, still comes from jsonschema; only the verdict
"valid" is reached faster (tests/schema/test_metacheck.py compares both on every schema of the corpus and
on generated ones; benchmarks/metaschema.py over JSONSchemaBench too).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urldefrag, urljoin

__all__ = ["metaschema_check"]

Check = Callable[[Any], bool]

# metaschema keywords that assert nothing about an instance
_ANNOTATIONS = frozenset({
    "$schema", "$id", "id", "$vocabulary", "$dynamicAnchor", "$recursiveAnchor", "$comment", "$defs",
    "definitions", "title", "description", "default", "deprecated", "examples",
})
_LEGACY_REF_DRAFTS = frozenset({"draft4", "draft6", "draft7"})


def _is_object(x: Any) -> bool:
    return isinstance(x, dict)


def _is_array(x: Any) -> bool:
    return isinstance(x, list)


def _is_string(x: Any) -> bool:
    return isinstance(x, str)


def _is_number(x: Any) -> bool:
    # ints and floats, never bools (as jsonschema); other numeric types answer False: the full check decides
    return type(x) is int or type(x) is float


# a float with an integral value is an integer from draft 6 on, not in draft 4: False, the full check decides
_TYPES: dict[str, Check] = {
    "object": _is_object,
    "array": _is_array,
    "string": _is_string,
    "number": _is_number,
    "integer": lambda x: type(x) is int,
    "boolean": lambda x: x is True or x is False,
    "null": lambda x: x is None,
}


class _Unsupported(Exception):
    """The metaschema uses something this module does not compile."""


class _Compiler:
    def __init__(self, cls: Any, format_checker: Any) -> None:
        from jsonschema_specifications import REGISTRY

        self._registry = REGISTRY
        self._checker = format_checker
        from jsonschema import validators

        drafts = {
            validators.Draft4Validator: "draft4",
            validators.Draft6Validator: "draft6",
            validators.Draft7Validator: "draft7",
            validators.Draft201909Validator: "draft2019-09",
            validators.Draft202012Validator: "draft2020-12",
        }
        if cls not in drafts:  # draft 3, or a metaschema of the caller's own
            raise _Unsupported(cls.__name__)
        self._legacy_ref = drafts[cls] in _LEGACY_REF_DRAFTS
        self._id = "id" if drafts[cls] == "draft4" else "$id"
        root = cls.META_SCHEMA
        self._root_uri = urldefrag(root[self._id])[0]
        self._memo: dict[tuple[str, str], list[Check]] = {}
        self.root = self._ref(self._root_uri, "")

    def _document(self, uri: str) -> Any:
        try:
            return self._registry.contents(uri)
        except Exception as exc:  # an unknown URI: jsonschema would fetch it, this module never does
            raise _Unsupported(uri) from exc

    def _ref(self, uri: str, pointer: str) -> Check:
        """The check for the metaschema node at ``uri#pointer``, compiled once (cycles go through a cell)."""
        key = (uri, pointer)
        cell = self._memo.get(key)
        if cell is None:
            cell = self._memo[key] = []
            node = self._document(uri)
            for part in pointer.split("/")[1:] if pointer else ():
                part = part.replace("~1", "/").replace("~0", "~")
                node = node[int(part)] if isinstance(node, list) else node[part]
            cell.append(self._compile(node, uri))
        if cell:
            return cell[0]
        return lambda x: cell[0](x)  # still being compiled: a node that refers to itself

    def _resolve(self, ref: str, base: str) -> Check:
        uri, fragment = urldefrag(urljoin(base, ref))
        if fragment and not fragment.startswith("/"):
            raise _Unsupported(f"anchor reference {ref!r}")
        return self._ref(uri or base, fragment)

    def _compile(self, node: Any, base: str) -> Check:
        if node is True:
            return lambda x: True
        if node is False:
            return lambda x: False
        if not isinstance(node, dict):
            raise _Unsupported(f"a metaschema node {node!r}")
        own = node.get(self._id)
        if isinstance(own, str):
            base = urldefrag(urljoin(base, own))[0]
        if "$ref" in node and self._legacy_ref:
            return self._resolve(node["$ref"], base)
        checks: list[Check] = []
        for keyword, value in node.items():
            if keyword in _ANNOTATIONS:
                continue
            checks.append(self._keyword(keyword, value, node, base))
        if not checks:
            return lambda x: True
        if len(checks) == 1:
            return checks[0]
        return lambda x: all(check(x) for check in checks)

    def _keyword(self, keyword: str, value: Any, node: dict[str, Any], base: str) -> Check:
        if keyword == "$ref":
            return self._resolve(value, base)
        if keyword in ("$dynamicRef", "$recursiveRef"):
            if value not in ("#meta", "#"):
                raise _Unsupported(f"{keyword} {value!r}")
            return self._ref(self._root_uri, "")
        if keyword == "type":
            names = [value] if isinstance(value, str) else list(value)
            if not all(name in _TYPES for name in names):
                raise _Unsupported(f"type {value!r}")
            tests = [_TYPES[name] for name in names]
            return lambda x: any(test(x) for test in tests)
        if keyword in ("allOf", "anyOf"):
            subs = [self._compile(sub, base) for sub in value]
            if keyword == "allOf":
                return lambda x: all(sub(x) for sub in subs)
            return lambda x: any(sub(x) for sub in subs)
        if keyword == "properties":
            return self._properties(value, node, base)
        if keyword == "additionalProperties":
            return self._additional(value, node, base)
        if keyword == "propertyNames":
            name_check = self._compile(value, base)
            return lambda x: not isinstance(x, dict) or all(name_check(k) for k in x)
        if keyword == "items":
            if not isinstance(value, (dict, bool)):
                raise _Unsupported("items as an array")
            item = self._compile(value, base)
            return lambda x: not isinstance(x, list) or all(item(v) for v in x)
        if keyword == "minItems":
            return lambda x: not isinstance(x, list) or len(x) >= value
        if keyword == "uniqueItems":
            if not value:
                return lambda x: True
            return lambda x: not isinstance(x, list) or _unique_items(x)
        if keyword in ("minimum", "exclusiveMinimum"):
            return self._minimum(keyword, value, node)
        if keyword == "enum":
            if not all(isinstance(v, str) for v in value):
                raise _Unsupported("enum of non-strings")
            allowed = frozenset(value)
            return lambda x: isinstance(x, str) and x in allowed
        if keyword == "format":
            conforms = self._checker.conforms  # as jsonschema's format keyword: every instance type asked
            return lambda x: conforms(x, value)
        if keyword == "pattern":
            search = re.compile(value).search
            return lambda x: not isinstance(x, str) or search(x) is not None
        if keyword == "dependencies":
            return self._dependencies(value, base)
        raise _Unsupported(f"keyword {keyword!r}")

    def _properties(self, value: dict[str, Any], node: dict[str, Any], base: str) -> Check:
        subs = {name: self._compile(sub, base) for name, sub in value.items()}

        def properties(x: Any) -> bool:
            if isinstance(x, dict):
                for name, v in x.items():
                    sub = subs.get(name)
                    if sub is not None and not sub(v):
                        return False
            return True

        return properties

    def _additional(self, value: Any, node: dict[str, Any], base: str) -> Check:
        if "patternProperties" in node:
            raise _Unsupported("additionalProperties beside patternProperties")
        declared = frozenset(node.get("properties", ()))
        sub = self._compile(value, base)
        return lambda x: not isinstance(x, dict) or all(sub(v) for k, v in x.items() if k not in declared)

    def _minimum(self, keyword: str, value: Any, node: dict[str, Any]) -> Check:
        if isinstance(value, bool):  # draft 4's boolean exclusiveMinimum modifies minimum
            if keyword == "exclusiveMinimum":
                return lambda x: True
            strict = node.get("exclusiveMinimum") is True
            return lambda x: not _is_number(x) or (x > value if strict else x >= value)
        if keyword == "minimum" and node.get("exclusiveMinimum") is True:
            return lambda x: not _is_number(x) or x > value
        if keyword == "exclusiveMinimum":
            return lambda x: not _is_number(x) or x > value
        return lambda x: not _is_number(x) or x >= value

    def _dependencies(self, value: dict[str, Any], base: str) -> Check:
        needs: dict[str, Check] = {}
        for name, dependency in value.items():
            if isinstance(dependency, list):
                needs[name] = _requires(tuple(dependency))
            else:
                needs[name] = self._compile(dependency, base)
        return lambda x: not isinstance(x, dict) or all(need(x) for name, need in needs.items() if name in x)


def _unique_items(items: list[Any]) -> bool:
    """``uniqueItems`` as jsonschema reads it: ``True`` and ``1`` differ, ``1`` and ``1.0`` do not, arrays and
    objects compare member by member. A value of a type JSON has no name for answers ``False`` (the full
    check decides)."""
    seen = set()
    for v in items:
        key = _equality_key(v)
        if key is None or key in seen:
            return False
        seen.add(key)
    return True


def _equality_key(v: Any) -> Any:
    """A hashable key equal for two JSON values exactly when jsonschema's ``equal`` says they are."""
    if v is True or v is False:
        return ("b", v)
    if v is None:
        return ("z",)
    if type(v) is str:
        return ("s", v)
    if type(v) is int or type(v) is float:
        return ("n", v)  # 1 == 1.0 and they hash alike, as jsonschema's equality says
    if type(v) is list:
        keys = tuple(_equality_key(x) for x in v)
        return None if None in keys else ("l", keys)
    if type(v) is dict:
        pairs = frozenset((k, _equality_key(x)) for k, x in v.items())
        return None if any(key is None for _, key in pairs) else ("d", pairs)
    return None


def _requires(names: tuple[str, ...]) -> Check:
    return lambda x: all(name in x for name in names)


_CACHE: dict[Any, Check | None] = {}


def metaschema_check(cls: Any, format_checker: Any) -> Check | None:
    """The compiled metaschema of jsonschema validator class ``cls``, or ``None`` where it cannot be compiled.

    ``check(schema)`` is ``True`` only when ``cls.check_schema(schema, format_checker=format_checker)`` would
    accept ``schema``; ``False`` means "not decided here": run the full check. Compiled once per class and
    checker.
    """
    key = (cls, format_checker)
    if key not in _CACHE:
        try:
            root = _Compiler(cls, format_checker).root
        except _Unsupported:
            _CACHE[key] = None
        else:
            _CACHE[key] = lambda schema: _decided(root, schema)
    return _CACHE[key]


def _decided(root: Check, schema: Any) -> bool:
    try:
        return root(schema)
    except RecursionError:  # a schema nested deeper than the closures can follow: the full check decides
        return False
