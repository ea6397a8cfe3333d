"""The import rules of the design ("Who may import whom"), read from the source with ``ast``.

``core`` (the kernel) imports no other member, no torch and no CLI, console or plotting library;
``app`` (the CLI, pipeline runner and reports) imports only ``core``; ``domains``, ``rewards``
and ``sim-runtime`` import only ``core`` (and themselves); ``trainers`` import ``core`` and
``sim-runtime``. Anything else is found by name through the plugin manager. Every import
counts, including ones inside functions and ``importlib.import_module("agentworld....")`` with
a literal name. The declared dependencies follow: a domain plugin depends on the kernel alone.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

PACKAGES = Path(__file__).parents[1] / "packages"
#: What the kernel must not import: torch, and the application's CLI, console and plot libraries.
KERNEL_BANNED = ("torch", "typer", "click", "rich", "matplotlib")
#: Distributions the kernel must not require (pyarrow and scipy are its optional extras).
KERNEL_NOT_REQUIRED = {"torch", "typer", "click", "rich", "matplotlib", "scipy", "pyarrow", "numpy"}
#: Domains built on another domain's real environment (declared, so nothing else slips in): the
#: swe domain runs its tools in the terminal domain's sandbox, the tty domain its pty.
BUILT_ON = {"swe": ("terminal",), "tty": ("terminal",)}


def members() -> dict[str, tuple[Path, tuple[str, ...], tuple[str, ...]]]:
    """``{member: (src dir, agentworld packages it may import, top-level modules it must not)}``."""
    out = {
        "core": (PACKAGES / "core" / "src", ("agentworld.core",), KERNEL_BANNED),
        "app": (PACKAGES / "app" / "src", ("agentworld.core", "agentworld.app"), ("torch",)),
        "rewards": (PACKAGES / "rewards" / "src", ("agentworld.core", "agentworld.rewards"), ()),
        "sim-runtime": (PACKAGES / "sim-runtime" / "src", ("agentworld.core", "agentworld.sim"), ()),
        "trainers": (PACKAGES / "trainers" / "src",
                     ("agentworld.core", "agentworld.sim", "agentworld.trainers"), ()),
    }
    for domain in sorted((PACKAGES / "domains").iterdir()):
        if (domain / "src").is_dir():
            own = f"agentworld.domains.{domain.name}"
            base = tuple(f"agentworld.domains.{b}" for b in BUILT_ON.get(domain.name, ()))
            out[f"domains/{domain.name}"] = (domain / "src", ("agentworld.core", own, *base), ())
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


def requirement_names(pyproject: Path) -> list[str]:
    """Distribution names of ``[project] dependencies`` (extras and versions dropped)."""
    deps = tomllib.loads(pyproject.read_text())["project"].get("dependencies", [])
    return [d.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip()
            for d in deps]


def test_kernel_requires_no_cli_plot_stats_or_parquet_library() -> None:
    names = set(requirement_names(PACKAGES / "core" / "pyproject.toml"))
    assert names & KERNEL_NOT_REQUIRED == set()
    assert names == {"pluggy", "pydantic", "fsspec"}


def test_domain_plugins_depend_on_the_kernel_alone() -> None:
    for pyproject in sorted((PACKAGES / "domains").glob("*/pyproject.toml")):
        ours = [n for n in requirement_names(pyproject) if n.startswith("agentworld")]
        base = [f"agentworld-domain-{b}" for b in BUILT_ON.get(pyproject.parent.name, ())]
        assert ours == ["agentworld-core", *base], f"{pyproject.relative_to(PACKAGES)}: {ours}"
