"""Teacher-forced loss of a world-model checkpoint on the SFT targets of train and held-out episodes.

    uv run python bench/heldout_loss.py --model runs/quickstart/checkpoints/sft \\
        --run runs/quickstart                     # ~40 s on 2 cores

For each split (``RUN/episodes/{train,heldout}.jsonl``, the first ``--episodes`` episodes) the
episodes are rendered exactly as SFT trains on them (`agentworld.trainers.data.sft_samples`, with
the domain's rationales when the checkpoint's card says ``"reasoning": "domain"``), and one forward
pass per sequence scores every token the model predicts in simulation: the observation blocks and
end-of-turn. Domain rationales are not scored: the simulator writes them (``train_rationale=False``;
before session 10 they were, which gave lower figures). Printed per split: target tokens, mean
cross-entropy (nats/token) and the share of target tokens whose argmax is wrong.

Two checkpoints trained on the same episodes are compared on the same target tokens, so this is a
cheaper and much less noisy signal than exact match over a few hundred generated observations
(bench/README.md, session 9, used it to tune the SFT batch size); the train/held-out gap tells
over-fitting from under-training.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from agentworld.core.card import read_card
from agentworld.core.io import read_episodes
from agentworld.trainers.data import IGNORE_INDEX, collate, sft_samples
from agentworld.trainers.reasoning import domain_rationales
from transformers import AutoModelForCausalLM, AutoTokenizer


@torch.inference_mode()
def score(model, samples, pad_id: int, batch_size: int) -> tuple[int, float, float]:
    """Teacher-forced scores of ``samples`` (``Sample`` sequences of ``input_ids`` / ``loss_mask``).

    Args:
        model: A causal LM; each micro-batch ``[batch_size, width]`` gives logits
            ``[batch_size, width, vocab]``.
        samples: SFT sequences; only positions with ``loss_mask`` 1 are scored.
        pad_id: Token id of right padding.
        batch_size: Sequences per forward pass.

    Returns:
        ``(target tokens, mean cross-entropy in nats/token, share of target tokens whose
        argmax is wrong)``.
    """
    total, count, wrong = 0.0, 0, 0
    for i in range(0, len(samples), batch_size):
        batch = collate(samples[i : i + batch_size], pad_id)
        logits = model(input_ids=batch["input_ids"]).logits[:, :-1].float()
        labels = batch["labels"][:, 1:]
        keep = labels != IGNORE_INDEX
        total += F.cross_entropy(logits[keep], labels[keep], reduction="sum").item()
        count += int(keep.sum())
        wrong += int((logits[keep].argmax(-1) != labels[keep]).sum())
    return count, total / count, wrong / count


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--model", required=True, help="checkpoint directory (from_pretrained)")
    p.add_argument(
        "--run", required=True, help="run directory holding episodes/{train,heldout}.jsonl"
    )
    p.add_argument("--episodes", type=int, default=150, help="first N episodes of each split")
    p.add_argument("--max-seq-len", type=int, default=1024, help="SFT window (tokens)")
    p.add_argument("--batch-size", type=int, default=8)
    args = p.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model).eval()
    card = read_card(args.model)
    print(f"{args.model}: reasoning {card.get('reasoning', 'none')}")
    print("split     episodes  target tokens  nats/token  argmax wrong")
    for split in ("train", "heldout"):
        episodes = read_episodes(f"{args.run}/episodes/{split}.jsonl")[: args.episodes]
        why = (
            domain_rationales(episodes, card.get("domain"))
            if card.get("reasoning") == "domain"
            else None
        )
        # Score what the model predicts: a simulator writes domain rationales itself.
        samples = sft_samples(episodes, tokenizer, args.max_seq_len, why, train_rationale=False)
        n, loss, err = score(model, samples, tokenizer.pad_token_id, args.batch_size)
        print(f"{split:8s}  {len(episodes):8d}  {n:13d}  {loss:10.4f}  {err:12.2%}")


if __name__ == "__main__":
    main()
