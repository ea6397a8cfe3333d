"""Greedy decoding vs beam search on the same checkpoint and held-out transitions, side by side.

    uv run python bench/beam_search.py --run runs/quickstart            # ~3 min on 2 cores
    uv run python bench/beam_search.py --run RUN --beams 1 4 --max-transitions 100
    uv run python bench/beam_search.py --run RUN --beams 1 3 --transformers   # ~5 min

For each decoder the first ``--max-transitions`` held-out transitions
(``RUN/episodes/heldout.jsonl``, in episode then turn order, as ``agentworld eval`` takes them) are
predicted by ``RUN/checkpoints/sft`` (or ``--model``) and compared with the real observation.
Printed per decoder: exact match over all transitions and over those whose real output is non-empty
(the issue's headline), how many predictions differ from greedy's, wall seconds, and the time ratio
to greedy. ``--transformers`` adds, per beam count, transformers' own ``generate(num_beams=...,
length_penalty=0)`` one prompt at a time, the reference the engine's outputs agree with (it prefills
every beam). ``1`` beam runs the default paged engine (what ``agentworld eval`` runs without
``--num-beams``); more run :class:`agentworld.sim.beam.BeamSearchEngine`. All decoders see the
same prompts, so their difference is the decoder's alone, free of training noise (docs/bench-history.md,
"Quickstart fidelity, session 13").
"""

from __future__ import annotations

import argparse
import time

import torch
from agentworld.core import plugins
from agentworld.core.evaluate import transitions
from agentworld.core.io import read_episodes
from agentworld.sim.backends.hf import HFWorldModel
from agentworld.sim.generation import GenerationOutput


class TransformersBeams:
    """A ``TokenEngine`` running transformers' own beam search, one prompt at a time."""

    def __init__(self, wm: HFWorldModel, num_beams: int):
        self.model, self.num_beams = wm.model, num_beams
        vocab = wm.tokenizer.get_vocab()
        self.stop = sorted(wm.stop_ids | {vocab[s] for s in wm.params.stop if s in vocab})
        self.pad = wm.tokenizer.pad_token_id

    @torch.inference_mode()
    def generate(self, prompts, params) -> list[GenerationOutput]:
        outputs = []
        for prompt in prompts:
            ids = self.model.generate(
                input_ids=torch.tensor([list(prompt)]), do_sample=False, num_beams=self.num_beams,
                length_penalty=0.0, max_new_tokens=params.max_new_tokens, eos_token_id=self.stop,
                pad_token_id=self.pad,
            )[0, len(prompt) :].tolist()
            end = next((i + 1 for i, t in enumerate(ids) if t in self.stop), len(ids))
            outputs.append(GenerationOutput(ids[:end], "stop" if end < len(ids) else "length"))
        return outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", required=True, help="run directory of `agentworld quickstart`")
    parser.add_argument("--model", help="checkpoint (default RUN/checkpoints/sft)")
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--max-transitions", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=16, help="prompts per beam-search batch")
    parser.add_argument("--transformers", action="store_true",
                        help="also run transformers' generate(num_beams=...) per beam count > 1")
    args = parser.parse_args()

    domain = plugins.get_domain("terminal")
    items = transitions(read_episodes(f"{args.run}/episodes/heldout.jsonl"), domain)
    items = items[: args.max_transitions]
    nonempty = [i for i, t in enumerate(items) if t.output_nonempty]
    print(f"{len(items)} transitions, {len(nonempty)} with non-empty output")
    print("decoder | exact | non-empty exact | changed vs greedy | seconds | time vs greedy")
    checkpoint = args.model or f"{args.run}/checkpoints/sft"
    greedy: list[str | None] | None = None
    greedy_s = None
    arms = [(f"{b} beams", b, False) for b in args.beams]
    if args.transformers:
        arms += [(f"transformers {b} beams", b, True) for b in args.beams if b > 1]
    for label, beams, reference in arms:
        options = {"engine_options": {"batch_size": args.batch_size}} if beams > 1 else {}
        wm = HFWorldModel.from_pretrained(checkpoint, num_beams=beams, **options)
        if reference:
            wm.engine = TransformersBeams(wm, beams)
        start = time.perf_counter()
        predictions = [p.observation for p in wm.predict([t.messages for t in items])]
        seconds = time.perf_counter() - start
        right = [p == t.reference.text for p, t in zip(predictions, items)]
        if beams == 1:
            greedy, greedy_s = predictions, seconds
        changed = sum(a != b for a, b in zip(predictions, greedy)) if greedy else "-"
        ratio = f"{seconds / greedy_s:.2f}" if greedy_s else "-"
        print(
            f"{label} | {sum(right) / len(items):.3f} | "
            f"{sum(right[i] for i in nonempty) / len(nonempty):.3f} | {changed} | "
            f"{seconds:.0f} | {ratio}",
            flush=True,
        )


if __name__ == "__main__":
    main()
