"""``HFSession``: one episode on an ``hf`` world model, its chat text beside the engine's tokens.

The engine holds the episode's token history (prompt and generated tokens of its last
request, :class:`~agentworld.sim.generation.EpisodeEngine`); the session holds the same
history as chat messages. A step renders only the new turn: the previous answer as the
history records it, the end of its turn and the new user action with the generation prompt
(:meth:`~agentworld.sim.backends.hf.HFWorldModel.turn_tokens`), and sends those tokens with the
position they start at. The whole history is rendered again only when it must be: at the
first step, after an answer that did not parse, with a ``history_window`` (the window slides),
with the ``"transcript"`` prompt format, or when the chat template does not render turn by turn.

When the next turn would outgrow the context budget, the oldest turns are evicted in one go,
down to :data:`SLIDE_TARGET` of the budget (the model's ``slide_target``) (:func:`agentworld.sim.prompts.fit_prompt`), and the
history from there is rendered once; the following steps render only their new turn again
until the budget is full once more. Evicting only the fewest turns that fit would render (and
prefill) the whole history at every step of a long episode; a slide does so once per
``(1 - SLIDE_TARGET) * budget`` tokens of new turns (the sliding windows of streaming
attention, e.g. StreamingLLM, Xiao et al. 2023, keep a fixed span the same way).
"""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import Future, InvalidStateError
from typing import TYPE_CHECKING

from agentworld.core.formats import window_messages, wrap_observation
from agentworld.core.types import Prediction
from agentworld.sim.generation import GenerationOutput
from agentworld.sim.prompts import Message, fit_prompt

#: Share of the prompt budget a slide of the window leaves the history in. 0.5 keeps the
#: host time per step within 1.4x of an episode's start through 300 turns of a full context;
#: 0.75 (twice the slides) reached 1.6-1.7x (``bench/session_overhead.py``, bench/README.md).
SLIDE_TARGET = 0.5

if TYPE_CHECKING:
    from agentworld.sim.backends.hf import HFWorldModel


