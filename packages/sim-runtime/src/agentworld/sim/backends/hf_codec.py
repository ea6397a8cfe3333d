"""The text side of an ``hf`` world model: chat rendering, context fitting, the answer prefix
and parsing of answers (:class:`ChatCodec`, a base of
:class:`~agentworld.sim.backends.hf.HFWorldModel`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from agentworld.core import plugins
from agentworld.core.chat_answers import answer_frame, served_answer
from agentworld.core.formats import (
    ACTION_PREFIX,
    OBS_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
    answer_prefix,
    parse_footer,
    parse_prediction,
    previous_observation,
    transcript_prompt,
)
from agentworld.core.domain_base import domain_hooks
from agentworld.core.rationales import message_history
from agentworld.core.retrieval import think_text
from agentworld.core.card import read_card
from agentworld.core.retrieval_context import RetrievalContext, from_checkpoint
from agentworld.core.types import Prediction
from agentworld.sim.generation import GenerationOutput
from agentworld.sim.prompts import Message, fit_prompt
from agentworld.sim.sampling import SamplingParams
from agentworld.sim.simulator import FailedPrediction

logger = logging.getLogger(__name__)

STOP_TOKENS = ("<|im_end|>", "<|endoftext|>")
TRANSCRIPT_STOP = f"\n{ACTION_PREFIX}"  # a CPT transcript's next action line


def _domain_object(domain: str | None) -> Any:
    """Domain plugin ``domain`` (``None`` when unnamed, unknown or not installed)."""
    try:
        return plugins.get_domain(domain) if domain else None
    except plugins.UnknownPluginError:
        return None


def _explainer(domain: str | None) -> Callable[..., str | None] | None:
    """The ``explain_text`` of domain plugin ``domain``, or ``None`` (with a warning) when the
    domain is unknown, not installed or writes no rationales from text."""
    found = _domain_object(domain)
    hooks = domain_hooks(found) if found is not None else None
    if hooks is None or not hooks.has_text_rationales:
        logger.warning(
            "the checkpoint was trained with domain rationales, but domain %r cannot write them"
            " (not installed, or no explain_text); the model writes them itself", domain
        )
        return None
    return hooks.explain_text


def checkpoint_options(path: str, tokenizer: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` for an :class:`HFWorldModel` of checkpoint directory ``path``, with what its
    world-model card (:mod:`agentworld.core.card`) says wherever ``options`` says nothing:
    ``rewards``, ``history_window``, ``domain``, ``reasoning``, and the ``retrieval`` context
    it was trained with (:func:`agentworld.core.retrieval_context.from_checkpoint`).

    Raises:
        ValueError: the card's retrieval entry is not valid, or its index file is damaged.
        FileNotFoundError: the card names an index file that is missing.
    """
    card = read_card(path)
    options = dict(options)
    for key in ("rewards", "history_window", "domain", "reasoning"):
        if card.get(key) is not None:
            options.setdefault(key, card[key])
    if "retrieval" not in options:  # the index and k the checkpoint was trained with
        options["retrieval"] = from_checkpoint(path, card, tokenizer,
                                               _domain_object(options.get("domain")))
    return options


