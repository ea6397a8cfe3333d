"""Tables of ``bench/third_party/run.sh``: ``python summary.py TP`` (TP: runs/third_party).

Collection: per target, episodes and transitions of ``TP/data/NAME/episodes/*.jsonl``, the
share of steps that are not errors (the terminal: exit code 0; else
``agentworld.core.tool_coverage.is_error_step``: the flag or an error text), distinct pages for web (URLs in the steps' state) and the collect summary's
coverage line for mcp servers (``coverage_lines``). Fidelity: exact match and edit similarity of
the trained model and of the baselines copy-previous, empty and nearest, from the
``predictions.jsonl`` the eval stage wrote in ``TP/runs/RUN``, per split and per source target
(an episode id's data folder), so one across-servers model gives a row per server.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from agentworld.core.io import read_episodes
from agentworld.core.tool_coverage import coverage_lines, is_error_step
from agentworld.core.types import Step

MODELS = ("model", "copy-previous", "empty", "nearest")


def collection_rows(tp: Path) -> list[str]:
    """One Markdown row per collected target under ``tp/data``."""
    rows = []
    for folder in sorted(p for p in (tp / "data").iterdir() if (p / "episodes").is_dir()):
        episodes = [e for f in sorted((folder / "episodes").glob("*.jsonl")) for e in read_episodes(str(f))]
        if not episodes or folder.name.endswith("-pool"):
            continue
        steps = [s for e in episodes for s in e.steps]
        ok = sum(not _error(s) for s in steps) / max(1, len(steps))
        pages = {s.observation.state.get("url") for s in steps if isinstance(s.observation.state, dict)}
        pages.discard(None)
        extra = "; ".join(coverage_lines(episodes)) or (f"{len(pages)} distinct pages" if pages else "")
        rows.append(f"| {folder.name} | {len(episodes)} | {len(steps)} | {ok:.2f} | {extra} |")
    return rows


def _error(step: Step) -> bool:
    """A terminal step whose command exited non-zero, else ``is_error_step``."""
    state = step.observation.state if isinstance(step.observation.state, dict) else {}
    return state["exit_code"] != 0 if isinstance(state.get("exit_code"), int) else is_error_step(step)


def sources(tp: Path) -> dict[str, str]:
    """``{episode id: data folder name}`` over every collected episode."""
    out = {}
    for path in (tp / "data").glob("*/episodes/*.jsonl"):
        if path.parent.parent.name.endswith("-pool"):
            continue
        for line in path.read_text().splitlines():
            out[json.loads(line)["id"]] = path.parent.parent.name
    return out


def fidelity_rows(tp: Path, origin: dict[str, str]) -> list[str]:
    """One Markdown row per (run, split, source): ``n`` and, per model, exact / edit."""
    rows = []
    for run in sorted(p for p in (tp / "runs").iterdir() if (p / "predictions.jsonl").is_file()):
        scores: dict[tuple[str, str], dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
        for line in (run / "predictions.jsonl").read_text().splitlines():
            r = json.loads(line)
            pair = (r["scores"]["exact_match"], r["scores"]["edit_similarity"])
            for key in {(r["split"], origin.get(r["episode_id"], "?")), (r["split"], "(all)")}:
                scores[key][r["model"]].append(pair)
        trained = (run / "checkpoints" / "sft").is_dir()
        per_split: dict[str, int] = defaultdict(int)
        for split, _ in scores:
            per_split[split] += 1
        for (split, source), by_model in sorted(scores.items()):
            if source == "(all)" and per_split[split] == 2:  # one source: its row says it all
                continue
            cells = []
            for name in MODELS:
                vals = by_model.get(name)
                if not vals or (name == "model" and not trained):
                    cells.append("-")
                    continue
                exact = sum(v[0] for v in vals) / len(vals)
                edit = sum(v[1] for v in vals) / len(vals)
                cells.append(f"{exact:.2f} / {edit:.2f}")
            n = len(next(iter(by_model.values())))
            rows.append(f"| {run.name} | {split} | {source} | {n} | " + " | ".join(cells) + " |")
    return rows


def main() -> None:
    tp = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/third_party")
    print("| target | episodes | transitions | not errors | coverage |")
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(collection_rows(tp)))
    print()
    print("| run | split | target | n | model | copy-previous | empty | nearest |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(fidelity_rows(tp, sources(tp))))


if __name__ == "__main__":
    main()
