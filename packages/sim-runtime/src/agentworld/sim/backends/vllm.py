"""The ``vllm`` backend: a world model served in-process by vLLM on a GPU.

Install with ``pip install 'agentworld-sim[vllm]'``. vLLM's automatic prefix
caching is on, so an episode's history (system prompt, initial observation,
earlier turns) is served from the KV cache at its next step; each step is one
vLLM request whose id is the episode id (one request id per episode). Prompts
are rendered with the checkpoint's own chat template and fitted into the
context exactly as the ``hf`` backend does, so both see the same tokens.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from typing import Any

from agentworld.core.formats import OBS_CLOSE, parse_prediction
from agentworld.core.types import Prediction
from agentworld.sim.backends.openai_client import make_sim_env
from agentworld.sim.prompts import Message, fit_prompt
from agentworld.sim.server.chat import (
    ChatChoice,
    ChatRequest,
    ChatResult,
    PreparedChat,
    resolve_max_tokens,
)

EXTRA = "agentworld-sim[vllm]"
STOP_TOKENS = ("<|im_end|>", "<|endoftext|>")  # ChatML turn ends, as the hf backend stops


def import_vllm() -> Any:
    """The ``vllm`` module.

    Raises:
        ImportError: vLLM is not installed; the message names the extra to install.
    """
    try:
        import vllm
    except ImportError as error:
        raise ImportError(
            f"the 'vllm' sim backend needs vLLM and a CUDA GPU: pip install '{EXTRA}'"
        ) from error
    return vllm


def render_chat(tokenizer: Any, messages: Sequence[Message]) -> list[int]:
    """Prompt ids ``[seq_len]`` of ``messages`` with the assistant generation prompt."""
    encoded = tokenizer.apply_chat_template(
        list(messages), add_generation_prompt=True, tokenize=True
    )
    ids = encoded["input_ids"] if hasattr(encoded, "keys") else encoded
    return list(ids)


def stop_token_ids(tokenizer: Any, generation_eos: int | list[int] | None = None) -> list[int]:
    """Ids that end an answer: the tokenizer's and generation config's eos, ChatML turn ends."""
    ids: list[int] = []
    for value in (tokenizer.eos_token_id, generation_eos):
        ids += value if isinstance(value, list) else [value] if value is not None else []
    vocab = tokenizer.get_vocab()
    ids += [vocab[token] for token in STOP_TOKENS if token in vocab]
    return sorted(set(ids))


def sampling_kwargs(
    *,
    max_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    top_k: int = 0,
    seed: int | None = None,
    stop: Sequence[str] = (),
    stop_token_ids: Sequence[int] = (),
    logprobs: bool = False,
    include_stop: bool = False,
) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for our sampling options.

    ``temperature=0`` is vLLM's greedy mode; ``top_k <= 0`` leaves vLLM's default
    (all tokens); ``logprobs`` asks for the sampled token's log-probability only
    (vLLM ``logprobs=0``); ``include_stop`` keeps a matched stop string in the text.
    """
    kwargs: dict[str, Any] = {
        "n": 1,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "top_p": top_p,
        "stop": list(stop),
        "stop_token_ids": list(stop_token_ids),
        "include_stop_str_in_output": include_stop,
        "skip_special_tokens": True,
    }
    if top_k > 0:
        kwargs["top_k"] = top_k
    if seed is not None:
        kwargs["seed"] = seed
    if logprobs:
        kwargs["logprobs"] = 0
    return kwargs


