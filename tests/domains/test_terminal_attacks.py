"""Attacks on the terminal sandbox, tried for real in every sandbox kind this machine offers.

Each test runs the attack in a real sandboxed bash (bubblewrap, and the ``unshare`` fallback)
and asserts on what the host sees afterwards: its files, its sockets, its processes. The
attacks are those of issue 22 (mount undoing, host file and socket access, surviving
processes, long actions, prompt-marker forgery, disabled per-step cleanup).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from agentworld.core.types import Action
from agentworld.domains.terminal.cgroup import cgroup_support
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.reaper import kill_leftovers, namespace_processes
from agentworld.domains.terminal.roots import sweep_dead_sessions
from agentworld.domains.terminal.sandbox import Limits
from loopback import accepting


def run(env: TerminalEnv, text: str):
    obs, _, _, _, info = env.step(Action(text=text))
    return obs.text, info


@pytest.fixture
def host_secret():
    """A world-readable, world-writable host file in the host's /tmp, as another episode's
    root or a user's file would be."""
    path = Path("/tmp") / f"aw-secret-{uuid.uuid4().hex}"
    path.write_text("host secret\n")
    path.chmod(0o666)
    yield path
    path.unlink(missing_ok=True)


def test_mounts_cannot_be_undone(env, host_secret):
    """``umount`` of /tmp, /home and /etc/passwd fails, and nothing of the host shows."""
    text, _ = run(env, f"umount /tmp; umount -l /tmp; cat {host_secret}")
    assert "host secret" not in text
    text, _ = run(env, "umount -l /home; umount /etc/passwd; umount -l /etc/passwd; ls /home")
    assert text.endswith("agent\nuser@sandbox:~$ ")
    text, _ = run(env, "cat /etc/passwd")
    assert "daemon:" not in text and "user:x:1000:1000" in text
    text, _ = run(env, f"umount -l /tmp; echo pwned >> {host_secret}")
    assert host_secret.read_text() == "host secret\n"


def test_no_capabilities_are_left(env):
    text, _ = run(env, "grep -E '^Cap(Eff|Prm)' /proc/self/status")
    assert text.split() == ["CapPrm:", "0" * 16, "CapEff:", "0" * 16, "user@sandbox:~$"]
    text, info = run(env, "mount -t tmpfs none /home/agent")
    assert info["exit_code"] != 0
    text, info = run(env, "id -u; touch /newfile")
    assert text.startswith("1000\n") and info["exit_code"] != 0


def test_a_nested_namespace_reveals_nothing_of_the_host(env, host_secret):
    """A user namespace of its own gives the agent capabilities, but only over the sandbox's
    own mount tree: the host's /tmp is not under it."""
    script = f"umount -l /tmp; umount -l /; cat {host_secret}; ls /tmp /work /root"
    text, _ = run(env, f"unshare -Urm sh -c '{script}' 2>&1")
    assert "host secret" not in text


def test_other_episodes_are_out_of_reach(env):
    other = TerminalEnv(sandbox=env.sandbox)
    try:
        other.reset()
        run(other, "echo theirs > mine.txt")
        text, _ = run(env, f"cat {other.root}/mine.txt; ls /tmp; umount -l /tmp; ls -a /tmp")
        assert "theirs" not in text and "agentworld-ep" not in text.partition("\n")[2]
    finally:
        other.close()


def test_host_files_are_not_readable(env):
    """World-readable host files outside what a shell needs (this checkout) stay hidden."""
    here = Path(__file__).resolve()
    text, _ = run(env, f"cat {here}; ls /work /root /srv /opt /mnt /media 2>&1 | head -3; ls /")
    assert "Attacks on the terminal sandbox" not in text
    listed = text.splitlines()[-2].split()
    assert set(listed) <= {"bin", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32",
                           "proc", "run", "sbin", "tmp", "usr", "var"}  # fmt: skip


