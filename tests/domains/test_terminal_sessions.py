"""The session task kinds and session commands in real sandboxed bash: the scripted expert
solves every new kind, and the random policy makes real transitions of every new kind,
including steps that read back what earlier steps of the same episode wrote."""

from __future__ import annotations

import re
from collections import Counter

from agentworld.core.collect import run_episode
from agentworld.domains.terminal.domain import TerminalDomain
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.expert import ScriptedExpert
from agentworld.domains.terminal.fs import apply_setup, check_success
from agentworld.domains.terminal.random_policy import RandomPolicy
from agentworld.domains.terminal.session_tasks import SESSION_KINDS
from agentworld.domains.terminal.tasks import KINDS, TerminalTaskSampler
from sandboxes import needs_sandbox


def test_session_kinds_are_sampled():
    assert set(SESSION_KINDS) <= set(KINDS)
    tasks = TerminalTaskSampler(SESSION_KINDS).sample(2 * len(SESSION_KINDS), seed=4)
    assert Counter(t.kind for t in tasks) == dict.fromkeys(SESSION_KINDS, 2)
    pipeline = [t for t in tasks if t.kind == "pipeline"]
    # the pipeline kind reads a CSV table of the set-up tree (added when the tree had none)
    assert all(t.check["goal"]["path"] in t.setup["files"] for t in pipeline)
    assert all(t.check["goal"]["path"].endswith(".csv") for t in pipeline)


def test_no_task_is_solved_by_doing_nothing(tmp_path):
    """Every sampled task's check fails on its untouched tree with an empty output in the
    home directory. An ``inspect`` task whose drawn lines were blank once had the check
    ``{"output_contains": []}``, which any step passed (seeds 486, 2310, 2518; a served
    terminal's one-shot step then ended its episode at random)."""
    vacuous = []
    for seed in [*range(100), 486, 2310, 2518]:
        for task in TerminalTaskSampler().sample(4, seed=seed):
            root = tmp_path / task.id
            root.mkdir()
            apply_setup(root, task.setup)
            if check_success(root, task.check, "", "/home/agent"):
                vacuous.append((task.id, task.check))
    assert vacuous == []


@needs_sandbox
def test_scripted_expert_solves_every_session_kind():
    domain, expert = TerminalDomain(), ScriptedExpert()
    env = TerminalEnv()
    failures, commands = [], []
    try:
        for i, task in enumerate(TerminalTaskSampler(SESSION_KINDS).sample(16, seed=31)):
            episode = run_episode(domain, env, task, expert, seed=i, max_steps=12)
            commands += [s.action.text for s in episode.steps]
            last = episode.steps[-1]
            if not (last.reward == 1.0 and last.terminated):
                failures.append((task.instruction, [(s.action.text, s.observation.text)
                                                    for s in episode.steps]))
    finally:
        env.close()
    assert failures == []
    text = "\n".join(commands)
    for construct in ["for ", "python3 ", "diff ", ">>", "if ", "$?", "grep -q"]:
        assert construct in text, construct


def _collect_random(n: int, seed: int):
    domain, policy, env = TerminalDomain(), RandomPolicy(), TerminalEnv()
    try:
        tasks = TerminalTaskSampler().sample(n, seed=seed)
        return [run_episode(domain, env, t, policy, seed=i, max_steps=12)
                for i, t in enumerate(tasks)]
    finally:
        env.close()


@needs_sandbox
def test_random_policy_makes_real_transitions_of_every_new_kind():
    episodes = _collect_random(20, seed=8)
    domain = TerminalDomain()
    seen: Counter[str] = Counter()
    read_back = exact = 0
    for episode in episodes:
        written: dict[str, str] = {}
        for step in episode.steps:
            cmd, out = step.action.text, domain.output_text(step.observation)
            seen[domain.action_type(step.action)] += 1
            status = (step.observation.state or {}).get("exit_code")
            if re.fullmatch(r"echo \$\(\(\$?\w+ [-+*/%] \$?\w+\)\)", cmd) and status == 0:
                assert re.fullmatch(r"-?\d+\n", out), (cmd, out)
                seen["arithmetic"] += 1
            if re.match(r"(for|while) .*; done", cmd) and status == 0 and out:
                seen["loop"] += 1  # real output of a loop
            if cmd.startswith("for i in $(seq 1 "):
                n = int(cmd.split("seq 1 ")[1].split(")")[0])
                assert out == "".join(f"line {i}\n" for i in range(1, n + 1))
            match = re.fullmatch(r"for i in \{1\.\.(\d)\}; do echo \$\(\(i \* i\)\); done", cmd)
            if match:
                assert out == "".join(f"{i * i}\n" for i in range(1, int(match.group(1)) + 1))
            if "| uniq -c" in cmd and out:
                assert re.match(r"\s+\d+ ", out), out
                seen["pipeline"] += 1
            match = re.fullmatch(r"python3 -c 'print\((\d+) \* (\d+)\)'", cmd)
            if match:
                assert out == f"{int(match.group(1)) * int(match.group(2))}\n"
                seen["python"] += 1
            if status not in (None, 0):
                seen["error"] += 1
            match = re.search(r">>? (\S+)$", cmd)
            if match and status == 0:
                echoed = re.fullmatch(r"echo '([^']*)' >>? \S+", cmd)
                written[match.group(1).split("/")[-1]] = echoed.group(1) if echoed else ""
            elif status == 0 and out:
                # the real output reads a file an earlier step of this episode wrote
                read_back += any(re.search(rf"\b{re.escape(n)}\b", cmd) for n in written)
                exact += any(n in cmd and t and t in out for n, t in written.items())
    for kind in ["control", "text", "python", "assign", "error", "arithmetic", "loop"]:
        assert seen[kind] > 0, (kind, seen)
    assert read_back >= 5 and exact >= 1 and seen["pipeline"] > 0, (read_back, exact, seen)


def test_every_goal_op_has_a_scripted_solution_and_an_unknown_one_is_named():
    import pytest
    from agentworld.core.types import Task
    from agentworld.domains.terminal.expert import SOLVERS

    ops = {t.check["goal"]["op"] for s in range(120) for t in TerminalTaskSampler().sample(
        4, seed=s)}
    assert ops <= set(SOLVERS) and len(ops) >= len(SOLVERS) - 2  # 'find' is rare
    task = Task(id="t9", domain="terminal", instruction="x", setup={"files": {}},
                check={"goal": {"op": "__init__"}})  # data names no method of the expert
    with pytest.raises(ValueError, match=r"task 't9': no scripted solution for goal op '__init__'"):
        ScriptedExpert().act(task, [])
