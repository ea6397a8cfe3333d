"""Raw chat completion on a loaded model: the seam between the HTTP server and a backend.

A :class:`ChatModel` turns a :class:`ChatRequest` into prompt token ids
(``prepare``, which is where a request that cannot fit is refused) and a batch
of prepared requests into :class:`ChatResult` (``generate``). The server
gathers concurrent requests into one ``generate`` call. :class:`HFChatModel`
runs an ``hf`` backend world model's token engine; the ``vllm`` backend's
world model is a ``ChatModel`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from agentworld.sim.detokenize import find_stop

Message = dict[str, str]
FinishReason = Literal["stop", "length"]


class RequestError(ValueError):
    """A request this model cannot serve (answered with HTTP 400); ``param`` names the field."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat completion request, engine-neutral.

    Attributes:
        messages: ``[{"role", "content"}]`` chat messages.
        max_tokens: Completion limit per choice (tokens); ``None``: the rest of the context,
            capped by the model's default.
        n: Choices to generate for this prompt.
        temperature: ``0`` for greedy decoding.
        top_p: Nucleus mass in ``(0, 1]``.
        top_k: Keep the ``k`` most likely tokens; ``0`` or ``-1`` keeps all.
        seed: Sampling seed; choice ``i`` uses ``seed + i`` so the ``n`` choices differ.
        stop: Strings that end a choice; the returned text stops before the first one.
        logprobs: Also return the log-probability of each sampled token.
    """

    messages: list[Message]
    max_tokens: int | None = None
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    logprobs: bool = False


@dataclass(frozen=True, slots=True)
class PreparedChat:
    """A request rendered to ``prompt_ids`` ``[seq_len]`` with its resolved ``max_tokens``."""

    request: ChatRequest
    prompt_ids: list[int]
    max_tokens: int


@dataclass(slots=True)
class ChatChoice:
    """One generated answer: ``text`` (stop string excluded), ``num_tokens`` generated
    (the stop token or the token completing a stop string included), ``logprobs`` as
    ``[(token text, log-probability)]`` per generated token when requested."""

    text: str
    finish_reason: FinishReason
    num_tokens: int
    logprobs: list[tuple[str, float]] | None = None


@dataclass(slots=True)
class ChatResult:
    """All choices of one request and its prompt length (tokens); ``error`` says why the
    engine refused the request (its other choices are then meaningless).
    ``cached_tokens``: of the prompt, tokens whose KV the engine reused from its prefix cache
    (the first choice's; what OpenAI's ``usage.prompt_tokens_details.cached_tokens`` reports),
    ``None`` when the backend does not count them."""

    prompt_tokens: int
    choices: list[ChatChoice]
    error: str | None = None
    cached_tokens: int | None = None


@runtime_checkable
class ChatModel(Protocol):
    """What the OpenAI-compatible server needs from a backend."""

    max_context: int | None
    default_max_tokens: int

    def prepare(self, request: ChatRequest) -> PreparedChat: ...

    def generate(self, batch: Sequence[PreparedChat]) -> list[ChatResult]: ...


@runtime_checkable
class EngineWorldModel(Protocol):
    """A world model whose token engine takes single requests (the ``hf`` backend's):
    ``render(messages) -> prompt ids``, ``loop.submit(prompt_ids, params) -> Future``
    (:class:`~agentworld.sim.generation.EpisodeEngine`), its ``tokenizer``, ``stop_ids``
    and ``max_positions``."""

    tokenizer: Any
    loop: Any
    stop_ids: frozenset[int]
    max_positions: int | None

    def render(self, messages: Sequence[Message]) -> list[int]: ...


def resolve_max_tokens(
    request: ChatRequest, prompt_len: int, max_context: int | None, default_max_tokens: int
) -> int:
    """Completion limit (tokens) of ``request`` given its prompt length (tokens).

    ``None`` resolves to ``min(default_max_tokens, max_context - prompt_len)``.

    Raises:
        RequestError: Prompt plus completion exceed ``max_context`` (the check vLLM makes).
    """
    if max_context is not None and prompt_len >= max_context:
        raise RequestError(
            f"this model's maximum context length is {max_context} tokens; the messages "
            f"take {prompt_len} tokens, leaving none for the completion",
            "messages",
        )
    if request.max_tokens is None:
        room = default_max_tokens if max_context is None else max_context - prompt_len
        return min(default_max_tokens, room)
    if max_context is not None and prompt_len + request.max_tokens > max_context:
        raise RequestError(
            f"this model's maximum context length is {max_context} tokens; you requested "
            f"{prompt_len + request.max_tokens} tokens ({prompt_len} in the messages, "
            f"{request.max_tokens} in the completion)",
            "max_tokens",
        )
    return request.max_tokens


def cut_at_stop(
    text: str, ids: Sequence[int], stops: Sequence[str], decode: Callable[[list[int]], str]
) -> tuple[str, int] | None:
    """``(text before the first stop string, tokens up to the one completing it)`` or ``None``.

    ``ids`` ``[num_tokens]`` are the generated ids whose decoding is ``text``; the token
    count is that of the shortest prefix whose decoding already contains a stop string,
    i.e. what an engine that checks stop strings after every token would have generated,
    and the text is that prefix's decoding cut before the earliest stop string in it.
    The count is found in one incremental pass (:func:`agentworld.sim.detokenize.find_stop`),
    so the cost is linear in the tokens (with a window of the longest stop string), not in
    tokens times stop strings.
    """
    if not any(s in text for s in stops):
        return None
    end = find_stop(ids, stops, decode)
    if end is None:  # the incremental text differs from the full decoding: cut the latter
        end = len(ids)
    head = text if end == len(ids) else decode(list(ids[:end]))
    found = [i for i in (head.find(s) for s in stops) if i >= 0]
    if not found:  # the prefix's own decoding lacks it (a tokenizer quirk): cut the full text
        head, end = text, len(ids)
        found = [i for i in (text.find(s) for s in stops) if i >= 0]
    return head[: min(found)], end


class HFChatModel:
    """Raw chat completion on an ``hf`` backend world model (``HFWorldModel``).

    Prompts are rendered with the model's chat template (``world_model.render``),
    submitted one choice at a time to its engine (``world_model.loop``, which batches
    them: the paged engine continuously, the static one per distinct parameter set) and
    decoded without special tokens. Stop strings go to the engine and are cut from the
    text. ``seed`` is honoured by the paged engine and best effort (as in the OpenAI API)
    with the static one, whose rows share one generator; ``logprobs`` need an engine that
    returns them.
    The ``hf`` world model's engine may also end an answer once
    ``</predicted_observation>`` is written (the world-model contract).

    Args:
        world_model: An ``HFWorldModel`` (``tokenizer``, ``engine``, ``render``,
            ``stop_ids``, ``max_positions``).
        default_max_tokens: Completion limit when a request sets none (tokens).
    """

    def __init__(self, world_model: EngineWorldModel, *, default_max_tokens: int = 1024):
        self.world_model = world_model
        self.default_max_tokens = default_max_tokens
        self.max_context: int | None = world_model.max_positions

    def prepare(self, request: ChatRequest) -> PreparedChat:
        """Render and check one request.

        Raises:
            RequestError: The prompt and the completion do not fit the context, or the
                chat template rejects the messages.
        """
        try:
            ids = self.world_model.render(request.messages)
        except Exception as error:  # noqa: BLE001 -- a template that rejects these messages
            raise RequestError(
                f"the chat template rejected the messages: {error}", "messages"
            ) from error
        limit = resolve_max_tokens(request, len(ids), self.max_context, self.default_max_tokens)
        return PreparedChat(request, ids, limit)

    def generate(self, batch: Sequence[PreparedChat]) -> list[ChatResult]:
        """Results ``[batch]`` in input order, every choice of every request."""
        from agentworld.sim.sampling import SamplingParams

        rows: list[tuple[int, int, SamplingParams]] = []  # (request index, choice index, params)
        for i, prepared in enumerate(batch):
            r = prepared.request
            for choice in range(r.n):
                params = SamplingParams(
                    max_new_tokens=prepared.max_tokens,
                    temperature=r.temperature,
                    top_p=r.top_p,
                    top_k=max(r.top_k, 0),
                    seed=None if r.seed is None else r.seed + choice,
                    stop=r.stop,
                    logprobs=r.logprobs,
                )
                rows.append((i, choice, params))
        futures = self.world_model.loop.submit_many(
            [batch[i].prompt_ids for i, _, _ in rows], [params for _, _, params in rows]
        )
        results = [ChatResult(len(p.prompt_ids), [None] * p.request.n) for p in batch]  # type: ignore[list-item]
        for (i, choice, _), future in zip(rows, futures, strict=True):
            output = future.result()
            results[i].choices[choice] = self._choice(batch[i].request, output)
            if choice == 0:
                results[i].cached_tokens = output.num_cached_tokens
            if output.finish_reason == "error":
                results[i].error = f"the engine refused the request: {output.error}"
            elif batch[i].request.logprobs and output.logprobs is None:
                results[i].error = "this backend's engine returns no logprobs"
        return results

    def _choice(self, request: ChatRequest, output: Any) -> ChatChoice:
        tokenizer = self.world_model.tokenizer
        if output.finish_reason == "error":
            return ChatChoice("", "stop", 0)
        ids = list(output.token_ids)
        reason: FinishReason = output.finish_reason
        body = (
            ids[:-1] if reason == "stop" and ids and ids[-1] in self.world_model.stop_ids else ids
        )

        def decode(part: list[int]) -> str:
            return tokenizer.decode(part, skip_special_tokens=True)

        text, num_tokens = decode(body), len(ids)
        cut = cut_at_stop(text, body, request.stop, decode)
        if cut is not None:
            (text, num_tokens), reason = cut, "stop"
        logprobs = None
        if request.logprobs and output.logprobs is not None:
            values = output.logprobs[:num_tokens]
            logprobs = [
                (tokenizer.decode([t]), float(v)) for t, v in zip(ids, values, strict=False)
            ]
        return ChatChoice(text, reason, num_tokens, logprobs)


def chat_model_for(world_model: Any, *, default_max_tokens: int = 1024) -> ChatModel:
    """The :class:`ChatModel` serving ``world_model``.

    A :class:`ChatModel` (the ``vllm`` backend's world model) is one already (its
    ``default_max_tokens`` is set); an :class:`EngineWorldModel` (the ``hf`` backend's) is
    wrapped in :class:`HFChatModel`.

    Raises:
        ValueError: ``world_model`` can do neither (e.g. an ``openai`` backend client).
    """
    if isinstance(world_model, ChatModel):
        world_model.default_max_tokens = default_max_tokens
        return world_model
    if isinstance(world_model, EngineWorldModel):
        return HFChatModel(world_model, default_max_tokens=default_max_tokens)
    raise ValueError(
        f"a {type(world_model).__name__} cannot serve raw chat completions; "
        "load the checkpoint with the 'hf' or 'vllm' backend"
    )
