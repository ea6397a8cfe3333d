"""The ``llm_judge`` reward: an LLM over any OpenAI-compatible chat endpoint grades predictions.

Each prediction is compared with the real reference observation on the five AgentWorldBench
dimensions (:mod:`agentworld.rewards.rubrics`), each scored 1-5, mapped to 0-100 and averaged
into a reward in ``[0, 1]`` (:mod:`agentworld.rewards.verdict`). Requests go out concurrently
(a bounded thread pool) through the official ``openai`` client, which retries connection
errors and 408/409/429/5xx answers with exponential back-off and applies the timeout.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from agentworld.core.endpoints import OPENAI_PAIR, resolve_endpoint
from agentworld.core.protocols import Domain
from agentworld.core.types import Action
from agentworld.rewards.rubrics import load_rubrics, render_case
from agentworld.rewards.rules import check_batch
from agentworld.rewards.verdict import Verdict, VerdictStatus, verdict_of

logger = logging.getLogger(__name__)

#: Where the judge's endpoint and key come from: each key only with its own URL.
ENV_PAIRS = [("AGENTWORLD_JUDGE_BASE_URL", "AGENTWORLD_JUDGE_API_KEY"), OPENAI_PAIR]


class JudgeUnavailableError(RuntimeError):
    """The judge endpoint cannot be reached, refuses the credentials, or lacks the model."""


class JudgeParseError(ValueError):
    """Judge answers without parseable scores, and no ``fallback`` was configured."""


@dataclass(slots=True)
class JudgeStats:
    """Running counts of one :class:`LLMJudge` (requests, not batches).

    ``num_fallbacks`` counts the predictions scored with the configured ``fallback``
    (``num_unparseable + num_refused`` when one is set).
    """

    num_requests: int = 0
    num_parsed: int = 0
    num_unparseable: int = 0
    num_refused: int = 0
    num_fallbacks: int = 0


def _domain_name(domain: Any) -> str | None:
    if domain is None or isinstance(domain, str):
        return domain
    return domain.name if isinstance(domain, Domain) else None


def _action_text(action: Any) -> str | None:
    if action is None or isinstance(action, str):
        return action
    return action.text if isinstance(action, Action) else None


class LLMJudge:
    """Batched reward from an LLM judge: ``[batch]`` in, ``[batch]`` floats in ``[0, 1]`` out.

    The value of one prediction is the mean over format, factuality, consistency, realism and
    quality of ``25 * (score - 1)``, divided by 100 (so all 5s give 1.0, all 1s give 0.0). A
    ``None`` prediction (malformed answer) scores 0 without a request. Contexts may carry
    ``domain`` (a domain or its name: picks the rubric) and ``action`` (an ``Action`` or text:
    shown to the judge).

    Args:
        model: Judge model name as the endpoint lists it; default ``$AGENTWORLD_JUDGE_MODEL``,
            else the first model the endpoint lists.
        base_url: Endpoint root; default ``$AGENTWORLD_JUDGE_BASE_URL``, else
            ``$OPENAI_BASE_URL``; there is no default endpoint.
        api_key: Bearer key for ``base_url`` (only together with it). Otherwise the key
            configured with the same URL: ``$AGENTWORLD_JUDGE_API_KEY`` when
            ``$AGENTWORLD_JUDGE_BASE_URL`` is that URL, ``$OPENAI_API_KEY`` when
            ``$OPENAI_BASE_URL`` is; else ``"EMPTY"`` (what local servers accept), so a key
            never goes to a server it was not meant for
            (:func:`agentworld.core.endpoints.resolve_endpoint`).
        prompt_file: A rubric file for every domain, or domain name (or ``"generic"``) -> file
            (:func:`agentworld.rewards.rubrics.load_rubrics`); default: our rubrics.
        fallback: Value in ``[0, 1]`` given to a prediction whose judge answer has no
            parseable scores or whose request the endpoint refused (counted in :attr:`stats`,
            logged per batch). ``None`` (default): such a batch raises instead.
        temperature: Judge sampling temperature (``0``: greedy).
        max_tokens: Completion limit per judge answer (tokens).
        timeout: Per-request timeout (seconds).
        retries: Retries per request after the first attempt (by the ``openai`` client).
        max_concurrency: Most requests in flight at once.
        check: Ask the endpoint for its models now (``GET /models``), so that a wrong URL, key
            or model fails here, before any training starts. Without a ``model`` the endpoint
            is always asked (its first model is used).

    Raises:
        ValueError: ``fallback`` outside ``[0, 1]``, ``max_tokens``/``max_concurrency`` < 1,
            no endpoint, or an ``api_key`` without the ``base_url`` it is for.
        FileNotFoundError: A prompt file does not exist.
        JudgeUnavailableError: (with ``check``) the endpoint is unreachable, refuses the key, or
            does not serve ``model``; the message names the URL.
    """

    name = "llm_judge"
    model_based = True  # hybrid: not run on content the domain marks deterministic

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        prompt_file: str | Path | Mapping[str, str | Path] | None = None,
        fallback: float | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        timeout: float = 60.0,
        retries: int = 2,
        max_concurrency: int = 16,
        check: bool = True,
    ):
        if fallback is not None and not 0.0 <= fallback <= 1.0:
            raise ValueError(f"llm_judge fallback must lie in [0, 1] or be None, got {fallback}")
        if max_tokens < 1 or max_concurrency < 1:
            raise ValueError(
                f"llm_judge max_tokens and max_concurrency must be >= 1, "
                f"got {max_tokens} and {max_concurrency}"
            )
        self.rubrics = load_rubrics(prompt_file)
        self.base_url, key = resolve_endpoint("llm_judge", base_url, api_key, ENV_PAIRS)
        self.client = openai.OpenAI(
            base_url=self.base_url, api_key=key or "EMPTY", timeout=timeout, max_retries=retries
        )
        self.model = model or os.environ.get("AGENTWORLD_JUDGE_MODEL")
        self.fallback, self.temperature, self.max_tokens = fallback, temperature, max_tokens
        self.stats = JudgeStats()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_concurrency, thread_name_prefix="llm-judge")
        if check or self.model is None:
            self._check_model()

    def _check_model(self) -> None:
        try:
            served = [m.id for m in self.client.models.list()]
        except openai.APIConnectionError as error:  # includes timeouts
            raise JudgeUnavailableError(
                f"llm_judge endpoint {self.base_url} is unreachable: {error}"
            ) from error
        except openai.APIStatusError as error:
            if error.status_code == 404 and self.model is not None:
                return  # a server without GET /models: the model is checked on first use
            raise JudgeUnavailableError(
                f"llm_judge endpoint {self.base_url} refused GET /models "
                f"(HTTP {error.status_code}): {error}"
            ) from error
        if self.model is None:
            if not served:
                raise JudgeUnavailableError(f"llm_judge endpoint {self.base_url} lists no model")
            self.model = served[0]
        elif self.model not in served:
            raise JudgeUnavailableError(
                f"llm_judge model {self.model!r} is not served by {self.base_url}; "
                f"it serves: {', '.join(served) or 'none'}"
            )

    def messages(self, prediction: str, reference: str, context: Mapping[str, Any]) -> list[dict]:
        """The chat messages of one judge request: ``[system rubric, user case]``."""
        domain = _domain_name(context.get("domain"))
        rubric = self.rubrics.get(domain or "", self.rubrics["generic"])
        case = render_case(prediction, reference, _action_text(context.get("action")))
        return [{"role": "system", "content": rubric}, {"role": "user", "content": case}]

    def _ask(self, messages: list[dict]) -> Verdict:
        try:
            response = self.client.chat.completions.create(
                model=self.model,  # type: ignore[arg-type]
                messages=messages,  # type: ignore[arg-type]
                temperature=self.temperature,
                max_tokens=self.max_tokens,
            )
        except (openai.BadRequestError, openai.UnprocessableEntityError) as error:
            return Verdict(VerdictStatus.REFUSED, str(error))
        except openai.APIError as error:
            raise JudgeUnavailableError(
                f"llm_judge request to {self.base_url} (model {self.model!r}) failed: {error}"
            ) from error
        if not response.choices:
            return verdict_of("")
        return verdict_of(response.choices[0].message.content or "")

    def judge(
        self,
        predictions: Sequence[str | None],
        references: Sequence[str],
        contexts: Sequence[Mapping[str, Any]],
    ) -> list[Verdict | None]:
        """One :class:`Verdict` per prediction (``None`` for a ``None`` prediction), in order.

        Updates :attr:`stats` (requests, parsed, unparseable, refused).

        Raises:
            ValueError: The three sequences differ in length.
            JudgeUnavailableError: The endpoint failed (after the client's retries).
        """
        check_batch(predictions, references, contexts)
        jobs = [
            (i, self.messages(p, r, c))
            for i, (p, r, c) in enumerate(zip(predictions, references, contexts, strict=True))
            if p is not None
        ]
        verdicts: list[Verdict | None] = [None] * len(predictions)
        for (i, _), verdict in zip(jobs, self._pool.map(lambda j: self._ask(j[1]), jobs)):
            verdicts[i] = verdict
        done = [v for v in verdicts if v is not None]
        with self._lock:
            self.stats.num_requests += len(done)
            self.stats.num_parsed += sum(v.status is VerdictStatus.PARSED for v in done)
            self.stats.num_unparseable += sum(v.status is VerdictStatus.UNPARSEABLE for v in done)
            self.stats.num_refused += sum(v.status is VerdictStatus.REFUSED for v in done)
        return verdicts

    def __call__(
        self,
        predictions: Sequence[str | None],
        references: Sequence[str],
        contexts: Sequence[Mapping[str, Any]],
    ) -> list[float]:
        """Score a batch: ``[batch]`` in, ``[batch]`` floats in ``[0, 1]`` out.

        Raises:
            JudgeParseError: Some answers had no parseable scores (or were refused) and no
                ``fallback`` is set; the message counts them and quotes the first answer.
            JudgeUnavailableError: The endpoint failed.
        """
        verdicts = self.judge(predictions, references, contexts)
        failed = [v for v in verdicts if v is not None and v.status is not VerdictStatus.PARSED]
        if failed and self.fallback is None:
            raise JudgeParseError(
                f"llm_judge: {len(failed)} of {len(verdicts)} answers from model "
                f"{self.model!r} at {self.base_url} had no parseable scores "
                f"({failed[0].status.value}; first answer: {failed[0].answer[:200]!r}). "
                "Expected the five dimensions as integers 1-5 in a JSON object; set "
                "fallback=<value in [0, 1]> to score such answers instead"
            )
        if failed:
            with self._lock:
                self.stats.num_fallbacks += len(failed)
            logger.warning(
                "llm_judge: %d of %d answers had no parseable scores; scored %g (fallback)",
                len(failed),
                len(verdicts),
                self.fallback,
            )
        scores = []
        for verdict in verdicts:
            if verdict is None:
                scores.append(0.0)  # a malformed prediction
            elif verdict.value is None:
                scores.append(float(self.fallback))  # type: ignore[arg-type]
            else:
                scores.append(verdict.value)
        return scores

    def close(self) -> None:
        """Release the thread pool and the HTTP connections."""
        self._pool.shutdown(wait=False)
        self.client.close()
