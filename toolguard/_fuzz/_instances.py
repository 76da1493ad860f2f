"""Instances of a schema for the fuzz targets, drawn from hypothesis-jsonschema with a seeded generator.

Theory of operation
-------------------
``instances(schema)`` is a hypothesis strategy; ``draw(rng, strategy)`` takes one value from it as a pure
function of a ``random.Random``, so a fuzz case stays reproducible from its seed. Leaves come from
hypothesis-jsonschema's ``from_schema`` (strings with patterns and formats, bounded and ``multipleOf``
numbers, booleans, nulls). What it cannot do is assembled here, from its leaves: objects (its object
generator calls a ``many()`` API that the pinned hypothesis removed) and arrays (their items may be
objects), unions and conditionals (an alternative is picked, then generated), and local ``$ref``s
including recursion (``from_schema`` refuses recursive references; they are followed ``_REF_DEPTH`` deep,
then ``null``). Values are *aimed* at the schema, not guaranteed valid (objects may carry extra keys):
callers label them with jsonschema.

Needs the ``fuzz`` extra (hypothesis, hypothesis-jsonschema), imported when a generator first runs. Cost per
value: a draw, plus hypothesis-jsonschema's canonicalisation of each leaf schema.
"""

from __future__ import annotations

import functools
import json
import random
from typing import Any

from ._jsongen import MAX_ITEMS, MAX_STRING, PROPERTY_NAMES

__all__ = ["draw", "gen_instance", "gen_value", "hypothesis_missing", "instances", "value_strategy"]


def hypothesis_missing() -> str | None:
    """Why instances cannot be drawn here (the ``fuzz`` extra is not installed), or ``None``."""
    try:
        import hypothesis  # noqa: F401
        import hypothesis_jsonschema  # noqa: F401
    except ImportError:
        return "hypothesis and hypothesis-jsonschema are not installed: pip install 'toolguard[fuzz]'"
    return None


_DRAW_ATTEMPTS = 4
_REF_DEPTH = 3


def draw(rng: random.Random, strategy: Any) -> Any:
    """One value from a hypothesis ``strategy``, a pure function of ``rng``'s state.

    Hypothesis has no public "draw with this seed": ``@given`` drives examples itself, and its first one is
    always the simplest. So this drives hypothesis' own engine object, a ``ConjectureData`` fed by a
    ``random.Random`` seeded from ``rng`` (what ``@given`` does for one example, without shrinking or the
    database), inside a ``BuildContext``. Draws that the strategy rejects (filters, unsatisfiable parts) are
    retried with new seeds; ``None`` when every attempt fails. Pinned with hypothesis in constraints.txt.
    """
    from hypothesis.control import BuildContext
    from hypothesis.errors import HypothesisException, StopTest
    from hypothesis.internal.conjecture.data import ConjectureData

    for _ in range(_DRAW_ATTEMPTS):
        data = ConjectureData(random=random.Random(rng.getrandbits(64)), prefix=(), max_choices=4000)
        try:
            with BuildContext(data, wrapped_test=lambda: None):
                return data.draw(strategy)
        except (StopTest, HypothesisException, RecursionError, ValueError, AttributeError):
            # AttributeError: hypothesis-jsonschema's object generator, reached through a leaf it rewrote
            continue
    return None


@functools.cache
def value_strategy() -> Any:
    """Any JSON value, keys from ``PROPERTY_NAMES`` (shared prefixes stress prefix decisions)."""
    from hypothesis import strategies as st

    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-(10**20), 10**20)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=MAX_STRING)
    )
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(PROPERTY_NAMES), inner, max_size=4)
        ),
        max_leaves=12,
    )


def gen_value(rng: random.Random) -> Any:
    """Any JSON value (schema-free), bounded in size."""
    return draw(rng, value_strategy())


