"""The ``openai`` backend: a world model behind any OpenAI-compatible chat endpoint.

For example SGLang or vLLM serving a released world model (Qwen-AgentWorld),
or this project's own ``agentworld serve-openai``. Requests go out concurrently
through the official ``openai`` client (a bounded thread pool; the client
retries connection errors, 408/429/5xx answers with exponential back-off).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai

from agentworld.core.endpoints import OPENAI_PAIR, resolve_endpoint
from agentworld.core.formats import OBS_CLOSE, OBS_OPEN, parse_prediction
from agentworld.core.protocols import Domain
from agentworld.core.types import Prediction

logger = logging.getLogger(__name__)

Message = dict[str, str]
#: Where the backend's endpoint and key come from: each key only with its own URL.
ENV_PAIRS = [("AGENTWORLD_OPENAI_BASE_URL", "AGENTWORLD_OPENAI_API_KEY"), OPENAI_PAIR]


class OpenAIWorldModel:
    """Batched :class:`~agentworld.core.protocols.WorldModel` over chat completions.

    ``predict`` sends every request of the batch at once (at most
    ``max_concurrency`` in flight) and parses each answer with
    :func:`agentworld.core.formats.parse_prediction`. With ``stop_at_observation``
    the request carries ``stop=["</predicted_observation>"]`` (no tokens are spent
    after the block) and the stop string, which servers strip, is put back.

    A request the server refuses as invalid (HTTP 400/422, e.g. a history longer
    than its context) becomes a malformed prediction (``observation=None``,
    ``text=""``) with a logged warning, so other episodes go on; an unreachable
    server, a wrong key or model raise. Each prediction's ``served_by`` is the response's
    ``system_fingerprint`` (``agentworld serve-openai`` sends a random id per process), so
    the simulator can mark a step that a router sent to another replica.

    Args:
        model: Model name as the server lists it (``GET /v1/models``).
        base_url: Endpoint root, e.g. ``http://127.0.0.1:30000/v1`` (``agentworld
            serve-openai``'s is ``http://127.0.0.1:8000/v1``); default:
            ``$AGENTWORLD_OPENAI_BASE_URL``, else ``$OPENAI_BASE_URL``; there is no default
            endpoint.
        api_key: Bearer key for ``base_url`` (only together with it). Otherwise the key
            configured with the same URL: ``$AGENTWORLD_OPENAI_API_KEY`` when
            ``$AGENTWORLD_OPENAI_BASE_URL`` is that URL, ``$OPENAI_API_KEY`` when
            ``$OPENAI_BASE_URL`` is; else ``"EMPTY"`` (what local servers accept), so a key
            never goes to a server it was not meant for
            (:func:`agentworld.core.endpoints.resolve_endpoint`).
        temperature: ``0`` for greedy decoding.
        top_p: Nucleus sampling mass.
        max_tokens: Default completion limit per request (tokens).
        seed: Sampling seed sent with every request (``None``: none).
        timeout: Per-request timeout (seconds).
        retries: Retries per request after the first attempt.
        max_concurrency: Most requests in flight at once.
        stop_at_observation: Stop generation at ``</predicted_observation>``.

    Raises:
        ValueError: ``max_concurrency`` or ``max_tokens`` < 1, no endpoint, or an ``api_key``
            without the ``base_url`` it is for.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int = 256,
        seed: int | None = None,
        timeout: float = 120.0,
        retries: int = 2,
        max_concurrency: int = 32,
        stop_at_observation: bool = True,
    ):
        if max_concurrency < 1 or max_tokens < 1:
            raise ValueError(
                f"max_concurrency and max_tokens must be >= 1, got {max_concurrency}, {max_tokens}"
            )
        self.model = model
        self.base_url, key = resolve_endpoint("the openai backend", base_url, api_key, ENV_PAIRS)
        self.client = openai.OpenAI(
            base_url=self.base_url, api_key=key or "EMPTY", timeout=timeout, max_retries=retries
        )
        self.temperature, self.top_p, self.max_tokens, self.seed = (
            temperature,
            top_p,
            max_tokens,
            seed,
        )
        self.stop_at_observation = stop_at_observation
        self._pool = ThreadPoolExecutor(max_concurrency, thread_name_prefix="openai-wm")
        self._usage_lock = threading.Lock()
        self.num_prompt_tokens = self.num_cached_tokens = 0

    @property
    def prefix_hit_rate(self) -> float:
        """Cached over sent prompt tokens so far (0 before any answer, or from a server
        that does not report cached tokens)."""
        return self.num_cached_tokens / self.num_prompt_tokens if self.num_prompt_tokens else 0.0

    def predict(
        self,
        requests: Sequence[list[Message]],
        *,
        max_new_tokens: int | None = None,
        episode_ids: Sequence[str] | None = None,
    ) -> list[Prediction]:
        """Predictions ``[batch]`` for ``[batch]`` chat requests, in order.

        Args:
            requests: Chat message lists ``[system?, (user, assistant) * T, user]``.
            max_new_tokens: Completion limit for this call (tokens); default ``max_tokens``.
            episode_ids: Accepted for interface parity; the server caches prefixes itself.

        Raises:
            RuntimeError: The server is unreachable or refused the credentials or model.
        """
        limit = max_new_tokens or self.max_tokens
        return list(self._pool.map(lambda messages: self._one(messages, limit), requests))

    def _one(self, messages: list[Message], max_tokens: int) -> Prediction:
        options: dict[str, Any] = {}
        if self.seed is not None:
            options["seed"] = self.seed
        if self.stop_at_observation:
            options["stop"] = [OBS_CLOSE]
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=self.temperature,
                top_p=self.top_p,
                max_tokens=max_tokens,
                n=1,
                **options,
            )
        except (openai.BadRequestError, openai.UnprocessableEntityError) as error:
            logger.warning("%s refused a request: %s", self.base_url, error)
            return Prediction(text="", observation=None, num_tokens=0)
        except openai.APIError as error:
            raise RuntimeError(
                f"chat completion on {self.base_url} (model {self.model!r}) failed: {error}"
            ) from error
        choice = response.choices[0]
        text = choice.message.content or ""
        if (
            self.stop_at_observation
            and choice.finish_reason == "stop"
            and OBS_OPEN in text
            and OBS_CLOSE not in text
        ):
            text += OBS_CLOSE  # the server stripped the stop string
        num_tokens = 0
        if response.usage is not None:
            num_tokens = response.usage.completion_tokens
            details = response.usage.prompt_tokens_details
            cached = details.cached_tokens if details is not None else None
            with self._usage_lock:
                self.num_prompt_tokens += response.usage.prompt_tokens
                self.num_cached_tokens += cached or 0
        return Prediction(
            text=text,
            observation=parse_prediction(text),
            num_tokens=num_tokens,
            served_by=response.system_fingerprint,
        )

    def close(self) -> None:
        """Release the thread pool and the HTTP connections."""
        self._pool.shutdown(wait=False)
        self.client.close()


