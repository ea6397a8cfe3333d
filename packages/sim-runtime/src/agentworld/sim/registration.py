"""Gymnasium registration of simulated environments: ``gymnasium.make("agentworld/sim-v0",
checkpoint=DIR)`` and ``gymnasium.make_vec("agentworld/sim-v0", num_envs=N, checkpoint=DIR)``.

Registered when :mod:`agentworld.sim` is imported (no torch is imported until an environment
is made). The id makes a :class:`~agentworld.sim.SimEnv` on the world model a sim backend loads
from ``checkpoint``, for the domain its card names (``agentworld.json``,
:mod:`agentworld.core.card`) unless ``domain`` is given; with the domain come its task sampler
(``reset(seed=s)`` draws a task), system prompt, first observation and reward source.

``make_vec`` builds the batched :class:`~agentworld.sim.SimVectorEnv` by default (Gymnasium's
``vectorization_mode="vector_entry_point"``): one world model, all ``N`` episodes in one
batched ``predict`` per step. ``vectorization_mode="sync"`` gives ``N`` :class:`SimEnv` in one
process, ``"async"`` ``N`` worker processes each loading its own copy of the model (with
``vector_kwargs={"shared_memory": False}``: observations are free text,
:class:`agentworld.core.gymvec.FreeText`).
"""

from __future__ import annotations

from typing import Any

import gymnasium

ENV_ID = "agentworld/sim-v0"


def _load(checkpoint: str | None, domain: Any, backend: str,
          load_options: dict[str, Any] | None) -> tuple[Any, Any]:
    """``(world model, domain object)`` for the arguments of :func:`make_sim_env`."""
    if checkpoint is None:
        raise ValueError(
            f'{ENV_ID} needs a checkpoint: gymnasium.make("{ENV_ID}", checkpoint="runs/x/sft")'
        )
    from agentworld.core import plugins
    from agentworld.core.card import read_card

    if domain is None:
        domain = read_card(checkpoint).get("domain") or "terminal"
    if isinstance(domain, str):
        domain = plugins.get_domain(domain)
    return plugins.get_sim_backend(backend).load(checkpoint, **(load_options or {})), domain


def make_sim_env(
    checkpoint: str | None = None,
    *,
    domain: Any = None,
    backend: str = "hf",
    load_options: dict[str, Any] | None = None,
    **env_options: Any,
) -> Any:
    """A :class:`~agentworld.sim.SimEnv` on the world model in ``checkpoint``.

    Args:
        checkpoint: What the backend loads (for ``hf``: a checkpoint directory).
        domain: A domain object or installed domain name; default: the one the checkpoint's
            card records, else ``terminal``.
        backend: Sim backend plugin name (``hf``, ``openai``, ``vllm``).
        load_options: Keyword arguments of the backend's ``load`` (``max_new_tokens``,
            ``temperature``, ``device``, ...).
        env_options: Further :class:`~agentworld.sim.SimEnv` keyword arguments
            (``max_steps``, ``reward_source``, ``render_mode``, ...).

    Raises:
        ValueError: no ``checkpoint`` was given.
        agentworld.core.plugins.UnknownPluginError: an unknown backend or domain name.
    """
    from agentworld.sim.env import SimEnv

    world_model, domain = _load(checkpoint, domain, backend, load_options)
    return SimEnv(world_model, domain=domain, **env_options)


def make_sim_vector_env(
    num_envs: int = 1,
    checkpoint: str | None = None,
    *,
    domain: Any = None,
    backend: str = "hf",
    load_options: dict[str, Any] | None = None,
    **env_options: Any,
) -> Any:
    """A :class:`~agentworld.sim.SimVectorEnv` of ``num_envs`` episodes on one world model
    (Gymnasium's ``vector_entry_point`` of :data:`ENV_ID`).

    Args: as :func:`make_sim_env`; ``env_options`` are
    :class:`~agentworld.sim.SimVectorEnv` keyword arguments (``max_steps``,
    ``reward_source``, ``tasks``, ...).

    Raises:
        ValueError: no ``checkpoint``, or ``num_envs < 1``.
        agentworld.core.plugins.UnknownPluginError: an unknown backend or domain name.
    """
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    from agentworld.sim.vector_env import SimVectorEnv

    world_model, domain = _load(checkpoint, domain, backend, load_options)
    return SimVectorEnv(world_model, num_envs, domain=domain, **env_options)


def register_envs() -> None:
    """Register :data:`ENV_ID` with Gymnasium (once; nothing is loaded)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point=make_sim_env, vector_entry_point=make_sim_vector_env)
