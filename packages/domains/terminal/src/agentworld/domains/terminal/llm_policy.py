"""The terminal's ``llm`` policy: the shared one (:mod:`agentworld.core.llm_policy`, where its
endpoint, key and model settings are documented) with a shell agent's system prompt
(:data:`AGENT_SYSTEM_PROMPT`) and a reply parser that reads a command line
(:func:`parse_command`); ``DONE`` (or an empty reply) ends the episode."""

from __future__ import annotations

import re

from agentworld.core.llm_policy import BASE_URL_VAR, LLMServerError, endpoint
from agentworld.core.llm_policy import LLMPolicy as ToolLLMPolicy
from agentworld.core.types import Action
from agentworld.domains.terminal.consistency import heredoc_delimiters

AGENT_SYSTEM_PROMPT = """You operate a Linux bash terminal to complete a task.
Reply with exactly one shell command and nothing else: no explanation, no code fences.
A command may span several lines only to write a here-document or a multi-line loop.
You see what the terminal prints after each command. When the task is done, reply DONE."""
_FENCE = re.compile(r"```[a-zA-Z]*\n?(.*?)```", re.S)


def parse_command(reply: str) -> str | None:
    """The command in a model ``reply``, without a leading ``$ ``: a code fence's content whole
    (lines stripped at both ends; it may span several lines, run as one action), else the
    first non-empty line together with the bodies of the here-documents it opens
    (:func:`~agentworld.domains.terminal.consistency.heredoc_delimiters`), so prose after
    the command is dropped. ``None`` for ``DONE`` or an empty reply."""
    fenced = _FENCE.search(reply)
    lines = (fenced.group(1) if fenced else reply).splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return None
    first = lines[0].strip()
    first = first[2:].strip() if first.startswith("$ ") else first
    if first.rstrip(".").upper() == "DONE":
        return None
    if fenced:
        return "\n".join([first, *lines[1:]]).rstrip()
    taken, pending = [first], heredoc_delimiters(first)
    for line in lines[1:]:
        if not pending:
            break
        taken.append(line)
        tabs, word = pending[0]
        if (line.lstrip("\t") if tabs else line) == word:
            pending.pop(0)
    return "\n".join(taken)


def command_action(reply: str) -> Action | None:
    """The action of a model ``reply`` (:func:`parse_command`), ``None`` to stop."""
    command = parse_command(reply)
    return Action(text=command) if command else None


class LLMPolicy(ToolLLMPolicy):
    """The shared :class:`agentworld.core.llm_policy.LLMPolicy` acting in a terminal: the
    :data:`AGENT_SYSTEM_PROMPT`, replies read by :func:`parse_command`. Arguments as there
    (``seed`` first)."""

    def __init__(self, seed: int = 0, **options: object) -> None:
        super().__init__(AGENT_SYSTEM_PROMPT, command_action, seed, **options)  # type: ignore[arg-type]


__all__ = ["BASE_URL_VAR", "LLMPolicy", "LLMServerError", "endpoint", "parse_command"]