def instances(schema: Any, root: Any = None, depth: int = 0) -> Any:
    """A hypothesis strategy of values aimed at ``schema`` (valid most of the time; callers label them).

    Leaves come from hypothesis-jsonschema's ``from_schema`` (strings with patterns and formats, bounded and
    ``multipleOf`` numbers, enums, arrays of leaves). Assembled here, because hypothesis-jsonschema cannot:
    objects (its object generator calls a ``many()`` API that hypothesis 6.170 removed), unions and
    conditionals (an alternative is picked, then generated), and local ``$ref`` including recursion, which
    ``from_schema`` refuses (followed to ``_REF_DEPTH``, then ``null``).
    """
    from hypothesis import strategies as st

    root = schema if root is None else root
    if not isinstance(schema, dict) or depth > 8:
        return value_strategy() if schema is not False else st.none()
    if "$ref" in schema and isinstance(schema["$ref"], str) and schema["$ref"].startswith("#"):
        if depth >= _REF_DEPTH:
            return st.none()
        return st.deferred(lambda: instances(_resolve(root, schema["$ref"]), root, depth + 1))
    if "not" in schema:  # what "not" excludes is anything: draw any value, keep the ones that fit
        import jsonschema

        check = jsonschema.validators.validator_for(root, default=jsonschema.Draft202012Validator)(root)
        return value_strategy().filter(lambda v: check.evolve(schema=schema).is_valid(v))
    if "const" in schema:
        return st.just(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return st.one_of([instances(branch, root, depth + 1) for branch in schema[key]])
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        return instances(schema["allOf"][0], root, depth + 1)
    if "if" in schema:
        branches = [schema[k] for k in ("then", "else") if k in schema] or [{}]
        return st.one_of([instances(b, root, depth + 1) for b in branches])
    types = schema.get("type")
    kinds = types if isinstance(types, list) else [types] if isinstance(types, str) else []
    if not kinds:
        if "properties" in schema:
            kinds = ["object"]
        elif "items" in schema or "prefixItems" in schema:
            kinds = ["array"]
        else:
            return value_strategy()
    options = []
    for kind in kinds:
        if kind == "object":
            options.append(_objects(schema, root, depth))
        elif kind == "array":
            options.append(_arrays(schema, root, depth))
        else:
            leaf = {k: v for k, v in schema.items() if k not in ("$defs", "definitions", "$schema", "type")}
            leaf["type"] = kind
            options.append(_leaf(json.dumps(_draft(root, leaf), sort_keys=True)))
    return st.one_of(options)


@functools.lru_cache(maxsize=4096)
def _leaf(canonical: str) -> Any:
    """``from_schema`` of a scalar schema, cached: canonicalising a schema is hypothesis-jsonschema's cost,
    and generated schemas repeat their leaves."""
    from hypothesis_jsonschema import from_schema

    try:
        return from_schema(json.loads(canonical))
    except Exception:  # a keyword hypothesis-jsonschema refuses: any value
        return value_strategy()


def _draft(root: Any, schema: dict[str, Any]) -> dict[str, Any]:
    if isinstance(root, dict) and "$schema" in root:
        return {**schema, "$schema": root["$schema"]}
    return schema


def _objects(schema: dict[str, Any], root: Any, depth: int) -> Any:
    from hypothesis import strategies as st

    found = schema.get("properties")
    props: dict[str, Any] = found if isinstance(found, dict) else {}
    required = [k for k in schema.get("required", []) if isinstance(k, str)]
    extra = schema.get("additionalProperties", True)
    base = st.fixed_dictionaries(
        {k: instances(props.get(k, {}), root, depth + 1) for k in dict.fromkeys(required)},
        optional={k: instances(v, root, depth + 1) for k, v in props.items() if k not in required},
    )
    if extra is False:
        return base
    more = st.dictionaries(
        st.sampled_from(("zz", "extra", "a", "x-a")), instances(extra, root, depth + 1), max_size=2
    )
    return st.tuples(base, more).map(lambda pair: {**pair[1], **pair[0]})


def _arrays(schema: dict[str, Any], root: Any, depth: int) -> Any:
    from hypothesis import strategies as st

    prefix = schema.get("prefixItems")
    items = schema.get("items", {})
    if isinstance(items, list):  # draft 7 tuple form
        prefix, items = items, schema.get("additionalItems", {})
    prefix = prefix if isinstance(prefix, list) else []
    lo = int(schema.get("minItems", 0)) if isinstance(schema.get("minItems"), int) else 0
    hi = int(schema.get("maxItems", MAX_ITEMS)) if isinstance(schema.get("maxItems"), int) else MAX_ITEMS
    head = st.tuples(*(instances(p, root, depth + 1) for p in prefix)).map(list)
    if items is False:
        return head
    tail = st.lists(
        instances(items, root, depth + 1),
        min_size=max(0, lo - len(prefix)),
        max_size=max(0, hi - len(prefix)),
    )
    return st.tuples(head, tail).map(lambda pair: pair[0] + pair[1])


def gen_instance(rng: random.Random, schema: Any, count: int | None = None) -> Any:
    """A value aimed at ``schema``, drawn from ``instances(schema)`` (``None`` when hypothesis finds none);
    with ``count``, a list of that many, sharing one strategy."""
    strategy = instances(schema)
    if count is None:
        return draw(rng, strategy)
    return [draw(rng, strategy) for _ in range(count)]


def _resolve(root: dict[str, Any], ref: str) -> Any:
    node: Any = root
    for part in ref.lstrip("#/").split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return {}
    return node
