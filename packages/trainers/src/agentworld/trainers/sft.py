"""The ``sft`` stage: next-observation prediction, all turns of an episode in one sequence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from transformers import PreTrainedTokenizerBase

from agentworld.core.types import Episode
from agentworld.trainers.config import SftConfig, TrainConfig
from agentworld.trainers.data import Sample, sft_samples
from agentworld.trainers.loop import BaseTrainer


class SftTrainer(BaseTrainer):
    """``train(episodes, config) -> output_dir`` with :class:`SftConfig` options.

    Each episode is rendered with ``agentworld.core.formats.episode_messages``
    through the tokenizer's chat template; the loss covers the assistant
    answers (``<predicted_observation>`` blocks and end-of-turn) only.
    """

    name: ClassVar[str] = "sft"
    config_cls: ClassVar[type[TrainConfig]] = SftConfig

    def samples(
        self, episodes: Sequence[Episode], tokenizer: PreTrainedTokenizerBase, cfg: TrainConfig
    ) -> list[Sample]:
        """Masked episode windows of at most ``cfg.max_seq_len`` tokens (see :func:`~agentworld.trainers.data.sft_samples`)."""
        if not tokenizer.chat_template:
            raise ValueError(
                "sft needs a tokenizer with a chat template; use tokenizer='train' or a chat tokenizer"
            )
        return sft_samples(episodes, tokenizer, cfg.max_seq_len)
