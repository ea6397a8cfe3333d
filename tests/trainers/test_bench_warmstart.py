"""Smoke test of the warm-start benchmark (bench/warmstart.py) on a minuscule budget."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "warmstart.py"


def _have_sandbox() -> bool:
    from agentworld.domains.terminal.sandbox import detect_sandbox

    try:
        detect_sandbox()
    except RuntimeError:
        return False
    return True


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("warmstart", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_wilson_matches_scipy(bench) -> None:
    from scipy.stats import binomtest

    for k, n in [(0, 10), (3, 10), (10, 10), (57, 120), (1, 1)]:
        want = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert bench.wilson(k, n) == pytest.approx((want.low, want.high), abs=1e-9)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        bench.wilson(3, 2)


def test_engine_policy_equals_generate(bench, corpus, tokenizer_dir) -> None:
    """Greedy actions from the paged engine equal ``model.generate`` on the same chats."""
    from transformers import AutoTokenizer

    from agentworld.trainers.models.specs import build_model
    from agentworld.trainers.agents.policy_data import clean_action, policy_pair

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    torch.manual_seed(0)
    model = build_model("tiny-test", tok).eval()
    policy = bench.EnginePolicy(model, tok, max_new_tokens=12, kv_cache_bytes=1 << 22)
    chats = [policy_pair(e, t)[0] for e in corpus[:3] for t in range(2)]
    got = policy.act(chats)
    want = []
    for chat in chats:
        ids = tok.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt")
        ids = ids["input_ids"] if not isinstance(ids, torch.Tensor) else ids
        out = model.generate(ids, max_new_tokens=12, do_sample=False,
                             eos_token_id=sorted(policy.stop_ids))  # fmt: skip
        new = [t for t in out[0, ids.shape[1] :].tolist() if t not in policy.stop_ids]
        want.append(clean_action(tok.decode(new, skip_special_tokens=True)))
    assert got == want


@pytest.mark.slow
@pytest.mark.skipif(not _have_sandbox(), reason="no bubblewrap/unshare sandbox here")
def test_quick_run_end_to_end(bench, tmp_path) -> None:
    """Collect, train a world model, behaviour-clone both arms, score on the real terminal."""
    out = tmp_path / "run"
    result = bench.main(["--quick", "--out", str(out), "--json", str(tmp_path / "r.json")])
    assert json.loads((tmp_path / "r.json").read_text()) == json.loads(json.dumps(result))
    wm, fresh = result["rows"]
    assert (wm["arm"], fresh["arm"]) == ("world model", "random init")
    for row in (wm, fresh):
        assert row["optimizer_steps"] == 4  # same number of optimizer steps in both arms
        assert (row["transitions"], row["tasks"]) == (12, 4)
        lo, hi = row["action_accuracy_ci95"]
        assert lo <= row["action_accuracy"] <= hi
        assert 0 <= row["success_rate"] <= 1 and row["train_s"] > 0
    # arm (a) starts from the trained world model, arm (b) from fresh weights of its shape
    from transformers import AutoModelForCausalLM

    a = AutoModelForCausalLM.from_pretrained(wm["start"])
    b = AutoModelForCausalLM.from_pretrained(fresh["start"])
    shape = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
             "num_key_value_heads", "intermediate_size", "vocab_size", "tie_word_embeddings")  # fmt: skip
    assert [getattr(a.config, k) for k in shape] == [getattr(b.config, k) for k in shape]
    tokenizers = [
        json.loads((Path(r["start"]) / "tokenizer.json").read_text()) for r in result["rows"]
    ]
    assert tokenizers[0] == tokenizers[1]
    assert not torch.equal(a.model.embed_tokens.weight, b.model.embed_tokens.weight)
    assert result["episodes"]["train_expert"] > 0 and result["world_model_train_s"] > 0
