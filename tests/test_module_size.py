"""Files small and single-purpose: no library module (``packages/*/src/**/*.py``) is longer than
:data:`MAX_LINES` lines (issue 44 item 5). A module that grows past it is split by role (records,
runner, command, ...), as ``core.rollout_types`` and ``core.episode_runner`` were."""

from __future__ import annotations

from pathlib import Path

PACKAGES = Path(__file__).parents[1] / "packages"
MAX_LINES = 400


def long_modules(root: Path, limit: int) -> list[str]:
    """``"path: N lines"`` of every ``src`` Python module under ``root`` longer than ``limit``."""
    found = []
    for path in sorted(root.glob("**/src/**/*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > limit:
            found.append(f"{path.relative_to(root)}: {n} lines")
    return found


def test_long_modules_finds_a_long_one(tmp_path: Path) -> None:
    (tmp_path / "m" / "src").mkdir(parents=True)
    (tmp_path / "m" / "src" / "long.py").write_text("x = 1\n" * 401)
    (tmp_path / "m" / "src" / "short.py").write_text("x = 1\n" * 400)
    assert long_modules(tmp_path, 400) == ["m/src/long.py: 401 lines"]


def test_no_library_module_exceeds_400_lines() -> None:
    assert len(list(PACKAGES.glob("**/src/**/*.py"))) > 100  # the walk found the library
    assert long_modules(PACKAGES, MAX_LINES) == []