@pytest.mark.parametrize("where", ["/var/tmp", "/run", "/tmp", "/dev/shm"])
def test_host_unix_sockets_are_unreachable(env, where):
    if not os.access(where, os.W_OK):
        pytest.skip(f"{where} is not writable here")
    path = f"{where}/aw-sock-{uuid.uuid4().hex[:8]}"
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    os.chmod(path, 0o777)
    try:
        with accepting(server) as accepted:
            probe = (
                f"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); "
                "print('IN')"
            )
            text, _ = run(env, f'umount -l {where} 2>/dev/null; python3 -c "{probe}"')
            assert "IN\n" not in text
    finally:
        os.unlink(path)
    assert accepted == []


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.split(b"\0")[0] == marker.encode():
                found.append(int(entry.name))
    return found


def _gone(marker: str, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while _processes_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _survivor(marker: str) -> str:
    """A command that ignores INT, HUP and TERM and shows ``marker`` in its command line."""
    return f"(trap '' INT HUP TERM; exec -a {marker} sleep 999)"


def test_a_process_ignoring_signals_dies_with_its_shell(env):
    marker = f"aw-survivor-{uuid.uuid4().hex[:8]}"
    text, info = run(env, _survivor(marker))
    assert info["restarted"], text
    assert _gone(marker), "survived the restart after a timeout"
    run(env, f"nohup bash -c 'exec -a {marker} sleep 999' > /dev/null 2>&1 &")
    run(env, f"setsid bash -c 'exec -a {marker} sleep 999' > /dev/null 2>&1 &")
    assert _gone(marker), "a background job outlived its step"
    for _ in range(2):
        run(env, f"(trap '' INT HUP TERM; exec -a {marker} sleep 999) &")
    env.close()
    assert _gone(marker), "survived env.close()"


DRIVER = textwrap.dedent(
    """
    import os
    import sys
    from agentworld.core.types import Action
    from agentworld.domains.terminal.env import TerminalEnv
    env = TerminalEnv(sandbox=sys.argv[1])
    env.reset()
    print(env.root, flush=True)
    env.step(Action(text=os.environ["AW_COMMAND"]))
    """
)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
@pytest.mark.parametrize("foreground", ["nohup", "trap"])
def test_sandbox_dies_with_its_driver(sandbox_kind, sig, foreground):
    """SIGKILL or SIGTERM of the process driving the sandbox ends every process in it, and the
    episode root it leaves behind is removed by the next process."""
    marker = f"aw-driver-{uuid.uuid4().hex[:8]}"
    command = (
        f"nohup bash -c 'exec -a {marker} sleep 999'"
        if foreground == "nohup"
        else _survivor(marker)
    )
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, sandbox_kind],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "AW_COMMAND": command},
    )
    try:
        deadline = time.monotonic() + 30  # the driver imports gymnasium: slow on a busy machine
        while not _processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _processes_with(marker), "the command did not start"
    finally:
        driver.send_signal(sig)
        driver.wait(10)
    assert _gone(marker), f"{sandbox_kind}: survived {sig.name} of the driver ({foreground})"
    # The killed driver could not remove its episode root; the next process to start sweeps it.
    root = driver.stdout.readline().strip()
    driver.stdout.close()
    assert root and os.path.isdir(root)
    session = os.path.dirname(root)
    sweep_dead_sessions(os.path.dirname(session))  # (or a process started meanwhile did)
    assert not os.path.exists(session)


def test_long_action_runs_whole(env):
    """An action over the terminal's 4,095-byte line limit runs as recorded, not cut."""
    payload = "x" * 10_000
    text, info = run(env, f"echo {payload} | wc -c")
    assert text == "10001\nuser@sandbox:~$ " and info["exit_code"] == 0
    text, _ = run(env, f"A={payload}; echo ${{#A}}; cd /tmp")
    assert text == "10000\nuser@sandbox:/tmp$ "


@pytest.mark.parametrize(
    "forge", ['echo "${PS1@P}"', '/bin/echo "${PS1@P}"', "printf '%s\\n' \"${PS1@P}\""]
)
def test_a_forged_prompt_marker_does_not_end_the_step(env, forge):
    text, _ = run(env, f"{forge}; sleep 0.3; echo after")
    assert text.endswith("after\nuser@sandbox:~$ "), text
    text, _ = run(env, "echo next")
    assert text == "next\nuser@sandbox:~$ "


