"""The event handler that joins the push parser to the schema evaluations.

Theory of operation. ``Engine`` receives ``JsonPushParser`` events and keeps one ``Frame`` per open value (the
containers on the path from the root, plus the scalar being written). A frame holds the Python value being
built (so ``StreamValidator.value`` is free), the ``Ev`` list for that value, and, between a key (or comma)
and the next value, the *pending* schemas the next child must satisfy. String and number prefixes are checked
only against ``Ev``s that can die early (``str_early``/``num_early`` nodes), once per parser part, and a death
inside a part is located by binary search over that part (the checks are monotone in the prefix), so the
common path costs O(1) Python operations per token plus regex scans of the raw text.

``reject`` raises ``Rejected``; ``StreamValidator`` turns it into a sticky verdict.

Layout of the package: ``_parser`` (JSON syntax, events) -> ``_engine`` (this module: frames and which
schemas apply to which value) -> ``_eval`` (one ``Ev`` per schema and value: deaths, close-time checks) ->
``_prefix`` (string-prefix deaths, the allowed-key filter) and ``_checks`` (keyword checks on one value).
``_frame`` holds the per-value record, ``_context`` the protocol through which evaluations see the engine,
so nothing below the engine imports it.
"""

from __future__ import annotations

from typing import Any

from .._schema._limits import ValidationLimits
from .._schema._node import TRUE_NODE, CompiledSchema, Node, Role
from .._schema._values import parse_number
from ._checks import begin_error, number_prefix_error, scalar_error
from ._eval import Ev
from ._frame import EMPTY as _EMPTY
from ._frame import Frame
from ._frame import escape as _escape
from ._frame import release as _release
from ._parser import JsonHandlerBase
from ._prefix import RANGE_PROBE_BUDGET, KeyName
from ._types import Violation

__all__ = ["Engine", "Rejected"]

_LITERALS = {"true": True, "false": False, "null": None}
_NOTHING: Any = object()


class Rejected(Exception):
    """Internal: the root evaluation died; carries the violation."""

    def __init__(self, violation: Violation) -> None:
        super().__init__(violation.message)
        self.violation = violation


