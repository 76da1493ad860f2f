"""Schema evaluations: one ``Ev`` per (subschema, JSON value) pair, alive while the value streams.

Theory of operation. When a value starts, the engine spawns an ``Ev`` for every schema that applies to it
(from the parent's ``properties``/``items``/... or the root), and expands in-place applicators (allOf, anyOf,
oneOf, not, if/then/else, $ref, $dynamicRef, dependentSchemas) into child ``Ev``s on the same value. Each
``Ev`` gets the value's events and *dies* the moment its schema can no longer hold for any completion of the
text: a wrong type at the first character, a string prefix that no enum member/pattern/maxLength admits, a
number that can only move away from its bounds, an item or key that must not exist. A death propagates up:
to an in-place parent (allOf dies, anyOf dies when its last alternative dies, ``not`` never dies early, ...)
and to the parent value's ``Ev`` (a property that fails kills the object's schema). The root dying is the
rejection. What a prefix cannot decide (required, minItems, uniqueItems, oneOf exclusivity, not, minLength,
multipleOf, format, unevaluated*) is checked in ``finish`` when the value closes, children before parents.

Deaths are sound (a dead ``Ev`` fails for every completion) but not complete (an allOf of individually
possible schemas may be jointly impossible): rejection is never early, occasionally later than ideal.
if/then/else keeps both outcomes (if holds and then holds; if fails and else holds) alive until each is
impossible: only a dead ``if`` prunes the first, and an ``if`` still alive never counts as decided. A schema
doomed by a kid that died earlier (a branch, a speculative dependentSchemas kid) is rejected at the offset
where that became certain, not where the kid died (``die`` re-stamps the violation).

Cost: O(1) amortised work per event per live ``Ev``; the number of ``Ev``s per value is bounded at compile
time (``max_inplace_expansion``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._schema._node import FALSE_NODE, KIND_BITS, TRUE_NODE, Node, Role
from .._schema._values import describe, json_unique
from ._checks import _choices_text, begin_error, final_error, scalar_error
from ._prefix import choice_death, choice_range_death, pattern_death, pattern_range_death, range_text
from ._types import Violation

if TYPE_CHECKING:
    from ._context import EvalContext
    from ._frame import Frame

__all__ = ["Ev"]


def _kind_word(kind: str) -> str:
    return {"true": "boolean", "false": "boolean"}.get(kind, kind)


class Ev:
    """One schema applied to one value (see the module docstring)."""

    __slots__ = (
        "ann",
        "bad",
        "collect",
        "count",
        "dead",
        "err",
        "frame",
        "key",
        "kids",
        "node",
        "role",
        "scope",
        "up",
    )

    def __init__(self, node: Node, up: Ev | None, role: int, key: Any, frame: Frame) -> None:
        self.node = node
        self.up = up
        self.role = role
        self.key = key
        self.frame = frame
        self.dead = False
        self.kids: list[Ev] | None = None
        self.collect = False
        self.scope: tuple[str, ...] | None = None
        self.count = 0
        self.ann: Any = None
        self.bad: set[Any] | None = None
        self.err: Any = None

    def __repr__(self) -> str:
        return f"<Ev {self.node.loc} role={self.role} dead={self.dead}>"

    # -- death -----------------------------------------------------------------------------------------------

    def fail(self, ctx: EvalContext, keyword: str, detail: str) -> None:
        self.die(ctx.violation(self.frame, keyword, detail), ctx)

    def die(self, viol: Any, ctx: EvalContext) -> None:
        if self.dead:
            return
        if viol.offset != ctx.off:
            # A kid that died earlier (a branch, a speculative dependentSchemas kid) dooms this schema only
            # now: the text became impossible here, not where that kid died.
            viol = Violation(ctx.off, viol.path, viol.message, viol.keyword)
        self.dead = True
        self.err = viol
        up = self.up
        if up is None:
            ctx.reject(viol)
        elif not up.dead:
            up.kid_failed(self, viol, ctx)

    def kid_failed(self, kid: Ev, viol: Any, ctx: EvalContext) -> None:
        role = kid.role
        if role == Role.UNEVAL:
            if self.bad is None:
                self.bad = set()
            self.bad.add(kid.key)
        elif role == Role.CONTAINS or role == Role.NOT:
            return
        elif role == Role.ANYOF or role == Role.ONEOF:
            kids = self.kids
            assert kids is not None
            positions = self.node.any_pos if role == Role.ANYOF else self.node.one_pos
            if all(kids[p].dead for p in positions):
                name = "anyOf" if role == Role.ANYOF else "oneOf"
                reasons = "; ".join(ctx.short(kids[p].err) for p in positions[:4])
                self.fail(ctx, name, f"matches none of the {name} alternatives ({reasons})")
        elif role == Role.IF or role == Role.THEN or role == Role.ELSE:
            self._check_if(kid, ctx)
        elif role == Role.DEP:
            frame = self.frame
            if frame.kind == "object" and (kid.key in frame.value or kid.key == frame.cur_key):
                self.die(viol, ctx)
        else:  # CHILD, NAMES, KEYNAME, ALLOF, REF, DYN
            self.die(viol, ctx)

    def _check_if(self, kid: Ev, ctx: EvalContext) -> None:
        """Die when both outcomes of if/then/else are impossible for every completion of the value.

        Outcome "if holds" (then applies) is gone once the ``if`` evaluation or the ``then`` one has died;
        outcome "if fails" (else applies) is gone once ``else`` has died or when ``if`` holds for every value
        (``if: {}``/``true``). A dead ``if`` is sound (it fails for every completion), so it prunes the first
        outcome; an ``if`` still alive prunes nothing, however the prefix looks.
        """
        node = self.node
        kids = self.kids
        assert kids is not None
        if_ev = kids[node.if_pos]
        then_ev = kids[node.then_pos] if node.then_pos >= 0 else None
        else_ev = kids[node.else_pos] if node.else_pos >= 0 else None
        holds_gone = if_ev.dead or (then_ev is not None and then_ev.dead)
        # the if cannot fail when it holds for every value of this kind ({"type": "number"} for a number)
        fails_gone = (else_ev is not None and else_ev.dead) or bool(
            if_ev.node.holds_for & KIND_BITS[self.frame.kind]
        )
        if not (holds_gone and fails_gone):
            return
        if if_ev.dead:
            assert else_ev is not None
            self.die(else_ev.err, ctx)
        elif else_ev is None or not else_ev.dead:
            assert then_ev is not None
            self.die(then_ev.err, ctx)
        else:  # the condition is undecided and both branches have failed
            assert then_ev is not None
            self.fail(
                ctx,
                kid.err.keyword,
                f"matches neither branch of if/then/else (then: {ctx.short(then_ev.err)}; "
                f"else: {ctx.short(else_ev.err)})",
            )

    # -- start -----------------------------------------------------------------------------------------------

    def begin(self, kind: str, ctx: EvalContext) -> None:
        node = self.node
        err = begin_error(node, kind)
        if err is not None:
            self.fail(ctx, *err)
        elif node.not_pos >= 0 and node.inplace[node.not_pos][1].holds_for & KIND_BITS[kind]:
            what = "value" if node.inplace[node.not_pos][1].always is True else _kind_word(kind)
            self.fail(ctx, "not", f"no {what} is allowed here (its 'not' schema accepts every {what})")

    # -- string prefix checks --------------------------------------------------------------------------------

    def str_death(
        self, prev: str, text: str, prev_len: int, tlimit: int, ctx: EvalContext
    ) -> tuple[int, str, str]:
        """(k, keyword, detail): the string dies at ``text[k-1]`` (k = 0: still possible).

        Text checks (enum/const prefixes, anchored patterns) look at ``text[:tlimit]`` only: past
        ``partial_pattern_max_length`` characters they are left to the closing quote, whatever the chunking.
        """
        node = self.node
        best = 0
        keyword = detail = ""
        limit = len(text)
        if node.max_len is not None and len(text) > node.max_len - prev_len:
            best = node.max_len - prev_len + 1
            limit = best - 1
            keyword, detail = "maxLength", f"the string is longer than the maxLength of {node.max_len}"
        limit = min(limit, tlimit)
        if limit > 0:
            for ch in node.choices:
                k = choice_death(ch.strings, prev, text, limit)
                if k:
                    best, limit = k, k - 1
                    keyword = ch.keyword
                    detail = f"{describe(prev + text[:k])} cannot become any of {_choices_text(ch.values)}"
            if node.pattern_early and limit > 0 and id(self) not in ctx.slow_patterns:
                kp = pattern_death(node.pattern, prev, text, limit, ctx)
                if kp:
                    best = k = kp
                    keyword = "pattern"
                    detail = (
                        f"{describe(prev + text[:k])} can no longer match the pattern {node.pattern_src!r}"
                    )
                elif kp is None:  # ran out of time: decide this pattern at the closing quote only
                    ctx.slow_patterns.add(id(self))
        return best, keyword, detail

    def range_death(
        self, prev: str, lo: int, hi: int, ctx: EvalContext, hint: int = -1, high: int = -1
    ) -> tuple[str, str] | None:
        """(keyword, detail) when the string ``prev`` cannot go on with any character whose first code unit is
        in ``lo..hi`` (the character an escape is adding: ``Engine.escape_start`` / ``escape_range``), else
        ``None``. ``maxLength`` is the backslash's own check; here, enum/const prefixes (exact) and anchored
        patterns (probed, small ranges only)."""
        node = self.node
        for ch in node.choices:
            if choice_range_death(ch.strings, prev, lo, hi, high):
                what = range_text(prev, lo, hi, high)
                return ch.keyword, f"{what} cannot become any of {_choices_text(ch.values)}"
        if node.pattern_early and high < 0 and id(self) not in ctx.slow_patterns:
            dead = pattern_range_death([node.pattern], prev, lo, hi, ctx, hint)
            if dead:
                what = range_text(prev, lo, hi)
                return "pattern", f"{what} can no longer match the pattern {node.pattern_src!r}"
            if dead is None:  # ran out of time: decide this pattern at the closing quote only
                ctx.slow_patterns.add(id(self))
        return None

    # -- object events ---------------------------------------------------------------------------------------

    def key_coming(self, frame: Frame, ctx: EvalContext) -> None:
        node = self.node
        keys = frame.value
        if node.max_props is not None and len(keys) + 1 > node.max_props:
            self.fail(ctx, "maxProperties", f"more than {node.max_props} properties (maxProperties)")
            return
        if node.choice_max_props is not None and len(keys) + 1 > node.choice_max_props:
            keyword = node.choices[0].keyword
            self.fail(ctx, keyword, f"more properties than any value the {keyword} allows")
            return
        if node.names_closed and not node.pattern_props and all(name in keys for name in node.names):
            allowed = ", ".join(repr(n) for n in node.names[:8]) or "none"
            self.fail(
                ctx,
                "additionalProperties",
                f"no further property is allowed (additionalProperties is false; allowed: {allowed}, "
                "already set)",
            )
            return
        if node.prop_names is FALSE_NODE:
            self.fail(ctx, "propertyNames", "no property is allowed (propertyNames is false)")

    def child_specs(
        self, key: str, frame: Frame, out: list[tuple[Ev, int, Node, Any]], ctx: EvalContext
    ) -> None:
        node = self.node
        if node.choice_props is not None:
            member = node.choice_props.get(key)
            keyword = node.choices[0].keyword
            if member is None:
                allowed = ", ".join(repr(k) for k in list(node.choice_props)[:8]) or "none"
                self.fail(ctx, keyword, f"property {key!r} is in no value the {keyword} allows ({allowed})")
                return
            out.append((self, Role.CHILD, member, key))
        matched = False
        sub = node.props.get(key)
        if sub is not None:
            matched = True
            if sub is FALSE_NODE:
                self.fail(ctx, "properties", f"property {key!r} is not allowed (its schema is false)")
                return
            if sub is not TRUE_NODE:
                out.append((self, Role.CHILD, sub, key))
        for rx, source, sub in node.pattern_props:
            try:
                hit = rx.search(key, timeout=ctx.regex_timeout) is not None
            except TimeoutError:
                ctx.reject(
                    ctx.violation(
                        frame, "limit", f"patternProperties regex {source!r} ran out of time on key {key!r}"
                    )
                )
            if hit:
                matched = True
                if sub is FALSE_NODE:
                    self.fail(
                        ctx, "patternProperties", f"property {key!r} is not allowed (matches {source!r})"
                    )
                    return
                if sub is not TRUE_NODE:
                    out.append((self, Role.CHILD, sub, key))
        if not matched and node.additional is not None:
            matched = True
            sub = node.additional
            if sub is FALSE_NODE:
                allowed = ", ".join(repr(n) for n in sorted(node.props)[:8])
                self.fail(
                    ctx,
                    "additionalProperties",
                    f"property {key!r} is not allowed (additionalProperties is false; allowed: "
                    f"{allowed or 'none'})",
                )
                return
            if sub is not TRUE_NODE:
                out.append((self, Role.CHILD, sub, key))
        if matched and self.collect:
            if self.ann is None:
                self.ann = set()
            self.ann.add(key)
        if node.uneval_props is not None:
            sub = node.uneval_props
            if sub is FALSE_NODE:
                if self.bad is None:
                    self.bad = set()
                self.bad.add(key)
            elif sub is not TRUE_NODE:
                out.append((self, Role.UNEVAL, sub, key))
        if node.dep_schemas and self.kids:
            for kid in self.kids:
                if kid.role == Role.DEP and kid.key == key and kid.dead:
                    self.die(kid.err, ctx)
                    return

    # -- array events ----------------------------------------------------------------------------------------

    def item_coming(self, index: int, out: list[tuple[Ev, int, Node, Any]], ctx: EvalContext) -> None:
        node = self.node
        if node.max_items is not None and index + 1 > node.max_items:
            self.fail(ctx, "maxItems", f"more than {node.max_items} items (maxItems)")
            return
        if node.choice_items is not None:
            keyword = node.choices[0].keyword
            if index >= len(node.choice_items):
                self.fail(ctx, keyword, f"more items than any value the {keyword} allows")
                return
            out.append((self, Role.CHILD, node.choice_items[index], index))
        legacy = node.draft != "draft2020-12"
        if index < len(node.prefix):
            sub: Node | None = node.prefix[index]
            keyword = "items" if legacy else "prefixItems"
        else:
            sub = node.items
            keyword = ("additionalItems" if node.prefix else "items") if legacy else "items"
        if sub is not None:
            if sub is FALSE_NODE:
                self.fail(ctx, keyword, f"at most {index} items are allowed here ({keyword} is false)")
                return
            if sub is not TRUE_NODE:
                out.append((self, Role.CHILD, sub, index))
            if self.collect:
                if self.ann is None:
                    self.ann = set()
                if self.ann is not True:
                    self.ann.add(index)
        contains = node.contains
        if contains is not None:
            if contains is TRUE_NODE:
                self._contains_hit(index, ctx)
            elif contains is not FALSE_NODE:
                out.append((self, Role.CONTAINS, contains, index))
        if node.uneval_items is not None:
            sub = node.uneval_items
            if sub is FALSE_NODE:
                if self.bad is None:
                    self.bad = set()
                self.bad.add(index)
            elif sub is not TRUE_NODE:
                out.append((self, Role.UNEVAL, sub, index))

    def _contains_hit(self, index: int, ctx: EvalContext) -> None:
        self.count += 1
        if self.collect:  # contains matches are annotations (2019-09+)
            if self.ann is None:
                self.ann = set()
            if self.ann is not True:
                self.ann.add(index)
        node = self.node
        if node.max_contains is not None and self.count > node.max_contains:
            self.fail(
                ctx, "maxContains", f"more than {node.max_contains} items match 'contains' (maxContains)"
            )

    def kid_ok(self, kid: Ev, ctx: EvalContext) -> None:
        if kid.role == Role.CONTAINS:
            self._contains_hit(kid.key, ctx)

    # -- close -----------------------------------------------------------------------------------------------

    def finish(self, kind: str, value: Any, ctx: EvalContext) -> None:
        node = self.node
        if node.always is None:
            if kind == "object":
                self._finish_object(value, ctx)
            elif kind == "array":
                self._finish_array(value, ctx)
            if node.has_final and not self.dead:
                err = (
                    scalar_error(node, kind, value, ctx)
                    if kind != "object" and kind != "array"
                    else final_error(node, value, ctx)
                )
                if err is not None:
                    self.fail(ctx, *err)
            if self.dead:
                return
            if self.kids is not None:
                self._combine(kind, value, ctx)
                if self.dead:
                    return
            if self.collect and (kind == "object" or kind == "array"):
                self._annotations(kind, value, ctx)
                if self.dead:
                    return
        if self.role == Role.CONTAINS or self.role == Role.UNEVAL:
            up = self.up
            if up is not None and not up.dead:
                up.kid_ok(self, ctx)

    def _finish_object(self, value: dict[str, Any], ctx: EvalContext) -> None:
        node = self.node
        missing = [r for r in node.required if r not in value]
        if missing:
            names = ", ".join(repr(m) for m in missing)
            self.fail(
                ctx, "required", f"missing required propert{'y' if len(missing) == 1 else 'ies'} {names}"
            )
            return
        if node.min_props is not None and len(value) < node.min_props:
            self.fail(ctx, "minProperties", f"fewer than {node.min_props} properties (minProperties)")
            return
        if node.max_props is not None and len(value) > node.max_props:
            self.fail(ctx, "maxProperties", f"more than {node.max_props} properties (maxProperties)")
            return
        for key, deps in node.dep_required:
            if key in value:
                absent = [d for d in deps if d not in value]
                if absent:
                    kw = (
                        "dependencies"
                        if node.draft in ("draft4", "draft6", "draft7")
                        else "dependentRequired"
                    )
                    self.fail(ctx, kw, f"property {key!r} requires {', '.join(repr(a) for a in absent)}")
                    return

    def _finish_array(self, value: list[Any], ctx: EvalContext) -> None:
        node = self.node
        n = len(value)
        if node.min_items is not None and n < node.min_items:
            self.fail(ctx, "minItems", f"fewer than {node.min_items} items (minItems)")
            return
        if node.max_items is not None and n > node.max_items:
            self.fail(ctx, "maxItems", f"more than {node.max_items} items (maxItems)")
            return
        if node.contains is not None:
            if node.contains_legacy:
                if self.count < 1:
                    self.fail(ctx, "contains", "no item matches the 'contains' schema")
                    return
            elif self.count < node.min_contains:
                kw = "contains" if node.min_contains == 1 else "minContains"
                self.fail(
                    ctx, kw, f"{self.count} items match 'contains', at least {node.min_contains} required"
                )
                return
        if node.unique:
            dup = json_unique(value)
            if dup is not None:
                self.fail(ctx, "uniqueItems", f"item {dup} repeats an earlier item (uniqueItems)")
                return

    def _combine(self, kind: str, value: Any, ctx: EvalContext) -> None:
        node = self.node
        kids = self.kids
        assert kids is not None
        for kid in kids:
            if kid.dead and kid.role in (Role.ALLOF, Role.REF, Role.DYN):
                self.die(kid.err, ctx)
                return
        if node.any_pos and all(kids[p].dead for p in node.any_pos):
            self.kid_failed(kids[node.any_pos[0]], kids[node.any_pos[0]].err, ctx)
            return
        if node.one_pos:
            alive = [i for i, p in enumerate(node.one_pos) if not kids[p].dead]
            if not alive:
                self.kid_failed(kids[node.one_pos[0]], kids[node.one_pos[0]].err, ctx)
                return
            if len(alive) > 1:
                self.fail(
                    ctx,
                    "oneOf",
                    f"{describe(value)} matches more than one oneOf alternative ({alive[0]} and {alive[1]})",
                )
                return
        if node.not_pos >= 0 and not kids[node.not_pos].dead:
            self.fail(ctx, "not", f"{describe(value)} must not match the schema under 'not'")
            return
        if node.if_pos >= 0:
            branch = node.then_pos if not kids[node.if_pos].dead else node.else_pos
            if branch >= 0 and kids[branch].dead:
                self.die(kids[branch].err, ctx)
                return
        if node.dep_schemas and kind == "object":
            for kid in kids:
                if kid.role == Role.DEP and kid.dead and kid.key in value:
                    self.die(kid.err, ctx)
                    return

    def _annotations(self, kind: str, value: Any, ctx: EvalContext) -> None:
        """Merge evaluated keys/indices from valid in-place children; enforce unevaluated*."""
        node = self.node
        ann = self.ann if self.ann is not None else set()
        kids = self.kids
        if kids is not None:
            if_ok = node.if_pos >= 0 and not kids[node.if_pos].dead
            for kid in kids:
                if kid.dead or kid.ann is None or kid.role == Role.NOT:
                    continue
                role = kid.role
                if role == Role.THEN and not if_ok:
                    continue
                if role == Role.ELSE and if_ok:
                    continue
                if role == Role.DEP and (kind != "object" or kid.key not in value):
                    continue
                ann = True if kid.ann is True or ann is True else ann | kid.ann
        if kind == "object":
            if node.uneval_props is not None:
                bad = self.bad or set()
                if ann is not True:
                    failing = [k for k in value if k not in ann and k in bad]
                    if failing:
                        self.fail(
                            ctx,
                            "unevaluatedProperties",
                            f"unevaluated propert{'y' if len(failing) == 1 else 'ies'} "
                            f"{', '.join(repr(k) for k in failing[:5])} not allowed",
                        )
                        return
                ann = True
        else:
            if node.uneval_items is not None:
                bad = self.bad or set()
                if ann is not True:
                    failing_i = [i for i in range(len(value)) if i not in ann and i in bad]
                    if failing_i:
                        self.fail(
                            ctx,
                            "unevaluatedItems",
                            f"unevaluated item{'s' if len(failing_i) > 1 else ''} "
                            f"{', '.join(map(str, failing_i[:5]))} not allowed",
                        )
                        return
                ann = True
        self.ann = ann
