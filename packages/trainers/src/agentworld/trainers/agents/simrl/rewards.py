"""Reward sources of a simulated agent episode, and the environment that applies one.

A world model predicts observations; an agent trained inside it also needs the reward and
the end of the episode. :class:`RewardedSimEnv` wraps a simulated environment (a
:class:`~agentworld.sim.SimEnv` made with ``reward_source="none"``) and takes them from one
of :data:`SOURCES`:

* ``"footer"``: the world model's own ``<reward>``/``<terminated>`` footer (the simulator's
  ``info["reward"]`` / ``info["terminated"]``), learned from the real episodes' task checks as
  Dreamer-style world models learn theirs (Hafner et al. 2023, arXiv 2301.04104);
* ``"transcript"``: the domain's verifier over the simulated transcript of the episode so
  far (:class:`~agentworld.core.protocols.TranscriptRewardingDomain`; undecidable counts as
  reward 0, not terminated);
* ``"agree"``: a mitigation against exploiting the simulator: reward 1 only when both say
  success; the episode ends when either says it ended (a disagreement ends it unrewarded);
* ``"judge"``: a chat model behind an OpenAI-compatible endpoint reads the task and the
  simulated transcript (:class:`~agentworld.trainers.agents.simrl.judge.TranscriptJudge`;
  "cannot tell" counts as reward 0, not terminated). Its verdict is asked at every step
  whenever a judge is given, whatever the source, so it can be compared with the others.

With ``anchoring`` (:mod:`agentworld.trainers.agents.simrl.anchor`) the chosen source is
overruled at anchored steps: the agent's actions are run in the real environment, and its
observation, reward, termination and success replace the simulated ones (``info["anchored"]``,
``info["real_steps"]``, ``info["simulated_observation"]``); the world model goes on from the
real observation.

Every step's ``info["verdicts"]`` holds each source's ``(reward, terminated)`` (``None``:
undecided), ``info["success"]`` the chosen source's success, and a finished episode is
reported to ``on_episode`` as a :class:`SimEpisode`, so the sources can be compared on the
very same episodes (:mod:`agentworld.trainers.agents.simrl.replay`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentworld.core.domain_base import domain_hooks
from agentworld.core.types import Action, Task
from agentworld.trainers.agents.simrl.anchor import Anchoring, RealTwin
from agentworld.trainers.agents.simrl.judge import TranscriptJudge

SOURCES = ("footer", "transcript", "agree", "judge")
Verdict = tuple[float, bool] | None


@dataclass(slots=True)
class SimEpisode:
    """A finished simulated episode: its task, actions, observations (simulated, or real at
    anchored steps) and each source's verdict after its last step (``None``: undecided; a
    source absent from ``verdicts`` was not asked, as ``"judge"`` without a judge).
    ``malformed``: the world model's last answer did not parse (the episode was cut there).
    ``rewarded``: the success the agent was given at the last step (the chosen source's, or
    the real one at an anchor); ``real_steps``: real environment steps its anchors ran."""

    task: Task | None
    actions: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    malformed: bool = False
    rewarded: bool = False
    real_steps: int = 0

    def success(self, source: str) -> bool:
        """Whether ``source`` (one of :data:`SOURCES`) calls the episode a success."""
        verdict = self.verdicts.get(source)
        return verdict is not None and verdict[1] and verdict[0] > 0


def combine(footer: Verdict, transcript: Verdict) -> tuple[float, bool]:
    """The ``"agree"`` source: ``(1.0, True)`` when both are successes; otherwise reward 0,
    terminated when either says terminated."""
    ok = all(v is not None and v[1] and v[0] > 0 for v in (footer, transcript))
    ended = any(v is not None and v[1] for v in (footer, transcript))
    return (1.0, True) if ok else (0.0, ended)


class RewardedSimEnv:
    """A simulated environment whose reward and termination come from ``source``.

    Args:
        env: The simulated environment (Gymnasium order; a ``SimEnv`` with
            ``reward_source="none"`` whose world model predicts the reward footer, for
            ``"footer"`` and ``"agree"``).
        domain: Its domain (``verify_transcript`` through
            :func:`~agentworld.core.domain_base.domain_hooks`).
        source: One of :data:`SOURCES`.
        on_episode: Called with each finished :class:`SimEpisode` (also for an episode left
            unfinished by a ``reset`` or ``close``).
        judge: The ``"judge"`` source's judge (required for it; asked at every step when given).
        anchoring: Re-anchor on the real environment (``None``: never); ``env`` must then be a
            :class:`~agentworld.sim.SimEnv` (its ``anchor``).

    Raises:
        ValueError: an unknown ``source``, or ``"judge"`` without a ``judge``.
    """

    def __init__(
        self,
        env: Any,
        domain: Any,
        source: str,
        on_episode: Callable[[SimEpisode], None] | None = None,
        *,
        judge: TranscriptJudge | None = None,
        anchoring: Anchoring | None = None,
    ):
        if source not in SOURCES:
            raise ValueError(f"reward source must be one of {SOURCES}, got {source!r}")
        if source == "judge" and judge is None:
            raise ValueError("reward source 'judge' needs a judge (a TranscriptJudge on an endpoint)")
        self.env, self.hooks, self.source, self.on_episode = env, domain_hooks(domain), source, on_episode
        self.judge, self.anchoring = judge, anchoring
        self.twin = RealTwin(anchoring.real_env) if anchoring is not None else None
        self.episode: SimEpisode | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the simulated environment (``options["task"]``: the task)."""
        self._finish()
        observation, info = self.env.reset(seed=seed, options=options)
        self.episode = SimEpisode((options or {}).get("task"))
        if self.twin is not None:
            self.twin.restart()
        return observation, info

    def step(self, action: Action | str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """One simulated step; ``(observation, reward, terminated, truncated, info)`` with the
        reward and termination of ``source``, or the real ones at an anchor (module docstring).

        Raises:
            RuntimeError: ``reset`` was not called.
            JudgeUnavailableError: the judge's endpoint failed.
        """
        if self.episode is None:
            raise RuntimeError("call reset() before step()")
        text = action.text if isinstance(action, Action) else action
        observation, _, _, truncated, info = self.env.step(action)
        episode = self.episode
        episode.actions.append(text)
        episode.observations.append(observation)
        malformed = info.get("truncated_reason") in ("malformed", "error")
        verdicts = self._verdicts(episode, info, malformed)
        episode.verdicts, episode.malformed = verdicts, malformed
        chosen = verdicts[self.source]
        reward, terminated = chosen if chosen is not None else (0.0, False)
        info["verdicts"] = verdicts
        success = bool(terminated and reward > 0)
        truncated = bool(truncated) and not terminated
        ended = terminated or truncated
        if self.anchoring is not None and self.anchoring.due(len(episode.actions), ended):
            assert self.twin is not None
            real = self.twin.catch_up(episode.task, episode.actions)
            info.update(anchored=True, real_steps=real.steps, simulated_observation=observation)
            observation, reward = real.observation, real.reward
            terminated, success = real.ended, real.success
            episode.observations[-1] = observation
            episode.real_steps += real.steps
            truncated = self.env.anchor(observation, reward, terminated) and not terminated
        info["success"] = episode.rewarded = success
        if terminated or truncated:
            self._finish()
        return observation, reward, terminated, truncated, info

    def _verdicts(
        self, episode: SimEpisode, info: dict[str, Any], malformed: bool
    ) -> dict[str, Verdict]:
        """Each source's verdict after the episode's last step (all ``None`` when malformed)."""
        footer: Verdict = None
        transcript: Verdict = None
        judged: Verdict = None
        if not malformed:
            if info.get("reward") is not None or info.get("terminated") is not None:
                footer = (float(info.get("reward") or 0.0), bool(info.get("terminated")))
            pairs = list(zip(episode.actions, episode.observations, strict=True))
            transcript = self.hooks.verify_transcript(episode.task, pairs)
            if self.judge is not None:
                judged = self.judge.verdict(episode.task, pairs)
        verdicts = {"footer": footer, "transcript": transcript, "agree": combine(footer, transcript)}
        if self.judge is not None:
            verdicts["judge"] = judged
        return verdicts

    def _finish(self) -> None:
        if self.episode is not None and self.episode.actions and self.on_episode is not None:
            self.on_episode(self.episode)
        self.episode = None

    def close(self) -> None:
        """Report an unfinished episode and close the simulated (and real) environments."""
        self._finish()
        self.env.close()
        if self.twin is not None:
            self.twin.close()
