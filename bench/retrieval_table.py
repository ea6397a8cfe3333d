"""Side-by-side table of the two arms of bench/retrieval.sh: exact match and edit similarity per
split (all steps and non-empty real output), for the model without and with retrieval and for
the baselines (copy-previous, empty, nearest; scored in the "off" arm's eval, the same
transitions as the "on" arm's).

    uv run python bench/retrieval_table.py runs/retrieval/off runs/retrieval/on
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SPLITS = ("in-distribution", "out-of-distribution", "realistic", "handwritten")
BASELINES = ("copy-previous", "empty", "nearest")


def _cell(table: dict, model: str, split: str, metric: str) -> str:
    score = table.get(model, {}).get(split, {}).get(metric)
    return "–" if score is None else f"{score['mean']:.3f}"


def rows(off: dict, on: dict, key: str) -> list[str]:
    """Markdown rows of ``key`` (``by_split`` or ``by_split_nonempty``), one per split and metric."""
    out = []
    for split in SPLITS:
        n = off["splits"].get(split, {}).get("transitions" if key == "by_split" else "nonempty")
        for metric in ("exact_match", "edit_similarity"):
            cells = [_cell(off[key], "model", split, metric), _cell(on[key], "model", split, metric)]
            cells += [_cell(off[key], b, split, metric) for b in BASELINES]
            out.append(f"| {split} (n={n}) | {metric} | " + " | ".join(cells) + " |")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    off, on = (json.loads((Path(d) / "metrics.json").read_text()) for d in argv[1:])
    head = ("| split | metric | model, no retrieval | model, retrieval | "
            + " | ".join(BASELINES) + " |")
    sep = "|" + " --- |" * (4 + len(BASELINES))
    for title, key in (("all steps", "by_split"), ("non-empty real output", "by_split_nonempty")):
        print(f"\n{title}\n\n{head}\n{sep}")
        print("\n".join(rows(off, on, key)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
