"""Policy SFT data: an episode seen from the agent's side, as (history -> next action) chats.

The world-model renderers of :mod:`agentworld.core.formats` make the *environment* the
assistant. Here the roles swap, in the chat format of the LM agent trainer
(:mod:`agentworld.trainers.agents.lm.data`, so a cloned policy continues there unchanged): the
system message is the task instruction then a short agent prompt (never the environment's
hidden set-up), each *user* message is an observation (the initial one first) and each
*assistant* message is the agent's action::

    [system, user obs_0, assistant a_0, user obs_1, assistant a_1, ..., user obs_{T-1}, assistant a_{T-1}]

The observation that follows the last action is not rendered: nothing is predicted from it.
Training follows the world-model SFT recipe (:mod:`agentworld.trainers.training.data`): each whole
episode is one sequence whose loss covers the assistant answers (action text and the
end-of-turn marker) only; an episode longer than ``max_seq_len`` tokens is split at turn
boundaries into windows that each restart with the system message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from transformers import PreTrainedTokenizerBase

from agentworld.core.formats import Message
from agentworld.core.types import Action, Episode, Observation, Task
from agentworld.trainers.agents.lm.data import AGENT_PROMPT, first_action, system_message
from agentworld.trainers.models.chat_mask import ChatMasker
from agentworld.trainers.training.data import Sample

__all__ = [
    "AGENT_PROMPT",
    "chat_samples",
    "clean_action",
    "history_messages",
    "policy_messages",
    "policy_pair",
    "policy_samples",
]


def history_messages(
    task: Task | None,
    history: Sequence[Observation | Action],
    agent_prompt: str = AGENT_PROMPT,
) -> list[Message]:
    """The prompt for the next action after ``history``: ``[system, (user, assistant) * T, user]``.

    Args:
        task: The task given to the agent (its instruction goes into the system message).
        history: ``[obs_0, a_0, obs_1, ..., obs_T]``: the initial observation, then
            alternating actions and observations, ending with an observation (the
            ``Policy.act`` history of :mod:`agentworld.core.protocols`).
        agent_prompt: Text after the task instruction in the system message.

    Raises:
        ValueError: ``history`` does not alternate observation/action starting and ending
            with an observation.
    """
    def fits(i: int, item: Any) -> bool:  # an observation has a str ``text`` (or is a str)
        if i % 2:
            return isinstance(item, Action)
        return not isinstance(item, Action) and isinstance(getattr(item, "text", item), str)

    if len(history) % 2 == 0 or not all(fits(i, h) for i, h in enumerate(history)):
        got = [type(h).__name__ for h in history]
        raise ValueError(f"history must be [Observation, (Action, Observation) * T], got {got}")
    messages: list[Message] = [{"role": "system", "content": system_message(task, agent_prompt)}]
    for item in history:
        role = "assistant" if isinstance(item, Action) else "user"
        messages.append({"role": role, "content": str(getattr(item, "text", item))})
    return messages


def policy_messages(episode: Episode, agent_prompt: str = AGENT_PROMPT) -> list[Message]:
    """The whole episode from the agent's side: ``[system, (user obs_t, assistant a_t) * T]``.

    ``T = len(episode.steps)``; observation ``t`` is the one the agent saw before action
    ``t`` (the initial observation for ``t = 0``).
    """
    messages: list[Message] = [
        {"role": "system", "content": system_message(episode.task, agent_prompt)}
    ]
    seen = episode.initial_observation
    for step in episode.steps:
        messages.append({"role": "user", "content": seen.text})
        messages.append({"role": "assistant", "content": step.action.text})
        seen = step.observation
    return messages


def policy_pair(
    episode: Episode, turn: int, agent_prompt: str = AGENT_PROMPT
) -> tuple[list[Message], str]:
    """(prompt messages, target action text) for the agent's action ``steps[turn]``.

    The prompt is :func:`history_messages` of the history up to the observation before
    ``steps[turn]``; the target is that step's action text.

    Raises:
        IndexError: ``turn`` is not in ``range(len(episode.steps))``.
    """
    if not 0 <= turn < len(episode.steps):
        raise IndexError(
            f"turn {turn} out of range for episode {episode.id} with {len(episode.steps)} steps"
        )
    return policy_messages(episode, agent_prompt)[: 2 * turn + 2], episode.steps[turn].action.text


def clean_action(text: str) -> str:
    """A generated answer as an action: its first non-empty line, stripped (``""`` if none).

    Policy targets are single command lines, so anything after the first line is
    discarded before the action reaches an environment or is compared with an expert's
    (the same rule as the LM agent trainer's ``agent_lm_data.first_action``).
    """
    return first_action(text)


def chat_samples(
    tokenizer: PreTrainedTokenizerBase,
    messages: list[Message],
    max_seq_len: int,
    masker: ChatMasker | None = None,
) -> list[Sample]:
    """Masked training windows of one ``[system, (user, assistant) * T]`` chat.

    The loss mask is 1 on assistant content through its end-of-turn marker and 0 elsewhere,
    under any chat template (``masker``, built from ``tokenizer`` when not given; see
    :class:`~agentworld.trainers.models.chat_mask.ChatMasker`). A window is the system message plus as many whole turns as fit in ``max_seq_len``
    tokens; a single turn that does not fit is cut at ``max_seq_len``.

    Returns:
        ``[num_windows]`` samples, each ``input_ids``/``loss_mask`` of ``<= max_seq_len`` tokens.

    Raises:
        ValueError: the tokenizer has no chat template, or ``messages`` is not
            ``[system, (user, assistant) * T]``.
    """
    masker = masker or ChatMasker(tokenizer)
    return [Sample(ids, mask) for ids, mask in masker.windows(messages, max_seq_len)]


def policy_samples(
    episodes: Sequence[Episode],
    tokenizer: PreTrainedTokenizerBase,
    max_seq_len: int,
    agent_prompt: str = AGENT_PROMPT,
) -> list[Sample]:
    """Policy SFT windows of every episode with a step (:func:`chat_samples` of
    :func:`policy_messages`); windows without a target token are dropped.

    Raises:
        ValueError: no episode has a step, or no action fits in ``max_seq_len`` tokens.
    """
    with_steps = [e for e in episodes if e.steps]
    if not with_steps:
        raise ValueError(
            f"policy sft needs episodes with at least one action; none of {len(episodes)} has one"
        )
    masker = ChatMasker(tokenizer)
    out = [
        s
        for e in with_steps
        for s in chat_samples(tokenizer, policy_messages(e, agent_prompt), max_seq_len, masker)
        if any(s.loss_mask)
    ]
    if not out:
        raise ValueError(
            f"no action fits in max_seq_len={max_seq_len} tokens after the system message and "
            "the observation; raise max_seq_len"
        )
    return out
