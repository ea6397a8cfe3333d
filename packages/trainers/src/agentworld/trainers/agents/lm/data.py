"""Token-level transcripts of language-model agent episodes, and their training batches.

An agent episode is one chat: ``system`` = the task instruction plus a short agent prompt,
then ``user`` = observation and ``assistant`` = action, alternating. The transcript is kept
as token ids, extended turn by turn exactly as the policy saw it: the first prompt is the
chat template's rendering, each sampled action is appended token for token, and each new
observation is appended as the template's text between an assistant message and the next
generation prompt. So the sequence trained on is the sequence that was sampled (behaviour
log-probabilities line up), and the engine continues a pinned episode by prefilling only
the new observation. Only the sampled tokens carry loss (``Trajectory.action_mask``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import torch
from agentworld.core.types import Task

AGENT_PROMPT = "You are the agent. Reply with your next action only, on one line."
_MARK = "\x00action\x00"  # stands for an assistant message's content in the template


class EpisodeStatus(Enum):
    """Where an episode stands; every status but ``RUNNING`` is final."""

    RUNNING = "running"
    TERMINATED = "terminated"  # the environment ended it (goal reached or failed)
    TRUNCATED = "truncated"  # the environment cut it (time limit, malformed simulation)
    MAX_TURNS = "max_turns"  # the trainer's turn limit
    CONTEXT = "context"  # the next turn would not fit into ``max_seq_len``


@dataclass(slots=True)
class Trajectory:
    """One episode of the policy: its transcript and what the environment answered.

    Attributes:
        group: Index of the group (task slot of the optimizer step) it belongs to.
        token_ids: The transcript ``[seq_len]`` (tokens): prompts, actions, observations.
        action_mask: ``[seq_len]`` 1 on tokens the policy sampled (actions, stop token
            included), 0 on system, observation and template tokens.
        logprobs: ``[seq_len]`` behaviour log-probabilities of sampled tokens (natural log,
            raw distribution), 0 elsewhere.
        actions: The action text sent to the environment at each turn.
        rewards: The reward of each turn.
        status: :class:`EpisodeStatus`.
        success: The last ``info["success"]`` the environment reported (``None``: none; see
            :attr:`succeeded`).
        parse_failures: Steps whose ``info["parsed"]`` was false (a simulated answer that
            did not parse).
        retried: Times the episode was re-run after its environment's Ray actor died
            (``info["retried"]``, :mod:`agentworld.core.ray_envs`); 0 in-process.
    """

    group: int
    token_ids: list[int]
    action_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    status: EpisodeStatus = EpisodeStatus.RUNNING
    success: bool | None = None
    parse_failures: int = 0
    retried: int = 0

    def __post_init__(self) -> None:
        n = len(self.token_ids)
        self.action_mask = self.action_mask or [0] * n
        self.logprobs = self.logprobs or [0.0] * n
        assert len(self.action_mask) == len(self.logprobs) == n

    @property
    def is_finished(self) -> bool:
        return self.status is not EpisodeStatus.RUNNING

    @property
    def episode_return(self) -> float:
        """Undiscounted sum of the rewards."""
        return float(sum(self.rewards))

    @property
    def succeeded(self) -> bool:
        """The environment's own ``info["success"]`` when it reported one, else ``return > 0``."""
        return self.success if self.success is not None else self.episode_return > 0

    @property
    def num_turns(self) -> int:
        return len(self.actions)

    @property
    def num_action_tokens(self) -> int:
        return sum(self.action_mask)

    def append_action(self, token_ids: Sequence[int], logprobs: Sequence[float]) -> None:
        """Append sampled tokens (they carry loss)."""
        assert len(token_ids) == len(logprobs), "one log-probability per sampled token"
        self.token_ids += token_ids
        self.action_mask += [1] * len(token_ids)
        self.logprobs += logprobs

    def append_context(self, token_ids: Sequence[int]) -> None:
        """Append tokens the policy did not sample (masked out of the loss)."""
        self.token_ids += token_ids
        self.action_mask += [0] * len(token_ids)
        self.logprobs += [0.0] * len(token_ids)


def observation_text(observation: Any) -> str:
    """The text of an observation: an ``Observation`` (``.text``) or a plain string."""
    if isinstance(observation, str):
        return observation
    text = getattr(observation, "text", None)
    if not isinstance(text, str):
        raise TypeError(
            f"an observation must be a str or have a str .text (agentworld.core.types."
            f"Observation), got {type(observation).__name__}"
        )
    return text


def system_message(task: Task | None, agent_prompt: str = AGENT_PROMPT) -> str:
    """The agent's system message: the task instruction, then ``agent_prompt``."""
    parts = [task.instruction.strip() if task is not None else "", agent_prompt.strip()]
    return "\n\n".join(p for p in parts if p)


def first_action(text: str) -> str:
    """The action in a generated reply: its first non-empty line, stripped ('' if none)."""
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


