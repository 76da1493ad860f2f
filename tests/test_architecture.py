"""The package's shape: no import cycle among toolguard's modules, and no module far over ~600 lines.

The import graph is read from the source (``ast``), not by importing: every ``import``/``from ... import``
statement of a toolguard module, at module level or inside a function, except those under ``if
TYPE_CHECKING:`` (types only, never executed). A cycle is reported with its members, so the fix is to move the
shared piece down (as ``GuardLimits`` lives in ``_verdict``, below both the Guard and the Policy).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "toolguard"

#: "~600 lines": the limit, with a little room so one docstring line does not fail the suite.
MAX_LINES = 620
#: Modules allowed past the limit, each for a reason that a later change removes.
EXEMPT: dict[str, int] = {}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The toolguard modules ``path`` imports (see the module docstring)."""
    me = _module(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()

    def resolve(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for stmt in child.orelse:
                    visit_one(stmt)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(resolve(a.name) for a in node.names if a.name.startswith("toolguard"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if not name.startswith("toolguard"):
                return
            subs = {f"{name}.{a.name}" for a in node.names} & modules
            found.update(subs or {resolve(name)})
        else:
            visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    found.discard(me)
    found.discard("")
    return found


def _graph() -> dict[str, set[str]]:
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {_module(p) for p in files}
    return {_module(p): _imports(p, modules) for p in files}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def test_the_walker_sees_a_cycle_when_there_is_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_walker_reads_relative_and_function_imports() -> None:
    graph = _graph()
    assert "toolguard._verdict" in graph["toolguard._policy"]  # a relative ``from ._verdict import``
    assert "toolguard._guard" in graph["toolguard._reask"]
    assert "toolguard._stream" in graph["toolguard._guard_state"]  # imported inside GuardState.__init__


def test_no_import_cycle_among_toolguard_modules() -> None:
    cycles = _cycles(_graph())
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_core_does_not_import_the_retry_flow() -> None:
    graph = _graph()
    core_modules = ("_guard", "_guard_state", "_verdict", "_events", "_release")
    for core in (f"toolguard.{name}" for name in core_modules):
        assert not graph[core] & {"toolguard._reask", "toolguard._policy"}, core


def test_no_module_is_far_over_600_lines() -> None:
    over = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        name = _module(path)
        if lines > EXEMPT.get(name, MAX_LINES):
            over[name] = lines
    assert over == {}, f"modules over {MAX_LINES} lines (split them, or justify an exemption): {over}"


def test_exemptions_are_not_stale() -> None:
    for name in EXEMPT:
        path = PACKAGE.parent / (name.replace(".", "/") + ".py")
        if path.exists():  # a module moved away needs no exemption either; drop the entry then
            lines = len(path.read_text(encoding="utf-8").splitlines())
            assert lines > MAX_LINES, f"{name} has {lines} lines now: drop its exemption"
