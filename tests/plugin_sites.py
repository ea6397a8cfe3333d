"""A folder holding plugin modules and a ``dist-info`` whose entry points register them in the
``agentworld`` group: what ``pip install`` of a third-party plugin leaves in site-packages, for
tests that load plugins through real entry points (put the folder on ``sys.path``)."""

from __future__ import annotations

from pathlib import Path


def plugin_site(root: Path, dist: str, modules: dict[str, str]) -> Path:
    """Write ``modules`` (module name -> source) and ``DIST-0.1.dist-info`` naming each as an
    ``agentworld`` entry point under ``root``; returns ``root``."""
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = ["[agentworld]"] + [f"{name} = {name}" for name in modules]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for name, source in modules.items():
        (root / f"{name}.py").write_text(source)
    return root
