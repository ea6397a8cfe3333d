"""The realistic splits end to end on a tiny budget: the hand-written evaluation set and whole
real sources held out of training, collected, never trained on, and reported by eval."""

import json

import pytest
from rich.console import Console

from agentworld.app.config import ConfigError, parse_config
from agentworld.app.pipeline import run_pipeline
from agentworld.core.io import read_episodes
from sandboxes import needs_sandbox

PIPELINE = """
[run]
dir = "{dir}"
seed = 1
domain = "terminal"

[collect]
episodes = 10
policies = {{ scripted = 0.3, random = 0.2, real = 0.5 }}
workers = 2
eval_sets = ["handwritten"]
realistic_sources = {sources}

[cpt]
trainer = "cpt"
model = "tiny-test"
tokenizer = "train"
vocab_size = 800
max_steps = 2
batch_size = 2
max_seq_len = 256

[sft]
trainer = "sft"
max_steps = 2
batch_size = 2
max_seq_len = 1024

[eval]
max_transitions = 6
ood_max_transitions = 0
realistic_max_transitions = 5
batch_size = 8
max_new_tokens = 16
"""


@needs_sandbox
def test_eval_reports_the_handwritten_and_realistic_splits(tmp_path):
    from agentworld.domains.terminal.real_policy import sources

    held = [s for s in sources() if s != "info:coreutils"]  # every source but one
    run_dir = tmp_path / "run"
    config = parse_config(PIPELINE.format(dir=run_dir, sources=json.dumps(held)))
    console = Console(file=open(tmp_path / "console.txt", "w"), width=160)
    run_pipeline(config, console)

    episodes = run_dir / "episodes"
    train = read_episodes(str(episodes / "train.jsonl"))
    heldout = read_episodes(str(episodes / "heldout.jsonl"))
    realistic = read_episodes(str(episodes / "realistic.jsonl"))
    handwritten = read_episodes(str(episodes / "handwritten.jsonl"))
    assert len(train) + len(heldout) + len(realistic) == 10 and realistic
    assert all(e.task.kind in held for e in realistic)
    # no held-out source and no hand-written session reaches a training split
    assert not any(e.task.kind in held for e in train + heldout)
    assert {e.metadata["policy"] for e in handwritten} == {"handwritten"}
    assert "handwritten" not in {e.metadata["policy"] for e in train + heldout}
    assert len(handwritten) == len({e.task.id for e in handwritten}) >= 20

    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["splits"]["handwritten"]["transitions"] == 5
    assert metrics["splits"]["realistic"]["transitions"] == min(
        5, sum(len(e.steps) for e in realistic))
    for model in ("model", "empty", "copy-previous"):
        assert {"in-distribution", "realistic", "handwritten"} <= set(metrics["by_split"][model])
    # the empty baseline on the hand-written split is right exactly where nothing was printed
    pairs = [(prev.text, step.observation.text) for e in handwritten
             for prev, step in zip(e.observations(), e.steps)][:5]
    from agentworld.domains.terminal.domain import TerminalDomain

    expected = sum(TerminalDomain().empty_observation(p) == r for p, r in pairs) / 5
    got = metrics["by_split"]["empty"]["handwritten"]["exact_match"]["mean"]
    assert abs(got - expected) < 1e-9
    facts = json.loads((run_dir / "run.json").read_text())["facts"]
    assert facts["collect"]["eval_sets"]["handwritten"]["episodes"] == len(handwritten)
    assert facts["collect"]["realistic_episodes"] == len(realistic)
    assert facts["eval"]["handwritten_transitions"] == 5
    report = (run_dir / "report.md").read_text()
    assert "| handwritten |" in report and "| realistic |" in report


def test_eval_sets_must_be_evaluation_sets(tmp_path):
    text = PIPELINE.format(dir=tmp_path, sources="[]").replace('["handwritten"]', '["random"]')
    config = parse_config(text.split("[cpt]")[0])
    with pytest.raises(ValueError, match="eval_sets: 'random' is not an evaluation set of domain "
                                         "'terminal'; valid: \\['handwritten', 'long'\\]"):
        run_pipeline(config, Console(file=open(tmp_path / "c.txt", "w")))
    with pytest.raises(ConfigError, match="realistic_max_transitions"):
        parse_config("[eval]\nrealistic_max_transitions = -1\n")
