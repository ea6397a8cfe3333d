"""The ``agent`` trainer on simulated experience: batched ``SimVectorEnv`` episodes.

An exact world model of FrozenLake (the real dynamics behind the world-model interface,
``tests/exact_worlds.py``)
shows that a Q-learning agent trained only inside the simulator reaches the goal in the
real environment; a tiny random hf checkpoint shows that unparsed answers are counted and
end episodes without raising; ``mix`` interleaves real and simulated episodes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chatml import chatml_tokenizer
from exact_worlds import ExactFrozenLake
from tiny_lm import tiny_lm

from agentworld.core.plugins import UnknownPluginError, get_domain
from agentworld.trainers.agents.envs import SimRunner
from agentworld.trainers.agents.evaluate import evaluate_agent
from agentworld.trainers.agents.qlearning import EpsilonSchedule, QLearningAgent
from agentworld.trainers.agents.trainer import AgentTrainer


def test_agent_trained_only_in_exact_simulator_succeeds_in_real_env() -> None:
    domain = get_domain("frozenlake-4x4")
    wm = ExactFrozenLake()
    agent = QLearningAgent(
        list(domain.actions),
        alpha=0.5,
        gamma=0.95,
        epsilon=EpsilonSchedule(1.0, 0.05, 200),
        ignore_lines=("reward:",),
    )
    runner = SimRunner(wm, domain, num_envs=16, seed=0, max_steps=100)
    try:
        results = runner.run(agent, 300)
    finally:
        runner.close()
    assert len(results) >= 300 and agent.num_episodes == len(results)
    # Steps of the episodes still running when ``run`` returned are counted too.
    assert runner.parse_failures == 0 and runner.num_steps >= sum(r.length for r in results)
    # Batched: one predict call per vector step, 16 sub-environments each.
    assert wm.calls < runner.num_steps / 8
    assert {r.outcome.value for r in results} <= {"terminated", "truncated"}
    assert sum(r.ret for r in results) > 0  # the footer's rewards reached the agent
    real = evaluate_agent(agent, domain, episodes=10, seed=5)
    assert real["success_rate"] == 1.0 and real["mean_length"] == 6.0


def _tiny_checkpoint(path: Path, card: dict | None) -> Path:
    """A random tiny Qwen3 (``tests/tiny_lm.py``) with a ChatML BPE tokenizer, plus an optional card."""
    corpus = ["AFFF\nFHFH\nFFFH\nHFFG\nreward: 0", "left down right up", "<predicted_observation>"]
    tokenizer = chatml_tokenizer(corpus * 4, 300)
    model = tiny_lm(
        "qwen3",
        len(tokenizer),
        512,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    if card is not None:
        (path / "agentworld.json").write_text(json.dumps(card))
    return path


@pytest.fixture(scope="module")
def random_ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    card = {"domain": "frozenlake-4x4", "rewards": True, "history_window": 1}
    return _tiny_checkpoint(tmp_path_factory.mktemp("wm"), card)


def _metrics(out: str) -> dict:
    return json.loads((Path(out) / "metrics.json").read_text())


def test_sim_checkpoint_random_model_counts_parse_failures(random_ckpt: Path, tmp_path) -> None:
    options = {
        "env": f"sim:{random_ckpt}",
        "output_dir": str(tmp_path / "sim"),
        "episodes": 40,
        "num_envs": 8,
        "max_new_tokens": 6,
        "eval_episodes": 5,
        "progress": False,
        "on_parse_error": "retry",
        "max_retries": 1,
    }
    m = _metrics(AgentTrainer().train([], options))
    assert m["domain"] == "frozenlake-4x4"  # read from the checkpoint's card
    assert m["real_steps"] == 0 and m["real_episodes"] == 0
    assert m["sim_steps"] > 0 and m["sim_episodes"] >= 40
    # A random model writes no observation block: every simulated step ends its episode.
    assert m["parse_failures"] == m["sim_steps"] == m["sim_episodes"]
    assert m["outcomes"] == {"malformed": m["sim_episodes"]}
    assert m["sim_unparsed_samples"] == 2 * m["sim_steps"]  # each step re-sampled once
    assert m["q_states"] == 0  # nothing learned from unparsed answers
    assert m["eval"]["episodes"] == 5 and m["random_baseline"]["episodes"] == 5
    assert QLearningAgent.load(Path(tmp_path / "sim" / "agent.json")).num_updates == 0


def test_mix_interleaves_real_and_simulated_episodes(random_ckpt: Path, tmp_path) -> None:
    options = {
        "env": f"sim:{random_ckpt}",
        "mix": 0.5,
        "output_dir": str(tmp_path / "mix"),
        "episodes": 32,
        "num_envs": 8,
        "max_new_tokens": 6,
        "eval_episodes": 0,
        "progress": False,
    }
    m = _metrics(AgentTrainer().train([], options))
    assert m["real_episodes"] == 16 and m["real_steps"] > 16  # a random walk takes > 1 step
    assert m["sim_episodes"] >= 16 and m["sim_steps"] == m["parse_failures"]
    assert m["sim_unparsed_samples"] == m["parse_failures"]  # truncate: no re-sampling
    assert m["sources"].startswith("r" + "s" * 8 + "r" * 8)  # chunks of num_envs, alternating
    assert m["q_states"] > 0 and "eval" not in m


def test_bad_input_fails_before_training(random_ckpt: Path, tmp_path) -> None:
    trainer, out = AgentTrainer(), str(tmp_path / "never")
    with pytest.raises(ValueError, match="not a model checkpoint"):
        trainer.train([], {"env": f"sim:{tmp_path}", "output_dir": out})
    with pytest.raises(ValueError, match="no such checkpoint"):
        trainer.train([], {"env": f"sim:{tmp_path / 'missing'}", "output_dir": out})
    bare = _tiny_checkpoint(tmp_path / "bare", card=None)
    with pytest.raises(ValueError, match="records no domain"):
        trainer.train([], {"env": f"sim:{bare}", "output_dir": out})
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        trainer.train([], {"env": f"sim:{random_ckpt}", "mix": 1.5, "output_dir": out})
    with pytest.raises(ValueError, match="needs --env sim"):
        trainer.train([], {"env": "real:frozenlake-4x4", "mix": 0.5, "output_dir": out})
    with pytest.raises(ValueError, match="real:DOMAIN or sim:CHECKPOINT"):
        trainer.train([], {"env": "frozenlake-4x4", "output_dir": out})
    with pytest.raises(UnknownPluginError, match="frozenlake-9x9"):
        trainer.train([], {"env": "real:frozenlake-9x9", "output_dir": out})
    with pytest.raises(ValueError, match="alphaa"):
        trainer.train([], {"env": "real:frozenlake-4x4", "alphaa": 0.1, "output_dir": out})
    with pytest.raises(ValueError, match="no finite action list"):
        trainer.train([], {"env": "real:terminal", "output_dir": out})
    # policy="lm" goes to agent_lm with the dispatch keys removed: only "bogus" is refused.
    lm = {"policy": "lm", "env": "real:frozenlake-4x4", "num_tasks": 2, "output_dir": out}
    with pytest.raises(ValueError, match=r"invalid LmAgentConfig: unknown option 'bogus'; valid options"):
        trainer.train([], {**lm, "bogus": 1})
    with pytest.raises(ValueError, match="supported for policy='q-learning'"):
        trainer.train([], {**lm, "mix": 0.5})
    assert not Path(out).exists()


def test_lm_policy_on_a_sim_checkpoint_steps_simenvs_of_a_picklable_factory(
    random_ckpt: Path, tok_dir: Path, tmp_path
) -> None:
    """``policy="lm"`` with ``env = "sim:CKPT"``: the environments come from a
    ``SimEnvFactory`` (what ``rollout_executor = "ray"`` sends to the actors); the random
    world model's answers do not parse, so each episode ends after one turn."""
    out = tmp_path / "lm-sim"
    options = {"policy": "lm", "env": f"sim:{random_ckpt}", "model": "tiny-test",
               "tokenizer": str(tok_dir), "output_dir": str(out), "num_tasks": 2, "steps": 1,
               "tasks_per_step": 1, "group_size": 2, "max_action_tokens": 4,
               "max_seq_len": 256, "sim_max_new_tokens": 6, "beta": 0.0, "console": False}
    AgentTrainer().train([], options)
    [record] = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert record["episodes"] == 2 and record["episode_len"] == 1.0
    assert record["parse_failures"] == 2 and record["truncated"] == 1.0 and record["retried"] == 0
