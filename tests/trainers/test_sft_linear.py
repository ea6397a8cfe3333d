"""SFT preprocessing is linear in the episode's length (issue 44: at 48 turns one episode was
rendered 302 times, 146x its text): whole-chat windows are assembled from per-message pieces
and checked against one rendering of the whole chat, giving exactly the spans that rendering
every prefix gives."""

from __future__ import annotations

import pytest

from agentworld.trainers.models import chat_render
from agentworld.trainers.models.chat_mask import ChatMasker

from test_chat_mask import FAMILIES, family_tokenizer


def chat(turns: int) -> list[dict[str, str]]:
    out = [{"role": "system", "content": "Simulate a terminal."}]
    for t in range(turns):
        out += [{"role": "user", "content": f"echo {t}"},
                {"role": "assistant", "content": f"<think>t{t}</think>\n{t}"}]
    return out


def quadratic(tok, messages):
    """render_with_spans by rendering every prefix (the path the linear one must equal)."""
    saved = chat_render._assembled_with_spans
    chat_render._assembled_with_spans = lambda *a: None
    try:
        return chat_render.render_with_spans(tok, messages)
    finally:
        chat_render._assembled_with_spans = saved


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_assembled_spans_equal_the_prefix_renderings(name: str) -> None:
    tok = family_tokenizer(name)
    if ChatMasker(tok).strategy != "prefix":
        pytest.skip(f"{name} does not train whole-chat windows by prefixes")
    messages = chat(7)
    linear = chat_render._assembled_with_spans(tok, messages, None)
    assert linear is not None, f"{name}: the pieces did not assemble to the whole rendering"
    assert linear == quadratic(tok, messages)


def test_characters_rendered_grow_linearly_with_the_turns() -> None:
    tok = family_tokenizer("qwen2_5")
    render = tok.apply_chat_template
    rendered = {}
    for turns in (6, 48):
        count = [0]

        def counted(*a, _count=count, **kw):
            out = render(*a, **kw)
            _count[0] += len(out)
            return out

        tok.apply_chat_template = counted
        try:
            ChatMasker(tok).windows(chat(turns), 1 << 20)
        finally:
            tok.apply_chat_template = render
        rendered[turns] = count[0] / len(render(chat(turns), tokenize=False))
    # the probe chat at start-up is a constant; per chat length the work is ~9x, not 146x
    assert rendered[48] < 12, rendered
    assert rendered[48] < 1.5 * rendered[6] + 6, rendered
