"""``ClassicDomain``: one Gymnasium toy-text variant as the framework sees it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
from agentworld.core.types import Action, Observation, Step, Task
from agentworld.domains.classic import explain as _explain
from agentworld.domains.classic import scorer
from agentworld.domains.classic.env import ClassicEnv, env_seed_of, start_state
from agentworld.domains.classic.options import ClassicEnvOptions
from agentworld.domains.classic.planning import success_probability
from agentworld.domains.classic.policies import ClassicPolicy, make_policies
from agentworld.domains.classic.prompt import system_prompt
from agentworld.domains.classic.render import GOAL, decode, parse, render, status
from agentworld.domains.classic.tasks import ClassicTaskSampler
from agentworld.domains.classic.variants import Kind, get_variant

PACKAGE_VERSION = "0.1.0"


class ClassicDomain:
    """A classic domain (:class:`agentworld.core.protocols.Domain`) with rewards.

    Attributes:
        name: The variant name (``"frozenlake-8x8"``).
        version: Package, Gymnasium id and Gymnasium version, stored in episode metadata.
        defines_rewards: True: the world model predicts the reward footer.
        history_window: 1: observations are Markov (the whole state is drawn).
        actions: The action words.

    Args:
        variant: Variant name, one of :data:`agentworld.domains.classic.variants.VARIANTS`.

    Raises:
        KeyError: unknown variant name.
    """

    defines_rewards = True
    history_window = 1
    env_options = ClassicEnvOptions  # what make_env takes from `collect --set`

    def __init__(self, variant: str) -> None:
        self.variant = get_variant(variant)
        self.name = self.variant.name
        self.version = (
            f"{PACKAGE_VERSION} ({self.variant.gym_id}, gymnasium {gymnasium.__version__})"
        )
        self.actions = list(self.variant.actions)

    def system_prompt(self, task: Task | None) -> str:
        """The world-model prompt (:func:`agentworld.domains.classic.prompt.system_prompt`)."""
        return system_prompt(self.variant, task)

    def make_env(self, **kwargs: Any) -> ClassicEnv:
        """A real :class:`ClassicEnv` of this variant; ``kwargs`` (:attr:`env_options`:
        ``render_mode``) go to its constructor."""
        return ClassicEnv(self.variant, **kwargs)

    def tasks(self) -> ClassicTaskSampler:
        """The seeded task sampler."""
        return ClassicTaskSampler(self.variant)

    def policies(self) -> dict[str, ClassicPolicy]:
        """Fresh policies: ``random``, ``expert``, ``epsilon-expert``, ``explore`` (and ``scripted`` = expert)."""
        return make_policies(self.variant)

    def initial_observation(self, task: Task | None) -> str:
        """The observation text at reset for ``task`` (seed ``task.setup["env_seed"]``, 0 without
        a task), computed on a private environment without a step."""
        seed = env_seed_of(task)
        return render(self.variant, decode(self.variant, start_state(self.variant, seed or 0)))

    def verify(self, observation: str, task: Task | None = None) -> tuple[float, bool] | None:
        """``(reward, terminated)`` of an observation text, from the state it draws.

        FrozenLake: agent on ``G`` gives ``(1.0, True)``, on ``H`` ``(0.0, True)``,
        else ``(0.0, False)``. CliffWalking: the ``reward:`` line (-1 or -100),
        terminated on ``G``. Taxi: the ``reward:`` line (-1, -10 or 20),
        terminated when the passenger is at the destination (and then only with 20);
        a reset observation's ``reward: 0`` gives 0. An invalid-action
        observation gives reward 0. ``None`` when the text is not a rendering
        of this variant (:func:`~agentworld.domains.classic.render.parse`) or
        its reward is impossible there.
        """
        board = parse(self.variant, observation)
        if board is None:
            return None
        if board.invalid is not None:
            return 0.0, board.terminated
        if self.variant.kind is Kind.FROZENLAKE:
            return (1.0 if status(self.variant, board) == GOAL else 0.0), board.terminated
        kinds = {Kind.CLIFFWALKING: {-1.0, -100.0}, Kind.TAXI: {-1.0, -10.0, 20.0}}
        allowed = {0.0} | kinds[self.variant.kind]  # 0: the reset observation
        if board.reward not in allowed or (
            self.variant.kind is Kind.TAXI and board.terminated != (board.reward == 20.0)
        ):
            return None
        return board.reward, board.terminated

    def is_deterministic(self, action: Action, reference: Observation | None = None) -> bool:
        """True unless the variant is slippery and ``action`` is a valid move (``reference``,
        the real next observation, is not needed)."""
        return not self.variant.slippery or self.action_type(action) == "invalid"

    def is_success(self, result: Any) -> bool:
        """Did an episode reach the goal? ``result`` has ``outcome`` and ``last_reward``
        (the trainers' ``EpisodeResult``): terminated, and on a positive reward except on
        CliffWalking, whose only termination is its goal (reward -1)."""
        outcome = getattr(result.outcome, "value", result.outcome)
        if outcome != "terminated":
            return False
        return self.variant.kind is Kind.CLIFFWALKING or result.last_reward > 0

    def score(self, predicted: str, reference: Observation) -> float:
        """Map-cell and info-line fidelity in [0, 1] (:mod:`agentworld.domains.classic.scorer`)."""
        return scorer.score(self.variant, predicted, reference)

    def action_type(self, action: Action) -> str:
        """The action word (lower-cased, stripped), or ``invalid``."""
        word = action.text.strip().lower()
        return word if word in self.variant.indices else "invalid"

    def explain(
        self,
        step: Step,
        previous_state: dict[str, Any] | None,
        history: Sequence[tuple[str, str]] = (),
    ) -> str:
        """A rationale from the real state change (:mod:`agentworld.domains.classic.explain`);
        the board is the whole state, so ``history`` is not needed."""
        return _explain.explain(self.variant, step, previous_state)

    def describe(self) -> dict[str, str]:
        """Facts for ``agentworld domains``: Gymnasium id and version, actions, time limit."""
        limit = ClassicEnv(self.variant).max_episode_steps
        facts = {
            "gymnasium": f"{self.variant.gym_id} {self.variant.kwargs or ''}".strip()
            + f" (gymnasium {gymnasium.__version__})",
            "actions": ", ".join(self.actions),
            "time limit": f"{limit} steps" if limit else "none",
            "policies": "random, expert (alias scripted), epsilon-expert, explore",
        }
        if self.variant.kind is Kind.FROZENLAKE:
            best = success_probability(self.variant)[0]
            facts["expert success"] = f"{best:.3f} (optimal, no time limit)"
        return facts
