"""The ``agent`` trainer: an RL agent trained on real, simulated or mixed (Dyna-style) experience.

``policy="q-learning"`` trains a :class:`~agentworld.trainers.agents.qlearning.QLearningAgent`
(:func:`agentworld.trainers.agents.dyna.train_q_learning`, options
:class:`~agentworld.trainers.agents.config.AgentConfig`); ``policy="lm"`` hands over to :func:`agentworld.trainers.agents.lm.trainer.train_lm_agent`
(multi-turn GRPO of a language-model policy). ``env`` says where experience comes from:
``real:DOMAIN`` (the domain's real environment) or ``sim:CHECKPOINT`` (a world model served as
a :class:`~agentworld.sim.SimVectorEnv`); ``mix`` is the fraction of real episodes, real and
simulated episodes interleaved in that ratio and one agent learning from both (Dyna: Sutton,
1990, "Integrated architectures for learning, planning, and reacting based on approximating
dynamic programming", ICML). Every agent is then evaluated greedily on the REAL environment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentworld.core import plugins
from agentworld.core.types import Episode
from agentworld.trainers.agents.config import AgentConfig
from agentworld.trainers.agents.dyna import train_q_learning
from agentworld.trainers.agents.envs import (
    Source,
    checkpoint_card,
    checkpoint_dir,
    parse_env_spec,
)
from agentworld.trainers.training.config import option_help, validate_config


class AgentTrainer:
    """The ``agent`` Trainer plugin: ``train(episodes, config) -> output_dir``.

    ``episodes`` (collected data) is unused by Q-learning, which gathers its own experience;
    ``needs_data`` / ``needs_model`` tell the CLI that ``--data`` and ``--model`` are optional.
    """

    name = "agent"
    needs_data = False
    needs_model = False

    def train(self, episodes: Sequence[Episode], config: dict[str, Any]) -> str:
        """Train, evaluate on the real env, write ``agent.json`` and ``metrics.json``.

        Raises:
            ValueError: bad options (unknown key, ``mix`` outside [0, 1], a malformed ``env``,
                a ``sim:`` path that is no checkpoint, a domain without action words, no
                domain for the checkpoint, or simulated experience without rewards).
            agentworld.core.plugins.UnknownPluginError: unknown domain or backend.
            RuntimeError: ``policy="lm"`` but the LM agent trainer is not installed.
        """
        if config.get("policy") == "lm":
            return _train_lm(config)
        return train_q_learning(validate_config(AgentConfig, config))

    def options(self) -> list[tuple[str, str, str]]:
        """``(key, default, description)`` of every Q-learning option (``policy="lm"`` takes
        ``agent_lm``'s instead)."""
        return option_help(AgentConfig)

    def check_options(self, config: dict[str, Any]) -> None:
        """Validate Q-learning options without training (``policy="lm"`` options are checked
        by ``agent_lm`` when :meth:`train` hands them over).

        Raises:
            ValueError: an unknown key or a value :class:`AgentConfig` refuses.
        """
        if config.get("policy") != "lm":
            validate_config(AgentConfig, config)



LM_DISPATCH_KEYS = (
    "env",
    "mix",
    "policy",
    "domain",
    "backend",
    "num_tasks",
    "sim_temperature",
    "sim_max_new_tokens",
    "reward_source",
    "on_parse_error",
    "max_retries",
    "sim_max_steps",
)


def _train_lm(config: dict[str, Any]) -> str:
    """Hand ``policy="lm"`` to ``agentworld.trainers.agents.lm.trainer.train_lm_agent(env_factory, tasks,
    config)``.

    Keys used here (the rest go to ``train_lm_agent``'s own config): ``env``, ``mix`` (only
    the trivial value), ``domain`` (``sim:`` without a card), ``backend``, ``num_tasks``
    (tasks drawn with ``seed``, default 64), and for ``sim:`` the world model's
    ``sim_temperature`` (1.0), ``sim_max_new_tokens`` (256), ``sim_max_steps`` (50),
    ``reward_source``, ``on_parse_error``, ``max_retries``. ``env_factory()`` builds the
    domain's real env (``real:``) or a ``SimEnv`` on one world model per process (``sim:``,
    :class:`agentworld.sim.SimEnvFactory`, so ``rollout_executor = "ray"`` works with both).

    Raises:
        RuntimeError: ``agentworld.trainers.agents.lm.trainer`` is not installed.
        ValueError: a bad ``env``, a non-trivial ``mix`` (Q-learning only) or no domain; bad
            LM options or a taken ``output_dir`` (``check_lm_agent``), before anything loads.
    """
    try:
        from agentworld.trainers.agents.lm.trainer import check_lm_agent, train_lm_agent
    except ImportError as e:
        raise RuntimeError(
            "policy='lm' needs the LM-policy GRPO trainer (agentworld.trainers.agents.lm.trainer), "
            f"which is not available in this installation: {e}"
        ) from e
    opts = {k: config[k] for k in LM_DISPATCH_KEYS if k in config}
    rest = {k: v for k, v in config.items() if k not in LM_DISPATCH_KEYS}
    spec = parse_env_spec(str(opts.get("env", "")))
    if opts.get("mix") not in (None, 1.0 if spec.kind is Source.REAL else 0.0):
        raise ValueError("--mix (real/simulated episode mix) is supported for policy='q-learning'")
    cfg = check_lm_agent(rest)  # bad options and a taken output_dir fail before any loading
    seed = cfg.seed
    if spec.kind is Source.REAL:
        domain = plugins.get_domain(spec.target)
        env_factory: Callable[[], Any] = domain.make_env
    else:
        ckpt = checkpoint_dir(spec.target)
        name = opts.get("domain") or checkpoint_card(ckpt).get("domain")
        if not name:
            raise ValueError(
                f"checkpoint {spec.target!r} records no domain; pass --set domain=NAME"
            )
        domain = plugins.get_domain(name)
        env_options = {
            k: opts[k] for k in ("reward_source", "on_parse_error", "max_retries") if k in opts
        }
        from agentworld.sim import SimEnvFactory

        # Picklable: with rollout_executor="ray" each actor loads its own world model.
        env_factory = SimEnvFactory(
            str(ckpt),
            backend=opts.get("backend", "hf"),
            domain=name,
            load_options={
                "temperature": float(opts.get("sim_temperature", 1.0)),
                "seed": seed,
                "max_new_tokens": int(opts.get("sim_max_new_tokens", 256)),
            },
            env_options={"max_steps": int(opts.get("sim_max_steps", 50)), **env_options},
        )

    tasks = list(domain.tasks().sample(int(opts.get("num_tasks", 64)), seed=seed))
    return train_lm_agent(env_factory, tasks, cfg)
