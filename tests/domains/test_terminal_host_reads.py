"""Attacks on the host side of the terminal environment (issue 22, items 2 and 6, and the task
errors): the success check and the snapshots read the episode root in the host process, so
they must not follow the agent's links, open fifos, read without bound, or recurse."""

from __future__ import annotations

import os
import re
import resource
import tempfile
import time
from pathlib import Path

import pytest
from agentworld.core.types import Action, Task
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.fs import check_success, snapshot
from agentworld.domains.terminal.limits import Limits
from agentworld.domains.terminal.safefs import remove_tree
from sandboxes import needs_sandbox

SECRET = "SECRET-4f1c9e"


def task(check: dict, setup: dict | None = None) -> Task:
    return Task(id="attack", domain="terminal", instruction="-", setup=setup or {}, check=check)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A root-only (0600) host file outside every episode root."""
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text(f"{SECRET}\n")
    path.chmod(0o600)
    return path


def run(env: TerminalEnv, check: dict, command: str):
    env.reset(options={"task": task(check)})
    obs, reward, terminated, _, info = env.step(Action(text=command))
    return obs, reward, terminated, env.privileged_state()


@needs_sandbox
def test_links_out_of_the_root_reveal_nothing(secret: Path) -> None:
    env = TerminalEnv(limits=Limits(command_timeout_s=3.0))
    try:
        # The attack of the report: a link to a host file, and a binary search on the reward.
        for want in ({"contains": [SECRET]}, {"equals": f"{SECRET}\n"}, {"lacks": ["nothing"]}):
            _, reward, terminated, state = run(env, {"files": {"leak": want}}, f"ln -s {secret} leak")
            assert (reward, terminated) == (0.0, False), want
            assert state["files"] == {"leak": f"-> {secret}"}  # the link itself, as the agent made it
        # The same through a linked directory, and /proc/self/environ of the host process.
        check = {"files": {"d/secret.txt": {"contains": [SECRET]}}, "dirs": ["d"]}
        _, reward, _, state = run(env, check, f"ln -s {secret.parent} d")
        assert reward == 0.0 and state["files"] == {"d": f"-> {secret.parent}"}
        os.environ["AGENTWORLD_HOST_CANARY"] = SECRET
        check = {"files": {"env": {"contains": ["AGENTWORLD_HOST_CANARY"]}}}
        _, reward, _, state = run(env, check, "ln -s /proc/self/environ env")
        assert reward == 0.0 and SECRET not in str(state)
        check = {"exists": ["real"], "files": {"real": {"contains": ["mine"]}}}
        _, reward, terminated, _ = run(env, check, "echo mine > real")  # the control: it pays
        assert (reward, terminated) == (1.0, True)
    finally:
        os.environ.pop("AGENTWORLD_HOST_CANARY", None)
        env.close()


@needs_sandbox
def test_fifo_and_huge_files_are_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)  # 1 GiB, sparse
    env = TerminalEnv(limits=Limits(command_timeout_s=3.0))
    try:
        start = time.monotonic()
        _, reward, _, state = run(env, {"files": {"f": {"contains": ["x"]}}}, "mkfifo f")
        assert reward == 0.0 and state["files"] == {"f": "<special>"}
        assert time.monotonic() - start < 5.0  # a reader of the fifo would block for good
        rss = peak_rss_mib()
        _, reward, _, state = run(env, {"files": {"b": {"contains": ["x"]}}}, f"ln -s {big} b")
        assert reward == 0.0
        # A huge sparse file inside the root (made host-side: the sandbox caps file sizes).
        env.reset(options={"task": task({"files": {"huge": {"contains": ["\0"]}}})})
        with open(env.root / "huge", "wb") as fh:
            fh.truncate(1 << 40)  # 1 TiB, sparse
        start = time.monotonic()
        _, reward, _, _, _ = env.step("true")
        files = env.privileged_state()["files"]
        assert reward == 0.0 and files["huge"].startswith(f"{1 << 40}B ")
        assert time.monotonic() - start < 5.0
        assert peak_rss_mib() - rss < 200, "the host read a huge file into memory"
    finally:
        env.close()


@needs_sandbox
def test_a_2000_level_tree_neither_breaks_the_episode_nor_leaks_the_root() -> None:
    # On tmpfs when there is one: ext4 with discard takes seconds per 1,000 rmdir (rm -rf too).
    parent = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    env = TerminalEnv(limits=Limits(command_timeout_s=10.0), root_parent=parent)
    try:
        env.reset()
        root = env.root
        obs, _, _, _, _ = env.step("mkdir -p $(printf 'd/%.0s' $(seq 2000)) && echo made")
        assert obs.text.startswith("made\n")
        obs, _, _, _, _ = env.step("ls")  # freeze_times and the snapshot walk the tree
        assert obs.text == "d\nuser@sandbox:~$ "
        files = env.privileged_state()["files"]
        assert files["d"] == "<dir>" and files["<not entered>"] == "1"
        assert len(files) <= 200 + 2
        obs, _, _, _, _ = env.step("exit")  # a new shell starts on the deep tree
        assert "a new shell was started" in obs.text
        assert env.step("ls d/d/d")[0].text == "d\nuser@sandbox:~$ "
        env.reset()  # deletes the deep root (iteratively)
        assert not root.exists()
        root = env.root
        env.step("mkdir -p $(printf 'e/%.0s' $(seq 2000))")
    finally:
        env.close()
    assert not root.exists()


def test_remove_tree_restores_permissions_and_never_follows_links(tmp_path: Path) -> None:
    outside = tmp_path / "keep"
    outside.mkdir()
    (outside / "kept.txt").write_text("x")
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("y")
    (root / "link").symlink_to(outside)
    os.mkfifo(root / "fifo")
    (root / "a").chmod(0o000)
    remove_tree(root)
    assert not root.exists() and (outside / "kept.txt").read_text() == "x"
    remove_tree(root)  # gone already: no error


def test_check_and_snapshot_of_a_root_made_on_the_host(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "docs").mkdir()
    (root / "docs" / "a.txt").write_text("hello\n")
    (root / "via").symlink_to(secret.parent, target_is_directory=True)
    assert check_success(root, {"files": {"docs/a.txt": {"equals": "hello\n"}}}, "", "/")
    assert not check_success(root, {"files": {"via/secret.txt": {"contains": [SECRET]}}}, "", "/")
    assert not check_success(root, {"dirs": ["via"]}, "", "/")  # a link is not a directory
    assert check_success(root, {"exists": ["via"]}, "", "/")  # but it exists, as lexists says
    assert check_success(root, {"absent": ["via/secret.txt"]}, "", "/")  # links are not followed
    shot = snapshot(root)
    assert shot["via"] == f"-> {secret.parent}" and "via/secret.txt" not in shot


BAD_TASKS = [
    ({"dirs": "docs"}, {}, "task.setup['dirs']: expected a list of relative paths"),
    ({"files": ["a.txt"]}, {}, "task.setup['files']: expected an object {path: text}"),
    ({"files": {"a.txt": 3}}, {}, "task.setup['files']['a.txt']: expected the file's text"),
    ({"files": {"a": "x", "a/b": "y"}}, {}, "task.setup: 'a' is a file but 'a/b' is under it"),
    ({"dirs": ["a"], "files": {"a": "x"}}, {}, "task.setup: 'a' is listed both as a directory and a file"),
    ({"files": {"../x": "y"}}, {}, "task.setup['files'] key: expected a relative path"),
    ({"dirs": ["/etc"]}, {}, "task.setup['dirs'][0]: expected a relative path"),
    ([], {}, "1 validation error for Task\nsetup"),
    ({}, {"absent": ["../../etc/passwd"]}, "task.check['absent'][0]: expected a relative path"),
    ({}, {"files": {"/etc/shadow": {"contains": ["root"]}}}, "task.check['files'] key"),
    ({}, {"files": {"a": {"has": ["x"]}}}, "task.check['files']['a']: expected an object with"),
    ({}, {"files": {"a": {"contains": "x"}}}, "task.check['files']['a']['contains']: expected a"),
    ({}, {"cwd": "docs"}, "task.check['cwd']: expected an absolute directory path"),
    ({}, {"output_regex": "("}, "task.check['output_regex']: '(' is not a regular expression RE2"),
    ({}, {"output_regex": r"(a)\1"}, r"task.check['output_regex']: '(a)\\1' is not a regular "
     r"expression RE2 runs in linear time (invalid escape sequence: \1); backreferences"),
    ({}, {"output_contains": "x"}, "task.check['output_contains']: expected a list of strings"),
]


@needs_sandbox
@pytest.mark.parametrize(("setup", "check", "message"), BAD_TASKS)
def test_bad_tasks_are_refused_at_reset_naming_the_field(
    setup, check, message, tmp_path: Path
) -> None:
    env = TerminalEnv(root_parent=str(tmp_path))
    bad = {"id": "bad", "domain": "terminal", "instruction": "-", "setup": setup, "check": check}
    try:
        with pytest.raises(ValueError, match="^" + re.escape(message)):
            env.reset(options={"task": bad})
        assert list(tmp_path.iterdir()) == [] and env.root is None  # no root was made
    finally:
        env.close()


@needs_sandbox
def test_what_the_agent_gets_holds_no_host_path() -> None:
    env = TerminalEnv()
    try:
        obs, info = env.reset(options={"task": task({"exists": ["x"]}, {"files": {"a": "1\n"}})})
        obs2, _, _, _, info2 = env.step("touch x")
        shown = repr((obs, obs.state, info, obs2, obs2.state, info2))
        assert str(env.root) not in shown and "agentworld-ep-" not in shown
        assert info == {"sandbox": env._shell.kind, "task_id": "attack", "instruction": "-"}
        assert set(obs2.state) == {"cwd", "exit_code"} and info2["success"] is True
        assert env.privileged_state()["files"] == {"a": "2B e5fa44f2b3", "x": "0B da39a3ee5e"}
    finally:
        env.close()


def test_a_dead_session_with_a_deep_tree_is_swept() -> None:
    """A collector killed mid-episode leaves its session directory; the next process sweeps it
    whatever the agent built there (os.walk/shutil.rmtree recursed past 1,000 levels)."""
    from agentworld.domains.terminal.roots import sweep_dead_sessions

    parent = Path(tempfile.mkdtemp(dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    try:
        dead = parent / "agentworld-run-999999999-1-k3x9q_a0"
        (dead / "agentworld-ep-x").mkdir(parents=True)
        fd = os.open(dead / "agentworld-ep-x", os.O_RDONLY)
        for _ in range(2000):
            os.mkdir("d", dir_fd=fd)
            fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
            os.close(old)
        os.close(fd)
        assert sweep_dead_sessions(str(parent)) == [str(dead)]
        assert list(parent.iterdir()) == []
    finally:
        remove_tree(parent)
