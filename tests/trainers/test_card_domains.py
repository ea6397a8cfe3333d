"""The world-model card of a checkpoint trained on episodes of several domains names them all
(``agentworld.json``, :mod:`agentworld.core.card`)."""

from __future__ import annotations

import json
from pathlib import Path

from agentworld.core.card import card_from_episodes, read_card
from agentworld.trainers.world_model.sft import SftTrainer


def test_card_lists_every_domain_most_episodes_first(corpus):
    mixed = [
        *(e.model_copy(update={"domain": "frozenlake-4x4"}) for e in corpus[:3]),
        *(e.model_copy(update={"domain": "blackjack"}) for e in corpus[3:6]),
        *corpus[6:8],
    ]
    card = card_from_episodes(mixed)
    assert card["domains"] == ["blackjack", "frozenlake-4x4", "terminal"]  # 3, 3 (by name), 2
    assert card["domain"] == "blackjack"
    assert card_from_episodes([])["domains"] == [] and card_from_episodes([])["domain"] is None


def test_multi_domain_checkpoint_card_records_all_domains(corpus, tokenizer_dir, tmp_path):
    lake = [e.model_copy(update={"domain": "frozenlake-4x4"}) for e in corpus[6:8]]
    episodes = [*corpus[:6], *lake]
    out = SftTrainer().train(episodes, {
        "model": "tiny-test", "tokenizer": str(tokenizer_dir), "output_dir": str(tmp_path / "m"),
        "max_steps": 2, "batch_size": 4, "max_seq_len": 256, "log_every": 1,
    })
    card = read_card(out)
    assert card == json.loads((Path(out) / "agentworld.json").read_text())
    assert card["domains"] == ["terminal", "frozenlake-4x4"] and card["domain"] == "terminal"
