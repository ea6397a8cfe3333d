"""Tokenise a quickstart run's episodes for ``sweep.py``: SFT windows, CPT blocks, held-out prompts.

    uv run python experiments/recipe_sweep/prep.py runs/quickstart/checkpoints/cpt \
        runs/quickstart/episodes/train.jsonl runs/quickstart/episodes/heldout.jsonl sweep-data small

writes ``sweep-data/small.pt`` (token ids as int16 tensors) and ``sweep-data/tokenizer.json``.
"""

import json
import shutil
import sys
from pathlib import Path

import torch
from transformers import AutoTokenizer

from agentworld.core import plugins
from agentworld.core.evaluate import transitions
from agentworld.core.io import read_episodes
from agentworld.rewards.rules import normalize
from agentworld.trainers.training.data import cpt_blocks, sft_samples

tok_dir, train_path, held_path, out_dir, name = sys.argv[1:6]
out = Path(out_dir)
out.mkdir(parents=True, exist_ok=True)
tok = AutoTokenizer.from_pretrained(tok_dir)
train, held = read_episodes(train_path), read_episodes(held_path)
sft = sft_samples(train, tok, 1024)
cpt = cpt_blocks(train, tok, 1024)
evals = []
for item in transitions(held, domain=plugins.get_domain("terminal"))[:400]:
    ids = tok.apply_chat_template(item.messages, add_generation_prompt=True)["input_ids"]
    evals.append(
        {
            "ids": list(ids),
            "ref": normalize(item.reference.text),
            "nonempty": item.output_nonempty,
            "type": item.action_type,
        }
    )
as16 = lambda ids: torch.tensor(ids, dtype=torch.int16)  # noqa: E731  (vocab 3,072 fits)
torch.save(
    {
        "sft": [(as16(s.input_ids), torch.tensor(s.loss_mask, dtype=torch.bool)) for s in sft],
        "cpt": [as16(b.input_ids) for b in cpt],
        "eval": evals,
        "pad": tok.pad_token_id,
        "eos": tok.eos_token_id,
        "vocab": len(tok),
        "stop": [tok.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")],
    },
    out / f"{name}.pt",
)
shutil.copy(Path(tok_dir) / "tokenizer.json", out / "tokenizer.json")
print(json.dumps({"episodes": len(train), "sft_windows": len(sft), "eval": len(evals)}))
