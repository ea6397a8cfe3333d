"""The episode root's disk is bounded or the sandbox is refused, and its memory is bounded
(issue 30, items 3 and 4; issue 43 item 5: an ordinary user's default,
tests/domains/test_terminal_user_bounds.py).

Before: episode roots sat on the host's ``/`` (2.1 GiB in 0.25 s with ``fallocate`` in a
loop of 16 MiB files, 200,000 files in 4.4 s), and without a cgroup a sandbox ran with
per-process limits only, silently.
"""

from __future__ import annotations

import os

import pytest
from agentworld.core.types import Action
from agentworld.domains.terminal import ptysandbox as ptysandbox_module
from agentworld.domains.terminal.disk import (
    UNBOUNDED_ENV,
    UnboundedSandboxError,
    disk_support,
    mounts_under,
    require,
)
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.episode_root import disk_kind
from agentworld.domains.terminal.sandbox import SANDBOX_ENV_VAR, Limits, detect_sandbox
from agentworld.domains.terminal.tools import find_tool
from sandboxes import SANDBOXES

needs_disk = pytest.mark.skipif(
    disk_support() is not None, reason=f"no bounded episode disk here: {disk_support()}"
)


def run(env: TerminalEnv, text: str) -> str:
    return env.step(Action(text=text))[0].text


@needs_disk
def test_the_disk_of_an_episode_is_bounded(sandbox_kind):
    limits = Limits(disk_bytes=40 << 20, disk_inodes=600, command_timeout_s=10)
    env = TerminalEnv(limits=limits, sandbox=sandbox_kind)
    env.reset()
    try:
        root = str(env.root)
        assert mounts_under(root) == [root]
        text = run(env, "for i in 1 2 3 4; do fallocate -l 15M f$i || break; done")
        assert text == "fallocate: fallocate failed: No space left on device\nuser@sandbox:~$ "
        used = sum(os.lstat(os.path.join(root, n)).st_blocks * 512 for n in os.listdir(root))
        assert 30 << 20 < used <= 40 << 20
        text = run(env, "rm f*; mkdir d && cd d && for i in $(seq 1000); do : > f$i || break; done")
        assert text.startswith("bash: f") and "No space left on device" in text, text
        assert 500 < len(os.listdir(os.path.join(root, "d"))) < 600
        text = run(env, "cd ~ && stat -c %s .")  # ext4's directory size, as in a user's home
        assert text == "4096\nuser@sandbox:~$ ", text
    finally:
        env.close()
    assert mounts_under(root) == [] and not os.path.exists(root)


def test_an_unbounded_disk_is_refused_unless_accepted(monkeypatch):
    monkeypatch.delenv(UNBOUNDED_ENV, raising=False)
    with pytest.raises(UnboundedSandboxError) as err:
        require("disk", "no loop devices", "modprobe loop")
    message = str(err.value)
    assert message == (
        "the terminal sandbox cannot bound its disk here (no loop devices); fix: modprobe loop; "
        f"or set {UNBOUNDED_ENV}=disk to accept per-file limits only"
    )
    monkeypatch.setenv(UNBOUNDED_ENV, "memory, disk")
    require("disk", "no loop devices", "modprobe loop")


def test_a_sandbox_without_a_memory_cgroup_runs_with_per_process_limits(monkeypatch):
    """Where no cgroup and no systemd user scope can bound the sandbox as a whole, it runs with
    RLIMIT_AS and RLIMIT_NPROC, with nothing to set (before: refused unless
    AGENTWORLD_TERMINAL_UNBOUNDED=memory, which then also named the disk)."""
    monkeypatch.setattr(ptysandbox_module, "make_cgroup", lambda *_: None)
    monkeypatch.setattr(ptysandbox_module, "memory_bound", lambda: "rlimit")
    monkeypatch.delenv(UNBOUNDED_ENV, raising=False)
    if disk_kind() is None:
        monkeypatch.setenv(UNBOUNDED_ENV, "disk")
    env = TerminalEnv(limits=Limits(command_timeout_s=10))
    env.reset()
    try:
        text = run(env, "tail -n 1 /dev/zero; echo status=$?")
        assert text == "tail: memory exhausted\nstatus=1\nuser@sandbox:~$ ", text
    finally:
        env.close()


@needs_disk
def test_mountinfo_shows_no_host_path(env):
    """The episode root and the identity files are file systems of their own, so the sandbox's
    mount table names no host directory (before: the session directory, with the driver's pid)."""
    text = run(env, "grep -c -e agentworld-run -e /tmp/ -e /work /proc/self/mountinfo; cat /etc/hostname")
    assert text == "0\nsandbox\nuser@sandbox:~$ ", text
    long_action = "x=" + "a" * 5000 + "; echo ${#x}"  # passed through the identity tmpfs
    assert run(env, long_action) == "5000\nuser@sandbox:~$ "


@pytest.mark.skipif(not any(k == "unshare" for k in SANDBOXES), reason="no unshare sandbox here")
def test_programs_in_sbin_are_found_with_a_users_path(monkeypatch):
    """An ordinary user's PATH has no /usr/sbin: pivot_root and mkfs.ext4 are still found, by
    absolute path (before: "unshare: pivot_root not installed", issue 46 item 1)."""
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    monkeypatch.setenv(SANDBOX_ENV_VAR, "unshare")
    assert find_tool("pivot_root") in ("/usr/sbin/pivot_root", "/sbin/pivot_root")
    assert detect_sandbox.__wrapped__() == "unshare"


def test_no_sandbox_is_one_line_with_its_fix(monkeypatch):
    monkeypatch.setenv(SANDBOX_ENV_VAR, "docker")
    with pytest.raises(RuntimeError) as err:
        detect_sandbox.__wrapped__()
    assert str(err.value) == (
        f"no sandbox for the terminal domain: {SANDBOX_ENV_VAR}='docker' is not a sandbox "
        f"(bwrap or unshare); fix: unset {SANDBOX_ENV_VAR}"
    )


def test_domains_says_no_when_the_sandbox_cannot_start(monkeypatch):
    """``agentworld domains`` lists a domain whose environment cannot be made here as not
    running, with its one-line reason first (before: "yes" beside "sandbox: unavailable")."""
    from agentworld.app.cli import app
    from typer.testing import CliRunner

    monkeypatch.setenv(SANDBOX_ENV_VAR, "none")
    detect_sandbox.cache_clear()
    try:
        result = CliRunner().invoke(app, ["domains"], env={"COLUMNS": "250"})
    finally:
        detect_sandbox.cache_clear()
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip()
            for line in result.output.splitlines() if line.count("│") == 5}
    assert rows["terminal"] == "no (see below)" and rows["tty"] == "no (see below)"
    assert rows["cliffwalking"] == "yes" and rows["os"] == "no (data-only)"
    facts = " ".join(result.output.split("\nterminal\n", 1)[1].split())  # wrapped to the width
    assert facts.startswith(f"unavailable: no sandbox for the terminal domain: {SANDBOX_ENV_VAR}="
                            f"'none' is not a sandbox (bwrap or unshare); fix: unset "
                            f"{SANDBOX_ENV_VAR} sandbox: unavailable ("), facts[:300]