class Engine(JsonHandlerBase):
    """``JsonHandler`` implementation that evaluates the compiled schema as events arrive."""

    def __init__(self, compiled: CompiledSchema, limits: ValidationLimits, format_checker: Any) -> None:
        self.compiled = compiled
        self.format_checker = format_checker
        self.regex_timeout = limits.regex_timeout
        self.partial_max = limits.partial_pattern_max_length
        self.dynamic = compiled.uses_dynamic
        self.stack: list[Frame] = []
        self.top: Frame | None = None
        self.off = 0
        self.done = False
        self.result: Any = None
        # The scalar being written (no Frame unless a full Ev needs one).
        self.s_kind: str | None = None
        self.s_parent: Frame | None = None
        self.s_key: Any = None
        self.s_frame: Frame | None = None
        self.s_light: Any = _EMPTY
        self.s_parts: list[str] = []
        self.s_num = ""
        self.slow_patterns: set[int] = set()  # Evs whose partial pattern check ran out of time
        self.range_probes = RANGE_PROBE_BUDGET  # pattern probes left for escapes (``range_death``)
        self._root_specs: list[tuple[Ev | None, int, Node, Any]] = [(None, Role.ROOT, compiled.root, None)]

    # -- helpers ---------------------------------------------------------------------------------------------

    def violation(self, frame: Frame | None, keyword: str, detail: str) -> Violation:
        path = frame.path() if frame is not None else ""
        return Violation(self.off, path, f"{path or '(root)'}: {detail}", keyword)

    def reject(self, viol: Violation) -> None:
        raise Rejected(viol)

    @staticmethod
    def short(viol: Violation | None) -> str:
        if viol is None:
            return "?"
        text = viol.message
        return text if len(text) <= 120 else text[:117] + "..."

    def _spawn(
        self,
        node: Node,
        up: Ev | None,
        role: int,
        key: Any,
        frame: Frame,
        out: list[Any],
        scope: tuple[str, ...] | None,
        collect: bool,
    ) -> Ev:
        ev = Ev(node, up, role, key, frame)
        ev.collect = collect or node.needs_ann
        if self.dynamic and node.always is None:
            if not scope or scope[-1] != node.resource:
                scope = (*(scope or ()), node.resource)
            ev.scope = scope
        out.append(ev)
        if node.inplace:
            kids = []
            for r, sub, k in node.inplace:
                if r == Role.DYN and k is not None:
                    sub = self._dyn_target(k, scope, sub)
                kids.append(self._spawn(sub, ev, r, k, frame, out, scope, ev.collect))
            ev.kids = kids
        return ev

    def _dyn_target(self, name: str, scope: tuple[str, ...] | None, default: Node) -> Node:
        anchors = self.compiled.dynamic_anchors
        for uri in scope or ():
            found = anchors.get(uri)
            if found is not None and name in found:
                return found[name]
        return default

    def _push(self, f: Frame) -> None:
        self.stack.append(f)
        self.top = f

    def _pop(self) -> Frame:
        stack = self.stack
        f = stack.pop()
        self.top = stack[-1] if stack else None
        return f

    def _announce(self, f: Frame) -> None:
        """An item is coming at index ``f.count`` of ``f``: apply maxItems/items; collect its schemas."""
        specs: list[tuple[Ev | None, int, Node, Any]] = []
        index = f.count
        for ev in f.evs:
            if not ev.dead and ev.node.has_arr:
                ev.item_coming(index, specs, self)
        f.pending = specs
        f.announced = True

    def _end_container(self, f: Frame, kind: str) -> None:
        evs = f.evs
        value = f.value
        for i in range(len(evs) - 1, -1, -1):
            ev = evs[i]
            if not ev.dead:
                ev.finish(kind, value, self)
        if evs:
            _release(f)
        if f.parent is None:
            self.done = True
            self.result = value

    # -- parser events ---------------------------------------------------------------------------------------

    def value_start(self, kind: str, offset: int, whole: Any = _NOTHING) -> None:
        """A value starts. ``whole`` is the finished scalar when the parser already has all of it: light
        schemas it satisfies need no further work, and the ones it fails get a full ``Ev`` (exact offsets)."""
        self.off = offset
        parent = self.top
        key: Any
        if parent is None:
            specs = self._root_specs
            key = None
        elif parent.kind == "array":
            if not parent.announced:
                self._announce(parent)
            parent.announced = False
            key = parent.count
            parent.count += 1
            specs = parent.pending
            parent.pending = _EMPTY
        else:
            key = parent.cur_key
            specs = parent.pending
            parent.pending = _EMPTY
        if kind == "object" or kind == "array":
            self._start_container(kind, parent, key, specs)
            return
        # A scalar: simple schemas are checked inline ("light"); an Ev exists only if one fails.
        self.s_kind = kind
        self.s_parent = parent
        self.s_key = key
        self.s_frame = None
        if kind == "string":
            self.s_parts = []
        elif kind == "number":
            self.s_num = ""
        if not specs:
            self.s_light = _EMPTY
            return
        light = []
        f: Frame | None = None
        for spec in specs:
            pev, role, node, k = spec
            if pev is not None and pev.dead:
                continue
            if node.light and role <= Role.CHILD:
                if whole is not _NOTHING:
                    err = begin_error(node, kind)
                    if err is not None:
                        self._light_fail(spec, err)
                        continue
                    if not node.has_final or scalar_error(node, kind, whole, self) is None:
                        continue  # satisfied: nothing more to do
                elif not (kind == "string" and node.str_early) and not (kind == "number" and node.num_early):
                    err = begin_error(node, kind)
                    if err is not None:
                        self._light_fail(spec, err)
                    elif node.has_final:
                        light.append(spec)
                    continue
            if f is None:
                f = self.s_frame = Frame(kind, parent, key)
            self._spawn(node, pev, role, k, f, f.evs, pev.scope if pev is not None else None, False)
        self.s_light = light
        if f is not None:
            evs = f.evs
            for ev in evs:
                if not ev.dead:
                    ev.begin(kind, self)
            if kind == "string":
                early = [ev for ev in evs if not ev.dead and ev.node.str_early]
                f.early = early or None
            elif kind == "number":
                early = [ev for ev in evs if not ev.dead and ev.node.num_early]
                f.early = early or None

    def _start_container(self, kind: str, parent: Frame | None, key: Any, specs: Any) -> None:
        f = Frame(kind, parent, key)
        evs = f.evs
        for pev, role, node, k in specs:
            if pev is not None and pev.dead:
                continue
            self._spawn(node, pev, role, k, f, evs, pev.scope if pev is not None else None, False)
        value: Any
        if kind == "object":
            value = f.value = {}
        else:
            value = f.value = []
        if parent is not None:
            if parent.kind == "object":
                parent.value[key] = value
            else:
                parent.value.append(value)
        self.stack.append(f)
        self.top = f
        for ev in evs:
            if not ev.dead:
                ev.begin(kind, self)

    def _scalar_frame(self) -> Frame:
        f = self.s_frame
        if f is None:
            f = self.s_frame = Frame(self.s_kind or "string", self.s_parent, self.s_key)
        return f

    def _light_fail(self, spec: tuple[Ev | None, int, Node, Any], err: tuple[str, str]) -> None:
        pev, role, node, k = spec
        ev = Ev(node, pev, role, k, self._scalar_frame())
        ev.fail(self, *err)

    def _end_scalar(self, kind: str, value: Any) -> None:
        f = self.s_frame
        if f is not None:
            evs = f.evs
            for i in range(len(evs) - 1, -1, -1):
                ev = evs[i]
                if not ev.dead:
                    ev.finish(kind, value, self)
            _release(f)
        for spec in self.s_light:
            pev = spec[0]
            if pev is not None and pev.dead:
                continue
            err = scalar_error(spec[2], kind, value, self)
            if err is not None:
                self._light_fail(spec, err)
        self.s_kind = None
        parent = self.s_parent
        if parent is None:
            self.done = True
            self.result = value
        elif parent.kind == "object":
            parent.value[self.s_key] = value
        else:
            items = parent.value
            if len(items) > self.s_key:
                items[self.s_key] = value
            else:
                items.append(value)

    def string_part(self, text: str, offset: int) -> None:
        self.s_parts.append(text)
        f = self.s_frame
        if f is not None and f.early is not None:
            self._string_early(f, text, offset)

    def _string_early(self, f: Frame, text: str, offset: int) -> None:
        prev_len = f.slen
        new_len = prev_len + len(text)
        tlimit = min(len(text), self.partial_max - prev_len)  # characters eligible for text checks
        prev = f.sjoin
        deaths = []
        assert f.early is not None
        for ev in f.early:
            if ev.dead:
                continue
            k, keyword, detail = ev.str_death(prev, text, prev_len, tlimit, self)
            if k:
                deaths.append((k, keyword, detail, ev))
        f.slen = new_len
        if tlimit > 0:
            f.sjoin = prev + text[:tlimit]
        if deaths:
            deaths.sort(key=lambda d: d[0])
            for k, keyword, detail, ev in deaths:
                if not ev.dead:
                    self.off = offset + k - 1
                    ev.die(self.violation(ev.frame, keyword, detail), self)

    def _escape_frame(self) -> Frame | None:
        """The frame of the string or key an escape is being read in, when it has prefix checks."""
        if self.s_kind == "string":
            f = self.s_frame
        else:
            top = self.top
            f = top.kf if top is not None else None
        return None if f is None or f.early is None else f

    def escape_start(self, offset: int) -> bool:
        """A backslash in a string or key: a string already at its ``maxLength`` cannot take the character the
        escape will add, and one no member of an ``enum``/``const`` (or no allowed key name) continues by any
        character cannot either: it dies at the backslash rather than at the escape's last character."""
        f = self._escape_frame()
        if f is None or f.early is None:
            return False
        for ev in f.early:
            node = getattr(ev, "node", None)  # a KeyName filter has none
            if not ev.dead and node is not None and node.max_len is not None and f.slen >= node.max_len:
                self.off = offset
                ev.fail(self, "maxLength", f"the string is longer than the maxLength of {node.max_len}")
        if f.slen >= self.partial_max:  # past it, text checks wait for the closing quote (as _string_early)
            return False
        self._range_early(f, 0, 0xFFFF, offset)
        # the escape's hex digits, if any, narrow it further (escape_range) while a check is alive
        return any(not ev.dead for ev in f.early)

    def escape_range(self, lo: int, hi: int, offset: int, hint: int = -1, high: int = -1) -> None:
        """A ``\\u`` escape's hex digit narrowed the character it adds to code units ``lo..hi``: a string no
        such character continues dies at this digit (``range_death`` of each prefix check)."""
        f = self._escape_frame()
        if f is not None:
            self._range_early(f, lo, hi, offset, hint, high)

    def _range_early(self, f: Frame, lo: int, hi: int, offset: int, hint: int = -1, high: int = -1) -> None:
        if f.slen >= self.partial_max:  # past it, text checks wait for the closing quote (as _string_early)
            return
        assert f.early is not None
        for ev in f.early:
            if not ev.dead:
                found = ev.range_death(f.sjoin, lo, hi, self, hint, high)
                if found is not None:
                    self.off = offset
                    ev.die(self.violation(ev.frame, *found), self)

    def string_full(self, text: str, start: int, end: int) -> None:
        self.value_start("string", start, text)
        f = self.s_frame
        if f is not None and f.early is not None and text:
            self._string_early(f, text, start + 1)
        self.s_parts = [text]
        self.off = end
        self._end_scalar("string", text)

    def number_full(self, text: str, start: int, end: int) -> None:
        value = parse_number(text)
        self.value_start("number", start, value)
        self.s_num = text
        f = self.s_frame
        if f is not None and f.early is not None:
            self._number_early(f, text, start)
        self.off = end
        self._end_scalar("number", value)

    def key_full(self, text: str, start: int, end: int) -> None:
        f = self.top
        assert f is not None
        keys = f.value  # the object so far: every finished member (a duplicate can only follow one)
        for ev in f.evs:
            if ev.dead:
                continue
            node = ev.node
            if node.has_obj and (
                node.max_props is not None
                or node.prop_names is not None
                or (node.names_closed and (text not in node.props or text in keys))
                or (node.choice_props is not None and (text not in node.choice_props or text in keys))
            ):
                break  # needs the character-level path for an exact offset
        else:  # the key is acceptable to every closed object and nothing constrains names
            self.off = end
            if text in keys:
                self.reject(self.violation(f, "syntax", f"duplicate key {text!r}"))
            f.cur_key = text
            f.kf = None
            self._child_specs(f, text)
            return
        self.key_start(start)
        if text:
            self.key_part(text, start + 1)
        self.key_end(end)

    def string_end(self, offset: int) -> None:
        self.off = offset
        parts = self.s_parts
        self._end_scalar("string", parts[0] if len(parts) == 1 else "".join(parts))

    def number_part(self, text: str, start: int) -> None:
        self.s_num = text
        f = self.s_frame
        if f is not None and f.early is not None:
            self._number_early(f, text, start)

    def _number_early(self, f: Frame, text: str, start: int) -> None:
        early = f.early
        assert early is not None
        for k in range(f.nchecked + 1, len(text) + 1):
            prefix = text[:k]
            for ev in early:
                if not ev.dead:
                    err = number_prefix_error(ev.node, prefix)
                    if err is not None:
                        self.off = start + k - 1
                        ev.fail(self, *err)
        f.nchecked = len(text)

    def number_end(self, text: str, start: int, end: int) -> None:
        f = self.s_frame
        if f is not None and f.early is not None:
            self._number_early(f, text, start)
        self.off = end
        self._end_scalar("number", parse_number(text))

    def literal_end(self, offset: int) -> None:
        self.off = offset
        kind = self.s_kind
        assert kind is not None
        self._end_scalar(kind, _LITERALS[kind])

    def comma(self, offset: int) -> None:
        self.off = offset
        f = self.top
        assert f is not None
        if f.kind == "array":
            self._announce(f)
        else:
            for ev in f.evs:
                if not ev.dead and ev.node.has_obj:
                    ev.key_coming(f, self)

    def key_start(self, offset: int) -> None:
        self.off = offset
        f = self.top
        assert f is not None
        f.kparts = []
        f.kf = None
        if not f.evs:
            return
        if not f.value:
            for ev in f.evs:
                if not ev.dead and ev.node.has_obj:
                    ev.key_coming(f, self)
        kf: Frame | None = None
        for ev in f.evs:
            if ev.dead:
                continue
            node = ev.node
            if not node.has_obj:
                continue
            choice_keys = node.choice_props
            if (
                node.names_closed
                or choice_keys is not None
                or (node.prop_names is not None and node.prop_names is not TRUE_NODE)
            ):
                if kf is None:
                    kf = Frame("string", f, None)
                if node.names_closed:
                    kf.evs.append(KeyName(ev, [n for n in node.names if n not in f.value], f))
                if choice_keys is not None:
                    declared = tuple(choice_keys)  # sorted when derived
                    kf.evs.append(
                        KeyName(
                            ev,
                            [n for n in declared if n not in f.value],
                            f,
                            declared=declared,
                            keyword=node.choices[0].keyword,
                        )
                    )
                if node.prop_names is not None and node.prop_names is not TRUE_NODE:
                    first = len(kf.evs)
                    self._spawn(node.prop_names, ev, Role.NAMES, None, kf, kf.evs, ev.scope, False)
                    for kev in kf.evs[first:]:
                        if not kev.dead:
                            kev.begin("string", self)
        if kf is not None:
            early = [e for e in kf.evs if not e.dead and (isinstance(e, KeyName) or e.node.str_early)]
            kf.early = early or None
            f.kf = kf

    def key_part(self, text: str, offset: int) -> None:
        f = self.top
        assert f is not None
        f.kparts.append(text)
        kf = f.kf
        if kf is not None and kf.early is not None:
            self._string_early(kf, text, offset)

    def key_end(self, offset: int) -> None:
        self.off = offset
        f = self.top
        assert f is not None
        parts = f.kparts
        key = parts[0] if len(parts) == 1 else "".join(parts)
        if key in f.value:
            self.reject(self.violation(f, "syntax", f"duplicate key {key!r}"))
        f.cur_key = key
        kf = f.kf
        if kf is not None:
            kevs = kf.evs
            for i in range(len(kevs) - 1, -1, -1):
                kev = kevs[i]
                if kev.dead:
                    continue
                if isinstance(kev, KeyName):
                    kev.finish_key(key, self)
                else:
                    kev.finish("string", key, self)
            _release(kf)
            f.kf = None
        self._child_specs(f, key)

    def _child_specs(self, f: Frame, key: str) -> None:
        if f.evs:
            pending: list[tuple[Ev | None, int, Node, Any]] = []
            for ev in f.evs:
                if not ev.dead and ev.node.has_obj:
                    ev.child_specs(key, f, pending, self)
            f.pending = pending

    def object_end(self, offset: int) -> None:
        self.off = offset
        f = self._pop()
        self._end_container(f, "object")

    def array_end(self, offset: int) -> None:
        self.off = offset
        f = self._pop()
        self._end_container(f, "array")

    # -- progressive display ---------------------------------------------------------------------------------

    def current_path(self) -> str:
        """JSON pointer of the value being written (the scalar, else the innermost open container)."""
        if self.s_kind is not None:
            parent = self.s_parent
            if parent is None:
                return ""
            return f"{parent.path()}/{_escape(str(self.s_key))}"
        top = self.top
        return top.path() if top is not None else ""

    def partial_value(self) -> Any:
        """The value so far; an unfinished string shows its text so far, an unfinished number its digits."""
        kind = self.s_kind
        if not self.stack and kind is None:
            return self.result
        partial: Any = None
        have = False
        if kind == "string":
            partial, have = "".join(self.s_parts), True
        elif kind == "number":
            text = self.s_num.rstrip(".eE+-")
            if text and text != "-":
                partial, have = parse_number(text), True
        parent = self.s_parent if kind is not None else None
        if parent is None:
            if kind is not None:
                return partial if have else None
            return self.stack[0].value
        if have:
            if parent.kind == "object":
                parent.value[self.s_key] = partial
            else:
                items = parent.value
                if len(items) > self.s_key:
                    items[self.s_key] = partial
                else:
                    items.append(partial)
        return self.stack[0].value
