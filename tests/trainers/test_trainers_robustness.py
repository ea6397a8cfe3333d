"""Training under careless use and attack (issue 22): huge observations, re-runs, resume."""

from __future__ import annotations

import os
import time

from agentworld.core.types import Observation, Step
from agentworld.trainers.loop import corpus_texts
from agentworld.trainers.tokenizer import MAX_RUN_CHARS, MAX_SAMPLE_CHARS, bounded_samples, train_tokenizer

LETTERS = bytes(range(ord("a"), ord("z") + 1)) * 10  # 260 entries, enough for a 256-byte table


def _letters(n: int) -> str:
    """``n`` random lowercase letters without whitespace: one pre-tokenised word."""
    return os.urandom(n).translate(LETTERS[:256]).decode()


def test_bounded_samples_cut_long_runs_and_keep_short_texts():
    short = "ls -la\nfoo  bar\n"
    assert list(bounded_samples([short])) == [short]
    text = "head " + _letters(5 * MAX_RUN_CHARS + 7) + " tail"
    pieces = list(bounded_samples([text]))
    assert "".join(pieces) == text and len(pieces) == 6
    assert max(len(w) for p in pieces for w in p.split()) <= MAX_RUN_CHARS
    assert sum(map(len, bounded_samples(["x" * (3 * MAX_SAMPLE_CHARS)]))) == MAX_SAMPLE_CHARS


def test_tokenizer_training_on_one_50mb_observation_is_bounded(corpus):
    # One 50 MB observation without whitespace used to keep the BPE trainer busy for
    # more than 7 minutes (issue 22, item 12).
    first = corpus[0]
    huge = Step(action=first.steps[0].action, observation=Observation(text=_letters(50_000_000)))
    episodes = [first.model_copy(update={"steps": [huge, *first.steps[1:]]}), *corpus[1:8]]
    t = time.perf_counter()
    tok = train_tokenizer(corpus_texts(episodes), 300)
    assert time.perf_counter() - t < 60
    sample = "echo hello\nhello\nuser@sandbox:~$ "
    assert tok.decode(tok(sample)["input_ids"]) == sample
