"""Are the README's quickstart figures current? Compare them with a quickstart run's metrics.

    uv run agentworld quickstart                      # on a fresh clone, as the README says
    uv run python bench/quickstart_figures.py         # README.md vs runs/quickstart/metrics.json
    uv run python bench/quickstart_figures.py --metrics other/metrics.json --tolerance 0.02
    uv run agentworld quickstart --full --out runs/quickstart-full   # the full recipe
    uv run python bench/quickstart_figures.py --full --metrics runs/quickstart-full/metrics.json

The quickstart's training budgets are optimizer steps (`quickstart.toml`), so the same command
trains the same model on any machine with the same torch thread count, and its figures can be
checked rather than merely restated. This reads the README's first table whose header cell is
``exact match`` (with ``--full``: ``exact match, --full``; one column per evaluation split, e.g. ``in distribution``, ``out of
distribution``, ``realistic ...``; rows ``all steps``, ``non-empty real output``, ``in-episode
consistency``), finds each cell's figure in ``metrics.json`` (``by_split``,
``by_split_nonempty``, ``by_split_consistency``; the model's exact-match mean), prints both side
by side with their difference, and exits 1 when any differs by more than ``--tolerance``
(0.005 by default: the README rounds to 3 decimals; CPUs with other vector units can differ
slightly in floating point, so a run on another kind of CPU may need a looser tolerance).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROWS = {
    "all steps": "by_split",
    "non-empty real output": "by_split_nonempty",
    "in-episode consistency": "by_split_consistency",
}
FULL_HEADER = "exact match, --full"
_FIGURE = re.compile(r"^\s*\**(\d+\.\d+)")


def readme_table(text: str, header: str = "exact match") -> tuple[list[str], dict[str, list[str]]]:
    """The first markdown table whose first header cell is ``header``: its split column
    names (the columns after the first, up to a ``baseline`` column) and ``{row label: cells}``.

    Raises:
        ValueError: no such table in ``text``.
    """
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].replace("`", "") == header:
            splits = []
            for name in cells[1:]:
                if name.startswith("baseline"):
                    break
                splits.append(name)
            rows = {}
            for row in lines[i + 2:]:
                if not row.strip().startswith("|"):
                    break
                parts = [c.strip() for c in row.strip().strip("|").split("|")]
                rows[parts[0]] = parts[1:1 + len(splits)]
            return splits, rows
    raise ValueError(f"README has no table whose first header cell is {header!r}")


def split_key(column: str) -> str:
    """README column name -> metrics.json split name (``in distribution`` -> ``in-distribution``)."""
    return re.sub(r"\s+", "-", column.strip().lower())


def compare(readme: str, metrics: dict, tolerance: float, header: str = "exact match",
            ) -> list[tuple[str, str, float, float | None]]:
    """``(row, split, README figure, measured figure or None)`` for each figure of the table
    whose first header cell is ``header``."""
    splits, rows = readme_table(readme, header)
    out = []
    for label, cells in rows.items():
        table = ROWS.get(label)
        if table is None:
            continue
        for column, cell in zip(splits, cells):
            match = _FIGURE.match(cell)
            if match is None:
                continue
            split = split_key(column)
            measured = metrics.get(table, {}).get("model", {}).get(split, {}).get("exact_match")
            out.append((label, split, float(match.group(1)),
                        None if measured is None else float(measured["mean"])))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--readme", type=Path, default=Path("README.md"))
    p.add_argument("--metrics", type=Path, default=Path("runs/quickstart/metrics.json"))
    p.add_argument("--tolerance", type=float, default=0.005)
    p.add_argument("--full", action="store_true",
                   help="check the table of `agentworld quickstart --full` (header 'exact match, --full')")
    a = p.parse_args()
    for path in (a.readme, a.metrics):
        if not path.is_file():
            p.error(f"{path}: no such file (run `uv run agentworld quickstart` first for metrics)")
    rows = compare(a.readme.read_text(encoding="utf-8"), json.loads(a.metrics.read_text()),
                   a.tolerance, FULL_HEADER if a.full else "exact match")
    stale = 0
    print(f"{'row':<24} {'split':<22} {'README':>7} {'run':>7} {'diff':>7}")
    for label, split, stated, measured in rows:
        diff = None if measured is None else measured - stated
        bad = diff is None or abs(diff) > a.tolerance
        stale += bad
        shown = "missing" if measured is None else f"{measured:7.3f}"
        print(f"{label:<24} {split:<22} {stated:7.3f} {shown:>7} "
              f"{'' if diff is None else f'{diff:+7.3f}'}{'  <- stale' if bad else ''}")
    print(f"{len(rows) - stale} of {len(rows)} figures current (tolerance {a.tolerance})")
    return 1 if stale or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
