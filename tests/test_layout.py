"""The results layout: bench/ holds benchmarks with their current figures, the dated history
lives in docs/, and library text cites papers, specs, upstream files and bench scripts, never a
dated log entry ("session N")."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
SESSION = re.compile(r"\bsessions? \d+", re.IGNORECASE)


def test_no_library_text_cites_a_dated_log_entry() -> None:
    found = []
    for path in (ROOT / "packages").rglob("*"):
        if path.suffix in {".py", ".md", ".toml"} and path.is_file():
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if SESSION.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []


def test_bench_readme_lists_every_benchmark_with_a_command() -> None:
    readme = (ROOT / "bench" / "README.md").read_text()
    assert not SESSION.search(readme), "bench/README.md gives current figures; history: docs/"
    for script in sorted((ROOT / "bench").glob("*.py")):
        assert f"bench/{script.name}" in readme or f"`{script.name}`" in readme, script.name
    assert (ROOT / "docs" / "bench-history.md").is_file()
    assert not (ROOT / "bench" / "recipe_sweep").exists()  # an experiment: experiments/
