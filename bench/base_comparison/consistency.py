"""Exact match of one checkpoint on the in-episode consistency subset alone (greedy).

    uv run python bench/base_comparison/consistency.py CHECKPOINT EPISODES.jsonl [N=80]

Scores the first ``N`` transitions of ``EPISODES.jsonl`` that the terminal domain's
``consistency_turns`` selects (steps whose real output depends on what earlier steps of the same
episode wrote) with ``agentworld.core.evaluate``, so a comparison gets more of them than the
first transitions of a split hold (about one in six). Prints the mean with its 95% Wilson interval.
"""

from __future__ import annotations

import sys

from agentworld.core import plugins
from agentworld.core.evaluate import evaluate, transitions
from agentworld.core.io import read_episodes
from agentworld.sim.backends.hf import HFBackend


def main() -> None:
    checkpoint, data = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 80
    domain = plugins.get_domain("terminal")
    chosen = [t for t in transitions(read_episodes(data), domain) if t.consistency][:n]
    model = HFBackend().load(checkpoint, max_new_tokens=160)
    result = evaluate({"model": model}, chosen, {"exact_match": plugins.get_reward("exact_match")},
                      domain=domain)
    s = result.overall["model"]["exact_match"]
    print(f"consistency exact match {s.mean:.3f} [{s.ci_low:.3f}, {s.ci_high:.3f}] n={s.n}")


if __name__ == "__main__":
    main()
