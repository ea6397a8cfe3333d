"""The explorer on a reference MCP server nobody here wrote: ``mcp-server-git`` from PyPI in its
own virtual environment, pointed at a scratch repository, collected with the default policies
(``collect --set server=...``): most transitions are not errors, most tools answer, the tasks
are the server's own and state built by a call is read by a later one."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from agentworld.core.collect import collect
from agentworld.core.tool_coverage import coverage_lines, is_error_step, summarize
from agentworld.domains.mcp.domain import McpDomain
from agentworld.domains.mcp.servers import SERVERS
from agentworld.domains.mcp.tasks import KINDS

UV = os.environ.get("UV") or shutil.which("uv")
OUR_TOOLS = {"list_notes", "create_note", "read_note", "list_tables", "insert_row", "query_rows",
             "add_todo", "list_todos", "complete_todo"}


@pytest.fixture(scope="module")
def git_server(tmp_path_factory) -> str:
    """The command line of ``mcp-server-git`` in a fresh venv on a scratch repository (skipped
    when it cannot be installed: the registry is unreachable and the uv cache lacks it)."""
    if UV is None or shutil.which("git") is None:
        pytest.skip("needs the uv and git executables")
    base = tmp_path_factory.mktemp("git-server")
    venv, repo = base / "venv", base / "repo"
    try:
        subprocess.run([UV, "venv", "-q", str(venv)], check=True, capture_output=True, timeout=120)
        subprocess.run([UV, "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                        "mcp-server-git"], check=True, capture_output=True, timeout=300)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"mcp-server-git could not be installed from the registry: {exc}")
    repo.mkdir()
    (repo / "README.md").write_text("hello\n")
    (repo / "main.py").write_text("print(1)\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(git + args, check=True, capture_output=True)
    (repo / "main.py").write_text("print(2)\n")  # work in progress: a change and new files
    for name in ("notes.txt", "todo.md", "setup.cfg"):
        (repo / name).write_text(f"{name}\n")
    return f"{venv / 'bin' / 'mcp-server-git'} --repository {repo}"


def test_default_policies_explore_a_pypi_server(git_server):
    episodes = collect(McpDomain(), 6, policies={"scripted": 1, "random": 1}, seed=3,
                       env_options={"server": git_server})
    [(server, row)] = summarize(episodes).items()
    assert server == "mcp-server-git"
    assert row["transitions"] >= 20
    assert row["non_error_share"] >= 0.6, coverage_lines(episodes)
    assert row["tool_share"] >= 0.6, coverage_lines(episodes)
    for episode in episodes:  # the server's own tasks, never our servers'
        task = episode.task
        assert task.kind == "explore" and task.kind not in KINDS
        assert task.setup["server"] == git_server and task.setup["server"] not in SERVERS
        assert task.instruction.startswith("On mcp-server-git: ")
        assert not any(s.action.name in OUR_TOOLS for s in episode.steps)
        assert episode.metadata["coverage"]["server"] == "mcp-server-git"
        assert episode.metadata["coverage"]["tools_listed"] == 12
    calls = [(s.action.name or "", s.action.arguments or {}, s) for e in episodes for s in e.steps]
    assert all(args.get("repo_path") == git_server.split(" --repository ")[1]
               for name, args, _ in calls if name.startswith("git_") and "repo_path" in args)
    # state changes: what a call makes (a branch, a commit) a later call of the episode shows
    made = [(e, i, s.action.arguments.get("branch_name") or s.action.arguments.get("message"))
            for e in episodes for i, s in enumerate(e.steps)
            if s.action.name in ("git_create_branch", "git_commit") and not is_error_step(s)]
    assert made
    assert any(token in later.observation.text for e, i, token in made
               for later in e.steps[i + 1:]), [(e.task.id, token) for e, _, token in made]
