"""Side-by-side table of the comparison arms: ``python summary.py RUNS_DIR ARM...``.

Reads ``RUNS_DIR/<arm>/metrics.json`` (written by the eval stage) and prints exact match with
its 95% confidence interval (Wilson score, as ``agentworld.core.evaluate`` computes it) in
distribution, out of distribution, on the realistic and hand-written splits where measured (issue
32), on non-empty real outputs of each, and on the in-episode consistency subset, for the trained model and the two baselines; plus training facts from each
stage's ``train_log.jsonl`` (optimizer steps, tokens, and the seconds on the run's budget clock).
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
    ("realistic", "by_split", "realistic"),
    ("realistic non-empty", "by_split_nonempty", "realistic"),
    ("handwritten", "by_split", "handwritten"),
    ("handwritten non-empty", "by_split_nonempty", "handwritten"),
]


def cell(stat: dict | None) -> str:
    if not stat:
        return "-"
    return f"{stat['mean']:.3f} [{stat['ci_low']:.2f}, {stat['ci_high']:.2f}] n={stat['n']}"


def last_record(path: Path) -> dict:
    """The last line of a ``train_log.jsonl`` (``{}`` when the stage did not run)."""
    if not path.is_file():
        return {}
    lines = path.read_text().strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def main() -> None:
    root, arms = Path(sys.argv[1]), sys.argv[2:]
    measured = set()
    for arm in arms:
        path = root / arm / "metrics.json"
        if path.is_file():
            by_split = json.loads(path.read_text()).get("by_split", {})
            measured |= {split for model in by_split.values() for split in model}
    subsets = [s for s in SUBSETS if s[2] in measured] or SUBSETS
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
        logs = [last_record(root / arm / "checkpoints" / stage / "train_log.jsonl") for stage in ("cpt", "sft")]
        steps = sum(r.get("step", 0) for r in logs)
        tokens = sum(r.get("tokens", 0) for r in logs)
        budget = sum(r.get("elapsed_s", 0.0) for r in logs)
        models = ["model"] + ([] if rows else ["empty", "copy-previous"])
        for model in models:
            name = arm if model == "model" else f"baseline {model}"
            cells = [cell(m[key].get(model, {}).get(split, {}).get("exact_match"))
                     for _, key, split in subsets]
            extra = (f"{params / 1e6:.1f}M params, {steps} steps, {tokens / 1e3:.0f}k tokens, "
                     f"{budget:.0f} budget-s, {timings.get('cpt', 0) + timings.get('sft', 0):.0f} wall-s"
                     if model == "model" and params else "")
            rows.append([name, *cells, extra])
    header = ["arm", *(label for label, _, _ in subsets), "facts"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
