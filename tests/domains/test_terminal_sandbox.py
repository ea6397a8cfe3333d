"""Real bash in the real sandboxes: prompt/observation format, isolation, limits, recovery.

Every test runs in each sandbox this machine has (bubblewrap, the unshare fallback): both
must show the agent the same terminal.
"""

from __future__ import annotations

import os
import signal
import socket
import time
import uuid
from pathlib import Path

import pytest
from agentworld.core.protocols import Environment
from agentworld.core.types import Action, Task
from agentworld.domains.terminal.disk import disk_support
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.fs import apply_setup
from agentworld.domains.terminal.shell import GRACE_S
from loopback import accepting


def run(env: TerminalEnv, text: str):
    obs, reward, terminated, truncated, info = env.step(Action(text=text))
    return obs, info


def test_observation_format_and_state(env):
    assert isinstance(env, Environment)
    obs, info = env.reset(seed=0)
    assert obs.text == "user@sandbox:~$ "
    assert obs.state == {"cwd": "/home/agent", "exit_code": 0}  # the file tree is privileged
    assert env.privileged_state() == {"cwd": "/home/agent", "exit_code": 0, "files": {}}
    assert info["sandbox"] == env.sandbox and "root" not in info
    obs, _ = run(env, "mkdir a && ls")
    assert obs.text == "a\nuser@sandbox:~$ "
    assert env.privileged_state()["files"] == {"a": "<dir>"}
    obs, _ = run(env, "cd a")
    assert obs.text == "user@sandbox:~/a$ "
    obs, _ = run(env, "pwd")
    assert obs.text == "/home/agent/a\nuser@sandbox:~/a$ "
    assert obs.state["cwd"] == "/home/agent/a"
    obs, info = run(env, "ls nothere")
    assert obs.text == (
        "ls: cannot access 'nothere': No such file or directory\n[2] user@sandbox:~/a$ "
    )
    assert obs.state["exit_code"] == 2 and info["exit_code"] == 2
    obs, _ = run(env, "printf abc")
    assert obs.text == "abcuser@sandbox:~/a$ "
    obs, _ = run(env, "whoami; hostname")
    assert obs.text == "user\nsandbox\nuser@sandbox:~/a$ "


def test_setup_files_have_fixed_mtimes(env):
    task = Task(
        id="t",
        domain="terminal",
        instruction="look",
        setup={"dirs": ["docs"], "files": {"docs/a.txt": "one\ntwo\n"}},
    )
    env.reset(options={"task": task})
    obs, _ = run(env, "ls -l docs")
    assert obs.text == "total 4\n-rw-r--r-- 1 user user 8 Jan  1  2024 a.txt\nuser@sandbox:~$ "
    obs, _ = run(env, "cat docs/a.txt")
    assert obs.text == "one\ntwo\nuser@sandbox:~$ "


ORDER_SETUP = {
    "dirs": ["zeta", "a-b", "a/sub"],
    "files": {"m.txt": "x\n", "a/z.txt": "z\n", "a/sub/f.txt": "f\n", "b.txt": "b\n"},
}
SORTED_FIND = [".", "./a", "./a/sub", "./a/sub/f.txt", "./a/z.txt", "./a-b", "./b.txt",
               "./m.txt", "./zeta"]  # fmt: skip


def test_find_lists_setup_in_name_order(env):
    """``find`` prints readdir order. An episode root's own file system lists in creation
    order, and the set-up is created so that it is name order, the same on every machine (a
    hash order, as on a host's ext4, cannot be simulated); an entry a command creates lists
    last."""
    if disk_support() is not None:
        pytest.skip(f"no episode file system of its own here: {disk_support()}")
    task = Task(id="t", domain="terminal", instruction="look", setup=ORDER_SETUP)
    env.reset(options={"task": task})
    obs, _ = run(env, "find .")
    assert obs.text.splitlines()[:-1] == SORTED_FIND
    obs, _ = run(env, "touch new.txt && find . -maxdepth 1")
    top = [".", "./a", "./a-b", "./b.txt", "./m.txt", "./zeta"]
    assert obs.text.splitlines()[:-1] == [*top, "./new.txt"]


