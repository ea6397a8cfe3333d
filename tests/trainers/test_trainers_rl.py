"""The ``rl`` stage (GRPO): real tiny Qwen3 models, the real paged engine, real rewards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from agentworld.core import plugins
from agentworld.core.hookspecs import hookimpl
from agentworld.core.plugins import UnknownPluginError
from agentworld.sim.backends.hf import HFWorldModel
from agentworld.sim.sampling import SamplingParams
from agentworld.trainers.training import grpo
from agentworld.trainers.models.specs import ModelSpecError, load_model
from agentworld.trainers.training.grpo_loop import answer_logprobs
from agentworld.trainers.world_model.rl import RlTrainer
from agentworld.trainers.world_model.rl_loop import answer_batch
from agentworld.trainers.world_model.rl_data import build_prompts, chat_render, generate_groups
from test_trainers_tracking import scalars
from transformers import AutoModelForCausalLM, AutoTokenizer

TARGET = "hello"  # one token of the test tokenizer


class TargetFraction:
    """Toy reward: the fraction of the answer's tokens that are ``TARGET``."""

    name = "toy_target"

    def __init__(self, tokenizer_dir: Path):
        self.tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        (self.target,) = self.tok(TARGET, add_special_tokens=False)["input_ids"]

    def __call__(self, predictions, references, contexts):
        out = []
        for ctx in contexts:
            ids = self.tok(ctx["raw"], add_special_tokens=False)["input_ids"]
            out.append(sum(i == self.target for i in ids) / max(1, len(ids)))
        return out


@pytest.fixture(scope="module")
def toy_reward(tokenizer_dir):
    """Registers reward ``toy_target`` for the module, unregistered in ``finally``."""

    class Plugin:
        @hookimpl
        def register_rewards(self, register):
            register("toy_target", lambda **_: TargetFraction(tokenizer_dir))

    plugin = Plugin()
    plugins.load_plugins()
    plugins.pm.register(plugin, name="test-toy-reward")
    plugins.reset_registries()
    try:
        yield "toy_target"
    finally:
        plugins.pm.unregister(plugin)
        plugins.reset_registries()


def options(tokenizer_dir, out, **extra):
    return {
        "model": "tiny-test",
        "tokenizer": str(tokenizer_dir),
        "output_dir": str(out),
        "batch_size": 4,
        "group_size": 8,
        "max_new_tokens": 12,
        "max_seq_len": 256,
        "lr": 0.05,
        "min_lr_ratio": 1.0,
        "beta": 0.01,
        "reward": "hybrid",
        "reward_weights": {"toy_target": 1.0},
        "seed": 0,
    } | extra


