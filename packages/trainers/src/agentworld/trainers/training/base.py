"""The trainer the ``cpt``, ``sft``, ``rl`` and ``policy_sft`` stages share.

A stage subclasses :class:`BaseTrainer` and provides ``samples(episodes, tokenizer,
config)``. :meth:`BaseTrainer.train`: check the input, seed, tokenizer, model (optionally
LoRA), AdamW, ``accelerate.Accelerator`` for device placement and gradient accumulation,
resume from ``output_dir/trainer_state``, then the stage's loop (:meth:`BaseTrainer.make_loop`,
by default :class:`SupervisedLoop`, the next-token loss on the samples) on the one
:class:`~agentworld.trainers.training.loop.TrainLoop`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from agentworld.core.card import card_from_episodes, write_card
from agentworld.core.formats import cpt_text, episode_messages
from agentworld.core.types import Episode
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from agentworld.trainers.models.specs import (
    ModelSpecError,
    check_model_spec,
    check_preset_tokenizer,
    is_checkpoint_dir,
    num_parameters,
)
from agentworld.trainers.models.tokenizer import train_tokenizer
from agentworld.trainers.training import speed
from agentworld.trainers.training.config import TrainConfig, option_help, validate_config
from agentworld.trainers.training.data import Sample, batch_stream, collate, length_batches
from agentworld.trainers.training.loop import TrainLoop
from agentworld.trainers.training.setup import (
    check_output_dir,
    load_policy,
    make_accelerator,
    make_optimizer,
    output_dir_guard,
    prepare_output_dir,
    restore,
)


def corpus_texts(episodes: Sequence[Episode]) -> list[str]:
    """Tokenizer training texts: each episode's CPT document and its ChatML transcript."""
    texts = []
    for e in episodes:
        texts.append(cpt_text(e))
        texts.append(
            "".join(
                f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in episode_messages(e)
            )
        )
    return texts


def check_model_and_tokenizer(cfg: TrainConfig) -> None:
    """Refuse, before anything loads, a model and tokenizer that cannot go together.

    Raises:
        ModelSpecError: a preset (built from a config, so without a vocabulary) and no
            tokenizer, unless a resumed run saved one in ``output_dir``; or ``tokenizer`` is a
            path that is not a directory.
        ValueError: ``tokenizer="train"`` with a checkpoint directory (its embeddings do not
            know a freshly trained vocabulary).
    """
    saved = cfg.resume and (Path(cfg.output_dir) / "tokenizer_config.json").is_file()
    check_preset_tokenizer(cfg.model, has_tokenizer=cfg.tokenizer is not None or saved)
    if cfg.tokenizer == "train" and is_checkpoint_dir(cfg.model):
        raise ValueError(
            f"tokenizer='train' builds a new vocabulary that checkpoint {cfg.model!r} "
            "does not know; leave tokenizer unset to use the checkpoint's own"
        )
    if cfg.tokenizer not in (None, "train") and not Path(cfg.tokenizer).is_dir():
        raise ModelSpecError(
            f"tokenizer {cfg.tokenizer!r} is not a directory: give a tokenizer directory, 'train' "
            "(a BPE trained on the episodes), or leave it unset for the model checkpoint's own"
        )


