"""Where a chat template puts each assistant answer: character spans of the targets of SFT.

Templates render an answer in ways a plain "text after the generation prompt" rule gets
wrong:

- DeepSeek-R1-distill's generation prompt is ``<｜Assistant｜><think>\\n`` while a rendered
  answer is ``<｜Assistant｜>`` + answer (reasoning dropped): the answer starts *inside* the
  generation prompt, and skipping the prompt's length skips the answer's first characters
  (its ``<predicted_observation>`` tag).
- Mistral v0.3 (``mistralai/Mistral-7B-Instruct-v0.3``) writes the system message into the
  *last* user turn only, so a chat ending in an answer never shows it, and the rendering of
  the history differs from the rendering of the whole chat inside the last user turn.

Both are found by rendering the answer once more with a sentinel as its content
(:data:`SENTINEL`): where the sentinel lands is where the template puts the answer's
content, whatever it writes before it.
"""

from __future__ import annotations

from os.path import commonprefix

from agentworld.core.chat_answers import SENTINEL, answer_frame, render, served_answer
from agentworld.core.formats import Message
from transformers import PreTrainedTokenizerBase


def content_start(
    tokenizer: PreTrainedTokenizerBase, messages: list[Message], template: str | None = None
) -> int | None:
    """Character offset in ``render(messages)`` where the final (assistant) message's content
    begins, or ``None`` when the template does not render it at one place (the text before it
    depends on the content, or the content is not written at all)."""
    probe = [*messages[:-1], {"role": "assistant", "content": SENTINEL}]
    marked = render(tokenizer, probe, template=template)
    at = marked.find(SENTINEL)
    if at < 0 or not render(tokenizer, messages, template=template).startswith(marked[:at]):
        return None
    return at


def render_with_spans(
    tokenizer: PreTrainedTokenizerBase, messages: list[Message], template: str | None = None
) -> tuple[str, list[int], list[tuple[int, int]]]:
    """Render ``messages`` and locate each message and each assistant answer in the text.

    An answer's span starts where the generation prompt of its history ends, or earlier
    where the answer's content starts before that (DeepSeek-R1-distill: the prompt's
    ``<think>\\n`` is not in a rendered answer), and ends after its end-of-turn marker.

    Returns:
        ``(text, starts, spans)``: the rendered chat; the character offset where
        each message begins; and the ``[start, end)`` character span of every
        assistant answer, from its first content character through its
        end-of-turn marker (trailing whitespace excluded).

    Raises:
        ValueError: the chat template is not prefix-stable (rendering a prefix
            of the conversation must give a prefix of the full text).
    """
    assembled = _assembled_with_spans(tokenizer, messages, template)
    if assembled is not None:
        return assembled
    text = render(tokenizer, messages, template=template)
    starts, spans = [], []
    for k, message in enumerate(messages):
        head = render(tokenizer, messages[:k], template=template)
        if not text.startswith(head):
            raise ValueError(
                "the tokenizer's chat template is not prefix-stable; cannot mask SFT targets "
                "by prefixes (ChatMasker falls back to generation markers or turn-by-turn)"
            )
        starts.append(len(head))
        if message["role"] == "assistant":
            upto = render(tokenizer, messages[: k + 1], template=template)
            prompt = render(tokenizer, messages[:k], gen=True, template=template)
            start = len(commonprefix([prompt, upto]))
            content = content_start(tokenizer, messages[: k + 1], template)
            if content is not None and len(head) <= content < start:
                start = content
            spans.append((start, len(upto.rstrip())))
    return text, starts, spans


def _assembled_with_spans(
    tokenizer: PreTrainedTokenizerBase, messages: list[Message], template: str | None
) -> tuple[str, list[int], list[tuple[int, int]]] | None:
    """:func:`render_with_spans` in time linear in the chat's length, or ``None``.

    Each message's text is what the template appends for it after a short context (the
    system message and the two or three messages before it, from a user message), each
    answer's span starts after that
    context's generation prompt; the pieces are joined and kept only when they equal the
    template's rendering of the whole chat, rendered once. Templates whose pieces depend on
    more than that context, or whose answers do not follow the generation prompt, give
    ``None`` (the caller renders every prefix instead: quadratic, exact)."""
    if not messages or messages[0]["role"] != "system":
        return None
    pieces, starts, spans, at = [], [], [], 0
    for k, message in enumerate(messages):
        first = max(1, k - 2)
        if first > 1 and messages[first]["role"] != "user":  # templates that check alternation
            first -= 1
        context = [] if k == 0 else [messages[0], *messages[first:k]]
        head = render(tokenizer, context, template=template)
        upto = render(tokenizer, [*context, message], template=template)
        if not upto.startswith(head):
            return None
        piece = upto[len(head):]
        if message["role"] == "assistant":
            prompt = render(tokenizer, context, gen=True, template=template)
            if not upto.startswith(prompt):
                return None
            spans.append((at + len(prompt) - len(head), at + len(piece.rstrip())))
        starts.append(at)
        pieces.append(piece)
        at += len(piece)
    text = "".join(pieces)
    return (text, starts, spans) if text == render(tokenizer, messages, template=template) else None


def turn_sequence(
    tokenizer: PreTrainedTokenizerBase, messages: list[Message], template: str | None = None
) -> tuple[str, str]:
    """``(prompt, target)`` of one training sequence whose target is the final assistant
    message: the prompt is the history rendered with the generation prompt, exactly as the
    simulator renders it when it asks for that answer; the target is what the model must write
    after it (:func:`agentworld.core.chat_answers.served_answer`, the answer's own content in
    the template's frame, through the end-of-turn marker). The simulator writes an answer's
    start through the same function, so training and serving cannot differ.

    Args:
        messages: ``[system, ..., user, assistant]``.

    Raises:
        ValueError: the template does not write an assistant answer's content.
    """
    prompt, header, end = answer_frame(tokenizer, messages[:-1], template)
    return prompt, served_answer(messages[-1]["content"], prompt, header) + end
