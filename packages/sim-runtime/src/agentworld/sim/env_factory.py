"""``SimEnvFactory``: a picklable maker of simulated environments, one world model a process.

Sent to Ray actors (:class:`agentworld.core.ray_envs.RayEnvironments`, the agent trainer's
``rollout_executor = "ray"``) it gives each actor its own world model, loaded on the actor's
first call: an engine on a checkpoint (``backend="hf"``), or a client to a served model
(``backend="openai"``, e.g. ``agentworld serve-openai``, vLLM or SGLang), shared by that
actor's environments so their steps batch on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SimEnvFactory:
    """``factory() -> SimEnv`` on the world model of ``model`` loaded by sim backend
    ``backend`` (a registered name: ``hf``, ``openai``, ``vllm``), once per process.

    Attributes:
        model: Checkpoint directory (``hf``), or the served model's name (``openai``, with
            ``load_options={"base_url": ...}``).
        backend: Sim backend name.
        domain: Registered domain name giving prompts, tasks and rewards (``None``: none).
        load_options: Keyword options of the backend's ``load`` (decoding, ``engine_options``).
        env_options: Keyword options of :class:`~agentworld.sim.SimEnv` (``system_prompt``,
            ``initial_observation``, ``max_steps``, ``reward_source``, ...).

    The loaded world model is not pickled: a copy sent elsewhere loads its own. Errors are
    the backend's (``UnknownPluginError`` for an unknown ``backend`` or ``domain``; a missing
    checkpoint) and are raised by the first call.
    """

    model: str
    backend: str = "hf"
    domain: str | None = None
    load_options: dict[str, Any] = field(default_factory=dict)
    env_options: dict[str, Any] = field(default_factory=dict)
    _world_model: Any = field(default=None, init=False, repr=False, compare=False)

    def __call__(self) -> Any:
        from agentworld.core.plugins import get_sim_backend

        backend = get_sim_backend(self.backend)
        if self._world_model is None:
            self._world_model = backend.load(self.model, **self.load_options)
        return backend.make_env(self._world_model, self.domain, **self.env_options)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_world_model": None}