def log(out) -> list[dict]:
    return [json.loads(line) for line in (Path(out) / "train_log.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def grpo_run(tmp_path_factory, corpus, tokenizer_dir, toy_reward) -> Path:
    """8 GRPO steps of full fine-tuning on the toy reward through the hybrid reward."""
    out = tmp_path_factory.mktemp("rl") / "run"
    RlTrainer().train(corpus, options(tokenizer_dir, out, max_steps=8))
    return out


def test_rl_is_a_registered_trainer():
    assert plugins.get_trainer("rl").name == "rl"


def test_grpo_raises_the_toy_reward(grpo_run):
    records = log(grpo_run)
    assert [r["step"] for r in records] == list(range(1, 9))
    rewards = [r["reward"] for r in records]
    # A random tiny model says "hello" in ~1/400 of its tokens; GRPO must make it say it a lot.
    assert rewards[0] < 0.05
    assert min(rewards[-2:]) > rewards[0] + 0.3, rewards
    assert records[-1]["reward/toy_target"] == pytest.approx(records[-1]["reward"])
    for r in records:
        assert 0 < r["response_len"] <= 12 and 0 <= r["format_valid"] <= 1
        # The G answers of a prompt share its KV: most prompt tokens are prefix hits.
        assert r["prefix_hit_rate"] > 0.5


def test_kl_is_zero_at_step_0_and_positive_after_updates(grpo_run):
    records = log(grpo_run)
    # Step 1 samples from the starting weights: policy == reference, behaviour == current.
    assert records[0]["kl"] == pytest.approx(0.0, abs=1e-6)
    assert records[0]["ratio"] == pytest.approx(1.0, abs=1e-4)
    assert records[0]["clip_frac"] == 0.0
    assert all(r["kl"] > 1e-3 for r in records[1:])
    assert records[-1]["kl"] > records[1]["kl"]


def test_checkpoint_reloads_and_differs_from_the_start(grpo_run, tokenizer_dir):
    trained = AutoModelForCausalLM.from_pretrained(str(grpo_run), dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    torch.manual_seed(0)
    start, _ = load_model("tiny-test", tok)
    ids = torch.tensor([tok("echo hello", add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        assert not torch.allclose(trained(ids).logits, start(ids).logits, atol=1e-3)


def test_training_logprobs_match_the_engine_and_ignore_padding(corpus, tokenizer_dir):
    """The loss reads exactly the generated tokens: the training forward reproduces the
    engine's behaviour log-probabilities at every answer position, and what lies outside
    the answers (padding, masked slots) does not change the loss or get gradient."""
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    torch.manual_seed(0)
    model, _ = load_model("tiny-test", tok)
    model.eval()
    wm = HFWorldModel(model, tok, engine="paged", engine_options={"num_blocks": 256})
    prompts = build_prompts(corpus[:3], chat_render(tok), 200)
    rollouts = generate_groups(
        wm, prompts, [0, 1, 2], 4, SamplingParams(10, 1.0), list(range(12)), tag="t"
    )
    for k, r in enumerate(rollouts[::2]):  # answers of different lengths: padded answer slots
        del r.token_ids[10 - k :], r.logprobs[10 - k :]
    assert len({len(prompts[r.prompt].prompt_ids) + len(r.token_ids) for r in rollouts}) > 3
    batch = answer_batch(prompts, rollouts, tok.pad_token_id, torch.device("cpu"))
    mask = batch["mask"].bool()
    assert int(mask.sum()) == sum(len(r.token_ids) for r in rollouts)
    logprobs = answer_logprobs(model, batch)
    assert torch.allclose(logprobs[mask], batch["old_logprobs"][mask], atol=1e-4)

    advantages = torch.linspace(-1, 1, len(rollouts))
    n = int(mask.sum())

    def loss_of(b):
        lp = answer_logprobs(model, b)
        return grpo.grpo_loss(lp, b["old_logprobs"], lp.detach() - 0.1, advantages, b["mask"],
                              clip_eps=0.2, beta=0.1, num_tokens=n)

    base = loss_of(batch).loss.item()
    noisy = dict(batch)
    noisy["input_ids"] = batch["input_ids"].clone()
    for row, r in enumerate(rollouts):  # scramble what follows each row's answer
        end = len(prompts[r.prompt].prompt_ids) + len(r.token_ids)
        noisy["input_ids"][row, end:] = 7
    noisy["old_logprobs"] = batch["old_logprobs"].masked_fill(~mask, -50.0)
    assert loss_of(noisy).loss.item() == pytest.approx(base, abs=1e-6)

    lp = answer_logprobs(model, batch).detach().requires_grad_(True)
    parts = grpo.grpo_loss(lp, batch["old_logprobs"], None, advantages, batch["mask"],
                           clip_eps=0.2, beta=0.0, num_tokens=n)
    parts.loss.backward()
    assert torch.all(lp.grad[~mask] == 0) and torch.all(lp.grad[mask] != 0)


def test_group_advantages_and_k3():
    adv = grpo.group_advantages(torch.tensor([1.0, 0.0, 0.5, 0.5, 0.0, 1.0]), 2)
    assert torch.allclose(adv, torch.tensor([1.0, -1.0, 0.0, 0.0, -1.0, 1.0]), atol=1e-3)
    with pytest.raises(ValueError, match="groups of 4"):
        grpo.group_advantages(torch.zeros(6), 4)
    lp, ref = torch.tensor([-1.0, -2.0]), torch.tensor([-1.0, -1.0])
    # k3 = exp(d) - d - 1 with d = ref - logp: 0 where equal, e - 2 for d = 1.
    assert torch.allclose(grpo.k3_kl(lp, ref), torch.tensor([0.0, torch.e - 2]))


def test_lora_path_runs(corpus, tokenizer_dir, toy_reward, tmp_path):
    out = tmp_path / "lora"
    RlTrainer().train(
        corpus,
        options(tokenizer_dir, out, max_steps=2, lora={"r": 4, "alpha": 8}, group_size=4),
    )
    records = log(out)
    assert [r["step"] for r in records] == [1, 2]
    assert records[0]["kl"] == pytest.approx(0.0, abs=1e-6)  # LoRA B starts at 0
    assert records[1]["kl"] > 0
    assert (out / "adapter" / "adapter_config.json").is_file()
    AutoModelForCausalLM.from_pretrained(str(out))  # the merged model reloads


def test_resume_continues_from_the_saved_step(corpus, tokenizer_dir, toy_reward, tmp_path):
    out = tmp_path / "resume"
    first = options(tokenizer_dir, out, max_steps=2, group_size=4)
    RlTrainer().train(corpus, first)
    before = log(out)
    RlTrainer().train(corpus, first | {"max_steps": 4, "resume": True})
    after = log(out)
    assert [r["step"] for r in after] == [1, 2, 3, 4]
    assert after[:2] == before
    state = json.loads((out / "trainer_state" / "state.json").read_text())
    assert state["step"] == 4 and state["stage"] == "rl"
    # Same seed, uninterrupted: steps 3-4 see the same prompts, seeds and weights.
    straight = tmp_path / "straight"
    RlTrainer().train(corpus, options(tokenizer_dir, straight, max_steps=4, group_size=4))
    for a, b in zip(after, log(straight)):
        assert a["reward"] == pytest.approx(b["reward"], abs=1e-6)


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"reward": "no_such_reward"}, UnknownPluginError, "installed rewards"),
        ({"reward_weights": {"toy_target": 0.0}}, ValueError, "positive"),
        ({"reward_weights": {"nope": 1.0}}, ValueError, "unknown hybrid component"),
    ],
)
def test_bad_reward_config_fails_before_training(
    corpus, tokenizer_dir, toy_reward, tmp_path, change, error, match
):
    with pytest.raises(error, match=match):
        RlTrainer().train(corpus, options(tokenizer_dir, tmp_path / "x", **change))
    assert not (tmp_path / "x").exists()


def test_dataset_without_references_fails(corpus, tokenizer_dir, toy_reward, tmp_path):
    empty = [e.model_copy(update={"steps": []}) for e in corpus[:3]]
    with pytest.raises(ValueError, match="references"):
        RlTrainer().train(empty, options(tokenizer_dir, tmp_path / "x"))


def test_model_dir_without_tokenizer_fails(corpus, toy_reward, tmp_path):
    model_dir = tmp_path / "bare"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    opts = options(None, tmp_path / "x") | {"model": str(model_dir), "tokenizer": None}
    with pytest.raises(ModelSpecError, match="no tokenizer"):
        RlTrainer().train(corpus, opts)


def test_cli_and_pipeline_run_the_rl_stage(corpus, grpo_run, toy_reward, tmp_path):
    """``agentworld train rl --model CKPT`` and a pipeline ``[rl]`` table both reach the trainer."""
    from agentworld.app.cli import app
    from agentworld.app.config import parse_config
    from agentworld.core.io import write_episodes
    from agentworld.app.pipeline import run_pipeline
    from typer.testing import CliRunner

    data = tmp_path / "train.jsonl"
    write_episodes(str(data), corpus)
    sets = ["max_steps=1", "group_size=2", "max_new_tokens=8", "max_seq_len=256",
            "reward_weights={toy_target=1.0}"]
    args = ["train", "rl", "--data", str(data), "--model", str(grpo_run),
            "--output-dir", str(tmp_path / "cli")]
    result = CliRunner().invoke(app, args + [a for s in sets for a in ("--set", s)])
    assert result.exit_code == 0, result.output
    assert [r["step"] for r in log(tmp_path / "cli")] == [1]

    config = parse_config(
        f'[run]\ndir = "{tmp_path / "pipe"}"\ntrain_data = "{data}"\n'
        f'[rl]\nmodel = "{grpo_run}"\nmax_steps = 1\ngroup_size = 2\nmax_new_tokens = 8\n'
        "max_seq_len = 256\nreward_weights = {toy_target = 1.0}\n"
    )
    assert config.stages() == ["rl"]
    state = run_pipeline(config)
    assert state.checkpoint == str(tmp_path / "pipe" / "checkpoints" / "rl")
    assert [r["step"] for r in log(state.checkpoint)] == [1]


def test_rl_sends_reward_components_and_kl_to_tensorboard(
    corpus, tokenizer_dir, toy_reward, tmp_path
):
    out = tmp_path / "rl"
    RlTrainer().train(corpus, options(
        tokenizer_dir, out, max_steps=2, group_size=4, lora={"r": 4, "alpha": 8},
        report_to=["tensorboard"],
    ))
    records = log(out)
    for tag in ("reward", "reward/toy_target", "kl", "format_valid", "response_len"):
        values = scalars(out, tag)
        assert values == pytest.approx({r["step"]: r[tag] for r in records}, rel=1e-6), tag


def test_group_advantages_equal_rewards_are_exact_zeros():
    # fp32 cannot hold 0.3: the group mean rounds away from the rewards, and dividing that
    # rounding error by std + eps gave 0.0003 instead of the documented 0.
    rewards = torch.cat([torch.full((8,), 0.3), torch.tensor([0.3, 0.3, 0.7, 0.7])])
    adv = grpo.group_advantages(rewards, 4)
    assert torch.equal(adv[:8], torch.zeros(8))
    assert torch.allclose(adv[8:], torch.tensor([-1.0, -1.0, 1.0, 1.0]))
    # The std is floored, not shifted: a tiny but real spread stays bounded by 1/eps.
    tiny = grpo.group_advantages(torch.tensor([0.0, 1e-3]), 2, eps=1e-2)
    assert torch.allclose(tiny, torch.tensor([-0.05, 0.05]))
