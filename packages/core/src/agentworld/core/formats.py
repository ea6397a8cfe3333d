"""Rendering episodes for each training stage, and the prediction contract.

A world model is trained as a chat model whose *assistant* is the
environment: the system message describes the environment, the task and the
initial observation; each *user* message is one agent action; each
*assistant* message is the next observation, written as optional reasoning
followed by exactly one ``<predicted_observation>...</predicted_observation>``
block (the output contract of Qwen-AgentWorld and AgentWorldBench,
arXiv 2606.24597).
"""

from __future__ import annotations

import re

from agentworld.core.types import Episode

OBS_OPEN = "<predicted_observation>"
OBS_CLOSE = "</predicted_observation>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_BLOCK = re.compile(re.escape(OBS_OPEN) + r"\n?(.*?)\n?" + re.escape(OBS_CLOSE), re.DOTALL)

Message = dict[str, str]
INITIAL_MARKER = "Initial observation:\n"


def wrap_observation(text: str, reasoning: str | None = None) -> str:
    """The assistant target for one observation: ``[<think>r</think>\\n]<predicted_observation>\\ntext\\n</predicted_observation>``."""
    head = f"{THINK_OPEN}{reasoning}{THINK_CLOSE}\n" if reasoning else ""
    return f"{head}{OBS_OPEN}\n{text}\n{OBS_CLOSE}"


def parse_prediction(answer: str) -> str | None:
    """The observation inside the single ``<predicted_observation>`` block of ``answer``.

    Returns ``None`` when the answer has no closed block or more than one
    (a malformed prediction, scored 0 by format-aware rewards).
    """
    if answer.count(OBS_OPEN) != 1 or answer.count(OBS_CLOSE) != 1:
        return None
    match = _BLOCK.search(answer)
    return match.group(1) if match else None


def system_message(episode: Episode) -> str:
    """System content: the domain's world-model prompt, the task and the initial observation."""
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
        messages.append({"role": "assistant", "content": wrap_observation(step.observation.text, why)})
    return messages


def sft_pair(episode: Episode, turn: int, reasoning: str | None = None) -> tuple[list[Message], str]:
    """(prompt messages, target) for predicting the observation after ``steps[turn]``.

    The prompt is the system message, the history of turns ``< turn`` and the
    user action of ``turn``; the target is the assistant answer for ``turn``.

    Raises:
        IndexError: ``turn`` is not in ``range(len(episode.steps))``.
    """
    if not 0 <= turn < len(episode.steps):
        raise IndexError(f"turn {turn} out of range for episode {episode.id} with {len(episode.steps)} steps")
    messages = episode_messages(episode)[: 2 * turn + 2]
    step = episode.steps[turn]
    return messages, wrap_observation(step.observation.text, reasoning)


def cpt_text(episode: Episode) -> str:
    """The episode as one raw text document for continual pre-training.

    A plain transcript: the system content, then for each step the action
    on a ``>>> `` line and the observation verbatim.
    """
    lines = [system_message(episode)]
    for step in episode.steps:
        lines.append(f">>> {step.action.text}")
        lines.append(step.observation.text)
    return "\n".join(lines) + "\n"
