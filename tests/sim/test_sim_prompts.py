"""Context-window fitting policy (pure Python, character-level fake tokenizer)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agentworld.sim.prompts import fit_prompt


def render(messages: Sequence[dict[str, str]]) -> list[int]:
    text = "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"
    return [ord(c) for c in text]


def text(ids: list[int]) -> str:
    return "".join(chr(i) for i in ids)


def conversation(turns: int) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": "SYS"}]
    for t in range(turns):
        messages += [
            {"role": "user", "content": f"a{t}"},
            {"role": "assistant", "content": f"o{t}"},
        ]
    return [*messages, {"role": "user", "content": "last"}]


def test_fits_unchanged() -> None:
    fitted = fit_prompt(conversation(3), render, 1000)
    assert fitted.dropped_turns == 0 and fitted.ids == render(conversation(3))


@pytest.mark.parametrize("turns", [1, 2, 5, 17])
def test_drops_fewest_oldest_turns(turns: int) -> None:
    messages = conversation(turns)
    budget = len(render(messages)) - 1
    fitted = fit_prompt(messages, render, budget)
    assert fitted.dropped_turns == 1 and fitted.cut_tokens == 0
    assert text(fitted.ids) == text(render([messages[0], *messages[3:]]))


def test_last_resort_keeps_system_head_and_tail() -> None:
    messages = [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "x" * 100 + "END"},
    ]
    fitted = fit_prompt(messages, render, 40)
    assert len(fitted.ids) == 40 and fitted.cut_tokens == len(render(messages)) - 40
    assert text(fitted.ids).startswith("<system>SYS") and text(fitted.ids).endswith(
        "END<assistant>"
    )


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        fit_prompt([], render, 10)
    with pytest.raises(ValueError):
        fit_prompt(conversation(1), render, 0)