@pytest.mark.parametrize("disable", ["unset PROMPT_COMMAND", "ulimit -n 3", "PS1=x"])
def test_per_step_cleanup_cannot_be_disabled(env, disable):
    marker = f"aw-bg-{uuid.uuid4().hex[:8]}"
    run(env, disable)
    # Under `ulimit -n 3` the shell cannot open /dev/null for its own cleanup and says so.
    noise = "bash: /dev/null: Too many open files\n" if "ulimit" in disable else ""
    text, info = run(env, "false")
    assert info["exit_code"] == 1 and text == noise + "[1] user@sandbox:~$ ", text
    text, info = run(env, "true")
    assert info["exit_code"] == 0 and text == noise + "user@sandbox:~$ ", text
    run(env, f"bash -c 'exec -a {marker} sleep 999' &")
    assert _gone(marker, 2.0), "a background job outlived its step"


def test_odd_directory_names(env):
    """A working directory holding the marker's separators is reported as it is."""
    obs, _, _, _, info = env.step(Action(text="mkdir -p $'a\\x1fb:1:c' && cd $'a\\x1fb:1:c'"))
    assert info["exit_code"] == 0
    assert obs.state["cwd"] == "/home/agent/a\x1fb:1:c"
    text, _ = run(env, "cd ..; pwd")
    assert text == "/home/agent\nuser@sandbox:~$ "


def test_a_lone_surrogate_is_a_clear_error(env):
    with pytest.raises(ValueError, match="action"):
        env.step(Action(text="echo \ud800"))
    text, _ = run(env, "echo ok")
    assert text == "ok\nuser@sandbox:~$ "


def test_memory_is_bounded_for_the_sandbox_as_a_whole(sandbox_kind):
    """Four processes of 120 MiB each (each far under the per-process limit) do not all fit
    in a sandbox limited to 256 MiB as a whole."""
    if cgroup_support().startswith("none"):
        pytest.skip(f"no cgroup can be made here: {cgroup_support()}")
    limits = Limits(command_timeout_s=10, sandbox_memory_bytes=256 << 20)
    env = TerminalEnv(limits=limits, sandbox=sandbox_kind)
    try:
        env.reset()
        hold = "b = b'x' * (120 << 20); import time; time.sleep(2); print('held')"
        text, _ = run(env, f'for i in 1 2 3 4; do python3 -c "{hold}" & done; wait')
        held = text.splitlines().count("held")
        assert 0 < held <= 2 and "Killed" in text, text
        text, _ = run(env, "echo ok")
        assert text == "ok\nuser@sandbox:~$ "
    finally:
        env.close()


def test_the_host_kills_what_the_shell_left(env):
    """The host-side half of the per-step cleanup (``reaper.kill_leftovers``) finds every
    process of the sandbox's pid namespace but the shell, however it was started."""
    shell = env._shell
    assert shell is not None and shell._child is not None
    marker = f"aw-left-{uuid.uuid4().hex[:8]}"
    start = f"bash -c 'exec -a {marker} sleep 999'"
    foreground = f"{marker}-fg"
    shell._child.sendline(
        f"{start} & setsid {start} & ({start} &); bash -c 'exec -a {foreground} sleep 999'"
    )
    deadline = time.monotonic() + 10
    while (
        len(_processes_with(marker)) < 3 or not _processes_with(foreground)
    ) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = _processes_with(marker) + _processes_with(foreground)
    assert len(left) == 4  # three background sleeps (one orphaned, one in its own session) + fg
    _, found = namespace_processes(shell._child.pid)
    assert set(left) <= set(found) and shell._shell_pgrp in found
    # At least one signal: once the foreground sleep dies, the shell's own cleanup
    # (``kill -9 -1`` before its prompt) may kill the rest before the host gets to them.
    assert kill_leftovers(shell._child.pid, shell._shell_pgrp) >= 1
    assert _gone(marker, 2.0)
    assert _gone(foreground, 2.0)
    text, _ = run(env, "echo ok")
    assert text.endswith("ok\nuser@sandbox:~$ ")
