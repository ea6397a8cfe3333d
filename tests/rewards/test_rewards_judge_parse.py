"""The LLM judge without a model: answer parsing and mapping, prompts, bad configuration,
and an unreachable endpoint."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from agentworld.core import plugins
from agentworld.core.types import Action
from agentworld.rewards.judge import JudgeUnavailableError, LLMJudge
from agentworld.rewards.rubrics import (
    ANSWER_FORMAT,
    DIMENSIONS,
    GENERIC_RUBRIC,
    TERMINAL_RUBRIC,
    load_rubrics,
)
from agentworld.rewards.verdict import Verdict, VerdictStatus, parse_scores, to_percent, verdict_of

FULL = {"format": 5.0, "factuality": 4.0, "consistency": 4.0, "realism": 3.0, "quality": 4.0}


def dead_url() -> str:
    """The URL of a loopback port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


def offline_judge(**options) -> LLMJudge:
    """A judge that only builds messages (no endpoint check)."""
    return LLMJudge("judge", base_url=dead_url(), check=False, **options)


@pytest.mark.parametrize(
    "answer",
    [
        '{"format": 5, "factuality": 4, "consistency": 4, "realism": 3, "quality": 4}',
        # reasoning first, keys in any case and order, fenced
        (
            '<think>the ls order is wrong {"format": 1}</think>Verdict:\n```json\n'
            '{"Quality": 4, "REALISM": 3, "consistency": 4, "factuality": 4, "format": 5}\n```'
        ),
        # an incomplete object, then a complete one: the complete one wins
        (
            '{"format": 2} then {"format": 5, "factuality": 4, "consistency": 4, '
            '"realism": 3, "quality": 4}'
        ),
        # Markdown lines instead of JSON
        "**Format**: 5\n- Factuality: 4/5\nConsistency = 4\nrealism: 3\nQuality: 4",
    ],
)
def test_parse_scores_finds_the_five_dimensions(answer: str) -> None:
    assert parse_scores(answer) == FULL


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "The prediction is good.",
        '{"format": 5, "factuality": 4, "consistency": 4, "realism": 3}',  # quality missing
        '{"format": 6, "factuality": 4, "consistency": 4, "realism": 3, "quality": 4}',  # > 5
        '{"format": 0, "factuality": 4, "consistency": 4, "realism": 3, "quality": 4}',  # < 1
        '{"format": "5", "factuality": 4, "consistency": 4, "realism": 3, "quality": 4}',
        '{"format": true, "factuality": 4, "consistency": 4, "realism": 3, "quality": 4}',
        '{"format": 5, "factuality": 4, "consistency": 4, "realism": 3, "quality": 4',  # open
        (
            "<think>"
            '{"format": 5, "factuality": 4, "consistency": 4, "realism": 3, "quality": 4}'
            "</think> no scores after thinking"
        ),
        "Format: 5\nFactuality: 4\nConsistency: 4\nRealism: 9\nQuality: 4",
    ],
)
def test_parse_scores_refuses_unusable_answers(answer: str) -> None:
    assert parse_scores(answer) is None
    assert verdict_of(answer).status is VerdictStatus.UNPARSEABLE
    assert verdict_of(answer).value is None and verdict_of(answer).percent is None


def test_mapping_to_percent_and_value() -> None:
    assert [to_percent(s) for s in (1, 2, 3, 4, 5)] == [0.0, 25.0, 50.0, 75.0, 100.0]
    verdict = verdict_of(
        '{"format": 5, "factuality": 4, "consistency": 4, "realism": 3, "quality": 4}'
    )
    assert verdict.status is VerdictStatus.PARSED
    assert verdict.percent == {
        "format": 100.0,
        "factuality": 75.0,
        "consistency": 75.0,
        "realism": 50.0,
        "quality": 75.0,
    }
    assert verdict.value == 0.75  # (100 + 75 + 75 + 50 + 75) / 5 / 100
    best = Verdict(VerdictStatus.PARSED, "", dict.fromkeys(DIMENSIONS, 5.0))
    worst = Verdict(VerdictStatus.PARSED, "", dict.fromkeys(DIMENSIONS, 1.0))
    assert (best.value, worst.value) == (1.0, 0.0)
    half = verdict_of("format: 3\nfactuality: 3\nconsistency: 3\nrealism: 3\nquality: 3.5")
    assert half.value == pytest.approx((50 * 4 + 62.5) / 500)


