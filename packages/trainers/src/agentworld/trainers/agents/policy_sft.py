"""The ``policy_sft`` stage: behaviour cloning of an agent policy from expert episodes.

Same loop as the world-model ``sft`` stage (:class:`~agentworld.trainers.training.base.BaseTrainer`:
AdamW, warm-up + cosine, accelerate, checkpoints, resume), other data: each episode is
rendered from the agent's side (:mod:`agentworld.trainers.agents.policy_data`) and the loss covers
the actions only. Starting from a world-model checkpoint instead of a fresh model is the
warm start of DESIGN.md section 1 (measured by ``bench/warmstart.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field
from transformers import PreTrainedTokenizerBase

from agentworld.core.types import Episode
from agentworld.trainers.training.config import TrainConfig
from agentworld.trainers.training.data import Sample
from agentworld.trainers.training.base import BaseTrainer
from agentworld.trainers.agents.policy_data import AGENT_PROMPT, policy_samples


class PolicySftConfig(TrainConfig):
    """``policy_sft`` options: those of every stage plus the agent prompt.

    Attributes:
        agent_prompt: The policy system message after the task instruction.
    """

    lr: float = Field(1e-3, gt=0)
    max_seq_len: int = Field(1024, ge=8)
    agent_prompt: str = AGENT_PROMPT


class PolicySftTrainer(BaseTrainer):
    """``train(episodes, config) -> output_dir`` with :class:`PolicySftConfig` options.

    ``episodes`` are the demonstrations (e.g. the terminal domain's ``scripted`` expert);
    every action of every episode is a target.
    """

    name: ClassVar[str] = "policy_sft"
    config_cls: ClassVar[type[TrainConfig]] = PolicySftConfig

    def check(self, episodes: Sequence[Episode], cfg: TrainConfig) -> None:
        """Fail before loading a model when no episode has an action.

        Raises:
            ValueError: no episodes, none with a step, or ``tokenizer="train"`` with a checkpoint.
        """
        super().check(episodes, cfg)
        if not any(e.steps for e in episodes):
            raise ValueError(
                f"policy_sft needs episodes with at least one action; none of the "
                f"{len(episodes)} given episodes has one"
            )

    def samples(
        self, episodes: Sequence[Episode], tokenizer: PreTrainedTokenizerBase, cfg: TrainConfig
    ) -> list[Sample]:
        """Masked agent-side windows of ``cfg.max_seq_len`` tokens (see
        :func:`~agentworld.trainers.agents.policy_data.policy_samples`).

        Raises:
            ValueError: the tokenizer has no chat template, or no action fits in ``max_seq_len``.
        """
        assert isinstance(cfg, PolicySftConfig)
        if not tokenizer.chat_template:
            raise ValueError(
                "policy_sft needs a tokenizer with a chat template; use tokenizer='train' or a "
                "chat tokenizer"
            )
        return policy_samples(episodes, tokenizer, cfg.max_seq_len, cfg.agent_prompt)
