"""Greedy decoding vs beam search on the same checkpoint and held-out transitions, side by side.

    uv run python bench/beam_search.py --run runs/quickstart            # ~3 min on 2 cores
    uv run python bench/beam_search.py --run RUN --beams 1 4 --max-transitions 100

For each decoder the first ``--max-transitions`` held-out transitions
(``RUN/episodes/heldout.jsonl``, in episode then turn order, as ``agentworld eval`` takes them) are
predicted by ``RUN/checkpoints/sft`` (or ``--model``) and compared with the real observation.
Printed per decoder: exact match over all transitions and over those whose real output is non-empty
(the issue's headline), how many predictions differ from greedy's, wall seconds, and the time ratio
to greedy. ``1`` beam runs the default paged engine (what ``agentworld eval`` runs without
``--num-beams``); more run :class:`agentworld.sim.beam.BeamSearchEngine`. All decoders see the
same prompts, so their difference is the decoder's alone, free of training noise (bench/README.md,
"Quickstart fidelity, session 13").
"""

from __future__ import annotations

import argparse
import time

from agentworld.core import plugins
from agentworld.core.evaluate import transitions
from agentworld.core.io import read_episodes
from agentworld.sim.backends.hf import HFWorldModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", required=True, help="run directory of `agentworld quickstart`")
    parser.add_argument("--model", help="checkpoint (default RUN/checkpoints/sft)")
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--max-transitions", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=16, help="prompts per batch")
    args = parser.parse_args()

    domain = plugins.get_domain("terminal")
    items = transitions(read_episodes(f"{args.run}/episodes/heldout.jsonl"), domain)
    items = items[: args.max_transitions]
    nonempty = [i for i, t in enumerate(items) if t.output_nonempty]
    print(f"{len(items)} transitions, {len(nonempty)} with non-empty output")
    print("beams | exact | non-empty exact | changed vs greedy | seconds | time vs greedy")
    greedy: list[str | None] | None = None
    greedy_s = None
    for beams in args.beams:
        wm = HFWorldModel.from_pretrained(
            args.model or f"{args.run}/checkpoints/sft", batch_size=args.batch_size,
            num_beams=beams,
        )
        start = time.perf_counter()
        predictions = [p.observation for p in wm.predict([t.messages for t in items])]
        seconds = time.perf_counter() - start
        right = [p == t.reference.text for p, t in zip(predictions, items)]
        if beams == 1:
            greedy, greedy_s = predictions, seconds
        changed = sum(a != b for a, b in zip(predictions, greedy)) if greedy else "-"
        ratio = f"{seconds / greedy_s:.2f}" if greedy_s else "-"
        print(
            f"{beams} | {sum(right) / len(items):.3f} | "
            f"{sum(right[i] for i in nonempty) / len(nonempty):.3f} | {changed} | "
            f"{seconds:.0f} | {ratio}",
            flush=True,
        )


if __name__ == "__main__":
    main()
