"""World models whose predictions are real transitions, for tests of simulated environments
against the real ones: the real dynamics behind the world-model interface."""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium

from agentworld.core.formats import parse_prediction, split_system_message, wrap_observation
from agentworld.core.types import Prediction
from agentworld.domains.classic.render import decode, parse, render
from agentworld.domains.classic.variants import get_variant


class ExactFrozenLake:
    """A world model whose predictions are the real FrozenLake 4x4 transitions (with the
    reward footer): the last observation is parsed back to the state and stepped in Gymnasium."""

    rewards, history_window = True, 1

    def __init__(self) -> None:
        self.variant = get_variant("frozenlake-4x4")
        self.env = gymnasium.make("FrozenLake-v1", map_name="4x4", is_slippery=False).unwrapped
        self.env.reset(seed=0)
        self.calls = 0

    def predict(
        self, requests: Sequence[list[dict[str, str]]], *, max_new_tokens: int | None = None
    ) -> list[Prediction]:
        self.calls += 1
        out = []
        for messages in requests:
            previous = [m for m in messages if m["role"] == "assistant"]
            if previous:
                text = parse_prediction(previous[-1]["content"])
            else:
                text = split_system_message(messages[0]["content"])[1]
            board = parse(self.variant, text)
            self.env.s = board.s
            s, reward, terminated, _, _ = self.env.step(
                self.variant.indices[messages[-1]["content"]]
            )
            obs = render(self.variant, decode(self.variant, int(s), float(reward), terminated))
            answer = wrap_observation(obs, reward=float(reward), terminated=terminated)
            out.append(Prediction(text=answer, observation=obs))
        return out
