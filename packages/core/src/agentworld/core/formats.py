"""Rendering episodes for each training stage, and the prediction contract.

A world model is trained as a chat model whose *assistant* is the
environment: the system message describes the environment, the task and the
initial observation; each *user* message is one agent action; each
*assistant* message is the next observation, written as optional reasoning
followed by exactly one ``<predicted_observation>...</predicted_observation>``
block (the output contract of Qwen-AgentWorld and AgentWorldBench,
arXiv 2606.24597).

Domains that define rewards (``episode.metadata["rewards"]``) add a footer line after
the block with the next reward and whether the episode ended, as Dreamer-style world
models predict them (Hafner et al. 2023, arXiv 2301.04104)::

    <predicted_observation>
    ...
    </predicted_observation>
    <reward>1</reward><terminated>true</terminated>

The footer comes after the observation so a model reads the outcome off the state it
has just written. Markov domains (``episode.metadata["history_window"] = k``) show the
world model only the last ``k`` turns of history.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentworld.core.answers import strip_think
from agentworld.core.types import Episode, Step

OBS_OPEN = "<predicted_observation>"
OBS_CLOSE = "</predicted_observation>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
REWARD_OPEN, REWARD_CLOSE = "<reward>", "</reward>"
TERMINATED_OPEN, TERMINATED_CLOSE = "<terminated>", "</terminated>"
_BLOCK = re.compile(re.escape(OBS_OPEN) + r"\n?(.*?)\n?" + re.escape(OBS_CLOSE), re.DOTALL)
_FOOTER = re.compile(
    re.escape(OBS_CLOSE)
    + r"\s*<reward>\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*</reward>"
    + r"\s*<terminated>\s*(true|false)\s*</terminated>\s*$"
)

Message = dict[str, str]
INITIAL_MARKER = "Initial observation:\n"
ACTION_PREFIX = ">>> "  # starts each action line of a CPT transcript (:func:`cpt_text`)


def wrap_observation(
    text: str,
    reasoning: str | None = None,
    *,
    reward: float | None = None,
    terminated: bool | None = None,
) -> str:
    """The assistant target for one observation.

    ``[<think>r</think>\\n]<predicted_observation>\\ntext\\n</predicted_observation>``, then,
    when ``reward`` is given, the footer ``\\n<reward>R</reward><terminated>B</terminated>``
    (``R`` formatted with ``:g``, ``B`` ``true``/``false``; ``terminated=None`` means false).
    """
    head = f"{THINK_OPEN}{reasoning}{THINK_CLOSE}\n" if reasoning else ""
    answer = f"{head}{OBS_OPEN}\n{text}\n{OBS_CLOSE}"
    if reward is not None:
        done = "true" if terminated else "false"
        answer += (
            f"\n{REWARD_OPEN}{reward:g}{REWARD_CLOSE}{TERMINATED_OPEN}{done}{TERMINATED_CLOSE}"
        )
    return answer


@dataclass(frozen=True, slots=True)
class Transition:
    """A parsed world-model answer: the observation and, for domains with rewards, the
    predicted reward and termination (``None`` when the answer carries no footer)."""

    observation: str
    reward: float | None = None
    terminated: bool | None = None


def parse_transition(answer: str, *, rewards: bool) -> Transition | None:
    """The observation block of ``answer`` and, with ``rewards``, its footer (parsed strictly).

    With ``rewards=True`` the footer must follow the block directly (whitespace aside) and
    end the answer: ``<reward>`` a decimal number ``</reward><terminated>`` ``true`` or
    ``false`` ``</terminated>``. With ``rewards=False`` any footer is ignored.

    Returns:
        The :class:`Transition`, or ``None`` when the answer is malformed (no single closed
        observation block, or a missing or malformed footer where one is required).
    """
    observation = parse_prediction(answer)
    if observation is None:
        return None
    if not rewards:
        return Transition(observation)
    footer = parse_footer(answer)
    if footer is None:
        return None
    return Transition(observation, *footer)


def parse_footer(answer: str) -> tuple[float, bool] | None:
    """``(reward, terminated)`` of the reward footer ending ``answer`` right after the
    observation block (as :func:`parse_transition` requires it), or ``None`` when it is
    missing or malformed."""
    footer = _FOOTER.search(answer)
    if footer is None:
        return None
    return float(footer.group(1)), footer.group(2) == "true"


def step_answer(episode: Episode, step: Step, reasoning: str | None = None) -> str:
    """The assistant answer for ``step``: its observation block, with the reward footer when
    ``episode.metadata["rewards"]`` is true."""
    if episode.metadata.get("rewards"):
        return wrap_observation(
            step.observation.text, reasoning, reward=step.reward, terminated=step.terminated
        )
    return wrap_observation(step.observation.text, reasoning)


def answer_prefix(reasoning: str) -> str:
    """The start of an answer whose rationale the simulator writes: ``<think>reasoning</think>``
    then the observation block's opening tag (the model continues with ``\n`` and the
    observation). Ends on a special token, so its tokens are the same alone as in a target."""
    return f"{THINK_OPEN}{reasoning}{THINK_CLOSE}\n{OBS_OPEN}"


def previous_observation(messages: list[Message]) -> str:
    """The observation before the trailing action of ``[system, (user, assistant) * T, user]``:
    the last assistant answer's observation block (``""`` when it has none), else the
    initial observation in the system message (``""`` when there is none)."""
    for message in reversed(messages):
        if message["role"] == "assistant":
            return parse_prediction(message["content"]) or ""
    if messages and messages[0]["role"] == "system":
        return split_system_message(messages[0]["content"])[1]
    return ""


def parse_prediction(answer: str) -> str | None:
    """The observation inside the single ``<predicted_observation>`` block of ``answer``.

    Reasoning in ``<think>`` is removed first (:func:`agentworld.core.answers.strip_think`,
    as AgentWorldBench does), so a block written while reasoning does not count.

    Returns ``None`` when the answer has no closed block or more than one
    (a malformed prediction, scored 0 by format-aware rewards).
    """
    if THINK_OPEN in answer or THINK_CLOSE in answer:
        answer = strip_think(answer)
    if answer.count(OBS_OPEN) != 1 or answer.count(OBS_CLOSE) != 1:
        return None
    match = _BLOCK.search(answer)
    return match.group(1) if match else None


def system_message(episode: Episode) -> str:
    """System content: the domain's world-model prompt, the task and the initial observation.

    An episode imported from AgentWorldBench whose ``system_str`` has no separate initial
    observation (``metadata["verbatim_system"]`` true) gives its ``system_prompt`` verbatim.
    """
    if episode.metadata.get("verbatim_system"):
        return episode.system_prompt
    parts = [episode.system_prompt.strip()] if episode.system_prompt.strip() else []
    if episode.task is not None:
        parts.append(f"Task given to the agent: {episode.task.instruction}")
    parts.append(f"{INITIAL_MARKER}{episode.initial_observation.text}")
    return "\n\n".join(parts)


def split_system_message(content: str) -> tuple[str, str]:
    """Inverse of :func:`system_message`: ``(text before the marker, initial observation)``.

    A system message without the ``Initial observation:`` marker gives
    ``(content, "")``.
    """
    if INITIAL_MARKER not in content:
        return content, ""
    head, initial = content.split(INITIAL_MARKER, 1)
    return head.strip(), initial


def episode_messages(episode: Episode, reasoning: list[str | None] | None = None) -> list[Message]:
    """The whole episode as chat messages: ``[system, (user action, assistant observation) * T]``.

    Args:
        episode: The episode to render.
        reasoning: Optional per-step rationale (``len(episode.steps)``), put in
            ``<think>`` before each observation block.
    """
    messages: list[Message] = [{"role": "system", "content": system_message(episode)}]
    for i, step in enumerate(episode.steps):
        why = reasoning[i] if reasoning else None
        messages.append({"role": "user", "content": step.action.text})
        messages.append({"role": "assistant", "content": step_answer(episode, step, why)})
    return messages


def history_window(episode: Episode) -> int | None:
    """Turns of history the world model sees (``episode.metadata["history_window"]``), or
    ``None`` for the whole episode.

    Raises:
        ValueError: the metadata value is not a non-negative integer.
    """
    window = episode.metadata.get("history_window")
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ValueError(
            f"episode {episode.id}: history_window must be a non-negative integer, got {window!r}"
        )
    return window


def window_messages(messages: list[Message], window: int | None) -> list[Message]:
    """``[system, (user, assistant) * T, user?]`` keeping only the last ``window`` whole
    (user, assistant) turns before a trailing user message (``None``: all of them)."""
    if window is None:
        return list(messages)
    head = messages[:1] if messages and messages[0]["role"] == "system" else []
    body = messages[len(head) :]
    tail = body[-1:] if len(body) % 2 else []
    turns = body[: len(body) - len(tail)]
    return head + (turns[len(turns) - 2 * window :] if window else []) + tail


def sft_pair(
    episode: Episode, turn: int, reasoning: str | None = None
) -> tuple[list[Message], str]:
    """(prompt messages, target) for predicting the observation after ``steps[turn]``.

    The prompt is the system message, the history of turns ``< turn`` (only the last
    ``history_window`` of them when the episode sets one) and the user action of ``turn``;
    the target is the assistant answer for ``turn`` (with the reward footer when the
    episode's domain defines rewards).

    Raises:
        IndexError: ``turn`` is not in ``range(len(episode.steps))``.
    """
    if not 0 <= turn < len(episode.steps):
        raise IndexError(
            f"turn {turn} out of range for episode {episode.id} with {len(episode.steps)} steps"
        )
    messages = window_messages(episode_messages(episode)[: 2 * turn + 2], history_window(episode))
    return messages, step_answer(episode, episode.steps[turn], reasoning)


def cpt_text(episode: Episode) -> str:
    """The episode as one raw text document for continual pre-training.

    A plain transcript: the system content, then for each step the action
    on a ``>>> `` line and the observation verbatim (followed by the reward footer
    when the episode's domain defines rewards).
    """
    rewards = bool(episode.metadata.get("rewards"))
    lines = [system_message(episode)]
    for step in episode.steps:
        lines.append(f"{ACTION_PREFIX}{step.action.text}")
        lines.append(step.observation.text)
        if rewards:
            done = "true" if step.terminated else "false"
            lines.append(
                f"{REWARD_OPEN}{step.reward:g}{REWARD_CLOSE}"
                f"{TERMINATED_OPEN}{done}{TERMINATED_CLOSE}"
            )
    return "\n".join(lines) + "\n"


def transcript_prompt(messages: list[Message]) -> str:
    """A chat request as the :func:`cpt_text` transcript, up to where the next observation begins.

    ``messages`` is ``[system?, (user, assistant) * T, user]``: the system content, each
    action on an ``>>> `` line and each answer with its observation block unwrapped (so a
    reward footer lands on its own line, as in :func:`cpt_text`), then the final action line
    and a newline. A model that has seen only CPT documents predicts the next observation
    by continuing this text up to the next ``>>>`` line.
    """
    lines = []
    for message in messages:
        content = message["content"]
        if message["role"] == "user":
            lines.append(f"{ACTION_PREFIX}{content}")
        elif message["role"] == "assistant":
            lines.append(_BLOCK.sub(lambda block: block.group(1), content))
        else:
            lines.append(content)
    return "\n".join(lines) + "\n"
