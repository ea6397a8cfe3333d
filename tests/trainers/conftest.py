"""Trainer test fixtures: a tiny synthetic terminal corpus and a tokenizer trained on it; the
agent quiz's tokenizer."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from agentworld.core.types import Action, Episode, Observation, Step, Task

PROMPT = "user@sandbox:~$ "
SYSTEM = "You simulate a bash terminal in a sandbox. Reply with the next terminal output."
WORDS = ["hi", "hello", "world", "foo", "bar", "data", "notes", "42"]


def _step(rng: random.Random, files: list[str]) -> Step:
    kind = rng.choice(["echo", "ls", "touch", "pwd"])
    if kind == "echo":
        word = rng.choice(WORDS)
        cmd, out = f"echo {word}", f"{word}\n"
    elif kind == "touch":
        name = f"{rng.choice(WORDS)}.txt"
        files.append(name)
        cmd, out = f"touch {name}", ""
    elif kind == "ls":
        cmd, out = "ls", ("  ".join(sorted(set(files))) + "\n") if files else ""
    else:
        cmd, out = "pwd", "/home/user\n"
    return Step(action=Action(text=cmd), observation=Observation(text=out + PROMPT))


def make_episodes(n: int, seed: int = 0, max_steps: int = 6) -> list[Episode]:
    """``n`` episodes of 2..``max_steps`` shell steps, deterministic in ``seed``."""
    rng = random.Random(seed)
    episodes = []
    for i in range(n):
        files: list[str] = []
        steps = [_step(rng, files) for _ in range(rng.randint(2, max_steps))]
        task = Task(id=f"t{i}", domain="terminal", instruction="Explore the home directory.")
        episodes.append(
            Episode(
                id=f"ep{i}",
                domain="terminal",
                task=task,
                system_prompt=SYSTEM,
                initial_observation=Observation(text=PROMPT),
                steps=steps,
            )
        )
    return episodes


@pytest.fixture(scope="session")
def corpus() -> list[Episode]:
    """24 short synthetic terminal episodes."""
    return make_episodes(24)


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory, corpus: list[Episode]) -> Path:
    """A 400-token BPE tokenizer trained on ``corpus``, saved to a directory."""
    from agentworld.trainers.training.base import corpus_texts
    from agentworld.trainers.models.tokenizer import train_tokenizer

    out = tmp_path_factory.mktemp("tok")
    train_tokenizer(corpus_texts(corpus), 400, out)
    return out


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    """pytest-xdist runs one worker per core: keep torch to one thread each."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 300-token ChatML tokenizer of the agent quiz (``agent_envs.py``), in which the
    rewarded word is one token."""
    from agent_envs import CORPUS, WORD
    from chatml import chatml_tokenizer

    tok = chatml_tokenizer(CORPUS * 50, 300)
    assert len(tok(WORD, add_special_tokens=False)["input_ids"]) == 1
    out = tmp_path_factory.mktemp("agent-tok")
    tok.save_pretrained(str(out))
    return out