class ChatTokens:
    """Incremental ChatML-style rendering of an agent chat with ``tokenizer``'s template.

    Args:
        tokenizer: A tokenizer with a chat template.

    Raises:
        ValueError: the tokenizer has no chat template, or its template drops assistant
            messages (so no observation can follow an action).
    """

    def __init__(self, tokenizer: Any):
        if not tokenizer.chat_template:
            raise ValueError("the policy's tokenizer has no chat template (ChatML expected)")
        self.tokenizer = tokenizer
        probe = self._text([("system", "s"), ("user", "o"), ("assistant", _MARK)], False)
        if _MARK not in probe:
            raise ValueError("the tokenizer's chat template does not render assistant messages")

    def _text(self, turns: list[tuple[str, str]], generation_prompt: bool) -> str:
        messages = [{"role": role, "content": content} for role, content in turns]
        return self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=generation_prompt, tokenize=False
        )

    def first_prompt(self, system: str, observation: str) -> list[int]:
        """Prompt ids ``[prompt_len]`` of ``[system?, user]`` with the generation prompt."""
        turns = ([("system", system)] if system else []) + [("user", observation)]
        encoded = self.tokenizer.apply_chat_template(
            [{"role": r, "content": c} for r, c in turns], add_generation_prompt=True
        )
        return list(encoded["input_ids"])

    def next_turn(self, observation: str, stop_text: str | None) -> list[int]:
        """Ids ``[n]`` that close the assistant message and open the next turn: the template's
        text after an assistant message's content, up to the next generation prompt.

        Args:
            observation: The new observation (the next user message).
            stop_text: Text of the stop token that ended the action (already in the
                transcript), dropped from the front of the closing text; ``None`` when the
                action hit its token limit.
        """
        text = self._text(
            [("system", "s"), ("user", "o"), ("assistant", _MARK), ("user", observation)], True
        )
        tail = text[text.index(_MARK) + len(_MARK) :]
        if stop_text and tail.startswith(stop_text):
            tail = tail[len(stop_text) :]
        return list(self.tokenizer(tail, add_special_tokens=False)["input_ids"])


def pick_tasks(num_tasks: int, per_step: int, step: int, seed: int) -> list[int]:
    """Task indices of optimizer ``step``: consecutive slices of per-epoch shuffles of
    ``range(num_tasks)``, a pure function of ``(num_tasks, per_step, step, seed)`` (so a
    resumed run sees the tasks an uninterrupted one would)."""
    out = []
    for k in range(step * per_step, (step + 1) * per_step):
        epoch, i = divmod(k, num_tasks)
        order = list(range(num_tasks))
        random.Random(f"{seed}:tasks:{epoch}").shuffle(order)
        out.append(order[i])
    return out


def group_seeds(num_groups: int, step: int, seed: int) -> list[int]:
    """Reset seeds ``[num_groups]`` (in ``[0, 2**31)``) of optimizer ``step``, a pure function
    of ``(num_groups, step, seed)``; the ``G`` environments of a group share one."""
    rng = random.Random(f"{seed}:resets:{step}")
    return [rng.randrange(2**31) for _ in range(num_groups)]


def episode_batch(
    trajectories: Sequence[Trajectory], pad_id: int, device: torch.device
) -> dict[str, torch.Tensor]:
    """Right-padded transcripts and the index of every action token, for
    :func:`agentworld.trainers.training.grpo_loop.answer_logprobs` and :func:`agentworld.trainers.training.grpo.grpo_loss`.

    Args:
        trajectories: ``[n]`` finished episodes, each with at least one action token.
        pad_id: Padding token id.
        device: Where the tensors go.

    Returns:
        ``input_ids [n, width]``; ``loss_mask [n, width]`` the transcripts' action masks;
        ``answer [n, K]`` action token ids (``K`` = most action tokens of an episode);
        ``positions [n, K]`` the position whose logits predict each action token (its index
        minus 1); ``mask [n, K]`` 1 on real action tokens, 0 on padding; ``old_logprobs
        [n, K]`` behaviour log-probabilities.
    """
    n = len(trajectories)
    width = max(len(t.token_ids) for t in trajectories)
    k = max(t.num_action_tokens for t in trajectories)
    assert k > 0, "an optimizer step needs at least one action token"
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    loss_mask = torch.zeros(n, width, dtype=torch.long)
    answer = torch.full((n, k), pad_id, dtype=torch.long)
    positions = torch.zeros(n, k, dtype=torch.long)
    mask = torch.zeros(n, k)
    old = torch.zeros(n, k)
    for row, t in enumerate(trajectories):
        ids[row, : len(t.token_ids)] = torch.tensor(t.token_ids)
        loss_mask[row, : len(t.action_mask)] = torch.tensor(t.action_mask)
        where = [j for j, m in enumerate(t.action_mask) if m]
        assert where and where[0] > 0, "an action token needs a prompt before it"
        answer[row, : len(where)] = torch.tensor([t.token_ids[j] for j in where])
        positions[row, : len(where)] = torch.tensor(where) - 1
        mask[row, : len(where)] = 1
        old[row, : len(where)] = torch.tensor([t.logprobs[j] for j in where])
    out = {
        "input_ids": ids,
        "loss_mask": loss_mask,
        "answer": answer,
        "positions": positions,
        "mask": mask,
        "old_logprobs": old,
    }
    return {key: value.to(device) for key, value in out.items()}
