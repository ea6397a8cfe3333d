"""Table and plot of a bench/simrl.py result: markdown tables on stdout (for bench/README.md)
and bench/simrl.png, real success against agent training steps for each arm.

    uv run python bench/simrl_report.py runs/simrl/result.json [--png bench/simrl.png]
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TITLES = {"mcp": "mcp notes: lookup + create",
          "terminal": "terminal: create, delete, inspect, navigate"}
Z95 = 1.959963984540054  # standard normal quantile of 0.975


def wilson(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of a proportion ``p`` over ``n`` trials (Wilson 1927, JASA
    22(158); Brown, Cai & DasGupta 2001 recommend it for small ``n``)."""
    if n < 1:
        return 0.0, 1.0
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def fmt(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def tables(r: dict[str, Any]) -> str:
    """The arms table and the reward-source table, in markdown."""
    n = r["args"]["eval_tasks"]
    lines = [
        "| arm | agent steps | real success, held-out (95% CI) | train s | env steps/s in rollouts "
        "| real env steps in training | sim success | its real replay | sim successes refuted "
        "| training: rewarded successes refuted |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, arm in r["arms"].items():
        last = arm["points"][-1]
        lo, hi = wilson(last["real_success"], n)
        gap, train = arm.get("gap"), arm.get("train_gap")
        source = arm.get("source", "agree" if "agree" in name else "footer")
        sim = gap["sources"][source] if gap else None
        rewarded = train.get("rewarded") if train else None
        lines.append(
            f"| {name} | {last['steps']} | {last['real_success']:.3f} [{lo:.2f}, {hi:.2f}] "
            f"| {fmt(last.get('train_s'), 0)} | {fmt(last.get('env_steps_per_s'), 1)} "
            f"| {last.get('real_steps', '-')} "
            f"| {fmt(sim and sim['sim_success'])} | {fmt(gap and gap['real_success'])} "
            f"| {fmt(sim and sim['refuted'])} | {fmt(rewarded and rewarded['refuted'])} |"
        )
    f = r["fidelity"]
    lines += [
        "",
        f"World model on the held-out real episodes' actions ({f['steps']} steps): parse rate "
        f"{f['parse_rate']:.3f}, exact observation {f['exact']:.3f}, real success {f['real_success']:.3f}.",
        "",
        "| reward source | where | precision of success | recall of success | tp / fp / fn / tn "
        "| cannot tell |",
        "|---|---|---|---|---|---|",
    ]
    rows = [("expert + random actions (recorded real outcome)", f["sources"])]
    for name, arm in r["arms"].items():
        if arm.get("gap"):
            rows.append((f"{name}: greedy policy in the simulator (real replay)", arm["gap"]["sources"]))
        if arm.get("train_gap"):
            train = arm["train_gap"]
            sources = {**train["sources"], **({"rewarded": train["rewarded"]} if "rewarded" in train else {})}
            rows.append((f"{name}: last training episodes (real replay)", sources))
    for where, sources in rows:
        for source, s in sources.items():
            lines.append(f"| {source} | {where} | {fmt(s['precision'])} | {fmt(s['recall'])} "
                         f"| {s['tp']} / {s['fp']} / {s['fn']} / {s['tn']} | {fmt(s.get('undecided'))} |")  # fmt: skip
    if r.get("judge"):
        j = r["judge"]
        lines += ["", f"Judge: {j['endpoint']} (model {j['model']}): {j['requests']} requests, "
                      f"{j['yes']} yes, {j['no']} no, {j['cannot_tell']} cannot tell."]  # fmt: skip
    return "\n".join(lines)


def plot(r: dict[str, Any], png: Path) -> None:
    """Real success against agent training steps, one line per arm (small PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(5.2, 3.2), dpi=90)
    for name, arm in r["arms"].items():
        xs = [p["steps"] for p in arm["points"]]
        ys = [p["real_success"] for p in arm["points"]]
        ax.plot(xs, ys, marker="o", label=name)
    ax.set_xlabel("agent training steps (GRPO)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole optimizer steps
    ax.set_ylabel("real success, held-out tasks")
    ax.set_ylim(-0.02, 1.02)
    domain = r["args"].get("domain", "mcp")  # results written before --domain were mcp's
    title = TITLES.get(domain, domain)
    ax.set_title(f"{title} (n={r['args']['eval_tasks']})", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("result", help="result.json of bench/simrl.py")
    p.add_argument("--png", default=str(Path(__file__).parent / "simrl.png"))
    a = p.parse_args(argv)
    r = json.loads(Path(a.result).read_text())
    print(tables(r))
    plot(r, Path(a.png))
    print(f"plot -> {a.png}")


if __name__ == "__main__":
    main()
