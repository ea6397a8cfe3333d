"""Scores of a bench run: the judge's (AgentWorldBench's normalisation and averages) and rule
metrics beside them, as tables, ``scores.json``, ``results.md`` and a drift plot.

Judge (``eval.py score`` and the public README): a sample's score is the mean of its valid
dimensions, normalised ``(x - 1) / 4 * 100``; a domain's score is the mean over its judged
samples (failures excluded and counted); **Overall (macro)** is the mean of the domain scores
(the README's headline column) and **Overall (micro)** the mean over all judged samples (what
``eval.py`` prints as "Overall"). Per-dimension figures are the normalised means of each
dimension over the samples that have it.

Rules (no judge needed): exact match, edit similarity (normalised Levenshtein) and line F1 of
the extracted prediction against the reference without its marker
(:mod:`agentworld.rewards.rules`), the domain's own scorer where the domain has a real
environment here, and the format rate (GUI domains: exactly one closed block).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

from agentworld.core import plugins
from agentworld.core.answers import DOMAINS, extract_observation, format_ok
from agentworld.core.domain_base import domain_hooks
from agentworld.core.types import Observation
from agentworld.rewards.bench.data import Row
from agentworld.rewards.bench.evaluation import sample_score
from agentworld.rewards.bench.runs import JUDGED, PREDICTIONS
from agentworld.rewards.bench.store import ResultStore
from agentworld.rewards.rubrics import DIMENSIONS
from agentworld.rewards.rules import EditSimilarity, ExactMatch, LineF1

DISPLAY = {"mcp": "MCP", "search": "Search", "terminal": "Term.", "swe": "SWE",
           "android": "Android", "web": "Web", "os": "OS"}
RULES = ("exact", "edit_sim", "line_f1", "domain_score", "format_ok")


def _order(domains: set[str]) -> list[str]:
    return [d for d in DOMAINS if d in domains] + sorted(domains - set(DOMAINS))


def _normalise(x: float) -> float:
    return (x - 1) / 4 * 100


def judge_scores(rows: list[Row], judged: dict) -> dict[str, Any]:
    """Per-domain and overall judge figures of ``rows`` (see the module docstring)."""
    per_domain: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        per_domain[row.domain].append(judged.get(row.key))
    domains, samples = {}, []
    for d in _order(set(per_domain)):
        results = per_domain[d]
        valid = [r for r in results if r is not None and not r.get("failed") and r.get("scores")]
        entry: dict[str, Any] = {"rows": len(results), "valid": len(valid),
                                 "failed": sum(1 for r in results if r is not None and r.get("failed")),
                                 "pending": sum(1 for r in results if r is None)}
        if valid:
            totals = [sample_score(r["scores"]) for r in valid]
            samples += totals
            entry["total"] = mean(totals)
            for dim in DIMENSIONS:
                values = [r["scores"][dim] for r in valid if dim in r["scores"]]
                entry[dim] = _normalise(mean(values)) if values else None
        domains[d] = entry
    scored = [e["total"] for e in domains.values() if "total" in e]
    return {"domains": domains,
            "overall_macro": mean(scored) if scored else None,
            "overall_micro": mean(samples) if samples else None,
            "valid": len(samples), "failed": sum(e["failed"] for e in domains.values()),
            "pending": sum(e["pending"] for e in domains.values())}


def rule_scores(rows: list[Row], predictions: dict) -> tuple[dict[str, Any], list[dict]]:
    """Per-domain rule metrics (means in [0, 1]) and the per-row values."""
    done = [r for r in rows if r.key in predictions]
    preds = [extract_observation(predictions[r.key].get("gen") or "") for r in done]
    refs = [r.reference for r in done]
    ctx = [{} for _ in done]
    columns = {"exact": ExactMatch()(preds, refs, ctx), "edit_sim": EditSimilarity()(preds, refs, ctx),
               "line_f1": LineF1()(preds, refs, ctx)}
    scorers: dict[str, Any] = {}
    for d in {r.domain for r in done}:
        try:
            domain = plugins.get_domain(d)
        except plugins.UnknownPluginError:
            domain = None
        offline = domain is not None and not domain_hooks(domain).has_environment
        scorers[d] = None if domain is None or offline else domain
    per_row = []
    for i, row in enumerate(done):
        scorer = scorers[row.domain]
        values = {k: v[i] for k, v in columns.items()}
        values["domain_score"] = scorer.score(preds[i], Observation(text=refs[i])) if scorer else None
        values["format_ok"] = float(format_ok(predictions[row.key].get("gen") or "", row.domain))
        per_row.append({"task": row.traj.task, "id": row.traj.id, "turn_idx": row.turn,
                        "domain": row.domain, **values})
    by_domain: dict[str, Any] = {}
    for d in _order({r["domain"] for r in per_row}):
        mine = [r for r in per_row if r["domain"] == d]
        by_domain[d] = {"rows": len(mine)} | {
            k: (mean(v) if (v := [r[k] for r in mine if r[k] is not None]) else None) for k in RULES}
    return by_domain, per_row


def drift_plot(per_row: list[dict], judged: dict, path: Path) -> Path:
    """Fidelity by turn index (:func:`drift_figure`) saved as a PNG at ``path``; returns it."""
    import matplotlib.pyplot as plt

    fig = drift_figure(per_row, judged)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def drift_figure(per_row: list[dict], judged: dict) -> Any:
    """The matplotlib figure of ``drift.png``: mean edit similarity (and judge score / 100 where
    judged) per 1-based turn, one line per domain; without judged rows the judge panel says how
    to get them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    any_judged = False
    for d in _order({r["domain"] for r in per_row}):
        by_turn: dict[int, list[float]] = defaultdict(list)
        by_turn_j: dict[int, list[float]] = defaultdict(list)
        for r in per_row:
            if r["domain"] != d:
                continue
            by_turn[r["turn_idx"]].append(r["edit_sim"])
            j = judged.get((r["task"], r["id"], r["turn_idx"]))
            if j and not j.get("failed") and j.get("scores"):
                by_turn_j[r["turn_idx"]].append(sample_score(j["scores"]) / 100)
        turns = sorted(by_turn)
        axes[0].plot(turns, [mean(by_turn[t]) for t in turns], marker="o", label=d)
        if by_turn_j:
            any_judged = True
            tj = sorted(by_turn_j)
            axes[1].plot(tj, [mean(by_turn_j[t]) for t in tj], marker="o", label=d)
    axes[0].set_title("edit similarity by turn")
    axes[1].set_title("judge score / 100 by turn")
    if not any_judged:  # say why the panel is empty rather than leave blank axes
        axes[1].text(0.5, 0.5, "no judged rows: run `agentworld bench judge`\nwith a judge endpoint",
                     ha="center", va="center", transform=axes[1].transAxes, fontsize="small")
    for ax in axes:
        ax.set_xlabel("turn index (1-based)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fidelity")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def _fmt(x: float | None, scale: float = 1.0) -> str:
    return "-" if x is None else f"{x * scale:.2f}"