@pytest.mark.parametrize("order", ["oldest_first", "newest_first"])
def test_apply_setup_creates_entries_in_listing_order(tmp_path, order):
    """Each directory's entries are created so that a file system listing in creation order
    (``order``) lists them by name: checked on the sequence of creations, for both kernels'
    rules (a real tmpfs checks one of them in the test above)."""
    created: list[str] = []
    real_mkdir, real_write = Path.mkdir, Path.write_text

    def mkdir(self, *args, **kwargs):
        rel, new = self.relative_to(tmp_path).as_posix(), not self.exists()
        real_mkdir(self, *args, **kwargs)  # with parents=True it calls itself
        if new and rel not in created:
            created.append(rel)

    def write_text(self, *args, **kwargs):
        real_write(self, *args, **kwargs)
        created.append(self.relative_to(tmp_path).as_posix())

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "mkdir", mkdir)
        patch.setattr(Path, "write_text", write_text)
        apply_setup(tmp_path, ORDER_SETUP, order)
    assert sorted(created) == sorted(path[2:] for path in SORTED_FIND[1:])
    listed = created[::-1] if order == "newest_first" else created
    for directory in ("", "a", "a/sub"):
        names = [p.rpartition("/")[2] for p in listed if p.rpartition("/")[0] == directory]
        assert names == sorted(names), directory


def test_file_times_stay_at_the_episode_clock(env):
    """Entries a command creates or changes are re-dated after it, so later ``ls -l`` output
    does not depend on when the episode ran (``..`` included)."""
    env.reset(seed=0)
    run(env, "touch new.txt && mkdir d && echo x >> d/f")
    obs, _ = run(env, "ls -l new.txt d/f")
    assert obs.text == (
        "-rw-r--r-- 1 user user 2 Jan  1  2024 d/f\n"
        "-rw-r--r-- 1 user user 0 Jan  1  2024 new.txt\nuser@sandbox:~$ "
    )
    obs, _ = run(env, "ls -ld --time-style=+%F_%T d")
    assert obs.text.split()[-3:-1] == ["2024-01-01_00:00:00", "d"]
    obs, _ = run(env, "ls -ld --time-style=+%F_%T . ..")  # sizes vary by file system
    lines = obs.text.splitlines()
    assert [line.split()[-2:] for line in lines[:2]] == [
        ["2024-01-01_00:00:00", "."],
        ["2024-01-01_00:00:00", ".."],
    ]