class SupervisedLoop(TrainLoop):
    """Next-token loss on length-bucketed batches of ``data`` (the ``cpt``/``sft`` steps).

    A record averages the loss over the steps since the previous one (``window_loss`` and
    ``window_steps`` are resumable counters, so the first record after a resume averages the
    same steps as an uninterrupted run's) and ``tokens_per_s`` counts training time only.
    """

    def __init__(self, *args: Any, data: list[Sample], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        acc, cfg, c = self.acc, self.cfg, self.c
        self.data, self.pad = data, self.tokenizer.pad_token_id
        self.stream = batch_stream(
            data, cfg.batch_size, cfg.seed, c["micro"], acc.process_index, acc.num_processes
        )
        self.window_tokens, self.window_t = 0, time.perf_counter()

    def describe(self) -> str:
        params = sum(p.numel() for p in self.model.parameters() if p.requires_grad)
        if self.total:
            length = f"{self.total} steps"
        else:
            length = f"until the {self.cfg.time_budget_s:g} s time budget"
        return (
            f"{self.stage}: {len(self.data)} sequences, {num_parameters(self.model):,} parameters "
            f"({params:,} trainable), {length}"
        )

    def on_train_begin(self) -> None:
        self.window_tokens, self.window_t = 0, time.perf_counter()
        self.model.train()

    def training_step(self) -> dict[str, Any]:
        acc, cfg, c, model, opt = self.acc, self.cfg, self.c, self.model, self.opt
        step_loss, step_tokens = 0.0, 0
        for _ in range(cfg.grad_accum):
            micro = next(self.stream)
            batch = {k: v.to(acc.device) for k, v in collate(micro, self.pad).items()}
            with acc.accumulate(model):
                loss = model(**batch, use_cache=False).loss
                acc.backward(loss)
                if acc.sync_gradients:
                    acc.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
                opt.step()
                opt.zero_grad()
            step_loss += loss.item() / cfg.grad_accum
            step_tokens += sum(len(s) for s in micro) * acc.num_processes
            c["micro"] += 1
        c["window_loss"] += step_loss
        c["window_steps"] += 1
        c["tokens"] += step_tokens
        self.window_tokens += step_tokens
        return {"loss": step_loss}  # per-step progress; the log record averages its window

    def log_metrics(self, metrics: dict[str, Any], now: float) -> dict[str, Any]:
        c = self.c
        out = {
            "loss": c["window_loss"] / c["window_steps"],
            "tokens": c["tokens"],
            "tokens_per_s": self.window_tokens / max(now - self.window_t, 1e-9),
        }
        c["window_loss"], c["window_steps"], self.window_tokens, self.window_t = 0.0, 0, 0, now
        return out

    def save(self) -> None:
        t_save = time.perf_counter()
        super().save()
        self.window_t += time.perf_counter() - t_save  # keep tokens/s about training only


class BaseTrainer:
    """A :class:`~agentworld.core.protocols.Trainer` built on transformers + accelerate."""

    name: ClassVar[str] = "base"
    config_cls: ClassVar[type[TrainConfig]] = TrainConfig
    #: One line about the training data :meth:`samples` built, printed before training
    #: (SFT: the chat masking strategy and the trained tokens per episode); ``None``: nothing.
    data_summary: str | None = None

    def samples(
        self, episodes: Sequence[Episode], tokenizer: PreTrainedTokenizerBase, cfg: TrainConfig
    ) -> list[Sample]:
        """The stage's training sequences."""
        raise NotImplementedError

    def card(self, episodes: Sequence[Episode], cfg: TrainConfig) -> dict[str, Any]:
        """The world-model card saved beside the checkpoint (:mod:`agentworld.core.card`);
        stages extend it."""
        return card_from_episodes(episodes)

    def check_options(self, config: dict[str, Any]) -> None:
        """Validate stage options without training (a pipeline's check before its first
        training stage).

        Raises:
            agentworld.trainers.training.config.ConfigError: what :meth:`train` would raise for them.
        """
        check_model_and_tokenizer(validate_config(self.config_cls, config))

    def options(self) -> list[tuple[str, str, str]]:
        """``(key, default, description)`` of every option (``agentworld train STAGE --options``)."""
        return option_help(self.config_cls)

    def check(self, episodes: Sequence[Episode], cfg: TrainConfig) -> None:
        """Cheap input checks run before any model is loaded; stages extend it.

        Raises:
            ValueError: no episodes, a model that is no preset, checkpoint or (with
                ``allow_hub``) hub id, or a model/tokenizer pair that cannot work
                (:func:`check_model_and_tokenizer`).
            OutputDirError: an ``output_dir`` that is a file, or that holds a checkpoint
                the run would neither resume nor replace
                (:func:`~agentworld.trainers.training.setup.check_output_dir`).
        """
        if not episodes:
            raise ValueError(f"{self.name} needs at least one episode, got none")
        check_model_spec(cfg.model, allow_hub=cfg.allow_hub)
        check_model_and_tokenizer(cfg)
        check_output_dir(cfg)

    def _tokenizer(
        self, episodes: Sequence[Episode], cfg: TrainConfig, out: Path, resuming: bool
    ) -> Any:
        if resuming and (out / "tokenizer_config.json").is_file():
            return AutoTokenizer.from_pretrained(str(out))
        if cfg.tokenizer == "train":
            return train_tokenizer(corpus_texts(episodes), cfg.vocab_size)
        if cfg.tokenizer is not None:  # a directory: check() made sure
            return AutoTokenizer.from_pretrained(cfg.tokenizer)
        return None

    def train(self, episodes: Sequence[Episode], config: dict[str, Any] | TrainConfig) -> str:
        """Train on ``episodes`` and return ``output_dir`` (a ``from_pretrained``-loadable checkpoint).

        Bad input fails before any model is loaded (:meth:`check`) or, for the
        model and tokenizer themselves, before the first training step. A run that fails
        removes the ``output_dir`` it created unless a checkpoint to resume was saved there.
        With ``overwrite`` (and no ``resume``), an earlier run's state, weights, adapter and
        log are removed first (:func:`agentworld.trainers.training.checkpoint.clear`).

        Raises:
            agentworld.trainers.training.config.ConfigError: invalid ``config`` (unknown keys included).
            agentworld.trainers.models.specs.ModelSpecError: unknown preset, missing model
                path, checkpoint without a tokenizer, preset without one, ``tokenizer`` path
                missing, tokenizer larger than the model's vocabulary.
            ValueError: no usable episodes (see :meth:`check` and the stage's own checks).
            OutputDirError: see :meth:`check`.
        """
        cfg = (
            config if isinstance(config, self.config_cls) else validate_config(self.config_cls, config)
        )
        self.check(episodes, cfg)
        out = Path(cfg.output_dir)
        with output_dir_guard(out):
            return self._train(episodes, cfg, out)

    def _train(self, episodes: Sequence[Episode], cfg: TrainConfig, out: Path) -> str:
        if cfg.num_threads:
            torch.set_num_threads(cfg.num_threads)
        state_dir = prepare_output_dir(cfg)
        write_card(out, self.card(episodes, cfg))
        tokenizer = self._tokenizer(episodes, cfg, out, state_dir is not None)
        set_seed(cfg.seed)
        # Before the model loads: FSDP's cpu_ram_efficient_loading (weights read on rank 0 only)
        # takes effect through the environment the Accelerator sets up.
        acc = make_accelerator(cfg)
        model, tokenizer = load_policy(
            cfg, tokenizer, freeze_layers=cfg.freeze_layers,
            gradient_checkpointing=cfg.gradient_checkpointing,
        )  # fmt: skip
        text_config = model.config.get_text_config()
        if text_config.max_position_embeddings < cfg.max_seq_len:
            # Trained on longer windows than the config states (rotary positions extrapolate):
            # the checkpoint declares the context it was trained on, so inference does not cut
            # prompts to the shorter one.
            acc.print(f"max_position_embeddings {text_config.max_position_embeddings} -> "
                      f"{cfg.max_seq_len} (max_seq_len)")
            text_config.max_position_embeddings = cfg.max_seq_len
        data = self.samples(episodes, tokenizer, cfg)
        if self.data_summary:
            acc.print(self.data_summary)
        if cfg.packing:
            data = speed.pack(data, cfg.max_seq_len)
        if acc.state.deepspeed_plugin is not None:
            # No dataloader goes through prepare(), so DeepSpeed cannot infer its micro-batch;
            # and DeepSpeed clips gradients itself (clip_grad_norm_ is then a no-op), so it
            # gets our threshold, whatever the launch config says.
            ds = acc.state.deepspeed_plugin.deepspeed_config
            ds["train_micro_batch_size_per_gpu"] = cfg.batch_size
            ds["gradient_clipping"] = cfg.max_grad_norm
        model, opt = acc.prepare(model, make_optimizer(model, cfg))
        # window_*: the steps since the last log record, saved so that the first record after
        # a resume averages the same steps as an uninterrupted run's.
        counters = {"step": 0, "micro": 0, "tokens": 0, "elapsed_s": 0.0,
                    "window_loss": 0.0, "window_steps": 0}
        restore(acc, out, state_dir, counters)
        per_epoch = len(length_batches([len(s) for s in data], cfg.batch_size, cfg.seed))
        steps_per_epoch = per_epoch / (cfg.grad_accum * acc.num_processes)
        total = cfg.max_steps
        if cfg.epochs is not None or (total is None and cfg.time_budget_s is None):
            by_epochs = max(1, math.ceil((cfg.epochs or 1.0) * steps_per_epoch))
            total = min(total, by_epochs) if total else by_epochs
        self.make_loop(acc, model, opt, tokenizer, data, cfg, out, counters, total).run()
        return str(out)

    def make_loop(
        self,
        acc: Accelerator,
        model: Any,
        opt: Any,
        tokenizer: Any,
        data: list[Sample],
        cfg: TrainConfig,
        out: Path,
        counters: dict[str, Any],
        total: int | None,
    ) -> TrainLoop:
        """The stage's :class:`~agentworld.trainers.training.loop.TrainLoop` (the hook a stage
        overrides to train otherwise: ``rl`` returns its GRPO loop)."""
        return SupervisedLoop(
            acc, model, opt, tokenizer, cfg, out, counters, total, stage=self.name, data=data
        )
