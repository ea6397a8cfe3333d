"""Running one real episode of a collection: the policy plays its task in the domain's real
environment and the episode is recorded (privileged state, visible escapes, restarts, tool
coverage). What a collection thread (:func:`agentworld.core.collect.collect`) and a Ray worker
(:mod:`agentworld.core.ray_collect`) both run, so they record the same episodes."""

from __future__ import annotations

from typing import Any

from agentworld.core.domain_base import domain_hooks
from agentworld.core.env_checks import CheckedEnvironment, checked_prompt, policy_action
from agentworld.core.escapes import visible, visible_strings
from agentworld.core.protocols import (
    Domain,
    PrivilegedEnvironment,
    PromptingEnvironment,
    ResettablePolicy,
    TaskingPolicy,
)
from agentworld.core.rollout import each, rollout, text_of
from agentworld.core.tool_coverage import episode_coverage
from agentworld.core.types import Action, Episode, Observation, ObservationText, Step, Task


def recorded(env: Any, observation: Any) -> Observation:
    """The observation to record: ``observation`` (an :class:`Observation`, or the text a
    Gymnasium-style env returns, e.g. :class:`~agentworld.core.types.ObservationText`) with
    the env's privileged state (``env.privileged_state()`` when it has one and it is not
    ``None``: the state the agent is not shown, such as a file-tree snapshot), else its own.

    Text that cannot be UTF-8 encoded (a file name with undecodable bytes, which Python holds
    as lone surrogates) is recorded as visible escapes (:func:`agentworld.core.escapes.visible`:
    byte ``0xff`` as ``\\xff``), in the text and in every key and value of the state, so the
    episode can be written and every later use of it sees the same names."""
    state = env.privileged_state() if isinstance(env, PrivilegedEnvironment) else None
    if state is None and isinstance(observation, (Observation, ObservationText)):
        state = observation.state
    text = text_of(observation)
    return Observation(text=visible(str(text)), state=visible_strings(state))


def visible_action(action: Any) -> Any:
    """An :class:`Action` whose text and arguments hold lone surrogates (e.g. a model's JSON
    answer with ``"\\udcff"``) with them as visible escapes
    (:func:`agentworld.core.escapes.visible_strings`); other values (``None``: stop) unchanged."""
    if not isinstance(action, Action):
        return action
    return Action.model_validate(visible_strings(action.model_dump()))


def run_episode(
    domain: Domain, env: Any, task: Task | None, policy: Any, *, seed: int, max_steps: int
) -> Episode:
    """Roll out ``policy`` in a real ``env`` for at most ``max_steps`` steps and return the episode
    (:func:`agentworld.core.rollout.rollout` on one environment; the policy's ``act(task,
    history)`` returning ``None`` ends it).

    Observations are recorded with the env's privileged state (:func:`recorded`); text that
    cannot be UTF-8 encoded, in observations and actions alike, is recorded as visible escapes
    (:func:`agentworld.core.escapes.visible`); an action is escaped before the env runs it, so
    the recorded action is the one run. An episode in which the environment restarted its
    server or shell (a step whose ``info["restarted"]`` is true: it died or hung) is marked:
    ``metadata["restarted_steps"]`` lists those steps (0-based), so that data filters can
    drop or keep them. An episode of a tool environment (steps with ``info["tool"]``) gets
    ``metadata["coverage"]`` (:func:`agentworld.core.tool_coverage.episode_coverage`: its
    share of non-error responses, the tools that answered without an error, its response
    shapes).

    Raises:
        agentworld.core.errors.PluginContractError: the environment's ``reset`` or ``step``
            returned another shape than Gymnasium 1.x's, or ``system_prompt`` no ``str``
            (:mod:`agentworld.core.env_checks`).
        agentworld.core.errors.PluginRuntimeError: the environment raised; the message
            names the domain, its plugin, the call and where it raised."""
    if isinstance(policy, ResettablePolicy):
        policy.reset(seed)
    [run] = rollout(
        [CheckedEnvironment(domain, env)],  # a wrong result or an exception names the plugin
        each(lambda e: visible_action(policy_action(domain, policy, task, e.history))),
        max_steps,
        tasks=[task],
        seeds=[seed],
        record=lambda _checked, observation: recorded(env, observation),
    )
    steps = [
        Step(
            action=t.action,
            observation=t.observation,
            reward=t.reward,
            terminated=t.terminated,
            truncated=t.truncated,
            info=t.info,
        )
        for t in run.transitions
    ]
    restarts = [i for i, step in enumerate(steps) if step.info.get("restarted")]
    episode = Episode(
        domain=domain.name,
        task=task,
        system_prompt=checked_prompt(domain, (
            env.system_prompt(task) if isinstance(env, PromptingEnvironment)
            else domain.system_prompt(task)
        )),
        initial_observation=run.initial_observation,
        steps=steps,
        metadata={
            "env_version": domain.version,
            "policy": policy.name,
            "seed": seed,
            "source": "real",
            **world_model_contract(domain),
            **({"restarted_steps": restarts} if restarts else {}),
        },
    )
    coverage = episode_coverage(episode)
    if coverage is not None:
        episode.metadata["coverage"] = coverage
    return episode


def episode_task(policy: Any, sampled: Task | None, seed: int) -> Task | None:
    """The task ``policy`` plays in the episode with ``seed``: its own ``task(seed)`` when it
    brings its tasks (:class:`~agentworld.core.protocols.TaskingPolicy`), else ``sampled`` (the
    domain sampler's task for that episode). Every executor asks here."""
    return policy.task(seed) if isinstance(policy, TaskingPolicy) else sampled


def collect_episode(
    domain: Domain, env: Any, policy_name: str, sampled: Task | None, *, seed: int,
    max_steps: int,
) -> Episode:
    """Episode ``seed`` of a collection: the domain's policy named ``policy_name`` plays
    :func:`episode_task` in ``env`` (:func:`run_episode`). What a collection thread and a Ray
    worker (:mod:`agentworld.core.ray_collect`) both run, so they record the same episodes."""
    policy = domain.policies()[policy_name]
    task = episode_task(policy, sampled, seed)
    return run_episode(domain, env, task, policy, seed=seed, max_steps=max_steps)


def world_model_contract(domain: Any) -> dict[str, Any]:
    """The rendering facts a domain fixes for its world model, stored in episode metadata:
    ``rewards`` (the answer carries the reward footer) when ``domain.defines_rewards`` and
    ``history_window`` (turns of history shown) when the domain sets one."""
    hooks = domain_hooks(domain)
    out: dict[str, Any] = {}
    if hooks.defines_rewards:
        out["rewards"] = True
    if hooks.history_window is not None:
        out["history_window"] = int(hooks.history_window)
    return out
