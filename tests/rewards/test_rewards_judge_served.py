"""The LLM judge against this project's OpenAI-compatible server on loopback, serving real tiny
Qwen3 checkpoints: a random one (answers without scores) and one trained to answer fixed
scores (parsed into the reward), alone and inside the hybrid."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from agentworld.core.types import Action, Observation
from agentworld.rewards.hybrid import Hybrid
from agentworld.rewards.judge import JudgeParseError, JudgeUnavailableError, LLMJudge
from agentworld.rewards.verdict import VerdictStatus, parse_scores
from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.server import HFChatModel, serve_in_thread
from judge_models import CUSTOM_RUBRIC, JUDGE_ANSWER, JUDGE_VALUE

pytestmark = pytest.mark.slow  # trains and serves a tiny model (about 15 s in all)

PROMPT = "user@sandbox:~$ "
CASES = [  # (prediction, reference, context): identical, partial overlap, empty
    (f"notes.txt\n{PROMPT}", f"notes.txt\n{PROMPT}", {"domain": "terminal", "action": "ls"}),
    (f"hello world\n{PROMPT}", f"hello\n{PROMPT}", {"domain": "terminal", "action": "cat a"}),
    ("", f"docs\n{PROMPT}", {"domain": "web"}),
]


@pytest.fixture(scope="module")
def random_server(random_judge_dir: Path):
    """A server for the random tiny judge."""
    chat = HFChatModel(HFBackend().load(str(random_judge_dir)))
    with serve_in_thread(chat, "judge", max_wait_s=0.05) as server:
        yield server


@pytest.fixture(scope="module")
def trained_server(trained_judge_dir: Path):
    """A server for the tiny judge trained to answer :data:`JUDGE_ANSWER`."""
    chat = HFChatModel(HFBackend().load(str(trained_judge_dir)))
    with serve_in_thread(chat, "judge", max_wait_s=0.2) as server:
        yield server


def columns(cases: list[tuple]) -> tuple[list, list, list]:
    return [c[0] for c in cases], [c[1] for c in cases], [c[2] for c in cases]


def test_random_judge_answers_raise_or_fall_back(random_server, caplog) -> None:
    preds, refs, ctxs = columns(CASES)
    strict = LLMJudge(base_url=random_server.base_url, max_tokens=16)
    assert strict.model == "judge"  # the endpoint's first (only) model
    with pytest.raises(JudgeParseError, match=r"3 of 3 answers from model 'judge'.*fallback="):
        strict(preds, refs, ctxs)
    assert (strict.stats.num_requests, strict.stats.num_unparseable) == (3, 3)
    assert strict.stats.num_parsed == strict.stats.num_fallbacks == 0
    verdicts = strict.judge(preds, refs, ctxs)
    assert all(v.status is VerdictStatus.UNPARSEABLE and v.answer for v in verdicts)
    assert all(parse_scores(v.answer) is None for v in verdicts)  # really no scores written

    lenient = LLMJudge("judge", base_url=random_server.base_url, max_tokens=16, fallback=0.5)
    with caplog.at_level(logging.WARNING, logger="agentworld.rewards.judge"):
        scores = lenient([*preds, None], [*refs, "x"], [*ctxs, {}])
    assert scores == [0.5, 0.5, 0.5, 0.0]  # the malformed prediction still scores 0
    assert lenient.stats.num_fallbacks == lenient.stats.num_unparseable == 3
    assert lenient.stats.num_requests == 3
    assert "3 of 4 answers had no parseable scores; scored 0.5 (fallback)" in caplog.text

    too_long = ["word " * 1200]  # more tokens than the 1024-token context: HTTP 400
    assert lenient(too_long, ["x"], [{}]) == [0.5]
    assert lenient.stats.num_refused == 1 and lenient.stats.num_fallbacks == 4
    with pytest.raises(JudgeParseError, match="refused.*maximum context length is 1024"):
        strict(too_long, ["x"], [{}])
    strict.close()
    lenient.close()


def test_unserved_model_is_named(random_server) -> None:
    with pytest.raises(JudgeUnavailableError, match=r"'gpt-judge' is not served.*serves: judge"):
        LLMJudge("gpt-judge", base_url=random_server.base_url)


def test_trained_judge_scores_are_parsed(trained_server) -> None:
    preds, refs, ctxs = columns(CASES)
    judge = LLMJudge("judge", base_url=trained_server.base_url, max_tokens=40, max_concurrency=4)
    verdicts = judge.judge([*preds, None], [*refs, "x"], [*ctxs, {}])
    assert verdicts[-1] is None
    assert [v.answer for v in verdicts[:-1]] == [JUDGE_ANSWER] * 3  # greedy, really generated
    assert all(v.scores == parse_scores(JUDGE_ANSWER) for v in verdicts[:-1])
    assert verdicts[0].percent == {
        "format": 100.0,
        "factuality": 75.0,
        "consistency": 75.0,
        "realism": 50.0,
        "quality": 75.0,
    }
    batches_before = len(trained_server.app.state.batcher.batch_sizes)
    assert judge([*preds, None], [*refs, "x"], [*ctxs, {}]) == [JUDGE_VALUE] * 3 + [0.0]
    new_batches = trained_server.app.state.batcher.batch_sizes[batches_before:]
    assert sum(new_batches) == 3 and max(new_batches) > 1  # concurrent requests were gathered
    assert (judge.stats.num_requests, judge.stats.num_parsed, judge.stats.num_fallbacks) == (
        6,
        6,
        0,
    )
    judge.close()


def test_trained_judge_with_a_prompt_file(trained_server, tmp_path: Path) -> None:
    rubric = tmp_path / "rubric.txt"
    rubric.write_text(CUSTOM_RUBRIC, encoding="utf-8")
    judge = LLMJudge("judge", base_url=trained_server.base_url, prompt_file=rubric, max_tokens=40)
    preds, refs, ctxs = columns(CASES[:2])
    assert judge.messages(preds[0], refs[0], ctxs[0])[0]["content"] == CUSTOM_RUBRIC
    assert judge(preds, refs, ctxs) == [JUDGE_VALUE] * 2
    judge.close()


class ListingDomain:
    """A terminal-like domain whose ``pwd`` and ``cd`` results are deterministic."""

    name, version = "listing", "1"

    def score(self, predicted: str, reference: Observation) -> float:
        return 1.0 if predicted == reference.text else 0.0

    def action_type(self, action: Action) -> str:
        return action.text.split()[0]

    def is_deterministic(self, action: Action, reference: Observation) -> bool:
        assert isinstance(reference, Observation)
        return self.action_type(action) in {"pwd", "cd"}


def test_hybrid_runs_the_judge_on_nondeterministic_content_only(trained_server) -> None:
    domain = ListingDomain()
    hybrid = Hybrid(
        weights={"exact_match": 1.0, "llm_judge": 3.0},
        components={
            "llm_judge": {"model": "judge", "base_url": trained_server.base_url, "max_tokens": 40}
        },
    )
    preds = [f"/home/agent\n{PROMPT}", f"hello world\n{PROMPT}", None, f"notes\n{PROMPT}"]
    refs = [f"/tmp\n{PROMPT}", f"hello\n{PROMPT}", f"hi\n{PROMPT}", f"notes\n{PROMPT}"]
    ctxs = [
        {"domain": domain, "action": "pwd"},  # deterministic: exact match alone
        {"domain": domain, "action": "cat a"},
        {"domain": domain, "action": "cat b"},
        {"domain": domain, "action": Action(text="ls")},
    ]
    result = hybrid.evaluate(preds, refs, ctxs)
    assert result.deterministic == [True, False, False, False]
    assert result.components == {
        "exact_match": [0.0, 0.0, 0.0, 1.0],
        "llm_judge": [None, JUDGE_VALUE, 0.0, JUDGE_VALUE],
    }
    assert result.scores == [0.0, 0.25 * 0 + 0.75 * JUDGE_VALUE, 0.0, 0.25 + 0.75 * JUDGE_VALUE]
    judge = hybrid.rewards["llm_judge"]
    assert judge.stats.num_requests == 2  # neither the deterministic nor the malformed one
    judge.close()
