"""Multi-turn GRPO of a language-model agent: a real tiny Qwen3 policy, the real paged
engine, a toy environment whose reward is 1 per turn whose action says a given word
(``agent_envs.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from agent_envs import TASKS, SayWordEnv
from agentworld.sim.backends.hf import HFWorldModel
from agentworld.trainers.agents.lm.trainer import LmAgentConfig, train_lm_agent
from agentworld.trainers.agents.lm.data import (
    EpisodeStatus,
    episode_batch,
    first_action,
    pick_tasks,
)
from agentworld.trainers.agents.lm.rollout import AgentRollouts
from agentworld.trainers.models.specs import load_model
from agentworld.trainers.training.grpo_loop import answer_logprobs
from pydantic import ValidationError
from transformers import AutoModelForCausalLM, AutoTokenizer


def options(tok_dir, out, **extra) -> dict:
    return {
        "model": "tiny-test",
        "tokenizer": str(tok_dir),
        "output_dir": str(out),
        "steps": 8,
        "tasks_per_step": 4,
        "group_size": 8,
        "max_turns": 3,
        "max_action_tokens": 4,
        "max_seq_len": 256,
        "lr": 0.05,
        "beta": 0.01,
        "seed": 0,
        "console": False,
        "num_threads": 1,
    } | extra


def metrics(out) -> list[dict]:
    return [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def run(tmp_path_factory, tok_dir) -> Path:
    out = tmp_path_factory.mktemp("agent") / "run"
    train_lm_agent(SayWordEnv, TASKS, options(tok_dir, out))
    return out


@pytest.mark.slow
def test_grpo_raises_the_mean_return(run):
    records = metrics(run)
    assert [r["step"] for r in records] == list(range(1, 9))
    returns = [r["return"] for r in records]
    # A random policy says "yes" in ~1 of 60 turns; GRPO must make it say it most turns.
    assert returns[0] < 0.3, returns
    assert min(returns[-2:]) > returns[0] + 1.0, returns
    assert records[-1]["success_rate"] > records[0]["success_rate"]
    for r in records:
        assert 2 <= r["episode_len"] <= 3  # each task's own turn count: terminated, not cut
        assert r["truncated"] == 0.0 and r["parse_failures"] == 0
        assert 0 < r["action_tokens"] <= 32 * 3 * 4
        assert r["prefix_hit_rate"] > 0.3  # forked groups + pinned episodes
    # Step 1 samples from the starting weights: the training forward reproduces the engine's
    # log-probabilities on every action token of every multi-turn transcript.
    assert records[0]["kl"] == pytest.approx(0.0, abs=1e-6)
    assert records[0]["ratio"] == pytest.approx(1.0, abs=1e-4)
    assert records[-1]["kl"] > 0
    assert records[-1]["episodes"] == 8 * 32


@pytest.mark.slow
def test_checkpoint_reloads_and_differs_from_the_start(run, tok_dir):
    trained = AutoModelForCausalLM.from_pretrained(str(run), dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    torch.manual_seed(0)
    start, _ = load_model("tiny-test", tok)
    ids = torch.tensor([tok("Say yes or no.", add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        assert not torch.allclose(trained(ids).logits, start(ids).logits, atol=1e-3)
    state = json.loads((run / "trainer_state" / "state.json").read_text())
    assert state["step"] == 8 and state["stage"] == "agent-lm"


def test_loss_mask_covers_exactly_the_action_tokens(tok_dir):
    """Each transcript is the chat template's rendering of (system, observation, action, ...)
    with the sampled action tokens in place; exactly those tokens (and their stop token)
    carry loss, and the training forward reads the engine's log-probabilities there."""
    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    torch.manual_seed(0)
    model, _ = load_model("tiny-test", tok)
    model.eval()
    wm = HFWorldModel(model, tok, engine_options={"num_blocks": 128})
    envs = [SayWordEnv() for _ in range(8)]
    rollouts = AgentRollouts(
        wm.engine,
        tok,
        wm.stop_ids,
        envs,
        group_size=4,
        max_turns=3,
        max_action_tokens=6,
        max_seq_len=256,
    )
    trajectories = rollouts.run(TASKS[:2], [11, 12], list(range(8 * 3)), tag="mask")
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    for k, t in enumerate(trajectories):
        task = TASKS[k // 4]
        assert t.status is EpisodeStatus.TERMINATED and t.num_turns == task.check["turns"]
        # Contiguous runs of masked tokens, one per turn.
        runs, start = [], None
        for j, m in enumerate(t.action_mask + [0]):
            if m and start is None:
                start = j
            elif not m and start is not None:
                runs.append(t.token_ids[start:j])
                start = None
        assert len(runs) == t.num_turns
        messages = [
            {"role": "system", "content": f"{task.instruction}\n\n{rollouts.agent_prompt}"},
            {"role": "user", "content": f"Turn 1 of {task.check['turns']}. Say yes or no."},
        ]
        for turn, (ids, action) in enumerate(zip(runs, t.actions)):
            assert 1 <= len(ids) <= 6
            content = ids[:-1] if ids[-1] == im_end else ids
            text = tok.decode(content)
            # The env got the first line (special tokens skipped), as an Action.
            assert action == first_action(tok.decode(content, skip_special_tokens=True))
            assert envs[k].received[turn].text == action
            messages.append({"role": "assistant", "content": text})
            said = f"You said: {action[:20]}\nTurn {turn + 2}. Say yes or no."
            messages.append({"role": "user", "content": said})
        rendered = tok.apply_chat_template(messages[:-1], tokenize=False)
        transcript = tok.decode(t.token_ids)
        # The transcript ends right after the last action's own tokens.
        assert rendered.startswith(transcript) and rendered[len(transcript) :] in (
            "\n",
            "<|im_end|>\n",
        )
        # What lies outside the mask decodes to the template text alone: system and
        # observations, never a sampled token.
        unmasked = tok.decode([i for i, m in zip(t.token_ids, t.action_mask) if not m])
        assert "You said" in unmasked and unmasked.count("<|im_start|>user") == t.num_turns
        assert sum(t.action_mask) == sum(len(r) for r in runs) == t.num_action_tokens
        assert all(lp == 0.0 for lp, m in zip(t.logprobs, t.action_mask) if not m)
    batch = episode_batch(trajectories, tok.pad_token_id, torch.device("cpu"))
    mask = batch["mask"].bool()
    for row, t in enumerate(trajectories):
        n = len(t.token_ids)
        assert batch["loss_mask"][row, :n].tolist() == t.action_mask
        picked = batch["input_ids"][row, batch["positions"][row, mask[row]] + 1]
        assert picked.tolist() == [i for i, m in zip(t.token_ids, t.action_mask) if m]
    with torch.no_grad():
        logprobs = answer_logprobs(model, batch)
    assert torch.allclose(logprobs[mask], batch["old_logprobs"][mask], atol=1e-4)


@pytest.mark.slow
def test_resume_continues_at_the_saved_step(tok_dir, tmp_path):
    small = {"steps": 2, "tasks_per_step": 2, "group_size": 4, "save_every": 1}
    out = tmp_path / "resume"
    train_lm_agent(SayWordEnv, TASKS, options(tok_dir, out, **small))
    before = metrics(out)
    train_lm_agent(SayWordEnv, TASKS, options(tok_dir, out, **small | {"steps": 4, "resume": True}))
    after = metrics(out)
    assert [r["step"] for r in after] == [1, 2, 3, 4]
    assert after[:2] == before
    state = json.loads((out / "trainer_state" / "state.json").read_text())
    assert state["step"] == 4 and state["episodes"] == 4 * 8
    # Same seed, uninterrupted: steps 3-4 see the same tasks, seeds and weights.
    straight = tmp_path / "straight"
    train_lm_agent(SayWordEnv, TASKS, options(tok_dir, straight, **small | {"steps": 4}))
    for a, b in zip(after, metrics(straight)):
        assert a["return"] == pytest.approx(b["return"], abs=1e-6)
        assert a["action_tokens"] == b["action_tokens"]


@pytest.mark.slow
def test_lora_runs_and_the_base_is_the_reference(tok_dir, tmp_path):
    out = tmp_path / "lora"
    envs: list[SayWordEnv] = []

    def factory() -> SayWordEnv:
        envs.append(SayWordEnv())
        return envs[-1]

    seen: list[dict] = []
    train_lm_agent(
        factory,
        TASKS,
        options(
            tok_dir,
            out,
            steps=2,
            tasks_per_step=2,
            group_size=4,
            grad_accum=2,
            lora={"r": 4, "alpha": 8},
        ),
        progress=seen.append,
    )
    records = metrics(out)
    assert [r["step"] for r in records] == [1, 2] and seen == records
    assert records[0]["kl"] == pytest.approx(0.0, abs=1e-6)  # LoRA B starts at 0
    assert records[1]["kl"] > 0
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert len(envs) == 8 and all(e.closed for e in envs)


def test_bad_input_fails_before_training(tok_dir, tmp_path):
    with pytest.raises(ValueError, match="at least one task"):
        train_lm_agent(SayWordEnv, [], options(tok_dir, tmp_path / "x"))
    with pytest.raises(ValidationError, match="grad_accum"):
        LmAgentConfig(**options(tok_dir, tmp_path / "x", grad_accum=64))
    with pytest.raises(ValidationError, match="extra"):
        LmAgentConfig(**options(tok_dir, tmp_path / "x", max_steps=3))


def test_task_order_is_a_pure_function_of_the_step():
    seen = [pick_tasks(5, 2, step, seed=3) for step in range(5)]
    assert sorted(i for s in seen for i in s) == sorted(list(range(5)) * 2)  # 2 epochs
    assert pick_tasks(5, 2, 3, seed=3) == seen[3]


def test_trains_against_a_real_classic_domain_env(tok_dir, tmp_path):
    """A real Gymnasium-backed domain env (``Observation`` objects, word actions)."""
    from agentworld.core import plugins

    domain = plugins.get_domain("frozenlake-4x4")
    tasks = domain.tasks().sample(2, seed=0)
    out = tmp_path / "classic"
    extra = {"steps": 1, "tasks_per_step": 2, "group_size": 2, "max_turns": 4, "beta": 0.0}
    train_lm_agent(domain.make_env, tasks, options(tok_dir, out, **extra))
    [record] = metrics(out)
    # A random policy rarely says a valid move and never reaches G in 4 turns.
    assert record["return"] == 0.0 and record["success_rate"] == 0.0
    assert 1 <= record["episode_len"] <= 4 and record["env_steps"] == 4 * record["episode_len"]


def test_simulated_env_gets_text_actions_and_malformed_answers_end_episodes(tok_dir, tmp_path):
    """``SimEnv`` (a Gymnasium text env) receives plain strings; a random world model's
    answers do not parse, so every episode is truncated after one turn, counted, not raised."""
    from agentworld.sim import SimEnv

    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    torch.manual_seed(1)
    world, _ = load_model("tiny-test", tok)
    wm = HFWorldModel(world.eval(), tok, max_new_tokens=8, engine_options={"num_blocks": 64})

    def factory() -> SimEnv:
        return SimEnv(
            wm, system_prompt="You simulate a yes/no quiz.", initial_observation="Say yes"
        )

    out = tmp_path / "sim"
    extra = {"steps": 1, "tasks_per_step": 2, "group_size": 2, "beta": 0.0}
    train_lm_agent(factory, TASKS, options(tok_dir, out, **extra))
    [record] = metrics(out)
    assert record["episode_len"] == 1.0 and record["truncated"] == 1.0
    assert record["parse_failures"] == 4


def test_a_rerun_is_refused_unless_resume_or_overwrite(tok_dir, tmp_path):
    """``agentworld train agent --set policy=lm`` follows the world-model stages' rule: an
    ``output_dir`` holding a checkpoint is refused before anything loads."""
    from agentworld.trainers.agents.trainer import AgentTrainer
    from agentworld.trainers.training.setup import OutputDirError

    out = tmp_path / "taken"
    (out / "trainer_state").mkdir(parents=True)
    (out / "trainer_state" / "state.json").write_text('{"step": 3}')
    with pytest.raises(OutputDirError, match="holds a checkpoint of step 3.*resume=true.*--overwrite to replace"):
        train_lm_agent(SayWordEnv, TASKS, options(tok_dir, out))
    cli = {"policy": "lm", "env": "real:frozenlake-4x4", "model": "tiny-test",
           "tokenizer": str(tok_dir), "output_dir": str(out)}  # fmt: skip
    with pytest.raises(OutputDirError, match="holds a checkpoint of step 3"):
        AgentTrainer().train([], cli)
    assert sorted(p.name for p in out.iterdir()) == ["trainer_state"]  # left as it was
    small = {"steps": 1, "tasks_per_step": 1, "group_size": 2, "beta": 0.0, "overwrite": True}
    train_lm_agent(SayWordEnv, TASKS, options(tok_dir, out, **small))
    assert json.loads((out / "trainer_state" / "state.json").read_text())["step"] == 1
    assert [r["step"] for r in metrics(out)] == [1]


class FailingEnv(SayWordEnv):
    """Fails on its second reset: after one optimizer step."""

    def reset(self, *, seed=None, options=None):
        self.resets = getattr(self, "resets", 0) + 1
        if self.resets == 2:
            raise RuntimeError("environment crashed")
        return super().reset(seed=seed, options=options)


def test_a_failed_run_removes_the_output_dir_it_created(tok_dir, tmp_path):
    small = {"steps": 3, "tasks_per_step": 1, "group_size": 2, "beta": 0.0}
    out = tmp_path / "failed"
    with pytest.raises(RuntimeError, match="environment crashed"):
        train_lm_agent(FailingEnv, TASKS, options(tok_dir, out, **small))
    assert not out.exists()
    # A checkpoint to resume from is kept (step 1 saved before the crash) ...
    with pytest.raises(RuntimeError, match="environment crashed"):
        train_lm_agent(FailingEnv, TASKS, options(tok_dir, out, **small | {"save_every": 1}))
    assert json.loads((out / "trainer_state" / "state.json").read_text())["step"] == 1
    # ... and so is a directory the run did not create.
    kept = tmp_path / "mine"
    kept.mkdir()
    with pytest.raises(RuntimeError, match="environment crashed"):
        train_lm_agent(FailingEnv, TASKS, options(tok_dir, kept, **small))
    assert kept.is_dir()
