"""An agentworld environment as a tool environment for TRL's ``GRPOTrainer(environment_factory=...)``.

TRL (1.x, ``trl/trainer/grpo_trainer.py``) builds one environment object per rollout by
calling a zero-argument factory, calls ``reset(**row)`` with the dataset row before
generation (a returned string is appended to the last user message), exposes every public
*function* of the object's class except ``reset``/``get_reward`` as a tool (schema from the
type hints and Google-style docstring, ``transformers.utils.get_json_schema``), calls a tool
as ``method(**arguments)`` when the policy emits a tool call and feeds ``str(result)`` back
as a ``tool`` message, and passes the per-rollout objects to reward functions as
``environments=``. Properties are not functions, so the state below is read through them
without becoming tools.

Tools per domain (:func:`tool_env_class`):

- free-text actions (the terminal): one tool named after the domain, ``terminal(command: str)``;
- word actions (a domain with ``actions = ["left", "down", ...]``): one tool with the words as
  a JSON-schema ``enum``, ``frozenlake_4x4(action: Literal["left", ...])``. One tool rather
  than one argument-free tool per word: the prompt carries one schema instead of N, a word
  cannot collide with TRL's reserved ``reset``/``get_reward`` or need to be a Python
  identifier, and a wrong word reaches the environment's own defined "invalid action"
  outcome instead of TRL's "Tool ... not found" error.

Tools are named after the domain so that a ``dict`` ``environment_factory`` (TRL's
multi-environment mode) never exposes two environments' tools under one name.

Usage::

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    rows = task_rows(domain.tasks().sample(64, seed=0))
    trainer = GRPOTrainer(
        model, reward_funcs=episode_return_reward, args=GRPOConfig(...),
        train_dataset=Dataset.from_list(rows),
        environment_factory=environment_factory("terminal"),
    )

trl itself is not imported here: the adapter is duck-typed, so this module loads without
the ``agentworld-trainers[trl]`` extra.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from agentworld.core.domain_base import domain_hooks
from agentworld.core.protocols import Domain, Environment
from agentworld.core.types import Task
from agentworld.trainers.agents.trl_tool_env import AgentWorldToolEnv

__all__ = [
    "AgentWorldToolEnv",
    "environment_factory",
    "episode_return_reward",
    "task_rows",
    "tool_env_class",
]


def tool_env_class(
    domain: Domain, *, tool_name: str | None = None, actions: Sequence[str] | None = None
) -> type[AgentWorldToolEnv]:
    """A subclass of :class:`AgentWorldToolEnv` with one tool method for ``domain``.

    Args:
        domain: The domain; its ``name`` names the tool, and its ``actions`` (when not
            ``None``) choose the tool's argument.
        tool_name: Tool name instead of the domain name made an identifier
            (``"frozenlake-4x4"`` -> ``"frozenlake_4x4"``).
        actions: Action words instead of the domain's ``actions``.

    Returns:
        The class. Its tool is ``NAME(command: str) -> str`` for free-text domains, or
        ``NAME(action: Literal[*words]) -> str`` for word domains (an ``enum`` in the
        tool's JSON schema).

    Raises:
        ValueError: the tool name is not a Python identifier, is reserved by TRL
            (``reset``, ``get_reward``) or clashes with the adapter's attributes, or the
            action words are empty or not strings.
    """
    name = tool_name or _identifier(domain.name)
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise ValueError(
            f"tool name {name!r} must be a public Python identifier (letters, digits, _)"
        )
    if name in ("reset", "get_reward") or hasattr(AgentWorldToolEnv, name):
        raise ValueError(f"tool name {name!r} is reserved by TRL or the adapter; pass tool_name")
    if actions is None:
        actions = domain_hooks(domain).actions
    if actions is not None:
        words = list(actions)
        if not words or not all(isinstance(w, str) and w for w in words):
            raise ValueError(f"actions must be a non-empty list of words, got {words!r}")
        tool = _word_tool(name, domain.name, words)
    else:
        tool = _command_tool(name, domain.name)
    cls_name = "".join(p.capitalize() for p in name.split("_")) + "ToolEnv"
    namespace = {"domain_name": domain.name, "tool_name": name, name: tool}
    return type(cls_name, (AgentWorldToolEnv,), namespace)


def environment_factory(
    domain: str | Domain,
    make_env: Callable[[], Environment] | None = None,
    *,
    max_steps: int | None = None,
    tool_name: str | None = None,
    on_create: Callable[[AgentWorldToolEnv], None] | None = None,
) -> Callable[[], AgentWorldToolEnv]:
    """A zero-argument factory for ``GRPOTrainer(environment_factory=...)``.

    TRL calls it once per concurrent rollout and reuses the instances across batches
    (resetting them), so each instance owns one environment for the whole run.

    Args:
        domain: A domain object or its registered name
            (``agentworld.core.plugins.get_domain``).
        make_env: Builds the environment of one instance (default: ``domain.make_env()``,
            the real environment); pass e.g. ``lambda: SimEnv(wm, domain=domain)`` to train
            inside a world model.
        max_steps: Tool calls per episode (see :class:`AgentWorldToolEnv`).
        tool_name: See :func:`tool_env_class`.
        on_create: Called with each new instance (e.g. to keep them for closing).

    Returns:
        The factory.

    Raises:
        agentworld.core.plugins.UnknownPluginError: ``domain`` names no installed domain.
        ValueError: ``max_steps`` is not positive; see also :func:`tool_env_class`.
    """
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"max_steps must be a positive number of steps, got {max_steps}")
    if isinstance(domain, str):
        from agentworld.core.plugins import get_domain

        domain = get_domain(domain)
    cls = tool_env_class(domain, tool_name=tool_name)
    build = make_env or domain.make_env

    def make() -> AgentWorldToolEnv:
        instance = cls(build(), max_steps=max_steps)
        if on_create is not None:
            on_create(instance)
        return instance

    return make


def episode_return_reward(
    prompts: Sequence[Any] | None = None,
    completions: Sequence[Any] | None = None,
    *,
    environments: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """TRL reward function: each rollout's episode return, read from its environment.

    Signature as TRL calls reward functions (``prompts``, ``completions``, the dataset
    columns and ``environments`` as keywords). The return is the undiscounted sum of the
    environment's step rewards over the rollout's tool calls (0.0 when the policy called no
    tool); GRPO then normalises it within each group (Shao et al. 2024, arXiv:2402.03300).

    Args:
        prompts: ``[batch]`` prompts (unused).
        completions: ``[batch]`` completions (unused).
        environments: ``[batch]`` environment objects, one per rollout.
        **kwargs: Other TRL arguments (ignored).

    Returns:
        ``[batch]`` returns; ``None`` for an environment that is not an
        :class:`AgentWorldToolEnv` (TRL leaves such rollouts out of this reward).

    Raises:
        ValueError: ``environments`` was not given (the trainer has no
            ``environment_factory``).
    """
    if environments is None:
        raise ValueError(
            "episode_return_reward needs environments=; pass environment_factory= to GRPOTrainer"
        )
    return [e.episode_return if isinstance(e, AgentWorldToolEnv) else None for e in environments]


def task_rows(tasks: Sequence[Task], *, prompt: str | None = None) -> list[dict[str, Any]]:
    """Dataset rows for TRL: ``{"prompt": [user message], "task": task JSON}`` per task.

    ``task`` is stored as JSON text because task set-up data differs in shape between tasks
    (an Arrow struct column would merge their keys); :meth:`AgentWorldToolEnv.reset` reads
    it back. Build the dataset with ``datasets.Dataset.from_list(rows)``.

    Args:
        tasks: ``[n]`` tasks.
        prompt: User message text instead of each task's instruction.

    Returns:
        ``[n]`` rows.
    """
    return [
        {
            "prompt": [
                {"role": "user", "content": prompt if prompt is not None else t.instruction}
            ],
            "task": t.model_dump_json(),
        }
        for t in tasks
    ]


def _command_tool(name: str, domain_name: str) -> Callable[..., str]:
    def tool(self: AgentWorldToolEnv, command: str) -> str:
        return self._act(command)

    tool.__doc__ = (
        f"Run one action in the {domain_name} environment and return what it shows next.\n\n"
        "Args:\n"
        f"    command: The action to send, e.g. one command line for the {domain_name}.\n\n"
        "Returns:\n"
        "    The observation text after the action.\n"
    )
    tool.__annotations__ = {"command": str, "return": str}
    return _named(tool, name)


def _word_tool(name: str, domain_name: str, words: list[str]) -> Callable[..., str]:
    def tool(self: AgentWorldToolEnv, action: str) -> str:
        return self._act(action)

    tool.__doc__ = (
        f"Take one action in the {domain_name} environment and return what it shows next.\n\n"
        "Args:\n"
        f"    action: The action word, one of {', '.join(words)}.\n\n"
        "Returns:\n"
        "    The observation text after the action.\n"
    )
    tool.__annotations__ = {"action": Literal[tuple(words)], "return": str}
    return _named(tool, name)


def _named(tool: Callable[..., str], name: str) -> Callable[..., str]:
    tool.__name__ = name
    tool.__qualname__ = name
    return tool


def _identifier(name: str) -> str:
    ident = re.sub(r"\W", "_", name)
    return f"env_{ident}" if ident[:1].isdigit() else ident
