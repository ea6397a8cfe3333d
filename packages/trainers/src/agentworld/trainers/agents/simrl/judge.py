"""The ``judge`` reward source: a chat model behind any OpenAI-compatible endpoint reads the
task and the simulated transcript and says whether the task is done.

One request per simulated step (``POST {base_url}/chat/completions`` through the official
``openai`` client, as the ``llm_judge`` reward of :mod:`agentworld.rewards.judge`): the system
message is :data:`JUDGE_PROMPT`, the user message the task instruction and every tool call so
far with its (simulated) response, rendered by :func:`render_case`. The reply's first word
decides (:func:`parse_verdict`): ``YES`` is success (reward 1, terminated), ``NO`` is not yet
(reward 0, not terminated), anything else is "cannot tell" (``None``; counted in
:attr:`TranscriptJudge.stats`), which the reward source treats as undecided.

Configuration (arguments, else environment variables): ``base_url`` /
``$AGENTWORLD_JUDGE_BASE_URL`` (else ``$OPENAI_BASE_URL``; there is no default endpoint),
``model`` / ``$AGENTWORLD_JUDGE_MODEL`` (else the endpoint's first listed model), and the key
sent only to the URL it was configured with (:func:`agentworld.core.endpoints.resolve_endpoint`:
``api_key`` with ``base_url``, ``$AGENTWORLD_JUDGE_API_KEY`` with
``$AGENTWORLD_JUDGE_BASE_URL``, ``$OPENAI_API_KEY`` with ``$OPENAI_BASE_URL``).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import openai
from agentworld.core.endpoints import OPENAI_PAIR, resolve_endpoint
from agentworld.core.types import Task

ENV_PAIRS = [("AGENTWORLD_JUDGE_BASE_URL", "AGENTWORLD_JUDGE_API_KEY"), OPENAI_PAIR]

JUDGE_PROMPT = """You check whether an agent has completed a task by calling tools.
You are shown the task, then each tool call the agent made with the tool's response, oldest first.
Judge only from the responses shown: a call whose response is an error changed nothing.
The task is complete when the responses show that every part of it was done (for a question:
the last response shows the answer).
Reply with one word: YES if the task is complete, NO if it is not."""

_THINK = re.compile(r"<think>.*?</think>", re.S)
_FIRST_WORD = re.compile(r"[^A-Za-z]*([A-Za-z]+)")


class JudgeUnavailableError(ConnectionError):
    """The judge's endpoint cannot be reached, or refuses the request (one-line message)."""


@dataclass(slots=True)
class JudgeStats:
    """Counts of one judge's requests: answered ``yes``, ``no`` and ``cannot_tell`` (a reply
    that did not parse, :func:`parse_verdict`)."""

    requests: int = 0
    yes: int = 0
    no: int = 0
    cannot_tell: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"requests": self.requests, "yes": self.yes, "no": self.no,
                "cannot_tell": self.cannot_tell}  # fmt: skip


def parse_verdict(reply: str) -> bool | None:
    """``True`` for a reply whose first word (after any ``<think>`` block and leading
    punctuation, case ignored) is ``yes``, ``False`` for ``no``, ``None`` otherwise
    (cannot tell)."""
    match = _FIRST_WORD.match(_THINK.sub("", reply))
    word = match.group(1).lower() if match else ""
    return {"yes": True, "no": False}.get(word)


def render_case(task: Task | None, transcript: Sequence[tuple[str, str]]) -> str:
    """The user message of a judge request: ``Task: ...`` then per step ``Call k: <action>``
    and ``Response k: <observation>`` (``transcript``: ``[(action, observation), ...]``,
    oldest first), then the question."""
    lines = [f"Task: {task.instruction if task is not None else '(none given)'}", ""]
    for k, (action, observation) in enumerate(transcript, 1):
        lines += [f"Call {k}: {action}", f"Response {k}: {observation}", ""]
    if not transcript:
        lines += ["(no call was made)", ""]
    lines.append("Is the task complete? Answer YES or NO.")
    return "\n".join(lines)


class TranscriptJudge:
    """Success of a simulated transcript, asked of a chat model (module docstring).

    Args:
        base_url: Endpoint root ending in ``/v1``; ``None``: from the environment.
        model: Model id; ``None``: ``$AGENTWORLD_JUDGE_MODEL``, else the endpoint's first.
        api_key: Bearer key for ``base_url`` (only together with it).
        max_tokens: Completion limit per reply, tokens.
        timeout_s: Per-request timeout, seconds.
        retries: Retries of a failed request (connection errors, 408/409/429/5xx) by the
            ``openai`` client, with back-off.

    Raises:
        ValueError: no endpoint configured, an ``api_key`` without its ``base_url``, or
            ``max_tokens`` < 1.
    """

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        *,
        api_key: str | None = None,
        max_tokens: int = 8,
        timeout_s: float = 60.0,
        retries: int = 2,
    ):
        if max_tokens < 1:
            raise ValueError(f"judge max_tokens must be >= 1, got {max_tokens}")
        self.base_url, key = resolve_endpoint("the judge reward source", base_url, api_key, ENV_PAIRS)
        self.client = openai.OpenAI(base_url=self.base_url, api_key=key or "EMPTY",
                                    timeout=timeout_s, max_retries=retries)  # fmt: skip
        self.model = model or os.environ.get("AGENTWORLD_JUDGE_MODEL") or None
        self.max_tokens = max_tokens
        self.stats = JudgeStats()
        self._lock = threading.Lock()

    def verdict(
        self, task: Task | None, transcript: Sequence[tuple[str, str]]
    ) -> tuple[float, bool] | None:
        """``(1.0, True)`` when the judge says the task is complete, ``(0.0, False)`` when it
        says not, ``None`` when its reply does not parse (cannot tell).

        Raises:
            JudgeUnavailableError: the endpoint cannot be reached, or answers with an error or
                no choices (the message names the URL and model).
        """
        messages = [{"role": "system", "content": JUDGE_PROMPT},
                    {"role": "user", "content": render_case(task, transcript)}]  # fmt: skip
        model = self.model or self._first_model()
        try:
            reply = self.client.chat.completions.create(  # type: ignore[call-overload]
                model=model, messages=messages, temperature=0.0, max_tokens=self.max_tokens)
        except openai.APIConnectionError as error:
            raise JudgeUnavailableError(self._failed(f"cannot be reached ({error})")) from None
        except openai.APIStatusError as error:
            what = f"answered HTTP {error.status_code} ({error})"
            raise JudgeUnavailableError(self._failed(what)) from None
        if not reply.choices:
            raise JudgeUnavailableError(self._failed("answered without choices"))
        said = parse_verdict(reply.choices[0].message.content or "")
        with self._lock:
            self.stats.requests += 1
            if said is None:
                self.stats.cannot_tell += 1
            elif said:
                self.stats.yes += 1
            else:
                self.stats.no += 1
        if said is None:
            return None
        return (1.0, True) if said else (0.0, False)

    def _first_model(self) -> str:
        try:
            served = [m.id for m in self.client.models.list()]
        except openai.APIError as error:
            raise JudgeUnavailableError(self._failed(f"did not list its models ({error})")) from None
        if not served:
            raise JudgeUnavailableError(self._failed("lists no model; set AGENTWORLD_JUDGE_MODEL"))
        self.model = served[0]
        return self.model

    def _failed(self, what: str) -> str:
        message = f"the judge endpoint {self.base_url} (model {self.model!r}) {what}"
        return " ".join(message.split())[:500]
