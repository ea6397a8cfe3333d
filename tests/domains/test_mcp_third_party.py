"""Any stdio MCP server through ``make_env(server="CMD ARGS")``: the third-party
``mcp-server-time`` from PyPI, installed into its own virtual environment (its own SDK
version, whatever ours is), driven by the real environment and the random policy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from agentworld.core.collect import run_episode
from agentworld.domains.mcp.domain import McpDomain
from agentworld.core.types import Task
from agentworld.domains.mcp.random_policy import RandomPolicy

UV = os.environ.get("UV") or shutil.which("uv")


@pytest.fixture(scope="module")
def time_server(tmp_path_factory) -> str:
    """The command line of ``mcp-server-time`` in a fresh venv (skipped when it cannot be
    installed, e.g. offline with an empty uv cache)."""
    if UV is None:
        pytest.skip("needs the uv executable to build the server's virtual environment")
    venv = tmp_path_factory.mktemp("time-server") / "venv"
    try:
        subprocess.run([UV, "venv", "-q", str(venv)], check=True, capture_output=True, timeout=120)
        subprocess.run([UV, "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                        "mcp-server-time"], check=True, capture_output=True, timeout=300)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"mcp-server-time could not be installed from the registry: {exc}")
    return f"{venv / 'bin' / 'mcp-server-time'} --local-timezone UTC"


def test_third_party_server_through_the_server_option(time_server):
    env = McpDomain().make_env(server=time_server)
    try:
        obs, info = env.reset()
        assert obs.splitlines() == [
            "Connected to MCP server 'mcp-server-time'. 2 tools available:",
            "- get_current_time(timezone: string)",
            "- convert_time(source_timezone: string, time: string, target_timezone: string)"]
        obs, _, _, _, step_info = env.step(
            '{"name": "convert_time", "arguments": {"source_timezone": "UTC", "time": "12:00", '
            '"target_timezone": "Asia/Tokyo"}}')
        result = json.loads(obs)
        assert result["target"]["datetime"].endswith("T21:00:00+09:00")
        assert result["time_difference"] == "+9.0h" and not step_info["is_error"]
        obs, _, _, _, step_info = env.step(
            '{"name": "get_current_time", "arguments": {"timezone": "Mars/Base"}}')
        assert step_info["is_error"] and obs.startswith(
            "Error executing tool get_current_time: Invalid timezone")
        assert env.privileged_state() == {"server": time_server, "data": None}
        pid = env.server_pid()
        assert Path(f"/proc/{pid}").exists()
    finally:
        env.close()
    assert not Path(f"/proc/{pid}").exists()


def test_random_policy_plays_a_third_party_server(time_server):
    domain = McpDomain()
    env = domain.make_env(server=time_server)
    try:
        episode = run_episode(domain, env, None, RandomPolicy(1), seed=1, max_steps=10)
    finally:
        env.close()
    tools = {domain.action_type(s.action) for s in episode.steps}
    assert len(episode.steps) >= 3 and tools & {"get_current_time", "convert_time"}


def test_third_party_server_as_a_task_option(time_server):
    """A task is data: the command line its setup names runs only once the operator configured
    it (``make_env(server=...)`` in this process); before, no prompt, listing or reset starts it."""
    from agentworld.domains.mcp.catalog import UntrustedServerError

    server = time_server.replace("UTC", "Europe/Paris")  # a line no test configured yet
    domain = McpDomain()
    task = Task(id="time-0", domain="mcp", instruction="What time is it in Tokyo?",
                kind="free", setup={"server": server})
    prompt = domain.system_prompt(task)
    assert "named 'mcp-server-time'" in prompt and "convert_time" not in prompt
    with pytest.raises(UntrustedServerError, match="neither one of ours .* not started"):
        domain.initial_observation(task)
    env = domain.make_env()
    with pytest.raises(UntrustedServerError, match="a server named by data .* never runs"):
        env.reset(options={"task": task})
    env.close()
    domain.make_env(server=server).close()  # the operator configures it
    prompt = domain.system_prompt(task)
    assert '"name":"convert_time"' in prompt and '"source_timezone"' in prompt
    env = domain.make_env()
    try:
        obs, info = env.reset(options={"task": task})
        assert info["server"] == server and "- convert_time(" in obs
        assert domain.initial_observation(task) == obs
    finally:
        env.close()
    from agentworld.core.options import OptionsError, parse_env_options

    with pytest.raises(OptionsError, match="^domain 'mcp': unknown environment option 'bogus'; "
                       "accepted: server \\(str \\| None"):
        parse_env_options(domain, {"bogus": "1"})  # as `collect --set` and a pipeline file ask


def test_collect_cli_takes_any_server_through_set(time_server, tmp_path):
    """``agentworld collect --domain mcp --set server='CMD ARGS'``: episodes of a third-party
    server, recorded with that server's own tools in the system prompt."""
    from agentworld.app.cli import app
    from agentworld.core.io import read_episodes
    from typer.testing import CliRunner

    out = tmp_path / "time.jsonl"
    result = CliRunner().invoke(app, [
        "collect", "--domain", "mcp", "--episodes", "2", "--policy", "random=1",
        "--max-steps", "3", "--set", f"server={time_server}", "--set", "timeout_s=20",
        "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    episodes = read_episodes(str(out))
    assert len(episodes) == 2 and all(e.steps for e in episodes)
    prompt = episodes[0].system_prompt
    assert "'mcp-server-time'" in prompt and '"convert_time"' in prompt and "notes" not in prompt
    # tasks from the server's own tools; the summary gives its coverage
    assert all(e.task.kind == "explore" and e.task.instruction.startswith("On mcp-server-time: ")
               for e in episodes)
    output = " ".join(result.output.split())  # the console wraps at 80 columns
    assert "coverage mcp-server-time: " in output and "2/2 tools answered without error" in output
    bad = CliRunner().invoke(app, ["collect", "--domain", "mcp", "--episodes", "1", "--set",
                                   "timeout_s=soon", "--out", str(tmp_path / "x.jsonl")])
    assert "environment option timeout_s='soon': Input should be a valid number" in str(bad.exception)
    assert not (tmp_path / "x.jsonl").exists()
