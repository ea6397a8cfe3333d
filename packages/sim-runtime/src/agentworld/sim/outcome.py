"""Reward and termination of a simulated step, and what to do with an unparsed answer.

Three sources of reward and termination (``reward_source``):

- ``"model"``: the world model's own prediction, the footer of its answer
  (:func:`agentworld.core.formats.parse_transition`), learned from real transitions as
  Dreamer-style world models learn theirs (Hafner et al. 2023, arXiv 2301.04104);
- ``"verifier"``: a :class:`~agentworld.core.protocols.RewardingDomain`'s
  ``verify(observation, task) -> (reward, terminated) | None``
  applied to the simulated observation (``None`` counts as reward 0, not terminated,
  and is reported in ``info["verified"] = False``);
- ``"none"``: reward ``0.0``, never terminated (a domain without rewards).

An answer that does not parse (``on_parse_error``): ``"truncate"`` ends the episode with
``info["truncated_reason"] = "malformed"``; ``"retry"`` samples again, up to
``max_retries`` times, then truncates. :func:`sample_steps` and :func:`settle_step` are the
step of :class:`~agentworld.sim.SimEnv` and :class:`~agentworld.sim.SimVectorEnv` alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentworld.core.domain_base import domain_hooks
from agentworld.core.env_checks import verdict

REWARD_SOURCES = ("model", "verifier", "none")
PARSE_ERROR_POLICIES = ("truncate", "retry")


def resolve_reward_source(requested: str | None, domain: Any, model_rewards: bool) -> str:
    """The reward source to use: ``requested``, or by default ``"model"`` when the world
    model predicts rewards, else ``"verifier"`` when the domain has ``verify``, else ``"none"``.

    Raises:
        ValueError: an unknown source, ``"model"`` with a world model that predicts no
            reward footer, or ``"verifier"`` with a domain without ``verify``.
    """
    has_verify = domain is not None and domain_hooks(domain).has_verifier
    if requested is None:
        return "model" if model_rewards else "verifier" if has_verify else "none"
    if requested not in REWARD_SOURCES:
        raise ValueError(f"reward_source must be one of {REWARD_SOURCES}, got {requested!r}")
    if requested == "model" and not model_rewards:
        raise ValueError(
            "reward_source='model' needs a world model whose answers carry the reward footer "
            "(a checkpoint trained on episodes of a domain with defines_rewards, a world model "
            "declaring CardedWorldModel's rewards=True and history_window, or rewards=True)"
        )
    if requested == "verifier" and not has_verify:
        name = domain.name if domain is not None else None
        raise ValueError(f"reward_source='verifier' needs a domain with verify(); got {name!r}")
    return requested


def check_parse_policy(on_parse_error: str, max_retries: int) -> None:
    """Raises ``ValueError`` for an unknown ``on_parse_error`` or a negative ``max_retries``."""
    if on_parse_error not in PARSE_ERROR_POLICIES:
        raise ValueError(
            f"on_parse_error must be one of {PARSE_ERROR_POLICIES}, got {on_parse_error!r}"
        )
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")


def step_outcome(
    source: str, observation: str, info: dict[str, Any], domain: Any, task: Any
) -> tuple[float, bool]:
    """``(reward, terminated)`` of a parsed simulated step from ``source`` (module docstring).

    ``info`` is the simulator's step info (``reward``/``terminated`` when the model
    predicts them); ``info["verified"]`` is set for the verifier source.
    """
    if source == "model":
        return float(info.get("reward") or 0.0), bool(info.get("terminated"))
    if source == "verifier":
        verified = verdict(domain, observation, task)  # checked: None or (float, bool)
        info["verified"] = verified is not None
        return (0.0, False) if verified is None else verified
    return 0.0, False


def sample_steps(
    simulator: Any, pairs: Sequence[tuple[str, str]], on_parse_error: str, max_retries: int
) -> tuple[list[tuple[str | None, dict[str, Any]]], int]:
    """Step episodes ``pairs`` (``[batch]`` of ``(episode_id, action)``) in one
    ``simulator.step_many`` call; with ``on_parse_error="retry"`` the answers that did not
    parse are sampled again, all in one more batch, up to ``max_retries`` times (the history
    is unchanged by an unparsed answer). A refused step (``info["error"]``) is not retried.

    Returns:
        ``([batch] (observation or None, info with "retries"), number of unparsed answers)``.
    """
    results: list[tuple[str | None, dict[str, Any]]] = [(None, {})] * len(pairs)
    todo, attempt, failures = list(range(len(pairs))), 0, 0
    while todo:
        out = simulator.step_many([pairs[k] for k in todo])
        retry = []
        for k, (observation, info) in zip(todo, out, strict=True):
            info["retries"] = attempt
            results[k] = (observation, info)
            if observation is None and not info.get("error"):
                failures += 1
                if on_parse_error == "retry" and attempt < max_retries:
                    retry.append(k)
        todo, attempt = retry, attempt + 1
    return results, failures


def settle_step(
    observation: str | None,
    info: dict[str, Any],
    *,
    source: str,
    domain: Any,
    task: Any,
    steps: int,
    max_steps: int,
    is_terminal: Callable[[str], bool] | None = None,
) -> tuple[float, bool, bool]:
    """``(reward, terminated, truncated)`` of a simulated step that is the episode's
    ``steps``-th, setting ``info["truncated_reason"]`` where truncated: ``"error"`` (the engine
    refused it, ``info["error"]``) or ``"malformed"`` (no observation parsed), else
    ``"max_steps"`` once ``steps >= max_steps`` and the step did not terminate. The reward and
    termination of a parsed step come from ``source`` (:func:`step_outcome`), termination or'ed
    with ``is_terminal(observation)``."""
    if observation is None:
        info["truncated_reason"] = "error" if info.get("error") else "malformed"
        return 0.0, False, True
    reward, terminated = step_outcome(source, observation, info, domain, task)
    if is_terminal is not None and is_terminal(observation):
        terminated = True
    if not terminated and steps >= max_steps:
        info["truncated_reason"] = "max_steps"
        return reward, False, True
    return reward, terminated, False