class HFSession:
    """One episode of an :class:`~agentworld.sim.backends.hf.HFWorldModel`; implements
    :class:`~agentworld.core.world_models.WorldModelSession`.

    Args:
        model: The world model.
        messages: The history so far (``[system, (user, assistant) * T]``).
        rewards: Answers must carry the reward footer to be kept.
        history_window: Turns of history per request (``None``: all).
        episode_id: The engine's id of the episode (default: a new one).
    """

    def __init__(
        self,
        model: HFWorldModel,
        messages: list[Message],
        *,
        rewards: bool = False,
        history_window: int | None = None,
        episode_id: str | None = None,
    ):
        self.model, self.rewards, self.history_window = model, rewards, history_window
        self.episode_id = episode_id or uuid.uuid4().hex
        self._messages = messages
        self._lock = threading.Lock()
        # Tokens the engine's episode history starts with that render the history up to the
        # last user message with the generation prompt; None: render the whole history.
        self._held: int | None = None
        # Oldest (user, assistant) turns evicted from the prompt by slides of the window.
        self.evicted_turns = 0

    def messages(self) -> list[Message]:
        """A copy of the history."""
        with self._lock:
            return [dict(m) for m in self._messages]

    def append(self, action: str, *, max_new_tokens: int | None = None) -> Future[Prediction]:
        """The prediction after ``action``; the turn joins the history if it parsed.

        Returns:
            A future of the :class:`Prediction` (a :class:`~agentworld.sim.simulator.
            FailedPrediction` when the request failed alone).
        """
        model = self.model
        params = model.sampling_params(max_new_tokens)
        user = {"role": "user", "content": action}
        with self._lock:
            think = model.think([*self._messages, user])
            prefix = model.prefix_ids(user, think)
            ids, start = self._prompt(user, params.max_new_tokens + len(prefix))
        engine_future = model.loop.submit(
            ids + prefix, model.request_params(params), self.episode_id, start=start or 0
        )
        result: Future[Prediction] = Future()
        held = None if start is None else start + len(ids)

        def finish(done: Future[GenerationOutput]) -> None:
            try:
                prediction = model.prediction(done.result(), prefix, rewards=self.rewards)
                self._commit(user, prediction, held, think)
            except BaseException as error:  # noqa: BLE001 -- handed to the caller
                outcome: tuple[Prediction | None, BaseException | None] = (None, error)
            else:
                outcome = (prediction, None)
            try:
                if outcome[1] is not None:
                    result.set_exception(outcome[1])
                else:
                    result.set_result(outcome[0])  # type: ignore[arg-type]
            except InvalidStateError:  # cancelled by the caller: the turn is recorded anyway
                pass

        engine_future.add_done_callback(finish)
        return result

    def fork(self) -> HFSession:
        """A new session with a copy of the history, sharing the engine's KV of it."""
        with self._lock:
            messages = [dict(m) for m in self._messages]
        child = HFSession(
            self.model, messages, rewards=self.rewards, history_window=self.history_window
        )
        child.evicted_turns = self.evicted_turns
        self.model.loop.fork(self.episode_id, child.episode_id)
        return child  # its first step renders in full: the fork may not have run yet

    def replace_last(self, answer: str) -> None:
        """Put ``answer`` in place of the last turn's answer; the next step renders the whole
        history again (the engine's prefix cache still serves the unchanged prefix).

        Raises:
            ValueError: the history has no turn yet.
        """
        with self._lock:
            if len(self._messages) < 3:
                raise ValueError("replace_last needs a turn in the history; none was taken yet")
            self._messages[-1] = {"role": "assistant", "content": answer}
            self._held = None

    def close(self) -> None:
        """Release the engine's state of this episode."""
        self.model.loop.close_episode(self.episode_id)

    def _prompt(self, user: Message, room: int) -> tuple[list[int], int | None]:
        """``(token ids, start)`` of the next request, leaving ``room`` tokens to generate;
        ``start`` is ``None`` for a whole history that had to be fitted (the next step renders
        it whole again: the fitting depends on the whole)."""
        model = self.model
        incremental = (
            self.history_window is None
            and model.prompt_format == "chat"
            and len(self._messages) >= 3
        )
        budget = model.prompt_budget(room)
        if incremental and self._held is not None:
            tail = model.turn_tokens(self._messages[-2], self._messages[-1], user)
            if tail is not None and (budget is None or self._held + len(tail) <= budget):
                return tail, self._held
        request = [*self._window(), user]
        if incremental and budget is not None:
            ids = model.render(request)
            if len(ids) <= budget:  # the window as it is (a first step, an unparsed answer)
                return ids, 0
            fitted = fit_prompt(request, model.render, int(model.slide_target * budget))
            if not fitted.cut_tokens:  # a slide: the window starts later from now on
                self.evicted_turns += fitted.dropped_turns
                return fitted.ids, 0
        ids, fitted_whole = model.fit(window_messages(request, self.history_window), room)
        return ids, None if fitted_whole else 0

    def _window(self) -> list[Message]:
        """The history without the turns evicted by slides."""
        head = [m for m in self._messages[:1] if m["role"] == "system"]
        return head + self._messages[len(head) + 2 * self.evicted_turns :]

    def _commit(
        self, user: Message, prediction: Prediction, held: int | None, think: str | None
    ) -> None:
        parsed = prediction.observation is not None and (
            not self.rewards or prediction.reward is not None
        )
        with self._lock:
            if not parsed:
                self._held = None
                return
            assert prediction.observation is not None
            answer = wrap_observation(
                prediction.observation, reward=prediction.reward, terminated=prediction.terminated
            )
            answer = self.model.with_think(answer, think)  # the history as SFT wrote it
            self._messages += [user, {"role": "assistant", "content": answer}]
            self._held = held
