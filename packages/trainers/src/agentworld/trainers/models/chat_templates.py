"""The chat template a :class:`~agentworld.trainers.models.chat_mask.ChatMasker` works with:
the tokenizer's own, TRL's training variant of it, whether it has generation markers, and a
probe chat that any template SFT can use must render."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from agentworld.core.formats import Message
from transformers import PreTrainedTokenizerBase

MARKER = re.compile(r"\{%-?\s*generation\s*-?%\}")
# A conversation with every shape the check needs: system, two turns, a rationale.
PROBE: list[Message] = [
    {"role": "system", "content": "S"},
    {"role": "user", "content": "u1"},
    {"role": "assistant", "content": "<think>r1</think>\na1"},
    {"role": "user", "content": "u2"},
    {"role": "assistant", "content": "<think>r2</think>\na2"},
]


def has_generation_markers(template: str | None) -> bool:
    """Whether a chat template marks assistant output with ``{% generation %}`` (any trim form)."""
    return template is not None and MARKER.search(template) is not None


def own_template(tokenizer: PreTrainedTokenizerBase) -> str:
    template = tokenizer.chat_template
    if isinstance(template, dict):
        template = template.get("default")
    if not template:
        raise ValueError(
            f"the tokenizer ({tokenizer.name_or_path or type(tokenizer).__name__}) has no chat "
            "template; SFT renders episodes as chats. Use an instruct/chat checkpoint, or set "
            "tokenizer.chat_template (e.g. ChatML) and save it with the tokenizer"
        )
    return template


def training_template(tokenizer: PreTrainedTokenizerBase) -> str | None:
    """TRL's training variant of the tokenizer's stock template, or ``None``.

    TRL keeps each known stock template as ``trl/chat_templates/<name>.jinja`` next to its
    variant ``<name>_training.jinja`` (``trl.chat_template_utils.get_training_chat_template``
    maps one to the other by exact comparison). The files are read without importing TRL,
    whose import takes tens of seconds.
    """
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        return None  # the optional `trl` extra is not installed
    template = own_template(tokenizer)
    for root in spec.submodule_search_locations:
        for stock in sorted((Path(root) / "chat_templates").glob("*.jinja")):
            training = stock.with_name(f"{stock.stem}_training.jinja")
            if training.is_file() and stock.read_text(encoding="utf-8") == template:
                return training.read_text(encoding="utf-8")
    return None


def check_renders(tokenizer: PreTrainedTokenizerBase) -> None:
    """Render :data:`PROBE` once, so a template that refuses the chats SFT trains on fails
    here with one line (Gemma 2's ``System role not supported``), not as a Jinja traceback.

    Raises:
        ValueError: the template raises on ``[system, (user, assistant) * T]``.
    """
    from jinja2.exceptions import TemplateError

    try:
        tokenizer.apply_chat_template(PROBE, tokenize=False)
    except TemplateError as error:
        name = tokenizer.name_or_path or type(tokenizer).__name__
        raise ValueError(
            f"the chat template of {name} refuses the chats SFT trains on "
            f"([system, (user, assistant) * T]): {error}. Use a checkpoint whose template "
            "takes a system message, or set tokenizer.chat_template (e.g. ChatML)"
        ) from None
