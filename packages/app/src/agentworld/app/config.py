"""Pipeline configuration (pydantic), read from TOML.

A pipeline file has a ``[run]`` table and one table per stage to run, in the
fixed order :data:`STAGES`. Each stage names the plugin that implements it
(``trainer = "cpt"``, ``backend = "hf"``, ``rewards = [...]``); options the
application does not know are passed through to that plugin unchanged.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

STAGES = ("collect", "cpt", "sft", "rl", "eval", "simulate")


class RunConfig(BaseModel):
    """``[run]``: where outputs go, the global seed, and the datasets stages share.

    ``train_data`` / ``heldout_data`` default to ``{dir}/episodes/train.jsonl``
    and ``{dir}/episodes/heldout.jsonl``; ``collect`` writes them, training and
    evaluation read them, so a pipeline without ``[collect]`` can point them at
    existing episode files (any fsspec URL).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    dir: str = "runs/default"
    seed: int = 0
    domain: str = "terminal"
    train_data: str | None = None
    heldout_data: str | None = None


class CollectConfig(BaseModel):
    """``[collect]``: real-environment episode collection."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    episodes: int = Field(400, ge=1)
    policies: dict[str, float] = Field(default_factory=lambda: {"scripted": 0.5, "random": 0.5})
    max_steps: int = Field(12, ge=1)
    heldout_fraction: float = Field(0.2, gt=0, lt=1)
    workers: int = Field(2, ge=1)
    # Where the environments run: "threads" (this process) or "ray" (Ray actors, one CPU each;
    # agentworld-core[ray]) on the cluster at ray_address (None: a new local one).
    executor: Literal["threads", "ray"] = "threads"
    ray_address: str | None = None
    # Out-of-distribution hold-out (agentworld.core.holdout): episodes of these task kinds, or
    # running any of these command families, go to episodes/ood.jsonl, never to a training split.
    ood_task_kinds: list[str] = Field(default_factory=list)
    ood_commands: list[str] = Field(default_factory=list)
    # Evaluation sets: policies with a fixed set of their own tasks (the terminal's `handwritten`
    # sessions), collected once each into episodes/NAME.jsonl and never trained on.
    eval_sets: list[str] = Field(default_factory=list)
    # Steps an evaluation set's episode runs at most (None: max_steps); the terminal's `long`
    # sessions (30+ turns, for fidelity by turn index) need 36.
    eval_max_steps: int | None = Field(None, ge=1)
    # Realistic hold-out: episodes whose task kind is one of these real sources (the terminal's
    # `real` policy: "info:grep", "man:xxd", ...) go to episodes/realistic.jsonl, never trained on.
    realistic_sources: list[str] = Field(default_factory=list)
    # Options of the domain's real environment, as `agentworld collect --set` gives them, checked
    # by the domain's options class before anything is written (agentworld.core.options):
    # `env_options = { max_steps = 30 }`, or a [collect.env_options] table.
    env_options: dict[str, Any] = Field(default_factory=dict)


class TrainStageConfig(BaseModel):
    """``[cpt]`` / ``[sft]`` / ``[rl]``: a training stage; unknown keys go to the trainer plugin."""

    model_config = ConfigDict(extra="allow")

    trainer: str | None = None
    model: str | None = None
    # The two budgets every trainer takes (declared so that `--budget-scale` can scale them):
    # optimizer steps (reproducible: same seed and thread count, same model on any machine) and
    # seconds (what the machine manages in that time).
    max_steps: int | None = Field(None, ge=1)
    time_budget_s: float | None = Field(None, gt=0)

    def scale_budgets(self, factor: float) -> None:
        """Multiply ``max_steps`` (rounded, at least 1) and ``time_budget_s`` by ``factor``."""
        if self.max_steps is not None:
            self.max_steps = max(1, round(self.max_steps * factor))
        if self.time_budget_s is not None:
            self.time_budget_s = self.time_budget_s * factor

    def options(self) -> dict[str, Any]:
        """Options for the trainer plugin (everything but ``trainer``, ``None`` dropped)."""
        data = self.model_dump(exclude={"trainer"})
        return {k: v for k, v in data.items() if v is not None}


class EvalConfig(BaseModel):
    """``[eval]``: next-observation fidelity on held-out real transitions."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    backend: str = "hf"
    model: str | None = None
    # "nearest" (retrieval-only) answers from the run's training episodes; left out without them
    baselines: list[str] = Field(default_factory=lambda: ["copy-previous", "empty", "nearest"])
    rewards: list[str] = Field(
        default_factory=lambda: ["exact_match", "edit_similarity", "domain", "format_validity"])
    # reward name -> options of its factory, e.g. {"llm_judge": {"base_url": ..., "model": ...}}
    reward_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    max_transitions: int = Field(400, ge=1)
    ood_max_transitions: int = Field(200, ge=0)  # from episodes/ood.jsonl when it exists
    # From episodes/realistic.jsonl and each evaluation set's episodes/NAME.jsonl, each at most.
    realistic_max_transitions: int = Field(150, ge=0)
    eval_sets: list[str] = Field(default_factory=list)  # beside those [collect] eval_sets names
    batch_size: int = Field(32, ge=1)
    max_new_tokens: int = Field(256, ge=1)
    num_beams: int = Field(1, ge=1)  # > 1: beam search (hf backend), else greedy
    allow_hub: bool = True  # `model` may be a Hugging Face Hub id (downloads), as in training


