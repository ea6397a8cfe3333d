"""The ``cpt`` stage: continual pre-training on whole rendered episodes, loss on every token."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from transformers import PreTrainedTokenizerBase

from agentworld.core.types import Episode
from agentworld.trainers.training.config import CptConfig, TrainConfig
from agentworld.trainers.training.data import Sample, cpt_blocks
from agentworld.trainers.training.base import BaseTrainer


class CptTrainer(BaseTrainer):
    """``train(episodes, config) -> output_dir`` with :class:`CptConfig` options.

    Documents are ``agentworld.core.formats.cpt_text(episode)``, joined with
    eos and packed into ``max_seq_len``-token blocks.
    """

    name: ClassVar[str] = "cpt"
    config_cls: ClassVar[type[TrainConfig]] = CptConfig

    def samples(
        self, episodes: Sequence[Episode], tokenizer: PreTrainedTokenizerBase, cfg: TrainConfig
    ) -> list[Sample]:
        """Packed blocks of ``cfg.max_seq_len`` tokens (see :func:`~agentworld.trainers.training.data.cpt_blocks`)."""
        return cpt_blocks(episodes, tokenizer, cfg.max_seq_len)
