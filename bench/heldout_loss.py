"""Teacher-forced loss of a world-model checkpoint on the SFT targets of train and held-out episodes.

    uv run python bench/heldout_loss.py --model runs/quickstart/checkpoints/sft \\
        --run runs/quickstart                     # ~40 s on 2 cores

For each split (``RUN/episodes/{train,heldout}.jsonl``, the first ``--episodes`` episodes) the
episodes are rendered exactly as SFT trains on them (`agentworld.trainers.training.data.sft_samples`, with
the domain's rationales when the checkpoint's card says ``"reasoning": "domain"``), and one forward
pass per sequence scores every token the model predicts in simulation: the observation blocks and
end-of-turn. Domain rationales are not scored: the simulator writes them (``train_rationale=False``;
before session 10 they were, which gave lower figures). Printed per split: target tokens, mean
cross-entropy (nats/token) and the share of target tokens whose argmax is wrong.

``--by-context`` also splits the held-out target tokens by how much context a copy needs: the
shortest ``n`` (1, 2, 3, 4 or 6) such that every earlier occurrence of the last ``n`` tokens is
followed by the target token, "ambiguous" when 6 tokens still do not decide, and "not copyable"
when the target never follows them (docs/bench-history.md, session 12, measured the copy prior's
induction head with it).

Two checkpoints trained on the same episodes are compared on the same target tokens, so this is a
cheaper and much less noisy signal than exact match over a few hundred generated observations
(docs/bench-history.md, session 9, used it to tune the SFT batch size); the train/held-out gap tells
over-fitting from under-training.
"""

from __future__ import annotations

import argparse
from collections import Counter

import torch
import torch.nn.functional as F
from agentworld.core.card import read_card
from agentworld.core.io import read_episodes
from agentworld.trainers.training.data import IGNORE_INDEX, collate, sft_samples
from agentworld.trainers.world_model.reasoning import domain_rationales
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


CONTEXTS = (1, 2, 3, 4, 6)


def context_classes(ids: list[int], mask: list[int]) -> dict[int, str]:
    """For each position ``j`` with ``mask[j]`` 1: ``"n=K"``, the shortest context length ``K`` in
    :data:`CONTEXTS` whose every earlier occurrence in ``ids[:j]`` is followed by ``ids[j]``;
    ``"ambiguous"`` when none decides; ``"not copyable"`` when ``ids[j]`` never follows it."""
    seen: dict[int, dict[tuple[int, ...], set[int]]] = {n: {} for n in CONTEXTS}
    out = {}
    for j in range(len(ids)):
        for n in CONTEXTS:  # contexts whose next token is ids[j - 1], now in the past
            if j - 1 >= n:
                seen[n].setdefault(tuple(ids[j - 1 - n : j - 1]), set()).add(ids[j - 1])
        if not mask[j]:
            continue
        out[j] = "ambiguous"
        for n in CONTEXTS:
            after = seen[n].get(tuple(ids[j - n : j]), set()) if j >= n else set()
            if ids[j] not in after:
                out[j] = "not copyable"
                break
            if after == {ids[j]}:
                out[j] = f"n={n}"
                break
    return out


@torch.inference_mode()
def accuracy_by_context(model, samples, pad_id: int, batch_size: int) -> dict[str, tuple[int, float]]:
    """``{class: (target tokens, share whose argmax is right)}`` over :func:`context_classes`."""
    count, right = Counter(), Counter()
    for i in range(0, len(samples), batch_size):
        chunk = samples[i : i + batch_size]
        pred = model(input_ids=collate(chunk, pad_id)["input_ids"]).logits.argmax(-1)
        for row, sample in enumerate(chunk):
            for j, cls in context_classes(sample.input_ids, sample.loss_mask).items():
                count[cls] += 1
                right[cls] += int(pred[row, j - 1]) == sample.input_ids[j]
    return {cls: (count[cls], right[cls] / count[cls]) for cls in sorted(count)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--model", required=True, help="checkpoint directory (from_pretrained)")
    p.add_argument(
        "--run", required=True, help="run directory holding episodes/{train,heldout}.jsonl"
    )
    p.add_argument("--episodes", type=int, default=150, help="first N episodes of each split")
    p.add_argument("--max-seq-len", type=int, default=1024, help="SFT window (tokens)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--by-context", action="store_true",
                   help="held-out accuracy by the context length a copy needs")
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
    if args.by_context:
        by = accuracy_by_context(model, samples, tokenizer.pad_token_id, args.batch_size)
        total = sum(n for n, _ in by.values())
        print("held-out target tokens by the context a copy needs: class, share, argmax right")
        for cls, (n, acc) in by.items():
            print(f"{cls:13s}  {n / total:6.1%}  {acc:.3f}")


if __name__ == "__main__":
    main()