class OpenAIBackend:
    """The ``openai`` sim backend: ``load(model_name, base_url=..., ...) -> OpenAIWorldModel``."""

    name = "openai"

    def load(self, path: str, **options: Any) -> OpenAIWorldModel:
        """A client for the served model named ``path``; ``options`` as in
        :class:`OpenAIWorldModel` (``base_url``, ``api_key``, ``temperature``, ``top_p``,
        ``max_tokens`` or ``max_new_tokens``, ``seed``, ``timeout``, ``retries``,
        ``max_concurrency``, ``stop_at_observation``)."""
        if "max_new_tokens" in options:  # the name the CLI and the hf backend use
            options["max_tokens"] = options.pop("max_new_tokens")
        return OpenAIWorldModel(path, **options)

    def make_env(self, world_model: Any, domain: Domain | str | None = None, **options: Any) -> Any:
        """A Gymnasium ``SimEnv`` on ``world_model``; ``domain`` may be a registered name."""
        return make_sim_env(world_model, domain, **options)


def make_sim_env(world_model: Any, domain: Domain | str | None = None, **options: Any) -> Any:
    """A :class:`agentworld.sim.env.SimEnv`; a ``domain`` name is looked up in the plugins.

    Raises:
        agentworld.core.plugins.UnknownPluginError: ``domain`` names no installed domain.
    """
    from agentworld.sim.env import SimEnv

    if isinstance(domain, str):
        from agentworld.core.plugins import get_domain

        domain = get_domain(domain)
    return SimEnv(world_model, domain=domain, **options)
