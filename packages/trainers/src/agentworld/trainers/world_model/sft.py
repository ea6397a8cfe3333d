"""The ``sft`` stage: next-observation prediction, all turns of an episode in one sequence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from transformers import PreTrainedTokenizerBase

from agentworld.core import plugins
from agentworld.core.card import card_from_episodes
from agentworld.core.formats import THINK_OPEN, answer_prefix
from agentworld.core.retrieval import INDEX_FILE, TransitionIndex, think_text
from agentworld.core.retrieval_context import RetrievalContext, token_counter
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
    :mod:`agentworld.trainers.world_model.reasoning`). With ``retrieval`` (``k > 0``) the
    ``<think>`` block starts with the nearest real transitions of the other training episodes
    (:mod:`agentworld.core.retrieval_context`), kept out of the loss; the index is saved as
    ``retrieval.jsonl`` in the checkpoint and named on its card.
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
        if cfg.retrieval is not None and cfg.retrieval.on:
            card["retrieval"] = cfg.retrieval.model_dump() | {"index": INDEX_FILE}
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
        skips = None
        if cfg.retrieval is not None and cfg.retrieval.on:
            why, skips = self.retrieved(episodes, tokenizer, cfg, why)
        summary: list[str] = []
        samples = sft_samples(episodes, tokenizer, cfg.max_seq_len, why, summary=summary,
                              skips=skips)
        self.data_summary = summary[0] + (f"; retrieval k={cfg.retrieval.k} (out of the loss)"
                                          if skips is not None and cfg.retrieval else "")
        return samples

    def retrieved(self, episodes: Sequence[Episode], tokenizer: PreTrainedTokenizerBase,
                  cfg: SftConfig, why: list[list[str]] | None
                  ) -> tuple[list[list[str]], list[list[str]]]:
        """``(think texts, loss skips)`` per episode and step: each ``<think>`` text is the
        retrieved block (leave-one-episode-out) then the rationale, if any; the skip is the
        block (with the rationale's ``</think>`` and opening tag too when there is no
        rationale: the simulator writes all of it). Saves the index in ``cfg.output_dir``."""
        assert cfg.retrieval is not None
        name = cfg.reasoning_domain or card_from_episodes(episodes)["domain"]
        try:
            domain = plugins.get_domain(name) if name else None
        except plugins.UnknownPluginError:
            domain = None
        index = TransitionIndex(episodes, domain, "sft retrieval")
        index.save(cfg.output_dir)
        context = RetrievalContext(index, cfg.retrieval.k, cfg.retrieval.max_chars,
                                   cfg.retrieval.max_tokens, token_counter(tokenizer))
        blocks = context.episode_blocks(episodes)
        texts, skips = [], []
        for i, rows in enumerate(blocks):
            rationales = why[i] if why is not None else [None] * len(rows)
            texts.append([think_text(b, r) for b, r in zip(rows, rationales, strict=True)])
            skips.append([THINK_OPEN + b if r else answer_prefix(b)
                          for b, r in zip(rows, rationales, strict=True)])
        return texts, skips
