"""The import rules of the design ("Who may import whom"), read from the source with ``ast``.

``core`` imports no other member and no torch; ``domains``, ``rewards`` and ``sim-runtime``
import only ``core`` (and themselves); ``trainers`` import ``core`` and ``sim-runtime``.
Anything else is found by name through the plugin manager. Every import counts, including
ones inside functions and ``importlib.import_module("agentworld....")`` with a literal name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGES = Path(__file__).parents[1] / "packages"


def members() -> dict[str, tuple[Path, tuple[str, ...], tuple[str, ...]]]:
    """``{member: (src dir, agentworld packages it may import, top-level modules it must not)}``."""
    out = {
        "core": (PACKAGES / "core" / "src", ("agentworld.core",), ("torch",)),
        "rewards": (PACKAGES / "rewards" / "src", ("agentworld.core", "agentworld.rewards"), ()),
        "sim-runtime": (PACKAGES / "sim-runtime" / "src", ("agentworld.core", "agentworld.sim"), ()),
        "trainers": (PACKAGES / "trainers" / "src",
                     ("agentworld.core", "agentworld.sim", "agentworld.trainers"), ()),
    }
    for domain in sorted((PACKAGES / "domains").iterdir()):
        if (domain / "src").is_dir():
            own = f"agentworld.domains.{domain.name}"
            out[f"domains/{domain.name}"] = (domain / "src", ("agentworld.core", own), ())
    return out


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, module)`` of every absolute import in ``tree``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def violations(member: str) -> list[str]:
    src, allowed, banned = members()[member]
    bad = []
    for path in sorted(src.rglob("*.py")):
        for line, module in imported_modules(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(PACKAGES)}:{line} imports {module}"
            first = module.split(".")[0]
            if first in banned:
                bad.append(f"{where} ({member} must not import {first})")
            elif first == "agentworld" and module != "agentworld" and not any(
                module == a or module.startswith(a + ".") for a in allowed
            ):
                bad.append(f"{where} ({member} may import only {', '.join(allowed)})")
    return bad


@pytest.mark.parametrize("member", sorted(members()))
def test_member_imports_only_what_the_design_allows(member: str) -> None:
    assert violations(member) == []


def test_every_member_is_checked() -> None:
    sources = {p.parent for p in PACKAGES.rglob("src/agentworld")}
    assert sources == {src for src, _, _ in members().values()}


def test_a_forbidden_import_is_caught(tmp_path: Path) -> None:
    code = "def f():\n    import torch\n    from agentworld.trainers import rl\n"
    modules = imported_modules(ast.parse(code))
    assert modules == [(2, "torch"), (3, "agentworld.trainers")]
    tree = ast.parse("import importlib\nimportlib.import_module('agentworld.sim.env')\n")
    assert (2, "agentworld.sim.env") in imported_modules(tree)
