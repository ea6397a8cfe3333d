"""Side-by-side table of the comparison arms: ``python summary.py RUNS_DIR ARM...``.

Reads ``RUNS_DIR/<arm>/metrics.json`` (written by the eval stage) and prints exact match with
its 95% confidence interval (normal approximation, as in ``agentworld.core.evaluate``) in
distribution, out of distribution, on non-empty real outputs of each, and on the in-episode
consistency subset, for the trained model and the two baselines; plus training facts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SUBSETS = [
    ("ID", "by_split", "in-distribution"),
    ("ID non-empty", "by_split_nonempty", "in-distribution"),
    ("OOD", "by_split", "out-of-distribution"),
    ("OOD non-empty", "by_split_nonempty", "out-of-distribution"),
    ("consistency ID", "by_split_consistency", "in-distribution"),
    ("consistency OOD", "by_split_consistency", "out-of-distribution"),
]


def cell(stat: dict | None) -> str:
    if not stat:
        return "-"
    return f"{stat['mean']:.3f} [{stat['ci_low']:.2f}, {stat['ci_high']:.2f}] n={stat['n']}"


def main() -> None:
    root, arms = Path(sys.argv[1]), sys.argv[2:]
    rows = []
    for arm in arms:
        path = root / arm / "metrics.json"
        if not path.is_file():
            rows.append([arm, "(no metrics.json)"])
            continue
        m = json.loads(path.read_text())
        timings = m.get("extra", {}).get("timings_s", {})
        facts = m.get("extra", {}).get("facts", {})
        params = next((facts[s]["parameters"] for s in ("sft", "cpt") if s in facts), None)
        models = ["model"] + ([] if rows else ["empty", "copy-previous"])
        for model in models:
            name = arm if model == "model" else f"baseline {model}"
            cells = [cell(m[key].get(model, {}).get(split, {}).get("exact_match"))
                     for _, key, split in SUBSETS]
            extra = (f"{params / 1e6:.1f}M params, train {timings.get('cpt', 0) + timings.get('sft', 0):.0f} s"
                     if model == "model" and params else "")
            rows.append([name, *cells, extra])
    header = ["arm", *(label for label, _, _ in SUBSETS), "facts"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