def test_messages_pick_the_domain_rubric_and_show_the_case() -> None:
    judge = offline_judge()
    terminal = judge.messages(
        "a.txt\nuser@sandbox:~$ ",
        "b.txt\nuser@sandbox:~$ ",
        {"domain": "terminal", "action": Action(text="ls")},
    )
    assert [m["role"] for m in terminal] == ["system", "user"]
    assert terminal[0]["content"] == TERMINAL_RUBRIC
    case = terminal[1]["content"]
    assert case == (
        "<action>\nls\n</action>\n\n<reference>\nb.txt\nuser@sandbox:~$ \n</reference>\n\n"
        f"<prediction>\na.txt\nuser@sandbox:~$ \n</prediction>\n\n{ANSWER_FORMAT}"
    )

    class Web:
        name = "web"

    other = judge.messages("p", "r", {"domain": Web()})  # a domain object without a rubric
    assert other[0]["content"] == GENERIC_RUBRIC
    assert other[1]["content"].startswith("<reference>\nr\n</reference>")  # no action known
    assert judge.messages("p", "r", {})[0]["content"] == GENERIC_RUBRIC
    for dimension in DIMENSIONS:
        assert f"- {dimension}:" in TERMINAL_RUBRIC and f"- {dimension}:" in GENERIC_RUBRIC
        assert f'"{dimension}": N' in ANSWER_FORMAT
    judge.close()


def test_prompt_files(tmp_path: Path) -> None:
    one = tmp_path / "rubric.txt"
    one.write_text("  Our own rubric.\n", encoding="utf-8")
    judge = offline_judge(prompt_file=one)
    assert judge.messages("p", "r", {"domain": "terminal"})[0]["content"] == "Our own rubric."
    judge.close()
    per_domain = load_rubrics({"web": one})
    assert per_domain == {
        "generic": GENERIC_RUBRIC,
        "terminal": TERMINAL_RUBRIC,
        "web": "Our own rubric.",
    }
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        offline_judge(prompt_file=tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text(" \n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty.txt.*empty"):
        load_rubrics({"terminal": empty})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fallback": 1.5}, "fallback must lie in"),
        ({"fallback": -0.1}, "fallback must lie in"),
        ({"max_tokens": 0}, "max_tokens and max_concurrency"),
        ({"max_concurrency": 0}, "max_tokens and max_concurrency"),
    ],
)
def test_bad_judge_options(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        offline_judge(**options)


def test_unreachable_endpoint_is_named() -> None:
    url = dead_url()
    start = time.monotonic()
    with pytest.raises(JudgeUnavailableError, match=f"{url}.*unreachable"):
        LLMJudge("judge", base_url=url, retries=0, timeout=5)
    with pytest.raises(JudgeUnavailableError, match="unreachable"):  # no model: must ask
        LLMJudge(base_url=url, retries=0, check=False)
    with pytest.raises(JudgeUnavailableError, match=url):  # through the plugin manager
        plugins.get_reward("llm_judge", base_url=url, retries=0)
    judge = LLMJudge("judge", base_url=url, retries=0, check=False)
    with pytest.raises(JudgeUnavailableError, match=f"request to {url}.*'judge'"):
        judge(["a"], ["b"], [{}])
    assert judge([None], ["b"], [{}]) == [0.0]  # a malformed prediction needs no request
    assert judge.stats.num_requests == 0
    judge.close()
    assert time.monotonic() - start < 10
