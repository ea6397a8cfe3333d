"""RL prompts from real transitions, and grouped rollouts through the sim runtime's paged engine.

A prompt is a real transition's (history, action) chat rendered with the chat template as the
simulator renders it (:class:`PromptCodec`: each earlier turn's think block, the answer prefix
the simulator writes); its reference is the real next observation. :func:`generate_groups` answers every prompt
``G`` times on the :class:`~agentworld.sim.engine.PagedEngine` of an
:class:`~agentworld.sim.backends.hf.HFWorldModel` that wraps the very model being
trained: each prompt is prefilled once as an episode, then forked ``G`` times, so the
``G`` answers share the prompt's KV blocks (copy-on-write of the last partial block).
"""

from __future__ import annotations

import logging

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentworld.core.evaluate import transitions
from agentworld.core.formats import OBS_CLOSE, parse_prediction
from agentworld.core.types import Episode
from agentworld.sim.backends.hf import HFWorldModel
from agentworld.sim.prompts import fit_prompt
from agentworld.sim.sampling import SamplingParams

logger = logging.getLogger(__name__)


class PromptCodec(Protocol):
    """How the simulator renders a request (:class:`~agentworld.sim.backends.hf.HFWorldModel`
    is one): the history as SFT trained the model to see it, and the answer's start it
    writes itself."""

    def history_with_think(self, messages: Sequence[dict[str, str]]) -> list[dict[str, str]]:
        """``messages`` with each earlier answer's think block."""
        ...

    def answer_prefix(self, messages: Sequence[dict[str, str]]) -> list[int]:
        """Token ids ``[prefix_len]`` the simulator writes at the start of the answer."""
        ...


@dataclass(slots=True)
class RlPrompt:
    """One (history, action) prompt whose reference is the real next observation.

    Attributes:
        messages: Chat messages ``[system?, (user, assistant) * T, user]``.
        prompt_ids: Rendered prompt ``[prompt_len]`` (tokens), generation prompt included,
            then the answer prefix the simulator writes (its last ``prefix_len`` tokens).
        reference: The real next observation's text.
        context: Reward context ``{"domain", "reference", "action", "turn", "episode_id"}``
            (``"raw"`` is added per answer), as in :func:`agentworld.core.evaluate.evaluate`.
        prefix_len: Tokens of the answer prefix at the end of ``prompt_ids`` (0: none).
    """

    messages: list[dict[str, str]]
    prompt_ids: list[int]
    reference: str
    context: dict[str, Any]
    prefix_len: int = 0


@dataclass(slots=True)
class Rollout:
    """One sampled answer.

    Attributes:
        prompt: Index into the prompt list.
        token_ids: Generated ids ``[num_tokens]`` (the stop token included when one ended it).
        logprobs: Behaviour-policy log-probabilities of ``token_ids`` ``[num_tokens]``
            (natural log, raw model distribution).
        text: Decoded answer (special tokens skipped).
        prediction: Parsed ``<predicted_observation>`` content, ``None`` when malformed.
    """

    prompt: int
    token_ids: list[int]
    logprobs: list[float]
    text: str
    prediction: str | None


def build_prompts(
    episodes: Sequence[Episode],
    render: Callable[[Sequence[dict[str, str]]], list[int]],
    max_prompt_tokens: int,
    domain: str | None = None,
    codec: PromptCodec | None = None,
) -> list[RlPrompt]:
    """One :class:`RlPrompt` per step of each episode (``agentworld.core.evaluate.transitions``).

    Args:
        episodes: Real episodes.
        render: Messages -> prompt ids with the generation prompt (e.g. ``HFWorldModel.render``
            or :func:`chat_render`).
        max_prompt_tokens: Prompt budget (tokens); longer histories drop their oldest turns
            (:func:`agentworld.sim.prompts.fit_prompt`).
        domain: Domain name put in the reward context; ``None``: each episode's own domain.
        codec: The simulator's rendering (the checkpoint's rationales and retrieval): each
            prompt's history gets its think blocks and the prompt ends with the answer prefix,
            as in evaluation and serving; ``None``: the messages as they are.

    Raises:
        ValueError: the episodes hold no step (nothing has a reference).
    """
    by_id = {e.id: e for e in episodes}
    items = transitions(episodes)
    if not items:
        raise ValueError(
            f"rl needs transitions with a real next observation as reference; none of the "
            f"{len(episodes)} episodes has a step"
        )
    out, cut = [], 0
    for t in items:
        messages, prefix = t.messages, []
        if codec is not None:
            messages, prefix = codec.history_with_think(messages), codec.answer_prefix(messages)
        fitted = fit_prompt(messages, render, max_prompt_tokens - len(prefix))
        ids, cut = fitted.ids + prefix, cut + bool(fitted.cut_tokens)
        context = {
            "domain": domain or by_id[t.episode_id].domain,
            "reference": t.reference,
            "action": t.action,
            "turn": t.turn,
            "episode_id": t.episode_id,
        }
        out.append(RlPrompt(t.messages, ids, t.reference.text, context, len(prefix)))
    if cut:
        logger.warning(
            "%d of %d prompts exceed %d tokens even without history: cut in the middle of their "
            "system message (raise max_seq_len to keep them whole)",
            cut, len(out), max_prompt_tokens,
        )
    return out


