"""The ``sft`` stage: next-observation prediction, all turns of an episode in one sequence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from transformers import PreTrainedTokenizerBase

from agentworld.core.types import Episode
from agentworld.trainers.world_model import reasoning
from agentworld.trainers.training.config import SftConfig, TrainConfig
from agentworld.trainers.training.data import Sample, sft_samples
from agentworld.trainers.training.base import BaseTrainer


class SftTrainer(BaseTrainer):
    """``train(episodes, config) -> output_dir`` with :class:`SftConfig` options.

    Each episode is rendered with ``agentworld.core.formats.episode_messages``
    through the tokenizer's chat template; the loss covers the assistant
    answers (``<predicted_observation>`` blocks and end-of-turn) only. With
    ``reasoning="domain"`` or ``"teacher"`` every answer starts with a
    ``<think>rationale</think>`` block, also in the loss (see
    :mod:`agentworld.trainers.world_model.reasoning`).
    """

    name: ClassVar[str] = "sft"
    config_cls: ClassVar[type[TrainConfig]] = SftConfig

    def card(self, episodes: Sequence[Episode], cfg: TrainConfig) -> dict[str, Any]:
        """The base card, plus ``"reasoning": "domain"`` when the targets carry domain
        rationales: simulators then write the rationale themselves
        (``HFWorldModel(reasoning=...)``), with the domain that wrote them."""
        card = super().card(episodes, cfg)
        assert isinstance(cfg, SftConfig)
        if cfg.reasoning == "domain":
            card["reasoning"] = "domain"
            if cfg.reasoning_domain:
                card["domain"] = cfg.reasoning_domain
        return card

    def check(self, episodes: Sequence[Episode], cfg: TrainConfig) -> None:
        """Fail before loading a model: no step to predict, a domain without ``explain``, a bad teacher prompt file.

        Raises:
            ValueError: no episode has a step, or the reasoning domain has no ``explain``.
            agentworld.core.plugins.UnknownPluginError: the reasoning domain is not installed.
            FileNotFoundError: the teacher's ``prompt_file`` is missing.
        """
        super().check(episodes, cfg)
        assert isinstance(cfg, SftConfig)
        if not any(e.steps for e in episodes):
            raise ValueError(
                f"sft needs episodes with at least one step (a next observation to predict); "
                f"none of the {len(episodes)} given episodes has one"
            )
        if cfg.reasoning == "domain":
            reasoning.check_domain(episodes, cfg.reasoning_domain)
        if cfg.reasoning == "teacher" and cfg.teacher is not None:
            reasoning.load_template(cfg.teacher.prompt_file)

    def samples(
        self, episodes: Sequence[Episode], tokenizer: PreTrainedTokenizerBase, cfg: TrainConfig
    ) -> list[Sample]:
        """Masked episode windows of at most ``cfg.max_seq_len`` tokens (see :func:`~agentworld.trainers.training.data.sft_samples`)."""
        assert isinstance(cfg, SftConfig)
        if not tokenizer.chat_template:
            raise ValueError(
                "sft needs a tokenizer with a chat template; use tokenizer='train' or a chat tokenizer"
            )
        why = reasoning.rationales(episodes, cfg, cfg.output_dir)
        summary: list[str] = []
        samples = sft_samples(episodes, tokenizer, cfg.max_seq_len, why, summary=summary)
        self.data_summary = summary[0]
        return samples
