"""Terminal collection with and without torch imported in the collecting process, side by side.

    uv run python bench/collect_torch.py            # ~1 minute on 2 cores

Each arm runs in a fresh interpreter (``plain`` imports only the core and the terminal domain;
``torch`` first loads the ``sft`` trainer, as a pipeline's stage check does) and collects the
same 300 episodes with 2 workers; arms alternate, twice each. Printed: seconds per arm and the
ratio torch / plain. A process holding torch forks the sandboxes more slowly, which is why
``run_pipeline`` checks stages after collection (docs/bench-history.md, session 14).
"""

from __future__ import annotations

import subprocess
import sys

ARM = """
import sys, time
from agentworld.core import plugins
if sys.argv[1] == "torch":
    plugins.get_trainer("sft")  # what check_stages does: imports torch, transformers, accelerate
from agentworld.core.collect import collect
start = time.perf_counter()
collect(plugins.get_domain("terminal"), 300, policies={"scripted": 1.0, "random": 1.0}, seed=0,
        max_steps=12, workers=2)
print(time.perf_counter() - start)
"""


def main() -> None:
    times: dict[str, list[float]] = {"plain": [], "torch": []}
    for _ in range(2):
        for arm, values in times.items():
            out = subprocess.run([sys.executable, "-c", ARM, arm], capture_output=True, text=True,
                                 check=True)
            values.append(float(out.stdout.split()[-1]))
    for arm, values in times.items():
        print(f"{arm}: " + ", ".join(f"{v:.1f} s" for v in values))
    print(f"torch / plain: {sum(times['torch']) / sum(times['plain']):.2f}")


if __name__ == "__main__":
    main()
