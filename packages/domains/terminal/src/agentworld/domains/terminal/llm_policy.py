"""The ``llm`` collection policy: a real agent behind any OpenAI-compatible endpoint.

Each step sends the conversation so far to ``POST {base_url}/chat/completions``
(the OpenAI Chat Completions API, https://platform.openai.com/docs/api-reference/chat;
served by vLLM, llama.cpp, Ollama, and ``agentworld serve-openai``): a system
message with the rules, the task instruction with the initial terminal screen,
then each command as an assistant message and what the terminal showed as the
next user message. The reply's command is the action (:func:`parse_command`: a
code block whole, else the first command line and the body of a here-document it
opens); ``DONE`` (or an empty reply) ends the episode.

Configuration (constructor arguments, else environment variables):

* ``base_url`` / ``AGENTWORLD_LLM_BASE_URL``: required, there is no default endpoint (the
  policy is offered by the domain only when the variable is set, :func:`endpoint`);
* ``model`` / ``AGENTWORLD_LLM_MODEL`` (default: the first id of ``GET {base_url}/models``);
* ``api_key``: the bearer token, sent only to the base URL it was configured with
  (:func:`agentworld.core.endpoints.resolve_endpoint`): ``api_key`` with ``base_url``,
  ``AGENTWORLD_LLM_API_KEY`` with ``AGENTWORLD_LLM_BASE_URL``, ``OPENAI_API_KEY`` with
  ``OPENAI_BASE_URL``; none otherwise, so a key never goes to a server it was not meant for;
* ``temperature`` / ``AGENTWORLD_LLM_TEMPERATURE`` (default 0.7).

The request carries ``seed`` (the episode seed plus the step), so servers that
honour it make collection reproducible.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from agentworld.core.endpoints import OPENAI_PAIR, resolve_endpoint
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.terminal.consistency import heredoc_delimiters
from agentworld.domains.terminal.policy_base import SeededPolicy, steps_taken

AGENT_SYSTEM_PROMPT = """You operate a Linux bash terminal to complete a task.
Reply with exactly one shell command and nothing else: no explanation, no code fences.
A command may span several lines only to write a here-document or a multi-line loop.
You see what the terminal prints after each command. When the task is done, reply DONE."""
BASE_URL_VAR = "AGENTWORLD_LLM_BASE_URL"
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


class LLMServerError(ConnectionError):
    """The llm policy's server cannot be reached, or answers with an error or no JSON."""


def endpoint() -> str | None:
    """The endpoint configured for the ``llm`` policy: ``$AGENTWORLD_LLM_BASE_URL``, or ``None``
    when it is unset or empty (the policy is then not offered)."""
    return os.environ.get(BASE_URL_VAR) or None


class LLMPolicy(SeededPolicy):
    """Commands from a chat model behind an OpenAI-compatible server (``name = "llm"``).

    Args:
        seed: Base of the per-request ``seed``; ``reset(seed)`` sets it per episode.
        base_url: Server root ending in ``/v1``; ``None``: ``$AGENTWORLD_LLM_BASE_URL``.
        model: Model id; ``None``: the environment variable, else the server's first model.
        api_key: Bearer token for ``base_url`` (given together with it); see the module
            docstring for the keys taken from the environment.
        temperature: Sampling temperature.
        max_steps: Actions per episode before the policy stops by itself.
        max_tokens: Completion limit per request, tokens.
        timeout_s: Per-request timeout, seconds.

    Raises:
        ValueError: no ``base_url`` and ``$AGENTWORLD_LLM_BASE_URL`` unset, or an ``api_key``
            without the ``base_url`` it is for.
    """

    name = "llm"

    def __init__(
        self,
        seed: int = 0,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        max_steps: int = 12,
        max_tokens: int = 128,
        timeout_s: float = 120.0,
    ) -> None:
        super().__init__(seed)
        self.seed = seed
        env = os.environ
        url, self.api_key = resolve_endpoint(
            "the llm policy", base_url, api_key,
            [(BASE_URL_VAR, "AGENTWORLD_LLM_API_KEY"), OPENAI_PAIR], url_vars=[BASE_URL_VAR])
        self.base_url = url.rstrip("/")
        self.model = model or env.get("AGENTWORLD_LLM_MODEL") or None
        self.temperature = (
            temperature if temperature is not None
            else float(env.get("AGENTWORLD_LLM_TEMPERATURE", "0.7"))
        )
        self.max_steps, self.max_tokens, self.timeout_s = max_steps, max_tokens, timeout_s

    def reset(self, seed: int | None = None) -> None:
        """Set the episode seed (``None``: keep the current one)."""
        super().reset(seed)
        if seed is not None:
            self.seed = seed

    def messages(self, task: Task | None, history: Sequence[Observation | Action]) -> list[dict]:
        """The chat messages for the next action (OpenAI ``messages`` format)."""
        instruction = task.instruction if task else "Explore the system."
        first = history[0].text if history else ""
        out = [
            {"role": "system", "content": AGENT_SYSTEM_PROMPT},
            {"role": "user", "content": f"Task: {instruction}\n\n{first}"},
        ]
        for item in history[1:]:
            role = "assistant" if isinstance(item, Action) else "user"
            out.append({"role": role, "content": item.text})
        return out

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The model's next command, or ``None`` when it says ``DONE`` or ``max_steps`` is reached.

        Raises:
            LLMServerError: the server cannot be reached or answers with an error, no JSON or
                no choices (a ``ConnectionError``: the command line shows it as one line).
        """
        i = steps_taken(history)
        if i >= self.max_steps:
            return None
        body = {
            "model": self.model or self._first_model(),
            "messages": self.messages(task, history),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed * 1000 + i,
        }
        reply = self._request("POST", "/chat/completions", body)
        choices = reply.get("choices") or []
        if not choices:
            raise LLMServerError(f"{self.base_url}/chat/completions answered without choices: "
                                 f"{str(reply)[:500]}")
        command = parse_command((choices[0].get("message") or {}).get("content") or "")
        return Action(text=command) if command else None

    def _first_model(self) -> str:
        data = self._request("GET", "/models", None).get("data") or []
        if not data:
            raise LLMServerError(f"{self.base_url}/models lists no model; set AGENTWORLD_LLM_MODEL")
        self.model = str(data[0]["id"])
        return self.model

    def _request(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        url = self.base_url + path
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = " ".join(exc.read().decode("utf-8", "replace")[:500].split())
            raise LLMServerError(f"the llm policy's server {url} answered {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise LLMServerError(
                f"the llm policy cannot reach {url} ({exc}); start an OpenAI-compatible server "
                f"(e.g. `agentworld serve-openai`) or set {BASE_URL_VAR}"
            ) from None
        except json.JSONDecodeError as exc:
            raise LLMServerError(f"the llm policy's server {url} did not answer JSON: {exc}") from None
