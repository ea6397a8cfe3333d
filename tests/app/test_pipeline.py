"""The main job end to end on a tiny budget: collect -> cpt -> sft -> eval -> simulate."""

import json
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from agentworld.app.cli import app
from agentworld.app.config import parse_config
from agentworld.core.io import read_episodes
from agentworld.app.pipeline import run_pipeline
from agentworld.core.types import Action
from agentworld.domains.terminal.domain import TerminalDomain

PIPELINE = """
[run]
dir = "{dir}"
seed = 3
domain = "terminal"

[collect]
episodes = 12
workers = 2
{ood}
[cpt]
trainer = "cpt"
model = "tiny-test"
tokenizer = "train"
vocab_size = 800
max_steps = 4
batch_size = 2
max_seq_len = 256

[sft]
trainer = "sft"
max_steps = 4
batch_size = 2
max_seq_len = 1024

[eval]
max_transitions = 12
batch_size = 8
max_new_tokens = 24
num_beams = 2

[simulate]
episodes = 1
max_steps = 2
max_new_tokens = 24
"""


def test_pipeline_collect_to_simulate(tmp_path):
    run_dir = tmp_path / "run"
    ood = 'ood_commands = ["pwd"]\n'
    config = parse_config(PIPELINE.format(dir=run_dir, ood=ood).replace(
        "num_beams = 2", "num_beams = 2\nood_max_transitions = 5"))
    console = Console(file=open(tmp_path / "console.txt", "w"), width=160)
    state = run_pipeline(config, console)

    train = read_episodes(str(run_dir / "episodes/train.jsonl"))
    heldout = read_episodes(str(run_dir / "episodes/heldout.jsonl"))
    ood = read_episodes(str(run_dir / "episodes/ood.jsonl"))
    assert len(train) + len(heldout) + len(ood) == 12 and heldout and ood
    # the held-out command family never reaches a training split
    assert all("pwd" not in domain_words(s.action.text) for e in train + heldout for s in e.steps)
    assert all(any("pwd" in domain_words(s.action.text) for s in e.steps) for e in ood)
    assert {e.metadata["policy"] for e in train + heldout} <= {"scripted", "random"}
    assert state.checkpoint == str(run_dir / "checkpoints/sft")
    assert (run_dir / "checkpoints/sft/config.json").exists()
    assert json.loads((run_dir / "checkpoints/sft/config.json").read_text())["model_type"] == "qwen3"

    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert set(metrics["overall"]) == {"model", "copy-previous", "empty", "nearest"}
    assert run_dir / "episodes/train.jsonl" == Path(metrics["extra"]["facts"]["eval"]["retrieval_index"])
    assert "## Does the trained model beat the nearest real transition?" in (run_dir / "report.md").read_text()
    n = min(12, sum(len(e.steps) for e in heldout))
    assert metrics["num_transitions"] == n
    # the empty baseline (no output, same prompt) is exactly right where the real command printed nothing
    domain = TerminalDomain()
    pairs = [(obs.text, step.observation.text) for e in heldout
             for obs, step in zip(e.observations(), e.steps)][:n]
    expected = sum(domain.empty_observation(prev) == real for prev, real in pairs) / n
    assert abs(metrics["overall"]["empty"]["exact_match"]["mean"] - expected) < 1e-9
    copied = sum(prev == real for prev, real in pairs) / n
    assert abs(metrics["overall"]["copy-previous"]["exact_match"]["mean"] - copied) < 1e-9
    report = (run_dir / "report.md").read_text()
    assert "copy-previous" in report and "exact_match" in report
    ood_n = min(5, sum(len(e.steps) for e in ood))
    assert metrics["splits"]["out-of-distribution"]["transitions"] == ood_n
    assert set(metrics["by_split"]["empty"]) == {"in-distribution", "out-of-distribution"}
    assert "## In distribution vs out of distribution (exact_match)" in report
    # written again at the end: every stage's timing, as in run.json
    assert set(metrics["extra"]["timings_s"]) == {"collect", "cpt", "sft", "eval", "simulate", "total"}
    assert "simulate" in report.split("timings_s")[1]
    assert (run_dir / "fidelity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    replay = (run_dir / "replay.md").read_text()
    assert replay.count("Real:") >= 1 and "Simulated:" in replay
    run = json.loads((run_dir / "run.json").read_text())
    assert run["stages"] == ["collect", "cpt", "sft", "eval", "simulate"]
    assert run["facts"]["collect"]["episodes"] == 12
    assert run["facts"]["eval"]["decoding"] == "beam search, 2 beams"
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(run_dir / "checkpoints/sft")
    assert run["facts"]["sft"]["parameters"] == sum(p.numel() for p in model.parameters())


def domain_words(text: str) -> set[str]:
    return TerminalDomain().command_families(Action(text=text))


def test_cli_run_pipeline_file_and_eval(tmp_path):
    run_dir = tmp_path / "r"
    pipeline = tmp_path / "p.toml"
    text = PIPELINE.format(dir=run_dir, ood="").split("[eval]")[0]
    pipeline.write_text(text)
    cmd = [sys.executable, "-c", "from agentworld.app.cli import main; main()"]
    done = subprocess.run([*cmd, "run", str(pipeline)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (run_dir / "checkpoints/sft/model.safetensors").exists()
    # eval, simulate and an eval-only pipeline in this process (the CLI of `run` above, in a
    # process of its own, already showed the entry point; each import of torch costs ~10 s here)
    runner = CliRunner()
    out = tmp_path / "eval"
    done = runner.invoke(app, ["eval", "--data", str(run_dir / "episodes/heldout.jsonl"),
                               "--model", str(run_dir / "checkpoints/sft"), "--out", str(out),
                               "--max-transitions", "5", "--max-new-tokens", "16",
                               "--num-beams", "2", "--train-data",
                               str(run_dir / "episodes/train.jsonl")])
    assert done.exit_code == 0, done.output
    assert json.loads((out / "metrics.json").read_text())["num_transitions"] == 5
    assert json.loads((out / "metrics.json").read_text())["models"] == [
        "model", "copy-previous", "empty", "nearest"]
    assert "decoding beam search, 2 beams" in (out / "report.md").read_text()
    # interactive simulation: actions on stdin, simulated observations on stdout
    done = runner.invoke(app, ["simulate", "--model", str(run_dir / "checkpoints/sft"),
                               "--max-new-tokens", "16"], input="ls\npwd\n")
    assert done.exit_code == 0, done.output
    assert "task:" in done.stdout and "user@sandbox:~$ " in done.stdout
    assert "user@sandbox:~$ ls\n" in done.stdout  # piped actions are echoed after the prompt
    # an eval-only pipeline over existing files
    eval_only = tmp_path / "eval.toml"
    eval_only.write_text(f'[run]\ndir = "{tmp_path / "e2"}"\nheldout_data = "{run_dir / "episodes/heldout.jsonl"}"\n'
                         f'[eval]\nmodel = "{run_dir / "checkpoints/sft"}"\nmax_transitions = 4\nmax_new_tokens = 8\n')
    done = runner.invoke(app, ["run", str(eval_only)])
    assert done.exit_code == 0, done.output
    metrics = json.loads((tmp_path / "e2" / "metrics.json").read_text())
    assert metrics["num_transitions"] == 4 and "format_validity" in metrics["metrics"]
    assert metrics["models"] == ["model", "copy-previous", "empty"]  # no training data: no nearest
    assert "nearest: no training episodes" in metrics["extra"]["facts"]["eval"]["baselines_left_out"]
    assert "replay.md" not in done.stdout  # only files that exist are listed
    # bad input gets a one-line error, not a traceback
    done = subprocess.run([*cmd, "collect", "--episodes", "1", "--policy", "greedy=1", "--out",
                           str(tmp_path / "x.jsonl")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no policy ['greedy'] here; valid: ['handwritten'," in done.stderr
    done = subprocess.run([*cmd, "eval", "--data", str(run_dir / "episodes/heldout.jsonl"), "--model",
                           str(tmp_path / "no" / "such"), "--out", str(tmp_path / "e3")],
                          capture_output=True, text=True, timeout=120)
    said = " ".join((done.stdout + done.stderr).replace("│", " ").split())  # a usage error box
    assert done.returncode == 2 and "does not exist" in said and "Traceback" not in done.stderr
