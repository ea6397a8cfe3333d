"""The one GRPO core of the ``rl`` stage and the LM agent trainer: its KL weight ``beta``
(``kl_coef`` a deprecated alias) and the optimizer step both use. (The time budget all ranks
agree on is checked in ``test_distributed.py``'s two-process run.)"""

from __future__ import annotations

import pytest
import torch
from accelerate import Accelerator
from agentworld.trainers.agents.lm.config import LmAgentConfig
from agentworld.trainers.training import grpo
from agentworld.trainers.training.config import ConfigError, validate_config
from agentworld.trainers.world_model.rl import RlConfig

BASE = {"model": "tiny-test", "output_dir": "out"}


def test_both_trainers_name_the_kl_weight_beta() -> None:
    assert "beta" in RlConfig.model_fields and "beta" in LmAgentConfig.model_fields
    assert "kl_coef" not in RlConfig.model_fields
    assert validate_config(RlConfig, {**BASE, "beta": 0.1}).beta == 0.1


def test_kl_coef_still_works_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match="kl_coef is deprecated; call it beta"):
        cfg = validate_config(RlConfig, {**BASE, "kl_coef": 0.02})
    assert cfg.beta == 0.02
    with pytest.raises(ConfigError, match="give the KL weight once"):
        validate_config(RlConfig, {**BASE, "kl_coef": 0.02, "beta": 0.1})


def test_rl_refuses_packing_naming_the_option_and_what_is_valid() -> None:
    """A packed row holds several prompts, which the GRPO loop cannot map back to one prompt:
    refused when the options are validated, before any model loads."""
    with pytest.raises(ConfigError) as refused:
        validate_config(RlConfig, {**BASE, "packing": True})
    message = str(refused.value)
    assert message.startswith("invalid RlConfig: packing: ")
    assert "set packing = false" in message and "cpt and sft" in message
    assert validate_config(RlConfig, {**BASE, "packing": False}).packing is False


def test_optimizer_step_matches_one_full_batch_loss() -> None:
    """Two micro-batches through ``optimizer_step`` give the gradient of the whole batch."""
    torch.manual_seed(0)
    acc = Accelerator(cpu=True)
    rows, seq, vocab = 4, 5, 7
    tokens = torch.randint(0, vocab, (rows, seq))
    batch = {"tokens": tokens, "mask": torch.ones(rows, seq),
             "old_logprobs": torch.full((rows, seq), -2.0)}  # fmt: skip
    advantages = torch.tensor([1.0, -1.0, 0.5, -0.5])

    def logprobs_of(model, b):
        return grpo.token_logprobs(model(torch.nn.functional.one_hot(b["tokens"], vocab).float()),
                                   b["tokens"])  # fmt: skip

    def losses(model, reference, grad_accum):
        opt = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: keep weights, compare grads

        def loss_of(part):
            sub = {k: v[part] for k, v in batch.items()}
            return grpo.micro_batch_loss(model, sub, advantages[part], logprobs_of=logprobs_of,
                                         reference=reference, unwrapped=model, clip_eps=0.2,
                                         beta=0.1, num_tokens=rows * seq)  # fmt: skip

        grads = []
        opt.step = lambda: grads.append([p.grad.clone() for p in model.parameters()])
        sums = grpo.optimizer_step(acc, model, opt, rows, grad_accum, 1e9, loss_of)
        return sums, grads[0]

    policy, reference = torch.nn.Linear(vocab, vocab), torch.nn.Linear(vocab, vocab)
    one, grad_one = losses(policy, reference, 1)
    two, grad_two = losses(policy, reference, 2)
    assert two["loss"] == pytest.approx(one["loss"], rel=1e-5)
    assert two["kl"] == pytest.approx(one["kl"], rel=1e-5) and one["kl"] > 0
    for a, b in zip(grad_one, grad_two, strict=True):
        torch.testing.assert_close(a, b)
