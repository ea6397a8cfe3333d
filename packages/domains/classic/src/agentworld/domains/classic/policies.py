"""Collection policies of the classic domains.

All implement :class:`agentworld.core.protocols.Policy` and are
deterministic given a seed (constructor or ``reset(seed)``, which the core
collector calls before each episode). ``act(task, history)`` reads the state
from the last observation (its ``state["s"]``, else by parsing its text)
and returns ``None`` once that state is terminal.

* ``random``: uniform over the variant's action words.
* ``expert``: the optimal action (:mod:`agentworld.domains.classic.planning`):
  shortest path on deterministic variants, highest success probability on
  slippery FrozenLake.
* ``epsilon-expert``: the expert, but a uniformly random word with
  probability ``epsilon`` (0.3): varied data around good play.
* ``explore``: walks a shortest safe route to a uniformly drawn reachable state,
  then plays randomly: covers states the others rarely visit (the deep corners of
  FrozenLake, every Taxi cell with every passenger state), so a world model trained
  on its episodes also knows the holes and walls there. Without such coverage an
  agent trained in the simulator exploits the model's errors in unvisited states.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from agentworld.core.types import Action, Observation, Task
from agentworld.domains.classic.planning import expert_actions, reachable, route
from agentworld.domains.classic.render import Board, decode, parse
from agentworld.domains.classic.variants import Variant


def current_board(variant: Variant, history: Sequence[Observation | Action]) -> Board | None:
    """The :class:`Board` of the last observation in ``history`` (``None`` if unreadable)."""
    for item in reversed(history):
        if not isinstance(item, Action):  # an Observation, or an env's ObservationText
            state = getattr(item, "state", None) or {}
            if isinstance(state.get("s"), int):
                return decode(
                    variant,
                    state["s"],
                    state.get("reward", 0.0),
                    bool(state.get("terminated", False)),
                )
            return parse(variant, str(getattr(item, "text", item)))
    return None


class ClassicPolicy:
    """Base of the classic policies: a private ``random.Random`` and the variant.

    Args:
        variant: The variant played.
        seed: Initial seed; :meth:`reset` re-seeds.
    """

    name = "base"

    def __init__(self, variant: Variant, seed: int = 0) -> None:
        self.variant = variant
        self.rng = random.Random(f"{self.name}-{seed}")

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the policy (``None``: keep the current random state)."""
        if seed is not None:
            self.rng = random.Random(f"{self.name}-{seed}")

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next action word, or ``None`` when the last observation is terminal.

        An unreadable observation (e.g. a malformed simulated one) gets a random word.
        """
        board = current_board(self.variant, history)
        if board is not None and board.terminated:
            return None
        word = self.random_word() if board is None else self.choose(board)
        return Action(text=word)

    def random_word(self) -> str:
        """A uniformly random action word."""
        return self.rng.choice(self.variant.actions)

    def choose(self, board: Board) -> str:
        """The action word for a non-terminal ``board``."""
        raise NotImplementedError


class RandomPolicy(ClassicPolicy):
    """Uniformly random action words."""

    name = "random"

    def choose(self, board: Board) -> str:
        return self.random_word()


class ExpertPolicy(ClassicPolicy):
    """The optimal action from the value-iteration table."""

    name = "expert"

    def __init__(self, variant: Variant, seed: int = 0) -> None:
        super().__init__(variant, seed)
        self.words = {i: w for w, i in variant.indices.items()}

    def choose(self, board: Board) -> str:
        return self.words[expert_actions(self.variant)[board.s]]


class EpsilonExpertPolicy(ExpertPolicy):
    """The expert, replaced by a random word with probability ``epsilon``."""

    name = "epsilon-expert"
    epsilon = 0.3

    def choose(self, board: Board) -> str:
        if self.rng.random() < self.epsilon:
            return self.random_word()
        return super().choose(board)


class ExplorePolicy(ClassicPolicy):
    """A safe shortest route to a random reachable state, then random words (module doc)."""

    name = "explore"

    def __init__(self, variant: Variant, seed: int = 0) -> None:
        super().__init__(variant, seed)
        self.words = {i: w for w, i in variant.indices.items()}
        self.plan: list[int] | None = None

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.plan = None

    def choose(self, board: Board) -> str:
        if self.plan is None:
            target = self.rng.choice(reachable(self.variant, board.s))
            self.plan = route(self.variant, board.s, target) or []
        if self.plan:
            return self.words[self.plan.pop(0)]
        return self.random_word()


def make_policies(variant: Variant, seed: int = 0) -> dict[str, ClassicPolicy]:
    """Fresh policies by name: ``random``, ``expert``, ``epsilon-expert``, ``explore`` and
    ``scripted``.

    ``scripted`` is the expert under the name the core CLI's default mix
    (``scripted=1 random=1``) asks for.
    """
    return {
        "random": RandomPolicy(variant, seed),
        "expert": ExpertPolicy(variant, seed),
        "epsilon-expert": EpsilonExpertPolicy(variant, seed),
        "explore": ExplorePolicy(variant, seed),
        "scripted": ExpertPolicy(variant, seed),
    }