def tables(name: str, judge: dict, rules: dict) -> str:
    """Markdown: the README-style judge row, the per-dimension table, the rule table."""
    domains = list(rules) or list(judge["domains"])
    head = ["Model", *(DISPLAY.get(d, d) for d in domains), "**Overall (macro)**", "Overall (micro)"]
    lines = ["Five-dimensional judge rubric mean, normalised to 0-100 (macro: mean of domains, "
             "as the public README; micro: mean of samples, as eval.py prints).", "",
             "| " + " | ".join(head) + " |", "|" + "|".join([":---", *[":---:"] * (len(head) - 1)]) + "|"]
    row = [name, *(_fmt(judge["domains"].get(d, {}).get("total")) for d in domains),
           _fmt(judge["overall_macro"]), _fmt(judge["overall_micro"])]
    lines.append("| " + " | ".join(row) + " |")
    lines += ["", "| domain | valid/rows | failed | " + " | ".join(DIMENSIONS) + " | total |",
              "|---|---|---|" + "---|" * (len(DIMENSIONS) + 1)]
    for d, e in judge["domains"].items():
        dims = " | ".join(_fmt(e.get(dim)) for dim in DIMENSIONS)
        lines.append(f"| {d} | {e['valid']}/{e['rows']} | {e['failed']} | {dims} | {_fmt(e.get('total'))} |")
    lines += ["", "Rule metrics (0-100) of the extracted prediction against the reference:", "",
              "| domain | rows | exact | edit sim | line F1 | domain scorer | format ok |",
              "|---|---|---|---|---|---|---|"]
    for d, e in rules.items():
        cells = " | ".join(_fmt(e[k], 100) for k in RULES)
        lines.append(f"| {d} | {e['rows']} | {cells} |")
    return "\n".join(lines) + "\n"


def score(rows: list[Row], out: Path, name: str = "model") -> dict[str, Any]:
    """Score what ``out`` holds for ``rows``; writes ``scores.json``, ``results.md`` and
    ``drift.png`` there and returns the scores (``judge``, ``rules``, ``markdown``)."""
    predictions = ResultStore(out / PREDICTIONS)
    predictions.close()
    judged = ResultStore(out / JUDGED)
    judged.close()
    judge = judge_scores(rows, judged.records)
    rules, per_row = rule_scores(rows, predictions.records)
    markdown = tables(name, judge, rules)
    result = {"name": name, "judge": judge, "rules": rules, "rows": len(rows),
              "predicted": len(per_row)}
    (out / "scores.json").write_text(json.dumps(result, indent=1))
    (out / "results.md").write_text(markdown)
    if per_row:
        drift_plot(per_row, judged.records, out / "drift.png")
    return {**result, "markdown": markdown}
