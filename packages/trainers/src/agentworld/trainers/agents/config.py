"""Options of the ``agent`` trainer (``agentworld train agent``; Q-learning, and the keys that
choose the environment for ``policy="lm"``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class AgentConfig(BaseModel):
    """``agent`` trainer options (unknown keys are errors).

    Attributes:
        output_dir: Where ``agent.json`` and ``metrics.json`` are written.
        env: ``real:DOMAIN`` or ``sim:CHECKPOINT``.
        mix: Fraction of real episodes in [0, 1] (``None``: 1 for ``real:``, 0 for ``sim:``).
            With ``sim:`` and ``mix > 0`` the real share runs in the checkpoint domain's real env.
        policy: ``"q-learning"`` (here) or ``"lm"`` (handed to ``agent_lm``).
        episodes: Training episodes (real plus simulated).
        alpha: Q-learning rate.
        gamma: Discount factor.
        epsilon_start, epsilon_end: Exploration rate at the first / after the decay episodes.
        epsilon_decay: ``"linear"`` or ``"exponential"``.
        epsilon_decay_episodes: Episodes to decay over (default: 80% of ``episodes``).
        initial_q: Value of unseen state-action pairs; above any reachable return it makes
            exploration systematic ("optimistic initial values", Sutton & Barto 2018, sec. 2.6).
        ignore_lines: Observation line prefixes left out of the Q-table's state key
            (default: the classic domains' ``reward:`` line; ``[]`` keys by the whole text).
        key_lines: Observation line prefixes that alone make the state key when present
            (e.g. ``["agent:", "taxi:", "passenger:"]``: the agent perceives its cell, not the
            drawing); ``[]`` (default) uses ``ignore_lines``.
        seed: Seeds the agent, real training episodes and the world model's sampler.
        num_envs: Simulated episodes stepped together (one batched world-model call per step).
        max_steps: Steps per training episode before truncation.
        eval_episodes: Real evaluation episodes (0: skip evaluation).
        eval_seed: Seed of the first evaluation episode (fixed, so arms share episodes).
        eval_max_steps: Steps per evaluation episode before it counts as a failure.
        baseline: Also evaluate the random policy on the same episodes.
        domain: Domain name for ``sim:`` (default: the one the checkpoint records).
        backend: Sim backend plugin name.
        temperature: World-model sampling temperature (1.0 represents stochastic dynamics).
        max_new_tokens: World-model answer limit per step (tokens).
        reward_source: ``"model"``, ``"verifier"`` or ``"none"``; default from the domain.
        on_parse_error: ``"truncate"`` or ``"retry"`` an unparsed simulated answer.
        max_retries: Re-samples per step with ``on_parse_error="retry"``.
        load_options: More options of the backend's ``load`` (``device``, ``engine_options``).
        init_agent: An ``agent.json`` to continue from (its Q-table; exploration restarts
            with this config's schedule), e.g. an agent pre-trained in the simulator.
        model: Unused by Q-learning (accepted so the CLI can pass ``--model``).
        progress: Show a rich progress bar.
        callback: Called with a log record every ``log_every`` episodes (programmatic use).
        log_every: Episodes between log records.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, allow_inf_nan=False)

    output_dir: str
    env: str
    mix: float | None = None
    policy: Literal["q-learning", "lm"] = "q-learning"
    episodes: int = Field(1000, ge=1)
    alpha: float = Field(0.1, gt=0, le=1)
    gamma: float = Field(0.99, ge=0, le=1)
    epsilon_start: float = Field(1.0, ge=0, le=1)
    epsilon_end: float = Field(0.05, ge=0, le=1)
    epsilon_decay: Literal["linear", "exponential"] = "linear"
    epsilon_decay_episodes: int | None = Field(None, ge=1)
    initial_q: float = 0.0
    ignore_lines: list[str] = Field(default_factory=lambda: ["reward:"])
    key_lines: list[str] = Field(default_factory=list)
    seed: int = 0
    num_envs: int = Field(64, ge=1)
    max_steps: int = Field(100, ge=1)
    eval_episodes: int = Field(500, ge=0)
    eval_seed: int = 1_000_000
    eval_max_steps: int = Field(200, ge=1)
    baseline: bool = True
    domain: str | None = None
    backend: str = "hf"
    temperature: float = Field(1.0, ge=0)
    max_new_tokens: int = Field(256, ge=1)
    reward_source: Literal["model", "verifier", "none"] | None = None
    on_parse_error: Literal["truncate", "retry"] = "truncate"
    max_retries: int = Field(2, ge=0)
    load_options: dict[str, Any] = Field(default_factory=dict)
    init_agent: str | None = None
    model: str | None = None
    progress: bool = True
    callback: Callable[[dict[str, Any]], None] | None = Field(None, exclude=True)
    log_every: int = Field(100, ge=1)

    @field_validator("mix")
    @classmethod
    def _mix_in_range(cls, value: float | None) -> float | None:
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError(f"--mix is the fraction of real episodes, in [0, 1]; got {value}")
        return value
