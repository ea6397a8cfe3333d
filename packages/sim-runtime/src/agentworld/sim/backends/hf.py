"""The ``hf`` backend: a Hugging Face causal LM checkpoint as a world model."""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Literal

import torch
from agentworld.core import plugins
from agentworld.core.card import read_card
from agentworld.core.formats import (
    ACTION_PREFIX,
    OBS_CLOSE,
    TERMINATED_CLOSE,
    answer_prefix,
    parse_prediction,
    previous_observation,
    transcript_prompt,
)
from agentworld.core.protocols import Domain, TextExplainingDomain
from agentworld.core.rationales import message_history, takes_history
from agentworld.core.types import Prediction
from agentworld.sim.backends.model_source import hub_errors, is_hub_source
from agentworld.sim.beam import BeamSearchEngine
from agentworld.sim.engine import EngineLoop, PagedEngine
from agentworld.sim.env import SimEnv
from agentworld.sim.generation import GenerationOutput, StaticBatchEngine, TokenEngine
from agentworld.sim.prompts import Message, fit_prompt
from agentworld.sim.sampling import SamplingParams
from agentworld.sim.simulator import FailedPrediction
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.utils import logging as hf_logging

logger = logging.getLogger(__name__)

STOP_TOKENS = ("<|im_end|>", "<|endoftext|>")
TRANSCRIPT_STOP = f"\n{ACTION_PREFIX}"  # a CPT transcript's next action line


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` -> ``cuda`` when available, else ``cpu``; anything else as given."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_dtype(dtype: str | torch.dtype, device: torch.device) -> torch.dtype:
    """``"auto"`` -> bfloat16 on a GPU that supports it, else float32; ``"float16"`` etc. by name.

    Raises:
        ValueError: ``dtype`` names no torch floating dtype.
    """
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        cuda_bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if cuda_bf16 else torch.float32
    resolved = getattr(torch, dtype, None)
    if not isinstance(resolved, torch.dtype) or not resolved.is_floating_point:
        raise ValueError(f"unknown dtype {dtype!r}; use 'auto', 'float32', 'bfloat16' or 'float16'")
    return resolved


class DamagedCheckpointError(ValueError):
    """A checkpoint directory whose weight file cannot be read (truncated, overwritten)."""


def _damaged_weight_file(path: str) -> tuple[Path, str] | None:
    """The first ``*.safetensors`` file under ``path`` whose header or size is invalid, with
    the reason, or ``None`` when every one opens."""
    from safetensors import safe_open

    for file in sorted(Path(path).glob("*.safetensors")):
        try:
            with safe_open(str(file), framework="pt"):
                pass
        except Exception as e:  # noqa: BLE001 -- SafetensorError, or an OSError reading it
            return file, str(e)
    return None


def load_causal_lm(path: str, **kwargs: Any) -> PreTrainedModel:
    """``AutoModelForCausalLM.from_pretrained(path, **kwargs)``, without transformers' per-tensor
    "Loading weights" bar when ``path`` is a local directory: a checkpoint of a few million
    parameters loads in milliseconds, and the bar only breaks up the pipeline's own progress
    display. A hub id keeps its download bars.

    Raises:
        DamagedCheckpointError: a weight file of local ``path`` cannot be read; the message
            names the file (safetensors' own error names none).
    """
    if not Path(path).is_dir():
        return AutoModelForCausalLM.from_pretrained(path, **kwargs)
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except Exception:
        damaged = _damaged_weight_file(path)
        if damaged is None:
            raise
        file, reason = damaged
        raise DamagedCheckpointError(
            f"cannot read the weights in {file}: {reason}; the file is damaged or incomplete "
            "(copy or train the checkpoint again)"
        ) from None
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _explainer(domain: str | None) -> Callable[[str, str], str] | None:
    """The ``explain_text`` of domain plugin ``domain``, or ``None`` (with a warning) when the
    domain is unknown, not installed or writes no rationales from text."""
    try:
        found = plugins.get_domain(domain) if domain else None
    except plugins.UnknownPluginError:
        found = None
    if not isinstance(found, TextExplainingDomain):
        logger.warning(
            "the checkpoint was trained with domain rationales, but domain %r cannot write them"
            " (not installed, or no explain_text); the model writes them itself", domain
        )
        return None
    return found.explain_text


class HFWorldModel:
    """A causal LM checkpoint with a chat template, as a batched :class:`WorldModel`.

    Requests are rendered with the tokenizer's chat template (generation prompt
    added), fitted into ``max_positions - max_new_tokens`` tokens by
    :func:`agentworld.sim.prompts.fit_prompt` (system message kept, oldest turns
    dropped), generated by ``engine`` and parsed with ``parse_prediction``.
    Generation stops at eos, ``<|im_end|>``, ``<|endoftext|>`` or once
    ``</predicted_observation>`` is written.

    The default engine is the paged one (:class:`~agentworld.sim.engine.PagedEngine`
    driven by an :class:`~agentworld.sim.engine.EngineLoop`): ``predict`` is
    thread-safe and concurrent calls join the batch that is running; with
    ``episode_ids`` an episode's KV stays pinned between its steps
    (:meth:`close_episode` releases it, :meth:`fork_episode` shares it). A request
    that fails alone (e.g. more KV than the pool holds) comes back as a
    :class:`~agentworld.sim.simulator.FailedPrediction`. ``engine="static"`` selects
    the :class:`StaticBatchEngine` (calls then run one at a time).

    Args:
        model: The causal LM (already on its device, in eval mode).
        tokenizer: Its tokenizer; must have a chat template.
        batch_size: Micro-batch size of the static engine (prompts per forward pass); the
            beam engine takes its own from ``engine_options`` (``batch_size``, default 16).
        max_new_tokens: Default generation limit per request (tokens).
        temperature: ``0`` for greedy decoding, else sampling temperature.
        top_p: Nucleus sampling mass.
        seed: Sampling seed. Paged engine: request ``k`` of this model samples from its own
            generator seeded ``seed + k``; static engine: one generator for all.
            ``None``: torch's global RNG.
        engine: ``"paged"`` (default), ``"static"``, ``"beam"``, or a :class:`TokenEngine` to
            use. ``num_beams > 1`` selects ``"beam"``
            (:class:`~agentworld.sim.beam.BeamSearchEngine`).
        num_beams: Beams of the ``"beam"`` engine: each prediction is the likeliest of
            ``num_beams`` beams (total log-probability) instead of the greedy one. Needs
            ``temperature == 0``.
        engine_options: Keyword arguments of :class:`PagedEngine` (``num_blocks``,
            ``kv_cache_bytes``, ``block_size``, ``max_num_batched_tokens``, ``max_num_seqs``,
            ``enable_prefix_caching``, ``salt``) or of the beam engine (``batch_size``,
            ``length_penalty``).
        rewards: Answers end with the reward footer (:mod:`agentworld.core.formats`):
            generation stops after ``</terminated>`` instead of ``</predicted_observation>``.
        history_window: Turns of history the model was trained to see (``None``: all);
            read by :class:`~agentworld.sim.simulator.Simulator`.
        domain: Name of the domain the model simulates (``None``: unknown).
        reasoning: ``"domain"``: the model was trained with domain rationales
            (``<think>`` before each observation block, the checkpoint card says so), and the
            domain plugin's ``explain_text(action, observation)`` writes them at inference:
            each prompt ends with ``<think>rationale</think><predicted_observation>``
            (:func:`agentworld.core.formats.answer_prefix`) and the model writes only the
            observation. ``None``: the model writes any reasoning itself. Ignored, with a
            warning, when the domain is unknown, not installed or has no ``explain_text``.
        prompt_format: ``"chat"`` (default): the chat template, answers parsed for the
            observation block. ``"transcript"``: the request is rendered as the CPT document
            text (:func:`agentworld.core.formats.transcript_prompt`) and the observation is
            the continuation up to the next ``>>>`` action line (or eos): how a base or
            CPT-only checkpoint, which never learned the block, simulates. A continuation cut
            by ``max_new_tokens`` is malformed (``observation=None``).

    Raises:
        ValueError: The tokenizer has no chat template (``"chat"``), ``engine`` or
            ``prompt_format`` is an unknown name, ``"transcript"`` with ``rewards``, or
            ``num_beams > 1`` with sampling or another engine.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        batch_size: int = 16,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        engine: TokenEngine | Literal["paged", "static", "beam"] = "paged",
        engine_options: Mapping[str, Any] | None = None,
        num_beams: int = 1,
        rewards: bool = False,
        history_window: int | None = None,
        domain: str | None = None,
        reasoning: str | None = None,
        prompt_format: Literal["chat", "transcript"] = "chat",
    ):
        if prompt_format not in ("chat", "transcript"):
            raise ValueError(f"prompt_format must be 'chat' or 'transcript', got {prompt_format!r}")
        if prompt_format == "chat" and not tokenizer.chat_template:
            raise ValueError("the tokenizer has no chat template; a ChatML template is expected")
        if prompt_format == "transcript" and rewards:
            raise ValueError("prompt_format='transcript' does not parse reward footers; use 'chat'")
        if num_beams > 1:
            if temperature != 0:
                raise ValueError(f"num_beams={num_beams} needs temperature 0, got {temperature}")
            if engine not in ("paged", "beam"):
                raise ValueError(f"num_beams={num_beams} runs the 'beam' engine, got {engine!r}")
            engine = "beam"
        self.model, self.tokenizer = model, tokenizer
        self.rewards, self.history_window, self.domain = rewards, history_window, domain
        self.prompt_format = prompt_format
        self.explain_text = _explainer(domain) if reasoning == "domain" else None
        stop = (TERMINATED_CLOSE,) if rewards else (OBS_CLOSE,)
        if prompt_format == "transcript":
            stop = (TRANSCRIPT_STOP,)
        self.params = SamplingParams(max_new_tokens, temperature, top_p, stop=stop)
        self.seed = seed
        config = model.config.get_text_config()
        self.max_positions: int | None = getattr(config, "max_position_embeddings", None)
        self.stop_ids = frozenset(self._stop_ids())
        self._lock = threading.Lock()
        self._request_index = itertools.count()
        decode = lambda ids: tokenizer.decode(ids)
        if engine == "paged":
            engine = EngineLoop(
                PagedEngine(
                    model,
                    stop_token_ids=self.stop_ids,
                    decode=decode,
                    max_positions=self.max_positions,
                    **dict(engine_options or {}),
                )
            )
        elif engine == "static":
            generator = None
            if seed is not None:
                generator = torch.Generator(device=model.device).manual_seed(seed)
            engine = StaticBatchEngine(
                model,
                pad_token_id=self._pad_id(),
                stop_token_ids=self.stop_ids,
                decode=decode,
                batch_size=batch_size,
                max_positions=self.max_positions,
                generator=generator,
            )
        elif engine == "beam":
            engine = BeamSearchEngine(
                model,
                pad_token_id=self._pad_id(),
                stop_token_ids=self.stop_ids,
                num_beams=num_beams,
                max_positions=self.max_positions,
                decode=decode,
                **dict(engine_options or {}),
            )
        elif isinstance(engine, str):
            raise ValueError(
                f"engine must be 'paged', 'static', 'beam' or a TokenEngine, got {engine!r}"
            )
        self.engine: TokenEngine = engine

    @property
    def concurrent_predict(self) -> bool:
        """True when concurrent :meth:`predict` calls share batches (the paged engine)."""
        return isinstance(self.engine, EngineLoop)

    @classmethod
    def from_pretrained(
        cls,
        path: str,
        *,
        device: str | torch.device = "auto",
        dtype: str | torch.dtype = "auto",
        gguf_file: str | None = None,
        allow_hub: bool = True,
        **options: Any,
    ) -> HFWorldModel:
        """Load ``path``: a checkpoint directory, or (unless ``allow_hub`` is off) a hub id, by
        the rule of :mod:`agentworld.sim.backends.model_source`.

        ``options`` go to :class:`HFWorldModel` (``batch_size``, ``max_new_tokens``,
        ``temperature``, ``top_p``, ``seed``, ``engine``, ``engine_options``, ``num_beams``,
        ``rewards``, ``history_window``, ``domain``, ``reasoning``, ``prompt_format``); ``rewards``,
        ``history_window``, ``domain`` and ``reasoning`` default to the checkpoint's
        world-model card (``agentworld.json``, :mod:`agentworld.core.card`). ``gguf_file``
        names a GGUF file inside ``path`` to dequantise.

        Raises:
            FileNotFoundError: ``path`` looks like a local path but is no directory.
            agentworld.sim.backends.model_source.ModelSourceError: ``path`` is a file, a hub
                id without ``allow_hub``, or a hub id that cannot be downloaded (one line).
            DamagedCheckpointError: a weight file cannot be read (names the file).
        """
        hub = is_hub_source(path, allow_hub=allow_hub)
        if hub:
            logger.info("%r is not a local directory; loading it as a Hugging Face Hub id", path)
        dev = resolve_device(device)
        extra: dict[str, Any] = {"local_files_only": not hub}
        if gguf_file is not None:
            extra["gguf_file"] = gguf_file
        with hub_errors(path) if hub else nullcontext():
            tokenizer = AutoTokenizer.from_pretrained(path, **extra)
            model = load_causal_lm(path, dtype=resolve_dtype(dtype, dev), **extra)
        card = {} if hub else read_card(path)
        for key in ("rewards", "history_window", "domain", "reasoning"):
            if card.get(key) is not None:
                options.setdefault(key, card[key])
        return cls(model.to(dev).eval(), tokenizer, **options)

    def _pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return pad if pad is not None else min(self.stop_ids, default=0)

    def _stop_ids(self) -> list[int]:
        ids: list[int] = []
        generation_config = getattr(self.model, "generation_config", None)
        for value in (
            self.tokenizer.eos_token_id,
            getattr(generation_config, "eos_token_id", None),
        ):
            ids += value if isinstance(value, list) else [value] if value is not None else []
        vocab = self.tokenizer.get_vocab()
        ids += [vocab[token] for token in STOP_TOKENS if token in vocab]
        return sorted(set(ids))

    def render(self, messages: Sequence[Message]) -> list[int]:
        """Prompt ids ``[seq_len]`` of ``messages`` with the assistant generation prompt
        (``"transcript"``: the transcript text, no special tokens)."""
        if self.prompt_format == "transcript":
            text = transcript_prompt(list(messages))
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        encoded = self.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True)
        return list(encoded["input_ids"])

    def prompt_budget(self, max_new_tokens: int) -> int | None:
        """Most prompt tokens leaving room for ``max_new_tokens`` (at least half the context)."""
        if self.max_positions is None:
            return None
        return max(self.max_positions - max_new_tokens, self.max_positions // 2)

    def encode(self, messages: Sequence[Message], max_new_tokens: int | None = None) -> list[int]:
        """Prompt ids ``[seq_len]`` for one request, fitted into :meth:`prompt_budget`."""
        budget = self.prompt_budget(max_new_tokens or self.params.max_new_tokens)
        if budget is None:
            return self.render(messages)
        fitted = fit_prompt(messages, self.render, budget)
        if fitted.cut_tokens:
            logger.warning(
                "prompt exceeds %d tokens even without history: %d tokens cut from the middle "
                "of its system message", budget, fitted.cut_tokens
            )
        elif fitted.dropped_turns:
            logger.debug("dropped %d oldest turns to fit %d tokens", fitted.dropped_turns, budget)
        return fitted.ids

    def predict(
        self,
        requests: Sequence[list[Message]],
        *,
        max_new_tokens: int | None = None,
        episode_ids: Sequence[str | None] | None = None,
    ) -> list[Prediction]:
        """Predictions ``[batch]`` for ``[batch]`` chat requests, each ending with an action.

        Args:
            requests: Chat message lists ``[system?, (user, assistant) * T, user]``.
            max_new_tokens: Generation limit for this call (tokens); default from the constructor.
            episode_ids: ``[batch]`` episode ids: with the paged engine each request continues
                its episode's pinned KV (only the new tokens are prefilled); ignored by others.

        Returns:
            One :class:`Prediction` per request; a request that failed alone is a
            :class:`FailedPrediction` (``observation=None``, ``error`` says why).

        Raises:
            ValueError: ``episode_ids`` does not have one entry per request.
        """
        if not requests:
            return []
        if episode_ids is not None and len(episode_ids) != len(requests):
            raise ValueError(f"{len(requests)} requests need {len(requests)} episode ids")
        params = self.params
        if max_new_tokens is not None:
            params = SamplingParams(
                max_new_tokens, params.temperature, params.top_p, stop=params.stop
            )
        prefixes = [self.answer_prefix(messages) for messages in requests]
        prompts = [
            self.encode(messages, params.max_new_tokens + len(prefix)) + prefix
            for messages, prefix in zip(requests, prefixes)
        ]
        if isinstance(self.engine, EngineLoop):
            futures = [
                self.engine.submit(prompt, self._request_params(params), episode_id)
                for prompt, episode_id in zip(prompts, episode_ids or [None] * len(prompts))
            ]
            outputs = [future.result() for future in futures]
        else:
            with self._lock:
                outputs = self.engine.generate(prompts, params)
        return [self._prediction(output, prefix) for output, prefix in zip(outputs, prefixes)]

    def answer_prefix(self, messages: Sequence[Message]) -> list[int]:
        """Token ids ``[prefix_len]`` the simulator writes at the start of the answer: the
        domain's rationale and the block's opening tag (``[]`` without ``reasoning``). A domain
        whose ``explain_text`` takes ``history`` also gets the earlier steps of ``messages``
        (:func:`agentworld.core.rationales.message_history`)."""
        if self.explain_text is None or self.prompt_format != "chat" or not messages:
            return []
        action = messages[-1]["content"]
        if takes_history(self.explain_text):  # the episode's earlier steps, as in training
            rationale = self.explain_text(
                action, previous_observation(list(messages)), history=message_history(messages)
            )
        else:
            rationale = self.explain_text(action, previous_observation(list(messages)))
        text = answer_prefix(rationale)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _request_params(self, params: SamplingParams) -> SamplingParams:
        """``params`` with this request's own seed (``seed + k`` for the ``k``-th request)."""
        if self.seed is None or params.greedy:
            return params
        return SamplingParams(
            params.max_new_tokens,
            params.temperature,
            params.top_p,
            seed=self.seed + next(self._request_index),
            stop=params.stop,
        )

    def _prediction(self, output: GenerationOutput, prefix: list[int]) -> Prediction:
        if output.finish_reason == "error":
            logger.warning("world-model request failed: %s", output.error)
            return FailedPrediction(text="", observation=None, error=output.error or "failed")
        ids = output.token_ids
        if output.finish_reason == "stop" and ids and ids[-1] in self.stop_ids:
            ids = ids[:-1]
        text = self.tokenizer.decode(prefix + list(ids), skip_special_tokens=True)
        if self.prompt_format == "transcript":
            head, stopped, _ = text.partition(TRANSCRIPT_STOP)
            if not stopped and output.finish_reason == "stop":  # eos: documents end with "\n"
                head, stopped = head.removesuffix("\n"), "eos"
            observation = head if stopped else None
        else:
            observation = parse_prediction(text)
        return Prediction(text=text, observation=observation, num_tokens=len(output.token_ids))

    def close_episode(self, episode_id: str) -> None:
        """Release an episode's pinned KV (paged engine; a no-op otherwise or if unknown)."""
        if isinstance(self.engine, EngineLoop):
            self.engine.close_episode(episode_id)  # an unknown id only fails its own future

    def fork_episode(self, parent_id: str, child_id: str) -> None:
        """Let ``child_id`` share ``parent_id``'s pinned KV (paged engine). If the parent is
        unknown or mid-step the child simply starts from the hashed prefix cache."""
        if isinstance(self.engine, EngineLoop):
            self.engine.fork(parent_id, child_id)


class HFBackend:
    """The ``hf`` sim backend: ``load(path, **options) -> HFWorldModel``."""

    name = "hf"

    def load(self, path: str, **options: Any) -> HFWorldModel:
        """Load a checkpoint; ``options`` as in :meth:`HFWorldModel.from_pretrained`
        (``device``, ``dtype``, ``gguf_file``, ``allow_hub``, ``batch_size``, ``max_new_tokens``,
        ``temperature``, ``top_p``, ``seed``, ``engine``, ``engine_options``, ``num_beams``)."""
        return HFWorldModel.from_pretrained(path, **options)

    def make_env(
        self, world_model: Any, domain: Domain | str | None = None, **options: Any
    ) -> SimEnv:
        """A Gymnasium :class:`SimEnv` on ``world_model``; ``domain`` may be a registered name.

        Raises:
            agentworld.core.plugins.UnknownPluginError: ``domain`` names no installed domain.
        """
        if isinstance(domain, str):
            from agentworld.core.plugins import get_domain

            domain = get_domain(domain)
        return SimEnv(world_model, domain=domain, **options)
