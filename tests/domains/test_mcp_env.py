"""The real MCP environment: our servers over stdio through the official SDK, state across
calls, real tool errors, malformed calls, restarts of a dead or hung server, and no process or
directory left behind (also after the driver's SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium
import pytest
from agentworld.core.types import Action
from agentworld.domains.mcp.env import McpEnv
from agentworld.domains.mcp.tasks import McpTaskSampler

FAULTY = f"{sys.executable} {Path(__file__).with_name('mcp_faulty_server.py')}"


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


@pytest.fixture
def notes():
    env = McpEnv(server="notes")
    env.reset(seed=0)
    yield env
    env.close()


def test_create_then_read_returns_what_was_written(notes):
    obs, reward, terminated, _, info = notes.step(
        '{"name": "create_note", "arguments": {"title": "trip", "body": "pack the tent", "tags": ["home"]}}')
    assert json.loads(obs) == {"created": {"title": "trip", "body": "pack the tent", "tags": ["home"],
                                           "revision": 1}}
    assert info == {"tool": "create_note", "is_error": False, "restarted": False, "success": False}
    obs, *_ = notes.step(Action(text="", name="read_note", arguments={"title": "trip"}))
    assert json.loads(obs)["body"] == "pack the tent"
    obs, *_ = notes.step('```json\n{"name": "search_notes", "arguments": {"query": "TENT"}}\n```')
    assert json.loads(obs)["count"] == 1
    assert notes.privileged_state() == {"server": "notes", "data": {"notes": [
        {"title": "trip", "body": "pack the tent", "tags": ["home"], "revision": 1}]}}


def test_error_results_keep_their_text(notes):
    obs, _, _, _, info = notes.step('{"name": "read_note", "arguments": {"title": "nope"}}')
    assert obs == "Error executing tool read_note: no note titled 'nope'; existing titles: none"
    assert info["is_error"] is True
    notes.step('{"name": "create_note", "arguments": {"title": "a", "body": "b"}}')
    obs, *_ = notes.step('{"name": "create_note", "arguments": {"title": "a", "body": "c"}}')
    assert obs == "Error executing tool create_note: a note titled 'a' already exists; use update_note"


def test_malformed_calls_get_tool_errors_never_exceptions(notes):
    cases = {
        "not json": "Error: the action is not valid JSON",
        '{"tool": "read_note"}': 'Error: a tool call is a JSON object with a string "name"',
        '{"name": "read_note", "arguments": [1]}': "Error: \"arguments\" of tool 'read_note' must be a JSON object",
        '{"name": "get_weather", "arguments": {}}': "Unknown tool: get_weather",
        '{"name": "read_note", "arguments": {"title": 5}}': "Error executing tool read_note: 1 validation error",
        '{"name": "read_note", "arguments": {}}': "Error executing tool read_note: 1 validation error",
    }
    for action, start in cases.items():
        obs, reward, terminated, _, info = notes.step(action)
        assert obs.startswith(start), (action, obs)
        assert info["is_error"] and reward == 0.0 and not terminated
    obs, *_ = notes.step('{"name": "list_notes", "arguments": {}}')
    assert json.loads(obs) == {"count": 0, "notes": []}  # the server is still fine


def test_records_and_todo_keep_state_across_calls():
    env = McpEnv(server="records")
    env.reset()
    calls = [("create_table", {"table": "t", "columns": ["k", "v"]}),
             ("insert_row", {"table": "t", "row": {"k": "a", "v": 2}}),
             ("insert_row", {"table": "t", "row": {"k": "b", "v": 5.5}}),
             ("update_rows", {"table": "t", "where": {"k": "a"}, "values": {"v": 10}}),
             ("aggregate", {"table": "t", "column": "v", "op": "sum"})]
    for name, arguments in calls:
        obs, *_ = env.step(Action(text="", name=name, arguments=arguments))
    assert json.loads(obs)["value"] == 15.5
    assert env.privileged_state()["data"] == {"tables": {"t": [{"id": 1, "k": "a", "v": 10},
                                                               {"id": 2, "k": "b", "v": 5.5}]}}
    env.close()
    env = McpEnv(server="todo")
    env.reset()
    env.step('{"name": "add_todo", "arguments": {"title": "x", "due": "2025-02-03"}}')
    obs, *_ = env.step('{"name": "add_todo", "arguments": {"title": "y", "due": "2025-02-30"}}')
    assert obs == ("Error executing tool add_todo: invalid date '2025-02-30': use YYYY-MM-DD, "
                   "e.g. 2025-03-14")
    env.step('{"name": "complete_todo", "arguments": {"id": 1}}')
    obs, *_ = env.step('{"name": "complete_todo", "arguments": {"id": 1}}')
    assert obs == "Error executing tool complete_todo: to-do 1 is already done"
    assert env.privileged_state()["data"]["todos"] == [
        {"id": 1, "title": "x", "due": "2025-02-03", "priority": "normal", "done": True}]
    env.close()


def test_dead_and_hung_servers_are_restarted():
    env = McpEnv(server=FAULTY, timeout_s=2.0)
    obs, info = env.reset()
    assert "- hang(seconds: number)" in obs and info["server"] == FAULTY
    first = env.server_pid()
    obs, _, _, _, info = env.step('{"name": "crash", "arguments": {}}')
    assert info["restarted"] and info["is_error"] and obs.endswith("the server was restarted")
    assert env.server_pid() != first and gone(first)
    second = env.server_pid()
    started = time.monotonic()
    obs, _, _, _, info = env.step('{"name": "hang", "arguments": {"seconds": 30}}')
    assert info["restarted"] and "did not answer within 2 s" in obs
    assert time.monotonic() - started < 8 and gone(second)
    obs, *_ = env.step('{"name": "echo", "arguments": {"text": "still here"}}')
    assert obs == "still here"
    env.close()


def test_close_leaves_no_process_and_no_directory(notes):
    pid, root = notes.server_pid(), notes.root
    assert alive(pid) and root.is_dir() and oct(root.stat().st_mode & 0o777) == "0o700"
    notes.close()
    assert gone(pid, 0.5) and not root.exists()
    notes.close()  # idempotent


def test_server_dies_with_a_sigkilled_driver(tmp_path):
    code = ("from agentworld.domains.mcp.env import McpEnv; import time\n"
            "e = McpEnv(server='notes'); e.reset(); print(e.server_pid(), e.root, flush=True)\n"
            "time.sleep(60)\n")
    driver = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        pid, root = driver.stdout.readline().split()
        assert alive(int(pid))
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(5)
        assert gone(int(pid))
    finally:
        driver.kill()
        driver.wait()
    # the directory of a killed driver stays (no code runs at SIGKILL); it is private (0700)
    Path(root).exists() and __import__("shutil").rmtree(root)


def test_gymnasium_make_draws_a_task():
    env = gymnasium.make("agentworld/mcp-v0")
    obs, info = env.reset(seed=3)
    task = McpTaskSampler().sample(1, seed=int(__import__("numpy").random.default_rng(3).integers(2**31)))[0]
    assert info["instruction"] == task.instruction and info["server"] == task.setup["server"]
    assert obs.startswith(f"Connected to MCP server {task.setup['server']!r}.")
    assert info["startup_s"] < 5
    env.close()


def test_passes_gymnasium_check_env():
    import warnings

    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("agentworld/mcp-v0")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
    finally:
        env.close()


def test_an_episode_with_a_restarted_server_is_marked():
    from agentworld.core.collect import run_episode
    from agentworld.core.domain_base import PolicyBase
    from agentworld.domains.mcp.domain import McpDomain

    class Crasher(PolicyBase):
        name = "crasher"
        calls = ['{"name": "echo", "arguments": {"text": "a"}}', "not json",
                 '{"name": "crash", "arguments": {}}', '{"name": "echo", "arguments": {"text": 3}}',
                 '{"name": "echo", "arguments": {"text": "b"}}']

        def act(self, task, history):
            done = sum(isinstance(h, Action) for h in history)
            return Action(text=self.calls[done]) if done < len(self.calls) else None

    env = McpEnv(server=FAULTY, timeout_s=5.0)
    try:
        episode = run_episode(McpDomain(), env, None, Crasher(), seed=0, max_steps=10)
    finally:
        env.close()
    texts = [s.observation.text for s in episode.steps]
    assert texts[1].startswith("Error: the action is not valid JSON")  # the collector goes on
    assert texts[2].endswith("the server was restarted") and texts[4] == "b"
    assert "validation error" in texts[3] and episode.steps[3].info["is_error"]
    assert episode.metadata["restarted_steps"] == [2]