class SimulateConfig(BaseModel):
    """``[simulate]``: replay held-out episodes' actions in the simulator beside the real ones."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    backend: str = "hf"
    model: str | None = None
    episodes: int = Field(3, ge=1)
    max_steps: int = Field(6, ge=1)
    max_new_tokens: int = Field(256, ge=1)
    num_beams: int = Field(1, ge=1)  # > 1: beam search (hf backend), else greedy
    allow_hub: bool = True  # `model` may be a Hugging Face Hub id (downloads), as in training


class PipelineConfig(BaseModel):
    """A whole pipeline: ``[run]`` plus any of the stage tables."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    run: RunConfig = Field(default_factory=RunConfig)
    collect: CollectConfig | None = None
    cpt: TrainStageConfig | None = None
    sft: TrainStageConfig | None = None
    rl: TrainStageConfig | None = None
    eval: EvalConfig | None = None
    simulate: SimulateConfig | None = None

    def stages(self) -> list[str]:
        """Names of the stages present, in pipeline order."""
        return [s for s in STAGES if getattr(self, s) is not None]


class ConfigError(ValueError):
    """An invalid pipeline file; the message names the file and the field."""


def parse_config(text: str, source: str = "<string>") -> PipelineConfig:
    """Parse pipeline TOML text.

    Raises:
        ConfigError: invalid TOML or an invalid field (named with its table path).
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: invalid TOML: {e}") from None
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"{source}: " + "; ".join(_problem(err) for err in e.errors())) from None


def _problem(err: Any) -> str:
    """One pydantic error of a pipeline file as ``[table.key] what is wrong``; an unknown table
    lists the tables, an unknown key its table's keys."""
    loc = [str(part) for part in err["loc"]]
    where = f"[{'.'.join(loc)}]"
    if err["type"] != "extra_forbidden":
        return f"{where} {err['msg']}"
    if len(loc) == 1:
        return f"{where} unknown table; valid tables: run, {', '.join(STAGES)}"
    closed = {"run": RunConfig, "collect": CollectConfig, "eval": EvalConfig,
              "simulate": SimulateConfig}  # training tables pass unknown keys to their trainer
    keys = f"; valid keys: {', '.join(closed[loc[0]].model_fields)}" if loc[0] in closed else ""
    return f"{where} unknown key{keys}"


def load_config(path: str | Path) -> PipelineConfig:
    """Read a pipeline TOML file. Raises :class:`ConfigError` or ``FileNotFoundError``."""
    path = Path(path)
    return parse_config(path.read_text(encoding="utf-8"), str(path))


def quickstart_config(full: bool = False) -> PipelineConfig:
    """The embedded default pipeline run by ``agentworld quickstart``: ``quickstart.toml``, or
    with ``full`` the full recipe ``quickstart-full.toml`` (``agentworld quickstart --full``)."""
    from importlib.resources import files

    name = "quickstart-full.toml" if full else "quickstart.toml"
    text = files("agentworld.app").joinpath(name).read_text(encoding="utf-8")
    return parse_config(text, name)
