"""The TRL adapter (agentworld.trainers.agents.trl_env) against the real sandboxed terminal and real TRL.

The end-to-end test runs TRL's own ``GRPOTrainer`` with ``environment_factory`` for 2 steps
on a tiny Qwen3 (random init, then 60 Adam steps teaching it one tool call) with
TRL's shipped Qwen3 chat template, so TRL's tool-calling loop really parses the call, runs
our tool method in the sandbox and feeds the terminal's answer back.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from agentworld.core.plugins import get_domain
from agentworld.core.types import Task
from agentworld.domains.terminal.sandbox import detect_sandbox
from agentworld.trainers.agents.trl_env import (
    AgentWorldToolEnv,
    environment_factory,
    episode_return_reward,
    task_rows,
    tool_env_class,
)

try:
    detect_sandbox()
except RuntimeError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"no sandbox available: {exc}", allow_module_level=True)

PROMPT = "user@sandbox:~$ "
COMMAND = "echo hi > note.txt"
OK = Task(
    id="ok",
    domain="terminal",
    instruction="Create note.txt containing hi.",
    kind="create",
    check={"files": {"note.txt": {"contains": ["hi"]}}},
)
BAD = Task(
    id="bad",
    domain="terminal",
    instruction="Create note.txt containing bye.",
    kind="create",
    check={"files": {"note.txt": {"contains": ["bye"]}}},
)


def trl_tools(env: AgentWorldToolEnv) -> dict:
    """The tools TRL exposes for ``env``: the same discovery as ``GRPOTrainer.__init__``."""
    return {
        name: getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


@pytest.fixture
def terminal_env():
    made: list[AgentWorldToolEnv] = []
    make = environment_factory("terminal", on_create=made.append)
    yield make()
    for e in made:
        e.env.close()


def test_tool_call_runs_in_the_real_sandbox(terminal_env):
    env = terminal_env
    tools = trl_tools(env)
    assert list(tools) == ["terminal"]
    with pytest.raises(RuntimeError, match="reset"):
        env.terminal(command="ls")
    [row] = task_rows([BAD])
    assert row["prompt"] == [{"role": "user", "content": BAD.instruction}]
    assert env.reset(**row) == "\n\n" + PROMPT
    assert env.task == BAD
    assert tools["terminal"](command=COMMAND) == PROMPT
    assert (env.env.root / "note.txt").read_text() == "hi\n"
    assert env.terminal(command="cat note.txt") == "hi\n" + PROMPT
    assert env.terminal(command="false") == "[1] " + PROMPT
    assert env.actions == [COMMAND, "cat note.txt", "false"]
    assert env.observations == [PROMPT, PROMPT, "hi\n" + PROMPT, "[1] " + PROMPT]
    assert (env.num_steps, env.episode_return, env.done) == (3, 0.0, False)
    assert env.last_info["exit_code"] == 1


def test_return_termination_and_calls_after_the_end(terminal_env):
    env = terminal_env
    env.reset(**task_rows([OK])[0], seed=3)
    assert env.terminal(command="ls") == PROMPT
    assert env.terminal(command=COMMAND) == PROMPT + "\n[episode ended: terminated]"
    assert (env.done, env.end_reason, env.episode_return, env.num_steps) == (
        True,
        "terminated",
        1.0,
        2,
    )
    after = env.terminal(command="rm note.txt")
    assert after == "The episode has already ended (terminated); no action was taken."
    assert (env.env.root / "note.txt").exists()
    assert env.num_steps == 2
    assert episode_return_reward(["p"], ["c"], environments=[env, object()]) == [1.0, None]
    # A new episode starts from a fresh sandbox root and a zero return.
    env.reset(task=OK.model_dump())
    assert (env.episode_return, env.num_steps, env.done) == (0.0, 0, False)
    assert not (env.env.root / "note.txt").exists()


def test_max_steps_truncates():
    made: list[AgentWorldToolEnv] = []
    env = environment_factory("terminal", max_steps=2, on_create=made.append)()
    try:
        env.reset()
        assert env.terminal(command="true") == PROMPT
        assert env.terminal(command="true") == PROMPT + "\n[episode ended: truncated: max_steps]"
        assert env.end_reason == "truncated: max_steps"
        assert env.terminal(command="true").startswith("The episode has already ended")
        assert env.num_steps == 2
    finally:
        env.env.close()


def test_word_actions_are_one_enum_tool_on_the_real_classic_env():
    from transformers.utils import get_json_schema

    domain = get_domain("frozenlake-4x4")
    made: list[AgentWorldToolEnv] = []
    env = environment_factory(domain, on_create=made.append)()
    tools = trl_tools(env)
    assert list(tools) == ["frozenlake_4x4"]
    schema = get_json_schema(tools["frozenlake_4x4"])["function"]
    assert schema["parameters"]["properties"]["action"]["enum"] == ["left", "down", "right", "up"]
    assert schema["parameters"]["required"] == ["action"]
    [task] = domain.tasks().sample(1, seed=0)
    start = env.reset(**task_rows([task])[0])
    assert start == "\n\n" + domain.initial_observation(task)
    assert start.startswith("\n\nagent: row 0, col 0\nAFFF\n")  # the agent A on the start cell S
    bad = env.frozenlake_4x4(action="jump")  # the env's own defined outcome, not an exception
    assert "invalid action" in bad and env.num_steps == 1 and not env.done
    # The optimal path on the non-slippery 4x4 map (deterministic dynamics).
    for word in ["right", "right", "down", "down", "down"]:
        assert "reward: 0" in env.frozenlake_4x4(action=word)
    last = env.frozenlake_4x4(action="right")
    assert last.endswith("HFFA\nreward: 1\nstatus: reached the goal\n[episode ended: terminated]")
    assert (env.episode_return, env.num_steps, env.end_reason) == (1.0, 7, "terminated")
    assert env.frozenlake_4x4(action="left").startswith("The episode has already ended")
    assert episode_return_reward(environments=[env]) == [1.0]


def test_simulated_env_gets_text_actions():
    from agentworld.core.builtins import ConstantWorldModel
    from agentworld.sim import SimEnv

    domain = get_domain("frozenlake-4x4")
    env = environment_factory(
        domain, lambda: SimEnv(ConstantWorldModel("copy-previous"), domain=domain)
    )()
    [task] = domain.tasks().sample(1, seed=0)
    start = env.reset(**task_rows([task])[0])
    assert start == "\n\n" + domain.initial_observation(task)
    # "copy-previous" predicts the previous observation again: a real (baseline) world model.
    assert env.frozenlake_4x4(action="down") == start[2:]
    assert env.last_info["parsed"] is True and "<predicted_observation>" in env.last_info["raw"]
    assert (env.num_steps, env.episode_return, env.done) == (1, 0.0, False)
    env.env.close()


def test_tool_schemas_and_bad_input():
    from transformers.utils import get_json_schema

    terminal = get_domain("terminal")
    schema = get_json_schema(tool_env_class(terminal).terminal.__get__(object()))
    assert schema["function"]["parameters"]["properties"]["command"]["type"] == "string"
    assert "terminal" in schema["function"]["description"]

    assert tool_env_class(terminal, tool_name="bash").tool_name == "bash"
    for bad in ("reset", "get_reward", "episode_return", "_x", "1abc", "class"):
        with pytest.raises(ValueError, match="tool name"):
            tool_env_class(terminal, tool_name=bad)
    with pytest.raises(ValueError, match="actions"):
        tool_env_class(terminal, actions=[])
    with pytest.raises(ValueError, match="max_steps"):
        environment_factory("terminal", max_steps=0)()
    with pytest.raises(ValueError, match="environments="):
        episode_return_reward(["p"], ["c"])
    env = tool_env_class(terminal)(env=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'task'"):
        env.reset(task=json.dumps({"id": "x"}))


# ---------------------------------------------------------------- real TRL GRPOTrainer


def _tokenizer(texts: list[str]):
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = [
        "<|endoftext|>",
        "<|im_start|>",
        "<|im_end|>",
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
        "<tool_response>",
        "</tool_response>",
    ]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=600,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    # TRL's copy of the Qwen3 chat template: TRL recognises it and sets the tool-call parser.
    template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=template,
        padding_side="left",
    )


def _teach_tool_call(model, tok, prompts: list[str], completion: str, steps: int) -> float:
    """Adam on ``prompt + completion`` with the loss on the completion tokens; final loss."""
    import torch

    opt = torch.optim.Adam(model.parameters(), lr=6e-3)
    batch = []
    for p in prompts:
        p_ids = tok(p, add_special_tokens=False)["input_ids"]
        c_ids = tok(completion, add_special_tokens=False)["input_ids"]
        ids = torch.tensor([p_ids + c_ids])
        labels = ids.clone()
        labels[0, : len(p_ids)] = -100
        batch.append((ids, labels))
    model.train()
    for _ in range(steps):
        loss = sum(model(input_ids=ids, labels=labels).loss for ids, labels in batch) / len(batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


@pytest.mark.slow
def test_grpo_trainer_calls_the_terminal_tool(tmp_path, monkeypatch):
    import torch
    from datasets import Dataset
    from transformers import Qwen3Config, Qwen3ForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.manual_seed(0)
    made: list[AgentWorldToolEnv] = []
    make = environment_factory("terminal", max_steps=4, on_create=made.append)
    rows = task_rows([OK, BAD])
    tool = trl_tools(make())["terminal"]
    call = json.dumps({"name": "terminal", "arguments": {"command": COMMAND}})
    completion = f"<tool_call>\n{call}\n</tool_call><|im_end|>"

    # The prompts exactly as TRL renders them: user message + initial observation, tool schema.
    def render(tok_or_none, row):
        msgs = [{"role": "user", "content": row["prompt"][0]["content"] + "\n\n" + PROMPT}]
        return tok_or_none.apply_chat_template(
            msgs, tools=[tool], add_generation_prompt=True, tokenize=False
        )

    bootstrap = _tokenizer(["x"])
    prompts = [render(bootstrap, r) for r in rows]
    tok = _tokenizer(prompts + [completion, "hi\n" + PROMPT] * 4)
    prompts = [render(tok, r) for r in rows]
    config = Qwen3Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=1024,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    model = Qwen3ForCausalLM(config).float()
    loss = _teach_tool_call(model, tok, prompts, completion, steps=60)
    assert loss < 0.05, f"the tiny model did not learn the tool call (loss {loss:.3f})"

    seen: list[tuple[list, list]] = []

    def episode_return(prompts, completions, environments, **kwargs):
        out = episode_return_reward(prompts, completions, environments=environments, **kwargs)
        seen.append((out, [e.task.id for e in environments]))
        return out

    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=2,
        max_steps=2,
        max_completion_length=96,
        max_tool_calling_iterations=2,
        temperature=0.3,
        learning_rate=1e-4,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        seed=0,
        dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=episode_return,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        environment_factory=make,
    )
    try:
        trainer.train()
        assert len(seen) == 2  # one reward call per step
        envs = made[1:]  # made[0] is the instance whose tool we rendered above
        assert len(envs) >= 4
        for rewards, task_ids in seen:
            assert sorted(task_ids) == ["bad", "bad", "ok", "ok"]
        # The tool ran in each rollout's sandbox: the file the command writes is there.
        for e in envs:
            assert e.actions and e.actions[0] == COMMAND, e.actions
            assert (e.env.root / "note.txt").read_text() == "hi\n"
            if e.task.id == "ok":  # solved on the first call: return 1, and no step after the end
                assert (e.episode_return, e.end_reason, e.num_steps) == (1.0, "terminated", 1)
            else:
                assert (e.episode_return, e.done) == (0.0, False) and e.num_steps >= 1
        last_rewards, last_ids = seen[-1]
        assert last_rewards == [1.0 if t == "ok" else 0.0 for t in last_ids]
        logs = [h for h in trainer.state.log_history if "reward" in h]
        assert [h["reward"] for h in logs] == [0.5, 0.5]
        assert all(h["tools/call_frequency"] > 0 for h in logs)
    finally:
        for e in made:
            e.env.close()
