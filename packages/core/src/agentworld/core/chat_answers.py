"""Where an answer goes in a chat template's rendering, for training and serving alike.

SFT trains each answer after the prompt the simulator serves for it, and the simulator writes
the start of an answer (its rationale and the observation block's opening tag) as SFT trained
it; both go through this module, so a template cannot make them differ. Templates put an
answer in ways a plain "text after the generation prompt" rule gets wrong:

- gpt-oss writes ``<|channel|>final<|message|>`` between its generation prompt
  (``<|start|>assistant``) and the answer's content; Mistral v0.3 a space;
- DeepSeek-R1-distill's generation prompt already opens ``<think>`` (``<｜Assistant｜><think>\\n``)
  while a rendered answer deletes its reasoning;
- Qwen3 writes an empty ``<think>\\n\\n</think>\\n\\n`` before an answer without reasoning, and
  re-spaces an answer's own reasoning block.

Each is found by rendering the answer with :data:`SENTINEL` as its content: where the sentinel
lands is where the template puts the content, whatever it writes around it. Only the
tokenizer's ``apply_chat_template`` is used (no import of transformers here).
"""

from __future__ import annotations

from typing import Any

from agentworld.core.formats import THINK_OPEN, Message

# Plain text no template rewrites (no whitespace to trim, no tag to split on).
SENTINEL = "AGENTWORLD-ANSWER-7f3a"


def render(tokenizer: Any, messages: list[Message], gen: bool = False,
           template: str | None = None) -> str:
    """``apply_chat_template(messages)`` as text (``gen``: with the generation prompt)."""
    if not messages:
        return ""
    return tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=gen, chat_template=template
    )


def answer_frame(tokenizer: Any, history: list[Message],
                 template: str | None = None) -> tuple[str, str, str]:
    """``(prompt, header, end)`` of the answer to ``history`` (``[system?, ..., user]``): the
    served prompt (``history`` with the generation prompt), what the template writes between
    that prompt and an answer's content, and what it writes after the content (the end-of-turn
    marker, trailing whitespace dropped).

    Raises:
        ValueError: the template does not write an assistant message's content.
    """
    prompt = render(tokenizer, history, gen=True, template=template)
    marked = render(tokenizer, [*history, {"role": "assistant", "content": SENTINEL}],
                    template=template)
    at = marked.find(SENTINEL)
    if at < 0:
        raise ValueError("the chat template does not write an assistant message's content; "
                         "SFT cannot train on answers under it")
    end = marked[at + len(SENTINEL):].rstrip()
    header = ""
    if marked.startswith(prompt) and at >= len(prompt):
        header = marked[len(prompt):at]
    else:  # the system message moves into the last user turn (Mistral v0.3)
        user = history[-1]["content"] if history else ""
        if user and prompt.rfind(user) >= 0:
            tail = prompt[prompt.rfind(user):]  # the last user turn's end, as the prompt writes it
            found = marked.rfind(tail, 0, at)
            if found >= 0:
                header = marked[found + len(tail):at]
    return prompt, header, end


def served_answer(content: str, prompt: str, header: str) -> str:
    """The text a model writes after ``prompt`` for an answer ``content``, given the template's
    ``header`` (:func:`answer_frame`): the header, then the content as given. A ``<think>`` tag
    the prompt already opened (DeepSeek-R1-distill) is not repeated, and an empty reasoning
    block in the header (Qwen3's) gives way to the content's own reasoning."""
    if prompt.rstrip().endswith(THINK_OPEN) and content.startswith(THINK_OPEN):
        content = content[len(THINK_OPEN):].lstrip("\n")
    elif THINK_OPEN in header and content.startswith(THINK_OPEN):
        header = header[: header.index(THINK_OPEN)]
    return header + content