class ChatCodec:
    """Chat messages to prompt ids and engine outputs to :class:`Prediction`, for a world model
    with ``model``, ``tokenizer``, ``prompt_format``, ``params``, ``seed``, ``max_positions``,
    ``stop_ids``, ``explain_text`` and ``history_window`` (see :class:`~agentworld.sim.backends.hf.HFWorldModel`)."""

    model: Any
    tokenizer: Any
    prompt_format: str
    params: SamplingParams
    seed: int | None
    max_positions: int | None
    stop_ids: frozenset[int]
    explain_text: Callable[[str, str], str] | None
    history_window: int | None
    retrieval: RetrievalContext | None = None  # (HFWorldModel sets it)
    _request_index: Any  # itertools.count of requests (per-request seeds)

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
        return self.fit(messages, max_new_tokens or self.params.max_new_tokens)[0]

    def fit(self, messages: Sequence[Message], max_new_tokens: int) -> tuple[list[int], bool]:
        """``(prompt ids [seq_len], fitted)``: :meth:`encode`'s ids and whether turns were
        dropped or the system message cut to fit :meth:`prompt_budget`."""
        budget = self.prompt_budget(max_new_tokens)
        if budget is None:
            return self.render(messages), False
        fitted = fit_prompt(messages, self.render, budget)
        if fitted.cut_tokens:
            logger.warning(
                "prompt exceeds %d tokens even without history: %d tokens cut from the middle "
                "of its system message", budget, fitted.cut_tokens
            )
        elif fitted.dropped_turns:
            logger.debug("dropped %d oldest turns to fit %d tokens", fitted.dropped_turns, budget)
        return fitted.ids, bool(fitted.cut_tokens or fitted.dropped_turns)

    def sampling_params(self, max_new_tokens: int | None = None) -> SamplingParams:
        """The model's sampling parameters, with ``max_new_tokens`` when given."""
        params = self.params
        if max_new_tokens is None:
            return params
        return SamplingParams(max_new_tokens, params.temperature, params.top_p, stop=params.stop)

    def turn_tokens(
        self, previous_user: Message, answer: Message, user: Message
    ) -> list[int] | None:
        """Token ids ``[num_tokens]`` that extend the rendering of a history ending with
        ``previous_user`` (generation prompt included) by ``answer`` and ``user`` (generation
        prompt included), or ``None`` when the chat template does not render turn by turn
        (the longer rendering does not start with the shorter one).

        Rendered on these three messages alone, so the cost does not grow with the history;
        the text after the generation prompt is tokenised apart, which equals tokenising the
        whole history wherever a token cannot span the generation prompt's last token and the
        answer (ChatML: a newline, then the ``<predicted_observation>`` tag).
        """
        render = self.tokenizer.apply_chat_template
        head = render([previous_user], add_generation_prompt=True, tokenize=False)
        full = render([previous_user, answer, user], add_generation_prompt=True, tokenize=False)
        if not isinstance(full, str) or not full.startswith(head):
            return None
        return list(self.tokenizer(full[len(head) :], add_special_tokens=False)["input_ids"])

    def think(self, messages: Sequence[Message]) -> str | None:
        """What the simulator writes in the ``<think>`` block of the answer to the action
        ending ``messages`` (``[system?, (user, assistant) * T, user]``): the retrieved block
        (with ``retrieval``), then the domain's rationale given the earlier steps
        (:func:`agentworld.core.rationales.message_history`), as SFT wrote its targets;
        ``None`` when it writes none (neither, or not the chat format)."""
        retrieval = self.retrieval
        if (self.explain_text is None and retrieval is None) or self.prompt_format != "chat" \
                or not messages:
            return None
        action = messages[-1]["content"]
        previous = previous_observation(list(messages))
        rationale = None
        if self.explain_text is not None:  # with the episode's earlier steps, as in training
            rationale = self.explain_text(action, previous, history=message_history(messages))
        if retrieval is not None:
            rationale = think_text(retrieval.block(action, previous), rationale)
        return rationale or ""

    def answer_prefix(self, messages: Sequence[Message]) -> list[int]:
        """Token ids ``[prefix_len]`` the simulator writes at the start of the answer to the
        action ending ``messages``: :meth:`prefix_ids` of its :meth:`think`."""
        return self.prefix_ids(messages[-1] if messages else None, self.think(messages))

    def prefix_ids(self, action: Message | None, think: str | None) -> list[int]:
        """Token ids ``[prefix_len]`` of an answer's start, the ``think`` block then the
        observation block's opening tag (``think == ""``: the tag alone, as
        :func:`~agentworld.core.formats.wrap_observation` writes an SFT target without a
        rationale); ``[]`` when ``think`` is ``None``. ``action``: the request's last message."""
        if think is None or action is None:
            return []
        # in the template's frame, as SFT trained it (chat_render.turn_sequence); the frame is
        # found on the last message alone, where every template of the test set frames alike
        prompt, header, _ = answer_frame(self.tokenizer, [dict(action)])
        text = served_answer(answer_prefix(think) if think else OBS_OPEN, prompt, header)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def with_think(self, answer: str, think: str | None) -> str:
        """``answer`` as the history of a later request holds it: after the ``think`` block
        the simulator wrote before it (:meth:`think` of its request), as SFT's whole-episode
        windows hold every earlier turn (:func:`agentworld.core.formats.episode_messages`
        with rationales). Unchanged when ``think`` is empty or ``None``, the answer has a
        think block, or the model was trained on a ``history_window`` (its SFT histories hold
        no rationale, :func:`agentworld.core.formats.sft_pair`)."""
        if not think or self.history_window is not None or answer.startswith(THINK_OPEN):
            return answer
        return f"{THINK_OPEN}{think}{THINK_CLOSE}\n{answer}"

    def history_with_think(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` with every assistant answer :meth:`with_think` its own think block: a
        request built from real observations (evaluation) sees its history as SFT trained
        the model to see it."""
        out = [dict(m) for m in messages]
        if self.history_window is not None:
            return out
        for i, message in enumerate(out):
            if message["role"] == "assistant":
                message["content"] = self.with_think(message["content"], self.think(out[:i]))
        return out

    def request_params(self, params: SamplingParams) -> SamplingParams:
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

    def prediction(
        self, output: GenerationOutput, prefix: list[int], *, rewards: bool = False
    ) -> Prediction:
        """The :class:`Prediction` of one engine output (answer ``prefix`` written before it),
        parsed once: the observation block and, with ``rewards``, the footer. A failed
        request is a :class:`~agentworld.sim.simulator.FailedPrediction`."""
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
        footer = parse_footer(text) if rewards and observation is not None else None
        return Prediction(
            text=text,
            observation=observation,
            num_tokens=len(output.token_ids),
            reward=footer[0] if footer else None,
            terminated=footer[1] if footer else None,
        )
