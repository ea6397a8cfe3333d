"""Attacks on the sandbox's pid 1, its terminal and its prompt (issue 30, items 2, 7 and 8),
tried for real in every sandbox kind this machine offers.

Under bubblewrap's own reaper the agent could ``ptrace`` pid 1 (same uid, same user
namespace), clear its parent-death signal and outlive the host; it could read the driver's
environment in ``/proc/1/environ``, type into its own terminal with ``TIOCSTI``, end a step
early by printing the next prompt marker from a builtin, and pass a navigation check by
setting ``$PWD``.
"""

from __future__ import annotations

import os
import time

from agentworld.core.types import Action
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.reaper import namespace_processes

PTRACE_ATTACH = (
    "python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); "
    "print(l.ptrace(16, 1, 0, 0), ctypes.get_errno())'"
)
TIOCSTI = (
    "python3 -c 'import fcntl, termios\n"
    "try:\n    fcntl.ioctl(0, termios.TIOCSTI, b\"X\"); print(\"typed\")\n"
    "except OSError as e:\n    print(e.errno)'"
)


def run(env: TerminalEnv, text: str):
    obs, _, _, _, info = env.step(Action(text=text))
    return obs.text, info


def test_pid_1_cannot_be_traced_or_read(env):
    text, _ = run(env, PTRACE_ATTACH)
    assert text.startswith("-1 1\n"), text  # EPERM
    text, _ = run(env, "cat /proc/1/environ")
    assert "Permission denied" in text and "/work" not in text and "venv" not in text, text
    text, _ = run(env, "ps -o pid=,args= -p 1")
    assert text.split("\n")[0].split() == ["1", "init"], text


def test_the_host_kills_the_whole_namespace_on_close(env):
    run(env, "nohup sleep 999 > /dev/null 2>&1 &")  # killed at the prompt anyway
    outer = env._shell._child.pid
    init, others = namespace_processes(outer)
    assert init is not None and others, "the sandbox has a pid 1 and a shell"
    ns = os.readlink(f"/proc/{init}/ns/pid")
    env.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _in_namespace(ns):
        time.sleep(0.02)
    assert not _in_namespace(ns)


def _in_namespace(ns: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.readlink(f"/proc/{entry.name}/ns/pid") == ns:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_tiocsti_cannot_type_into_the_terminal(env):
    text, _ = run(env, TIOCSTI)
    assert text.startswith("1\n"), text  # EPERM from the seccomp filter
    text, _ = run(env, "echo next")
    assert text == "next\nuser@sandbox:~$ ", text


def test_a_forged_marker_with_the_next_number_does_not_end_the_step(env):
    """The counter in the marker is the shell's own variable: a builtin can print the very
    marker the next prompt will show. A step still ends only at a shell waiting for input."""
    forge = 'eval "$PROMPT_COMMAND"; echo "${PS1@P}"; while :; do :; done'
    text, info = run(env, forge)
    assert info["timed_out"], text
    text, _ = run(env, "echo next")
    assert text.endswith("next\nuser@sandbox:~$ "), text


def test_cwd_is_the_real_directory_not_pwd(env):
    run(env, "mkdir -p a/b && cd a/b")
    assert env.privileged_state()["cwd"] == "/home/agent/a/b"
    run(env, "PWD=/etc")
    assert env.privileged_state()["cwd"] == "/home/agent/a/b"
    run(env, "cd / && PWD=/home/agent/a/b")
    assert env.privileged_state()["cwd"] == "/"