class VLLMWorldModel:
    """A checkpoint run by ``vllm.LLM`` as a batched world model and a server ``ChatModel``.

    Args:
        path: Checkpoint directory (or a hub id the user passed).
        max_new_tokens: Default generation limit per request (tokens).
        temperature: ``0`` for greedy decoding.
        top_p: Nucleus sampling mass.
        top_k: Keep the ``k`` most likely tokens (``0``: all).
        seed: Sampling seed of every request (``None``: vLLM's global RNG).
        dtype: ``"auto"``, ``"float32"``, ``"bfloat16"``, ``"float16"``.
        device: Accepted for parity with ``hf``; vLLM picks its device itself.
        gpu_memory_utilization: Share of GPU memory vLLM may take (weights + KV cache).
        max_model_len: Context length (tokens); ``None``: the checkpoint's.
        engine_options: More ``vllm.LLM`` keyword arguments.

    Raises:
        ImportError: vLLM is not installed (the message names the extra).
    """

    def __init__(
        self,
        path: str,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        top_k: int = 0,
        seed: int | None = None,
        dtype: str = "auto",
        device: str = "auto",
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        default_max_tokens: int = 1024,
        **engine_options: Any,
    ):
        vllm = import_vllm()
        from transformers import AutoTokenizer

        self._vllm = vllm
        self.llm = vllm.LLM(
            model=path,
            dtype=dtype,
            enable_prefix_caching=True,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            **engine_options,
        )
        self.engine = self.llm.llm_engine
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.max_context: int | None = self.engine.model_config.max_model_len
        generation_eos = getattr(self.engine.model_config.hf_config, "eos_token_id", None)
        self.stop_ids = stop_token_ids(self.tokenizer, generation_eos)
        self.max_new_tokens, self.temperature, self.top_p, self.top_k = (
            max_new_tokens,
            temperature,
            top_p,
            top_k,
        )
        self.seed, self.default_max_tokens = seed, default_max_tokens
        self._lock = threading.Lock()

    # -- world model --------------------------------------------------------------------------

    def encode(self, messages: Sequence[Message], max_new_tokens: int) -> list[int]:
        """Prompt ids ``[seq_len]`` fitted into ``max_context - max_new_tokens`` tokens."""
        render = lambda m: render_chat(self.tokenizer, m)  # noqa: E731
        if self.max_context is None:
            return render(messages)
        budget = max(self.max_context - max_new_tokens, self.max_context // 2)
        return fit_prompt(messages, render, budget).ids

    def predict(
        self,
        requests: Sequence[list[Message]],
        *,
        max_new_tokens: int | None = None,
        episode_ids: Sequence[str] | None = None,
    ) -> list[Prediction]:
        """Predictions ``[batch]``; ``episode_ids`` ``[batch]`` become the vLLM request ids.

        Raises:
            ValueError: ``episode_ids`` has a different length or repeats an id.
        """
        limit = max_new_tokens or self.max_new_tokens
        ids = list(episode_ids) if episode_ids is not None else [uuid.uuid4().hex for _ in requests]
        if len(ids) != len(requests) or len(set(ids)) != len(ids):
            raise ValueError("episode_ids needs one distinct id per request")
        params = self._vllm.SamplingParams(
            **sampling_kwargs(
                max_tokens=limit,
                temperature=self.temperature,
                top_p=self.top_p,
                top_k=self.top_k,
                seed=self.seed,
                stop=[OBS_CLOSE],
                stop_token_ids=self.stop_ids,
                include_stop=True,
            )
        )
        prompts = [self.encode(messages, limit) for messages in requests]
        outputs = self._run([(i, p, params) for i, p in zip(ids, prompts, strict=True)])
        return [
            Prediction(
                text=o.text, observation=parse_prediction(o.text), num_tokens=len(o.token_ids)
            )
            for o in outputs
        ]

    def fork_episode(self, source: str, new: str) -> None:
        """Nothing to share: vLLM's automatic prefix caching finds the source's blocks."""

    def close_episode(self, episode_id: str) -> None:
        """Nothing to release: vLLM keeps no state per episode between requests."""

    def _run(self, items: Sequence[tuple[str, list[int], Any]]) -> list[Any]:
        """Completion outputs ``[batch]`` of ``(request id, prompt ids, SamplingParams)``."""
        done: dict[str, Any] = {}
        with self._lock:
            for request_id, prompt, params in items:
                self.engine.add_request(request_id, {"prompt_token_ids": prompt}, params)
            while self.engine.has_unfinished_requests():
                for output in self.engine.step():
                    if output.finished:
                        done[output.request_id] = output.outputs[0]
        return [done[request_id] for request_id, _, _ in items]

    # -- server ChatModel ---------------------------------------------------------------------

    def prepare(self, request: ChatRequest) -> PreparedChat:
        """Render and check one raw chat request (the server's ``ChatModel.prepare``).

        Raises:
            RequestError: The prompt does not fit the context.
        """
        ids = render_chat(self.tokenizer, request.messages)
        limit = resolve_max_tokens(request, len(ids), self.max_context, self.default_max_tokens)
        return PreparedChat(request, ids, limit)

    def generate(self, batch: Sequence[PreparedChat]) -> list[ChatResult]:
        """Raw completions ``[batch]``: every choice is one vLLM request, all run together."""
        items, owners = [], []
        for i, prepared in enumerate(batch):
            request = prepared.request
            for choice in range(request.n):
                kwargs = sampling_kwargs(
                    max_tokens=prepared.max_tokens,
                    temperature=request.temperature,
                    top_p=request.top_p,
                    top_k=request.top_k,
                    seed=None if request.seed is None else request.seed + choice,
                    stop=request.stop,
                    stop_token_ids=self.stop_ids,
                    logprobs=request.logprobs,
                )
                params = self._vllm.SamplingParams(**kwargs)
                items.append((uuid.uuid4().hex, prepared.prompt_ids, params))
                owners.append(i)
        results = [ChatResult(len(p.prompt_ids), []) for p in batch]
        for owner, output in zip(owners, self._run(items), strict=True):
            logprobs = None
            if batch[owner].request.logprobs and output.logprobs is not None:
                logprobs = [
                    (self.tokenizer.decode([t]), float(step[t].logprob))
                    for t, step in zip(output.token_ids, output.logprobs, strict=False)
                ]
            reason = "length" if output.finish_reason == "length" else "stop"
            results[owner].choices.append(
                ChatChoice(output.text, reason, len(output.token_ids), logprobs)
            )
        return results


class VLLMBackend:
    """The ``vllm`` sim backend: ``load(path, **options) -> VLLMWorldModel`` (needs the extra)."""

    name = "vllm"

    def load(self, path: str, **options: Any) -> VLLMWorldModel:
        """Load ``path`` in vLLM; ``options`` as in :class:`VLLMWorldModel`.

        ``allow_hub`` (default true) lets ``path`` be a hub id, by the rule of
        :mod:`agentworld.sim.backends.model_source`.

        Raises:
            ImportError: vLLM is not installed; install ``agentworld-sim[vllm]``.
            agentworld.sim.backends.model_source.ModelSourceError: a file, or a hub id
                without ``allow_hub``.
            ValueError: the checkpoint was trained with retrieval (its card's ``retrieval``):
                its answers start with a block the simulator writes, which vLLM here cannot.
        """
        from agentworld.core.card import read_card
        from agentworld.sim.backends.model_source import is_hub_source

        is_hub_source(path, allow_hub=options.pop("allow_hub", True))
        if (read_card(path).get("retrieval") or {}).get("k"):
            raise ValueError(f"{path} was trained with retrieval (card: retrieval k="
                             f"{read_card(path)['retrieval']['k']}), whose answers start with "
                             "retrieved transitions the simulator writes; the vllm backend "
                             "cannot write an answer prefix: use backend 'hf'")
        import_vllm()
        return VLLMWorldModel(path, **options)

    def make_env(self, world_model: Any, domain: Any = None, **options: Any) -> Any:
        """A Gymnasium ``SimEnv`` on ``world_model``; ``domain`` may be a registered name."""
        return make_sim_env(world_model, domain, **options)