def test_no_network(env):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    with accepting(server, timeout_s=1) as accepted:
        obs, _ = run(env, f"echo hi > /dev/tcp/127.0.0.1/{port}")
        # Loopback only: refused. Under unshare `lo` stays down where `ip` is missing.
        errors = ("Connection refused",)
        if not env.sandbox.startswith("bubblewrap"):
            errors += ("Network is unreachable",)
        assert any(e in obs.text for e in errors) and obs.state["exit_code"] == 1
        obs, _ = run(env, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
        assert obs.text == "lo\nuser@sandbox:~$ "
    assert accepted == []


def test_writes_outside_root_are_blocked(env):
    name = f"aw_probe_{uuid.uuid4().hex}"
    obs, _ = run(env, f"touch /etc/{name} /work/{name}")
    assert "Read-only file system" in obs.text or "Permission denied" in obs.text
    assert obs.state["exit_code"] == 1
    obs, _ = run(env, f"touch /tmp/{name} && ls /tmp")
    assert obs.text.startswith(name)
    for path in (f"/etc/{name}", f"/work/{name}", f"/tmp/{name}"):
        assert not os.path.exists(path)


def test_fork_bomb_is_contained(env):
    start = time.monotonic()
    obs, _ = run(env, ":(){ :|:& };:")
    assert obs.text.endswith("user@sandbox:~$ ")
    obs, _ = run(env, "echo ok")
    assert obs.text == "ok\nuser@sandbox:~$ "
    obs, _ = run(env, "ls -a")
    assert obs.text == ".  ..\nuser@sandbox:~$ "
    assert time.monotonic() - start < 20


def test_process_limit_applies(env):
    obs, _ = run(env, "ulimit -u")
    assert obs.text.splitlines()[0].isdigit() and int(obs.text.splitlines()[0]) > 0


def test_timeout_interrupts_and_env_stays_usable(env):
    start = time.monotonic()
    obs, info = run(env, "sleep 999")
    # The command timeout (1.5 s) plus at most the grace for the prompt after ^C.
    elapsed = time.monotonic() - start
    assert elapsed < 1.5 + GRACE_S + 2
    assert info["timed_out"] and not info["restarted"], (elapsed, obs.text)
    assert obs.text == ("^C\n[command timed out after 1.5 s: interrupted]\n[130] user@sandbox:~$ ")
    obs, _ = run(env, "echo ok")
    assert obs.text == "ok\nuser@sandbox:~$ "


def test_a_missed_interrupt_is_repeated(env):
    """A command that survives the first ^C (as one still starting on a loaded host does) gets
    another one: the episode goes on in the same shell instead of a restarted one."""
    run(env, "cd /tmp")
    survive_once = "bash -c 'trap \"trap - INT\" INT; while :; do sleep 0.1; done'"
    obs, info = run(env, survive_once)
    assert info["timed_out"] and not info["restarted"], obs.text
    assert obs.text.endswith("[130] user@sandbox:/tmp$ ")
    obs, _ = run(env, "echo ok")
    assert obs.text == "ok\nuser@sandbox:/tmp$ "


def test_signals_have_their_default_action_whatever_the_collector_ignores(env):
    """Ignored signals survive exec. Python ignores SIGPIPE, and a background job or a test
    worker may ignore SIGINT. The sandbox resets them, as a terminal's programs expect."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        env.reset()
        obs, _ = run(env, "grep SigIgn /proc/self/status")
        ignored = int(obs.text.split()[1], 16)
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE, signal.SIGXFSZ):
            assert not ignored & (1 << (sig - 1)), sig
        obs, _ = run(env, "yes | head -1")
        assert obs.text == "y\nuser@sandbox:~$ "  # no "Broken pipe"
        obs, info = run(env, "sleep 999")
        assert info["timed_out"] and not info["restarted"], obs.text
    finally:
        signal.signal(signal.SIGINT, previous)


def test_unclosed_quote_is_cancelled(env):
    start = time.monotonic()
    obs, info = run(env, 'echo "abc')
    assert obs.text == "> ^C\n[130] user@sandbox:~$ "
    assert not info["timed_out"] and time.monotonic() - start < 1.5


def test_interactive_program_restarts_shell_in_same_dir(env):
    run(env, "mkdir d; cd d; touch f")
    obs, info = run(env, "python3")
    assert info["timed_out"] and info["restarted"]
    assert obs.text.endswith(
        "[command timed out after 1.5 s: shell restarted]\n[130] user@sandbox:~/d$ "
    )
    obs, _ = run(env, "ls")
    assert obs.text == "f\nuser@sandbox:~/d$ "


@pytest.mark.parametrize("command", ["exit", "kill -9 $$", "exec true"])
def test_shell_exit_starts_new_shell(env, command):
    run(env, "touch keep")
    obs, info = run(env, command)
    assert info["restarted"] and not info["timed_out"]
    assert obs.text.endswith("[shell exited: a new shell was started]\nuser@sandbox:~$ ")
    obs, _ = run(env, "ls")
    assert obs.text == "keep\nuser@sandbox:~$ "


def test_huge_output_is_truncated(env):
    obs, info = run(env, "seq 1 100000")
    assert info["output_truncated"] and not info["timed_out"]
    assert obs.text.endswith("[output truncated after 4096 bytes]\nuser@sandbox:~$ ")
    assert obs.text.startswith("1\n2\n3\n") and len(obs.text.encode()) < 4096 + 100
    obs, info = run(env, "head -c 3000000 /dev/urandom")
    assert info["output_truncated"] and obs.text.endswith("user@sandbox:~$ ")


def test_root_is_removed_at_close():
    env = TerminalEnv()
    env.reset()
    root = env.root  # the host path: an attribute, never in what the agent gets
    assert os.path.isdir(root)
    run(env, "mkdir -p x/y && chmod 000 x")
    env.close()
    assert not os.path.exists(root)


def test_the_prompt_read_is_learned_from_one_sample(env, monkeypatch):
    """The shell's prompt read is learned from a single look at ``/proc``: a first look that
    finds the shell still running (it has just printed its first prompt) is not kept as the
    read to wait for, which made every later prompt go unrecognised (CI, a loaded machine)."""
    from agentworld.domains.terminal import shell as shell_module

    real_read_call, looks = shell_module.read_call, []

    def first_look_running(pid: int):
        looks.append(pid)
        return ("running", "", "", "") if len(looks) == 1 else real_read_call(pid)

    monkeypatch.setattr(shell_module, "read_call", first_look_running)
    env.reset(seed=0)
    assert len(looks) >= 2  # the running look was passed over
    started = time.monotonic()
    obs, info = run(env, "echo learned")
    assert obs.text == "learned\nuser@sandbox:~$ " and not info["timed_out"]
    assert time.monotonic() - started < GRACE_S
