"""The agent's GRPO rollouts with the environments on Ray actors (issue 35, item 1): on a
local 2-CPU cluster started here, the tiny preset policy stays in this process and steps
environments held by Ray actors (the quiz of ``agent_envs.py``; simulated environments, each
actor with its own world-model engine). The trajectories equal the in-process ones; an actor
killed mid-rollout has its running episodes re-run once from reset and marked, a second death
is an error; an unreachable cluster is a one-line error before the model loads."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
import torch  # noqa: E402
from agent_envs import TASKS, LoggedSayWord  # noqa: E402
from agentworld.core.ray_collect import WorkerLostError  # noqa: E402
from agentworld.core.ray_envs import RayEnvironments  # noqa: E402
from agentworld.sim import SimEnvFactory  # noqa: E402
from agentworld.sim.backends.hf import HFWorldModel  # noqa: E402
from agentworld.trainers.agents.lm.rollout import AgentRollouts  # noqa: E402
from agentworld.trainers.agents.lm.trainer import train_lm_agent  # noqa: E402
from agentworld.trainers.models.specs import load_model  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

HERE = Path(__file__).parent
G, TURNS = 4, 3


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster of 2 CPUs whose workers import ``agent_envs``."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), *([before] if before else [])])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             _node_ip_address="127.0.0.1")
    try:
        yield
    finally:
        ray.shutdown()
        if before is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = before


@pytest.fixture(scope="module")
def policy(tok_dir):
    """The tiny preset policy (random weights, seed 0) and its tokenizer."""
    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    torch.manual_seed(0)
    model, _ = load_model("tiny-test", tok)
    return model.eval(), tok


def kill_hung(runs: Path, count: int) -> threading.Thread:
    """A thread that SIGKILLs the processes that write ``runs/hung-0`` .. ``hung-<count-1>``."""

    def watch() -> None:
        for k in range(count):
            path, deadline = runs / f"hung-{k}", time.monotonic() + 120
            while time.monotonic() < deadline and not path.exists():
                time.sleep(0.05)
            os.kill(int(path.read_text()), signal.SIGKILL)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def play(policy, envs) -> list:
    """One rollout of two groups of ``G`` (tasks t0, t1; sampled at temperature 1 with seeds)."""
    model, tok = policy
    wm = HFWorldModel(model, tok, engine_options={"num_blocks": 128})
    rollouts = AgentRollouts(wm.engine, tok, wm.stop_ids, envs, group_size=G, max_turns=TURNS,
                             max_action_tokens=4, max_seq_len=256, workers=4)
    return rollouts.run(TASKS[:2], [11, 12], list(range(2 * G * TURNS)), tag="ray")


def fields(t) -> tuple:
    """A trajectory's sampled tokens and what its environment answered (log-probabilities
    apart: compared with a tolerance)."""
    return (t.group, t.token_ids, t.action_mask, t.actions, t.rewards, t.status, t.success,
            t.parse_failures)


def test_an_unreachable_cluster_is_a_one_line_error_before_the_model_loads(tok_dir, tmp_path):
    if ray.is_initialized():
        pytest.skip("a Ray session runs in this process (connect would reuse it)")
    out = tmp_path / "never"
    options = {"model": "tiny-test", "tokenizer": str(tok_dir), "output_dir": str(out),
               "steps": 1, "tasks_per_step": 1, "group_size": 2, "console": False,
               "rollout_executor": "ray", "ray_address": "127.0.0.1:1"}
    with pytest.raises(ConnectionError) as caught:
        train_lm_agent(LoggedSayWord(tmp_path), TASKS, options)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("no Ray cluster at '127.0.0.1:1' (ConnectionRefusedError")
    assert message.endswith("or give no address for a local cluster")
    assert not out.exists() and not ray.is_initialized()
    with pytest.raises(ValueError, match="invalid LmAgentConfig: rollout_executor: Input should be 'threads' or 'ray'"):
        train_lm_agent(LoggedSayWord(tmp_path), TASKS, {**options, "rollout_executor": "dask"})


def test_rollouts_on_ray_actors_equal_in_process_after_an_actor_is_killed(
    cluster, policy, tmp_path
):
    (tmp_path / "here").mkdir()
    (tmp_path / "ray").mkdir()
    here_factory = LoggedSayWord(tmp_path / "here")
    here = play(policy, [here_factory() for _ in range(2 * G)])
    # The actor holding group t1 (environments 4-7) hangs at its episodes' second step, once.
    factory = LoggedSayWord(tmp_path / "ray", hang_task="t1", hang_turn=2, hangs=1)
    envs = RayEnvironments(factory, 2 * G, actors=2, workers=4)
    try:
        assert envs.num_actors == 2 and envs.per_actor == G
        watcher = kill_hung(factory.runs, 1)
        there = play(policy, envs)
        watcher.join()
    finally:
        envs.close()
    assert [fields(t) for t in there] == [fields(t) for t in here]
    for a, b in zip(there, here):  # the engine's batching moves a log-probability by ~1e-7
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)
    assert [t.num_turns for t in here] == [2] * G + [3] * G  # each task's own length
    assert [t.retried for t in there] == [0] * G + [1] * G
    assert [t.retried for t in here] == [0] * (2 * G)
    # Each step reached its environment once, except t1's: its first steps ran again on the
    # fresh actor (reset, then the recorded action), and so did the second steps that had
    # finished on the killed actor beside the hung one (at most G - 1).
    again = Counter(factory.steps()) - Counter(here_factory.steps())
    firsts = sorted(line for line in again.elements() if line.startswith("t1 12 1 "))
    seconds = [line for line in again.elements() if line.startswith("t1 12 2 ")]
    assert firsts == sorted(f"t1 12 1 {t.actions[0]!r}" for t in here[G:])
    assert len(firsts) + len(seconds) == again.total() and len(seconds) <= G - 1
    assert set(seconds) <= {f"t1 12 2 {t.actions[1]!r}" for t in here[G:]}
    assert set(factory.steps()) == set(here_factory.steps())


def test_a_second_death_of_an_episode_is_an_error(cluster, policy, tmp_path):
    factory = LoggedSayWord(tmp_path, hang_task="t1", hang_turn=2, hangs=2)
    envs = RayEnvironments(factory, 2 * G, actors=2, workers=4)
    try:
        watcher = kill_hung(tmp_path, 2)
        with pytest.raises(WorkerLostError, match=r"environment 4: its Ray actor died 2 times"):
            play(policy, envs)
        watcher.join()
    finally:
        envs.close()
    assert sorted(p.name for p in tmp_path.glob("hung-*")) == ["hung-0", "hung-1"]


def test_grpo_steps_on_simulated_envs_on_ray_actors_equal_in_process(
    cluster, tok_dir, tmp_path
):
    """A GRPO step against ``SimEnv`` on a tiny random world model: the actor loads its own
    engine (one actor: each costs an import of torch; several actors are the toy tests'); a
    random model's answers do not parse, so every episode ends after one turn
    (``malformed``), counted."""
    from chatml import chatml_tokenizer
    from tiny_lm import tiny_lm

    ckpt = tmp_path / "wm"
    tok = chatml_tokenizer(["You said: yes", "Say yes or no.", "<predicted_observation>"] * 8, 300)
    torch.manual_seed(1)
    tiny_lm("qwen3", len(tok), 512, pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id).save_pretrained(ckpt)
    tok.save_pretrained(ckpt)
    factory = SimEnvFactory(
        str(ckpt), load_options={"max_new_tokens": 8, "engine_options": {"num_blocks": 64}},
        env_options={"system_prompt": "You simulate a yes/no quiz.",
                     "initial_observation": "Say yes or no."},
    )
    runs = {}
    for executor in ("threads", "ray"):
        out = tmp_path / executor
        train_lm_agent(factory, TASKS, {
            "model": "tiny-test", "tokenizer": str(tok_dir), "output_dir": str(out),
            "steps": 1, "tasks_per_step": 2, "group_size": 2, "max_turns": 2,
            "max_action_tokens": 4, "max_seq_len": 256, "lr": 0.05, "beta": 0.01,
            "console": False, "num_threads": 1, "rollout_executor": executor,
            "ray_actors": 1, "env_workers": 2,
        })
        runs[executor] = [json.loads(line) for line in (out / "metrics.jsonl").read_text()
                          .splitlines()]
    timing = {"rollout_s", "update_s", "tokens_per_s", "elapsed_s"}
    for a, b in zip(runs["ray"], runs["threads"], strict=True):
        assert a.keys() == b.keys()
        for key in a.keys() - timing:  # floats within the engine's batching noise (~1e-7)
            assert a[key] == (pytest.approx(b[key], abs=1e-5) if isinstance(b[key], float)
                              else b[key]), key
    for r in runs["ray"]:
        assert r["episode_len"] == 1.0 and r["parse_failures"] == 4 and r["retried"] == 0
        assert r["truncated"] == 1.0 and r["action_tokens"] > 0 and r["return"] == 0.0
    assert [r["episodes"] for r in runs["ray"]] == [4]
