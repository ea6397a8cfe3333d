"""Loss masks on the assistant tokens of a chat, under any chat template.

SFT trains on the assistant turns only. Which tokens those are depends on the
tokenizer's chat template, and templates differ: Qwen3 drops the reasoning of
earlier turns and adds an empty ``<think>`` block to the last one, Phi-3.5 and
gpt-oss end a conversation differently from a turn, Gemma 3 folds the system
message into the first user turn. :class:`ChatMasker` picks, once per tokenizer,
the first of these strategies that applies:

``"markers"``
    The template has ``{% generation %}`` markers: the assistant mask is
    ``apply_chat_template(..., return_assistant_tokens_mask=True)``
    (transformers' chat-template documentation, "assistant tokens mask").
``"prefix"``
    The template is prefix-stable (rendering the first ``k`` messages gives a
    prefix of the whole chat, as ChatML, Qwen2.5 and Llama 3 are): each
    assistant answer is the text between the generation prompt of its history
    and the rendering that ends with it, through its end-of-turn marker.
``"markers"`` with a training variant
    TRL (optional extra ``trl``) ships, for the stock templates it knows
    (Qwen3, Gemma 3, Phi-3.5, gpt-oss, ...), a prefix-preserving variant with
    generation markers (the ``*_training.jinja`` files that
    ``trl.chat_template_utils.get_training_chat_template`` returns).
``"turns"``
    Any other template: every assistant turn becomes its own sequence, the
    prompt being the template's rendering of its history with the generation
    prompt and the target what the template appends for that answer. This is
    exactly what the model sees at inference time, at the cost of repeating the
    history once per turn. Where the template renders the history differently once an
    answer follows (Mistral v0.3 shows the system message in the last user turn only), the
    answer is cut out at its content (:mod:`agentworld.trainers.models.chat_render`).

Whichever applies, the loss falls on the assistant tokens as the template
renders them, end-of-turn marker included, and on nothing else.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Literal

from agentworld.core.formats import Message
from agentworld.trainers.models.chat_render import render_with_spans, turn_sequence
from agentworld.trainers.models.chat_templates import (
    PROBE,
    check_renders,
    has_generation_markers,
    own_template,
    training_template,
)
from transformers import PreTrainedTokenizerBase

__all__ = ["STRATEGIES", "ChatMasker", "has_generation_markers", "render_with_spans"]

Strategy = Literal["markers", "prefix", "turns"]
STRATEGIES: tuple[str, ...] = ("markers", "prefix", "turns")
Window = tuple[list[int], list[int]]  # (input_ids [seq], loss_mask [seq])

class ChatMasker:
    """Tokenise ``[system, (user, assistant) * T]`` chats with a loss mask on the assistant tokens.

    Args:
        tokenizer: Any tokenizer with a chat template (a fast tokenizer: offsets are used).
        strategy: Force ``"markers"``, ``"prefix"`` or ``"turns"`` (see the module docstring);
            ``None`` picks the first that applies.

    Raises:
        ValueError: the tokenizer has no chat template, or a forced strategy does not apply
            (``"markers"`` on a template without markers that TRL has no variant of,
            ``"prefix"`` on a template that is not prefix-stable).
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, strategy: Strategy | None = None):
        self.tokenizer = tokenizer
        own = own_template(tokenizer)
        self.template: str | None = None  # the template rendered with (None: the tokenizer's)
        if strategy is not None and strategy not in STRATEGIES:
            raise ValueError(f"unknown masking strategy {strategy!r}; valid: {STRATEGIES}")
        self._header = ""  # generation prompt a marked span may start with (gpt-oss's)
        check_renders(tokenizer)
        if has_generation_markers(own) and strategy in (None, "markers"):
            self.strategy: Strategy = "markers"
            self._header = self._generation_prompt()
            if strategy or self._serves_as_trained():
                return
        if strategy in (None, "prefix"):
            try:
                render_with_spans(tokenizer, PROBE)
                self.strategy, self.template, self._header = "prefix", None, ""
                if strategy or self._serves_as_trained():
                    return
            except ValueError:
                if strategy == "prefix":
                    raise
        if strategy in (None, "markers"):
            self.template = training_template(tokenizer)
            if self.template is not None:
                self.strategy = "markers"
                self._header = self._generation_prompt()
                if strategy or self._serves_as_trained():
                    return
            self.template, self._header = None, ""
            if strategy == "markers":
                raise ValueError(
                    "the chat template has no {% generation %} markers and TRL has no training "
                    "variant of it; use strategy 'turns' (or None to choose automatically)"
                )
        self.strategy = "turns"

    def _serves_as_trained(self) -> bool:
        """Whether a whole-chat window trains each answer after exactly the prompt the
        simulator serves for it: on :data:`PROBE`, every answer's span starts right after
        its history rendered with the tokenizer's own template and generation prompt, and the
        answer's content is written in it as given. Not so for Qwen3 under TRL's training variant
        (earlier rationales kept, the served prompt drops them) and DeepSeek-R1-distill (the
        served prompt ends ``<think>\\n``, a rendered answer deletes its rationale): those
        train turn by turn (:func:`~agentworld.trainers.models.chat_render.turn_sequence`)."""
        if self.strategy == "markers":
            text, _, _, spans = self._marked(PROBE)
        else:
            text, _, spans = render_with_spans(self.tokenizer, PROBE)
        turns = [k for k, m in enumerate(PROBE) if m["role"] == "assistant"]
        for k, (start, end) in zip(turns, spans, strict=True):
            served = self.tokenizer.apply_chat_template(
                PROBE[:k], tokenize=False, add_generation_prompt=True)
            if text[:start] != served or PROBE[k]["content"] not in text[start:end]:
                return False
        return True

    # -- rendering helpers -------------------------------------------------------------------
    def _generation_prompt(self) -> str:
        """What ``add_generation_prompt`` appends after a user turn (``""`` if not a suffix)."""
        plain, gen = self._render(PROBE[:2]), self._render(PROBE[:2], gen=True)
        return gen[len(plain) :] if gen.startswith(plain) else ""

    def _render(self, msgs: list[Message], gen: bool = False) -> str:
        return self.tokenizer.apply_chat_template(
            msgs, tokenize=False, add_generation_prompt=gen, chat_template=self.template
        )

    def _encode(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return enc["input_ids"], enc["offset_mapping"]

    @staticmethod
    def _mask(offsets: list[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> list[int]:
        """1 for each token whose first character lies in a span, else 0 (one pass over the
        tokens and the sorted spans)."""
        mask, ordered, j, last = [], sorted(spans), 0, 0
        for s, _ in offsets:
            if s < last:  # offsets went back (not seen with fast tokenizers): search again
                j = 0
            last = s
            while j < len(ordered) and ordered[j][1] <= s:
                j += 1
            mask.append(int(j < len(ordered) and ordered[j][0] <= s))
        return mask

    @staticmethod
    def _skip(text: str, span: tuple[int, int], prefix: str) -> tuple[int, int]:
        """Move a span's start past ``prefix``'s last line, found inside the span (the template
        may rewrite the part before it, as Qwen3 does with ``<think>``)."""
        if not prefix:
            return span
        tail = prefix.rstrip().rsplit("\n", 1)[-1]
        at = text.find(tail, span[0], span[1])
        return span if at < 0 else (at + len(tail), span[1])

    @classmethod
    def _skip_rendered(cls, text: str, span: tuple[int, int], prefix: str) -> tuple[int, int]:
        """Move a span's start past ``prefix``: its length when the template wrote the content
        verbatim at the span's start, else past its last line (:meth:`_skip`; DeepSeek-R1-distill
        drops the ``<think>`` block)."""
        if text.startswith(prefix, span[0]):
            return span[0] + len(prefix), span[1]
        return cls._skip(text, span, prefix)

    def _marked(
        self, msgs: list[Message]
    ) -> tuple[str, list[int], list[tuple[int, int]], list[tuple[int, int]]]:
        """``(text, ids, offsets, spans)`` of a chat rendered with generation markers."""
        text = self._render(msgs)
        out = self.tokenizer.apply_chat_template(
            msgs,
            tokenize=True,
            return_dict=True,
            return_assistant_tokens_mask=True,
            chat_template=self.template,
        )
        ids, offsets = self._encode(text)
        if list(out["input_ids"]) != ids:
            raise ValueError(
                "apply_chat_template tokenised the chat differently from the tokenizer"
            )
        spans, run = [], None
        for (s, e), m in zip(offsets, out["assistant_masks"]):
            if m and run is None:
                run = [s, e]
            elif m:
                run[1] = e
            elif run is not None:
                spans.append(tuple(run))
                run = None
        if run is not None:
            spans.append(tuple(run))
        # The generation prompt is the model's input, not its target (gpt-oss's training
        # variant marks the whole message, ``<|start|>assistant`` included).
        h = self._header
        spans = [(a + len(h), b) if h and text.startswith(h, a) else (a, b) for a, b in spans]
        return text, ids, offsets, spans

    # -- public API --------------------------------------------------------------------------
    def windows(
        self, messages: list[Message], max_seq_len: int, skips: Sequence[str] | None = None
    ) -> list[Window]:
        """Masked sequences of one chat, each at most ``max_seq_len`` tokens.

        ``"prefix"`` and ``"markers"``: the whole chat is one sequence; a chat longer than
        ``max_seq_len`` is split at turn boundaries into windows that each restart with the
        system message (a single turn that does not fit is cut). ``"turns"``: one sequence
        per assistant turn, its history shortened from the oldest turn until it fits.

        Args:
            messages: ``[system, (user, assistant) * T]``.
            max_seq_len: Tokens per sequence.
            skips: Per assistant turn, a prefix of its content kept out of the loss
                (``""`` for none); the loss starts after the prefix's last line.

        Returns:
            ``[(input_ids, loss_mask), ...]``, each list ``<= max_seq_len`` long.

        Raises:
            ValueError: ``messages`` is not ``[system, (user, assistant) * T]``.
        """
        roles = [m["role"] for m in messages]
        turns = (len(roles) - 1) // 2
        if not roles or roles[0] != "system" or roles[1:] != ["user", "assistant"] * turns:
            raise ValueError(
                f"expected [system, (user, assistant) * T] messages, got roles {roles}"
            )
        skips = list(skips) if skips is not None else [""] * turns
        if self.strategy == "prefix":
            return self._prefix_windows(messages, max_seq_len, skips)
        if self.strategy == "turns":
            return [
                self.last_turn(
                    [messages[0], *messages[1 : 2 * t + 3]],
                    max_seq_len,
                    skips[t],
                    keep_history=True,
                )
                for t in range(turns)
            ]
        return self._marker_windows(messages, max_seq_len, skips)

    def last_turn(
        self,
        messages: list[Message],
        max_seq_len: int,
        skip: str = "",
        keep_history: bool = False,
    ) -> Window:
        """One sequence whose only target is the final assistant message of ``messages``.

        Args:
            messages: ``[system, ..., user, assistant]``.
            keep_history: Drop the oldest (user, assistant) pairs after the system message
                until the sequence fits in ``max_seq_len`` (else it is only cut at the end).
        """
        first = 1
        while True:
            msgs = [messages[0], *messages[first:]]
            if self.strategy == "markers":
                text, ids, offsets, spans = self._marked(msgs)
                span = spans[-1]
            elif self.strategy == "prefix":
                text, _, spans = render_with_spans(self.tokenizer, msgs)
                ids, offsets = self._encode(text)
                span = spans[-1]
            else:  # the served prompt's own tokens, then the target's
                prompt, target = turn_sequence(self.tokenizer, msgs, self.template)
                head, head_offsets = self._encode(prompt)
                tail, tail_offsets = self._encode(target)
                text, ids, span = prompt + target, head + tail, (len(prompt), len(prompt + target))
                offsets = head_offsets + [(a + len(prompt), b + len(prompt)) for a, b in tail_offsets]
            if not keep_history or len(ids) <= max_seq_len or len(msgs) <= 3:
                break
            first += 2
        mask = self._mask(offsets, [self._skip_rendered(text, span, skip)])
        return ids[:max_seq_len], mask[:max_seq_len]

    def _prefix_windows(
        self, messages: list[Message], max_seq_len: int, skips: list[str]
    ) -> list[Window]:
        text, starts, spans = render_with_spans(self.tokenizer, messages)
        spans = [self._skip_rendered(text, s, k) for s, k in zip(spans, skips)]
        ids, offsets = self._encode(text)
        mask = self._mask(offsets, spans)
        token_starts = [s for s, _ in offsets]
        first = [bisect_left(token_starts, c) for c in starts]  # first token at or after each message
        bounds = [*first[1::2], len(ids)]  # token index where each turn (user message) begins
        system = list(range(bounds[0]))
        if len(ids) > max_seq_len and messages[0]["content"] not in text[: starts[1]]:
            # The template folds the system message into the first turn (Gemma): windows
            # after the first would lose it, so each window is rendered on its own.
            return self._greedy_windows(messages, max_seq_len, skips, self._prefix_encode)
        windows: list[list[int]] = [[]]
        for a, b in pairwise(bounds):
            if windows[-1] and len(system) + len(windows[-1]) + (b - a) > max_seq_len:
                windows.append([])
            windows[-1] += range(a, b)
        out = []
        for window in windows:
            idx = (system + window)[:max_seq_len]
            out.append(([ids[i] for i in idx], [mask[i] for i in idx]))
        return out

    def _prefix_encode(self, msgs: list[Message], skips: Sequence[str]) -> Window:
        text, _, spans = render_with_spans(self.tokenizer, msgs)
        ids, offsets = self._encode(text)
        spans = [self._skip_rendered(text, s, k) for s, k in zip(spans, skips)]
        return ids, self._mask(offsets, spans)

    def _marker_encode(self, msgs: list[Message], skips: Sequence[str]) -> Window:
        text, ids, offsets, spans = self._marked(msgs)
        return ids, self._mask(offsets, [self._skip_rendered(text, s, p) for s, p in zip(spans, skips)])

    def _marker_windows(
        self, messages: list[Message], max_seq_len: int, skips: list[str]
    ) -> list[Window]:
        whole = self._marker_encode(messages, skips)
        if len(whole[0]) <= max_seq_len:
            return [whole]
        return self._greedy_windows(messages, max_seq_len, skips, self._marker_encode)

    @staticmethod
    def _greedy_windows(
        messages: list[Message],
        max_seq_len: int,
        skips: list[str],
        encode: Callable[[list[Message], Sequence[str]], Window],
    ) -> list[Window]:
        """Windows of the system message plus the longest run of whole turns that fits, each
        rendered on its own; a single turn that does not fit is cut at ``max_seq_len``."""
        turns = (len(messages) - 1) // 2
        out, j = [], 0
        while j < turns:
            k = j + 1
            best = encode([messages[0], *messages[1 + 2 * j : 1 + 2 * k]], skips[j:k])
            while k < turns:
                nxt = encode([messages[0], *messages[1 + 2 * j : 3 + 2 * k]], skips[j : k + 1])
                if len(nxt[0]) > max_seq_len:
                    break
                best, k = nxt, k + 1
            out.append((best[0][:max_seq_len], best[1][:max_seq_len]))
            j = k
        return out
