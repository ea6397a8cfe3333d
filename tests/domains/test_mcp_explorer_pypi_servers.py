"""The explorer on two more PyPI servers nobody here wrote, each in its own virtual environment
and started through ``env`` as the README's "Your own MCP server" says: ``mcp-text-editor``
(files by absolute path, no folder option: ``env -C DIR``) and ``mcp-shell-server`` (its
allowed commands in ``ALLOW_COMMANDS``). The old explorer answered 0 of 29 and 0 of 26 calls
without an error on them (made-up relative paths, binary argv, the program's own path as a
folder) and named the second server ``env``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from agentworld.core.collect import collect
from agentworld.core.tool_coverage import coverage_lines, is_error_step, summarize
from agentworld.domains.mcp.domain import McpDomain

UV = os.environ.get("UV") or shutil.which("uv")


def _venv(base: Path, name: str, *requirements: str) -> Path:
    """A venv with ``requirements`` (skips when they cannot be installed: offline and not in
    the uv cache)."""
    if UV is None:
        pytest.skip("needs the uv executable")
    venv = base / name
    try:
        subprocess.run([UV, "venv", "-q", str(venv)], check=True, capture_output=True, timeout=120)
        subprocess.run([UV, "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                        *requirements], check=True, capture_output=True, timeout=300)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"{name} could not be installed from the registry: {exc}")
    return venv / "bin" / name


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("files")
    (root / "src").mkdir()
    (root / "list.txt").write_text("alpha\nbeta\ngamma\n")
    (root / "notes.md").write_text("# Notes\n\nSome text here.\n")
    (root / "src" / "mod.py").write_text("def f():\n    return 1\n")
    return root


def test_text_editor_server_edits_files_of_the_folder_it_runs_in(tmp_path_factory, folder):
    # mcp-text-editor's releases use the SDK 1.x server API: `mcp<2` in its own venv
    program = _venv(tmp_path_factory.mktemp("te"), "mcp-text-editor", "mcp-text-editor", "mcp<2")
    server = f"env -C {folder} {program}"
    episodes = collect(McpDomain(), 6, policies={"scripted": 1, "random": 1}, seed=0,
                       env_options={"server": server})
    [(label, row)] = summarize(episodes).items()
    assert label == "mcp-text-editor"
    assert row["non_error_share"] >= 0.8 and row["tool_share"] == 1.0, coverage_lines(episodes)
    files = {str(folder / "list.txt"), str(folder / "notes.md"), str(folder / "src" / "mod.py")}
    paths = [item.get("file_path") or item.get("path") for e in episodes for s in e.steps
             for item in (s.action.arguments or {}).get("files", [])]
    assert paths and set(paths) <= files, paths
    reads = [s.observation.text for e in episodes for s in e.steps
             if s.action.name == "get_text_file_contents" and not is_error_step(s)]
    assert any("alpha" in text or "Some text here" in text for text in reads)


def test_shell_server_runs_its_allowed_commands_on_the_folder(tmp_path_factory, folder):
    program = _venv(tmp_path_factory.mktemp("sh"), "mcp-shell-server", "mcp-shell-server")
    server = f"env -C {folder} ALLOW_COMMANDS=ls,cat,wc,pwd {program}"
    episodes = collect(McpDomain(), 6, policies={"scripted": 1, "random": 1}, seed=0,
                       env_options={"server": server})
    [(label, row)] = summarize(episodes).items()
    assert label == "mcp-shell-server"
    assert episodes[0].initial_observation.text.startswith(
        "Connected to MCP server 'mcp-shell-server'.")
    assert row["non_error_share"] >= 0.5, coverage_lines(episodes)
    argvs = [s.action.arguments["command"] for e in episodes for s in e.steps
             if "command" in (s.action.arguments or {})]
    bad = [argv for argv in argvs if argv[0] not in ("ls", "cat", "wc", "pwd")]
    assert argvs and not bad, bad
    outputs = [s.observation.text for e in episodes for s in e.steps if not is_error_step(s)]
    assert any("notes.md" in text or str(folder) in text or "alpha" in text for text in outputs)