def chat_render(tokenizer: Any) -> Callable[[Sequence[dict[str, str]]], list[int]]:
    """Messages -> prompt ids ``[prompt_len]`` through ``tokenizer``'s chat template, generation
    prompt added (the rendering :class:`HFWorldModel` uses)."""

    def render(messages: Sequence[dict[str, str]]) -> list[int]:
        encoded = tokenizer.apply_chat_template(list(messages), add_generation_prompt=True)
        return list(encoded["input_ids"])

    return render


def request_seeds(seed: int, step: int, n: int) -> list[int]:
    """``n`` sampling seeds for optimizer step ``step``, a pure function of ``(seed, step)``."""
    base = random.Random(f"{seed}:{step}").getrandbits(48)
    return [base + k for k in range(n)]


def generate_groups(
    world_model: HFWorldModel,
    prompts: Sequence[RlPrompt],
    indices: Sequence[int],
    group_size: int,
    params: SamplingParams,
    seeds: Sequence[int],
    tag: str,
) -> list[Rollout]:
    """Sample ``group_size`` answers for each of ``indices`` through the paged engine.

    Each prompt runs once as episode ``{tag}/{i}`` (prefill plus one greedy token), is
    forked into ``group_size`` child episodes that share its KV blocks, and every child
    samples its own answer with its own seed and ``logprobs=True``. All episodes are
    closed before returning.

    Args:
        world_model: An ``HFWorldModel`` built with ``engine="paged"``.
        prompts: All prompts.
        indices: ``[num_prompts]`` prompts of this batch (repeats allowed).
        group_size: Answers per prompt ``G``.
        params: Sampling parameters (``seed`` and ``logprobs`` are set per request).
        seeds: ``[num_prompts * group_size]`` seeds, one per answer.
        tag: Episode-id prefix unique to this call.

    Returns:
        ``[num_prompts * group_size]`` rollouts, the ``G`` answers of a prompt consecutive.

    Raises:
        RuntimeError: a request failed (e.g. the KV pool is too small for it).
    """
    loop = world_model.loop  # the paged engine's loop: each group shares its prompt's KV
    assert len(seeds) == len(indices) * group_size, "one seed per answer"
    parents = [f"{tag}/{k}" for k in range(len(indices))]
    prefill = SamplingParams(max_new_tokens=1)
    done = [loop.submit(prompts[i].prompt_ids, prefill, p) for i, p in zip(indices, parents)]
    _check([f.result() for f in done])
    children, forks, futures = [], [], []
    for i, parent in zip(indices, parents):
        for g in range(group_size):
            child = f"{parent}/{g}"
            forks.append(loop.fork(parent, child))  # runs before the requests posted below
            children.append((i, child))
    for (i, child), seed in zip(children, seeds):
        request = SamplingParams(
            params.max_new_tokens,
            params.temperature,
            params.top_p,
            params.top_k,
            seed=seed,
            stop=params.stop or (OBS_CLOSE,),
            logprobs=True,
        )
        futures.append(loop.submit(prompts[i].prompt_ids, request, child))
    for fork in forks:
        fork.result()
    outputs = [f.result() for f in futures]
    closes = [loop.close_episode(e) for e in parents + [c for _, c in children]]
    for close in closes:
        close.result()
    _check(outputs)
    rollouts = []
    for (i, _), out in zip(children, outputs):
        assert out.logprobs is not None and len(out.logprobs) == len(out.token_ids)
        ids = out.token_ids
        body = ids[:-1] if out.finish_reason == "stop" and ids[-1] in world_model.stop_ids else ids
        prompt = prompts[i]  # the answer is the prefix the simulator wrote, then the body
        prefix = prompt.prompt_ids[len(prompt.prompt_ids) - prompt.prefix_len:]
        text = world_model.tokenizer.decode(prefix + list(body), skip_special_tokens=True)
        rollouts.append(Rollout(i, list(ids), list(out.logprobs), text, parse_prediction(text)))
    return rollouts


def _check(outputs: Sequence[Any]) -> None:
    failed = [o.error for o in outputs if o.finish_reason == "error"]
    if failed:
        raise RuntimeError(
            f"{len(failed)} rollout request(s) failed, first: {failed[0]}"
        )


def reward_contexts(prompts: Sequence[RlPrompt], rollouts: Sequence[Rollout]) -> list[Mapping[str, Any]]:
    """Per-rollout reward contexts: the prompt's context plus ``"raw"`` (the answer text)."""
    return [prompts[r.prompt].context | {"raw": r.text} for r in rollouts]
