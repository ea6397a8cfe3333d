"""No import cycle among the library's modules (issue 44 item 5), read from the source with ``ast``.

The rule: every import of one library module by another is an edge of the module graph, whether
it sits at module level or inside a function (a lazy import still couples the two modules, so it
may not close a cycle either). Only imports under ``if TYPE_CHECKING:`` are left out: they never
run. Relative imports are resolved against the importing module; ``from pkg import name`` is an
edge to ``pkg.name`` when that is a module, else to ``pkg``; importing ``a.b.c`` also runs
``a/__init__`` and ``a.b/__init__``, but those package edges are not counted (a package's
``__init__`` importing its own submodules would otherwise make every package a cycle). Each
strongly connected component with more than one module is a cycle, found by Tarjan's algorithm.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGES = Path(__file__).parents[1] / "packages"


def library_modules() -> dict[str, Path]:
    """``{dotted module name: path}`` of every library module under ``packages/*/src``."""
    found: dict[str, Path] = {}
    for src in sorted(PACKAGES.glob("**/src")):
        if "node_modules" in src.parts or not src.is_dir():
            continue
        for path in sorted(src.rglob("*.py")):
            parts = path.relative_to(src).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts:
                found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement in ``tree``, at any depth, except the body of ``if TYPE_CHECKING:``."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The library modules that ``module`` (at ``path``) imports, as dotted names."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [
                f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in modules else stem
                for alias in node.names
            ]
        for target in targets:
            while target and target not in modules:  # `import a.b.X` where X is not a module
                target = target.rpartition(".")[0]
            if target and target != module:
                out.add(target)
    return out


def import_graph() -> dict[str, set[str]]:
    """``{module: modules it imports}`` over every library module."""
    modules = library_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one node, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def describe(component: list[str], graph: dict[str, set[str]]) -> str:
    """One line per cycle: its modules and the edges among them."""
    members = set(component)
    edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a] & members)]
    return f"{len(component)} modules: " + "; ".join(edges)


def test_cycle_finder_finds_a_cycle_and_ignores_a_chain() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_import_resolution(tmp_path: Path) -> None:
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import b\n"
        "from .c import thing\n"
        "if TYPE_CHECKING:\n    from p import d\n"
        "def f():\n    import p.e\n"
    )
    for name in "bcde":
        (pkg / f"{name}.py").write_text("")
    modules = {"p": pkg / "__init__.py", **{f"p.{n}": pkg / f"{n}.py" for n in "abcde"}}
    assert imports_of("p.a", pkg / "a.py", modules) == {"p.b", "p.c", "p.e"}


def test_no_import_cycle_among_library_modules() -> None:
    graph = import_graph()
    assert len(graph) > 100  # the walk found the library
    found = [describe(c, graph) for c in cycles(graph)]
    assert found == [], f"{len(found)} import cycles:\n" + "\n".join(found)
