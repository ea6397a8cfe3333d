"""The ``llm`` collection policy, shared by every domain: a real agent behind any
OpenAI-compatible endpoint.

Each step sends the conversation so far to ``POST {base_url}/chat/completions``
(the OpenAI Chat Completions API, https://platform.openai.com/docs/api-reference/chat;
served by vLLM, llama.cpp, Ollama, and ``agentworld serve-openai``): the domain's agent
system message, the task instruction with the initial observation, then each action as an
assistant message and each observation as the next user message. The domain's
``parse_reply`` turns the reply into the action (the terminal: a command line; tool domains:
a JSON tool call, :func:`parse_tool_call`); ``None`` ends the episode.

Configuration (constructor arguments, else environment variables):

* ``base_url`` / ``AGENTWORLD_LLM_BASE_URL``: required, there is no default endpoint (a domain
  offers the policy only when the variable is set, :func:`endpoint`);
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
from collections.abc import Callable, Sequence
from typing import Any

from agentworld.core.domain_base import PolicyBase
from agentworld.core.endpoints import OPENAI_PAIR, resolve_endpoint
from agentworld.core.types import Action, Observation, Task

BASE_URL_VAR = "AGENTWORLD_LLM_BASE_URL"
TOOL_AGENT_PROMPT = """You use tools to complete a task.
Reply with exactly one tool call as JSON, {"name": TOOL, "arguments": {...}}, and nothing else.
You see each tool's response. When the task is done, reply DONE."""
_FENCE = re.compile(r"```[a-zA-Z]*\n?(.*?)```", re.S)


def parse_tool_call(reply: str) -> Action | None:
    """The tool call in a model ``reply``: the first JSON object (in a code fence or not) with a
    string ``name`` and an object ``arguments`` (missing: ``{}``), as an :class:`Action` whose
    ``text`` is the reply's call. ``None`` for ``DONE``, an empty reply, or no such object (a
    reply the model did not make a call in ends the episode)."""
    fenced = _FENCE.search(reply)
    text = (fenced.group(1) if fenced else reply).strip()
    if not text or text.rstrip(".").upper() == "DONE":
        return None
    decoder = json.JSONDecoder()
    for start in (i for i, c in enumerate(text) if c == "{"):
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            arguments = value.get("arguments", {})
            if isinstance(arguments, dict):
                return Action(text=text[start:end], name=value["name"], arguments=arguments)
    return None


class LLMServerError(ConnectionError):
    """The llm policy's server cannot be reached, or answers with an error or no JSON."""


def endpoint() -> str | None:
    """The endpoint configured for the ``llm`` policy: ``$AGENTWORLD_LLM_BASE_URL``, or ``None``
    when it is unset or empty (the policy is then not offered)."""
    return os.environ.get(BASE_URL_VAR) or None


class LLMPolicy(PolicyBase):
    """Actions from a chat model behind an OpenAI-compatible server (``name = "llm"``), for any
    domain: the domain gives the agent's system prompt and how a reply becomes an action.

    Args:
        agent_prompt: The system message telling the model how to act and reply.
        parse_reply: A reply's text -> the :class:`Action`, or ``None`` to stop (default:
            :func:`parse_tool_call`, a JSON tool call, as tool domains take).
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
        agent_prompt: str = TOOL_AGENT_PROMPT,
        parse_reply: Callable[[str], Action | None] | None = None,
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
        self.agent_prompt = agent_prompt
        self.parse_reply = parse_reply or parse_tool_call
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
        if seed is not None:
            self.seed = seed

    def messages(self, task: Task | None, history: Sequence[Observation | Action]) -> list[dict]:
        """The chat messages for the next action (OpenAI ``messages`` format)."""
        instruction = task.instruction if task else "Explore the system."
        first = history[0].text if history else ""
        out = [
            {"role": "system", "content": self.agent_prompt},
            {"role": "user", "content": f"Task: {instruction}\n\n{first}"},
        ]
        for item in history[1:]:
            role = "assistant" if isinstance(item, Action) else "user"
            out.append({"role": role, "content": item.text})
        return out

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The model's next action, or ``None`` when the reply says stop (``parse_reply``) or
        ``max_steps`` is reached.

        Raises:
            LLMServerError: the server cannot be reached or answers with an error, no JSON or
                no choices (a ``ConnectionError``: the command line shows it as one line).
        """
        i = sum(isinstance(item, Action) for item in history)
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
        return self.parse_reply((choices[0].get("message") or {}).get("content") or "")

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
