"""An ordinary user's default (issue 43 item 5, issue 46 item 1): with nothing set, the terminal
sandbox runs bounded, and ``agentworld domains`` and ``agentworld doctor`` say which bounds hold.

Before: as a non-root user the sandbox was refused unless ``AGENTWORLD_TERMINAL_UNBOUNDED=
disk,memory`` was set, which removed the bounds; ``pivot_root`` (in ``/usr/sbin``, not on a
user's ``PATH``) was reported "not installed". These tests run the real programs as the local
user with uid 1000 (tests/as_user.py) with a user's ``PATH`` and no ``AGENTWORLD_*`` variable.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest
from as_user import SKIP, USER, run_as_user, user_dir
from sandboxes import SANDBOXES

pytestmark = pytest.mark.skipif(SKIP is not None, reason=f"cannot run as an ordinary user: {SKIP}")


def _userns() -> str | None:
    """Why the user cannot make a user and mount namespace with a tmpfs, or ``None``."""
    if SKIP is not None:
        return SKIP
    unshare = shutil.which("unshare", path="/usr/bin:/bin")
    if unshare is None:
        return "unshare (util-linux) is not installed"
    done = run_as_user([
        "import subprocess, sys; sys.exit(subprocess.run([sys.argv[1], '--user', "
        "'--map-root-user', '--mount', 'sh', '-c', 'mount -t tmpfs -o size=1m tmpfs /mnt']"
        ").returncode)", unshare], user_dir(), timeout=60)
    return None if done.returncode == 0 else f"no user namespaces here: {done.stderr.strip()}"


USERNS = _userns()
needs_userns = pytest.mark.skipif(USERNS is not None, reason=str(USERNS))

BOUNDS = """
import json, os, sys, time
from agentworld.core.types import Action
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.limits import Limits
env = TerminalEnv(limits=Limits(disk_bytes=40 << 20, disk_inodes=600, command_timeout_s=15))
env.reset()
run = lambda text: env.step(Action(text=text))[0].text
root = str(env.root)
out = {"root": root, "unbounded": os.environ.get("AGENTWORLD_TERMINAL_UNBOUNDED")}
out["fallocate"] = run("for i in 1 2 3 4; do fallocate -l 15M f$i || break; done")
out["used"] = sum(os.lstat(os.path.join(root, n)).st_blocks * 512 for n in os.listdir(root))
out["inodes"] = run("rm f*; mkdir d && cd d && for i in $(seq 1000); do : > f$i || break; done")
out["count"] = len(os.listdir(os.path.join(root, "d")))
out["df"] = run("cd ~ && df --output=fstype,size -B1M . | tail -1")
out["tail"] = run("tail -n 1 /dev/zero; echo status=$?")
out["python"] = run("python3 -c 'b = bytearray(1536 << 20)'; echo status=$?")
host = root.split("/root", 1)[1]
out["host_dir"] = os.listdir(host)
env.close()
out["closed"] = os.path.exists(host)
print(json.dumps(out))
"""


@needs_userns
@pytest.mark.parametrize("kind", [k.split()[0] for k in SANDBOXES])
def test_disk_and_memory_are_bounded_for_an_ordinary_user(kind):
    """A write past the episode disk's size or inode count fails with ENOSPC, and a memory hog
    is refused (ENOMEM), with no variable set; the files never reach the host's disk."""
    env = {"AGENTWORLD_TERMINAL_SANDBOX": "bwrap" if kind == "bubblewrap" else kind}
    done = run_as_user([BOUNDS], user_dir(), timeout=240, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["unbounded"] is None
    assert re.fullmatch(r"/proc/\d+/root/.+", out["root"]), out["root"]
    assert out["fallocate"] == "fallocate: fallocate failed: No space left on device\nuser@sandbox:~$ "
    assert 30 << 20 <= out["used"] <= 40 << 20  # tmpfs: a fallocate that does not fit adds none
    assert "No space left on device" in out["inodes"] and 500 < out["count"] < 600, out
    assert out["df"].split()[:2] == ["tmpfs", "40"], out["df"]
    assert out["tail"] == "tail: memory exhausted\nstatus=1\nuser@sandbox:~$ ", out["tail"]
    assert out["python"].endswith("MemoryError\nstatus=1\nuser@sandbox:~$ "), out["python"]
    assert out["host_dir"] == [] and out["closed"] is False


KILLED = """
import os, signal, sys
from agentworld.domains.terminal.episode_root import EpisodeRoot
from agentworld.domains.terminal.limits import Limits
root = EpisodeRoot.make("agentworld-ep-", None, Limits(), None)
print(str(root.path).split("/")[2], flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@needs_userns
def test_the_episode_disk_goes_with_a_killed_driver():
    """SIGKILL of the process that made an episode root ends the namespace holding its tmpfs
    (the holder reads end of file on its pipe): no process and no memory are left behind."""
    done = run_as_user([KILLED], user_dir(), timeout=120)
    assert done.returncode == -signal.SIGKILL or done.returncode == 128 + 9, done.stderr[-2000:]
    holder = int(done.stdout.split()[0])
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{holder}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{holder}")


@needs_userns
def test_collect_as_an_ordinary_user_with_nothing_set():
    """The quickstart's first real step: ``agentworld collect --domain terminal`` as an ordinary
    user, no variable set (before: refused, naming AGENTWORLD_TERMINAL_UNBOUNDED=disk)."""
    work = user_dir()
    done = run_as_user(["agentworld", "collect", "--domain", "terminal", "--episodes", "2",
                        "--out", str(work / "ep.jsonl")], work, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = (work / "ep.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["steps"] for line in lines)


def _expected_memory() -> str:
    """What bounds a sandbox's memory for the user, found independently of agentworld: a
    writable memory cgroup of the user's own, a systemd user manager, or neither."""
    with open("/proc/self/cgroup") as fh:
        own = dict(line.rstrip("\n").split(":", 2)[1:] for line in fh)
    paths = [f"/sys/fs/cgroup{own.get('', '/')}", f"/sys/fs/cgroup/memory{own.get('memory', '/')}"]
    probe = "import os, sys; sys.exit(any(os.access(p, os.W_OK) for p in sys.argv[1:]))"
    writable = run_as_user([probe, *paths], user_dir(), timeout=60).returncode == 1
    systemd = shutil.which("systemd-run", path="/usr/bin:/bin")
    scope = systemd is not None and run_as_user([
        "import subprocess, sys; sys.exit(subprocess.run([sys.argv[1], '--user', '--scope', "
        "'true'], capture_output=True).returncode)", systemd], user_dir(), timeout=60
    ).returncode == 0
    if writable:
        return "cgroup"
    return "systemd" if scope else "rlimit"


@needs_userns
def test_doctor_and_domains_say_which_bounds_hold_for_an_ordinary_user():
    """``agentworld doctor`` and ``agentworld domains`` as the user state the sandbox, each
    bound as it holds, the domains that start and the optional pieces, found by absolute path
    (before: ``pivot_root`` "not installed", disk "refused unless AGENTWORLD_TERMINAL_UNBOUNDED
    has disk", and no doctor)."""
    work = user_dir()
    done = run_as_user(["agentworld", "doctor"], work, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = [line.rstrip() for line in done.stdout.splitlines()]
    assert lines[0].startswith(f"agentworld doctor: user {USER.pw_name} (uid {USER.pw_uid})")
    at = lines.index(next(line for line in lines if line.startswith("sandbox (terminal")))
    section = dict(line.strip().split(": ", 1) for line in lines[at + 1:at + 6])
    assert section["sandbox"].split()[0] in ("bubblewrap", "unshare"), section
    assert section["disk"] == ("256 MiB and 16384 inodes per episode (a tmpfs in the sandbox's "
                               "own user and mount namespaces)")
    memory = _expected_memory()
    if memory == "rlimit":
        assert section["memory"].startswith("1024 MiB per process (RLIMIT_AS) only, up to 64 "
                                            "processes; not the sandbox as a whole ("), section
        name = USER.pw_name
        if os.path.isdir("/run/systemd/system"):  # systemd is init: lingering starts a manager
            fix = f"sudo loginctl enable-linger {name} (needs root), then log in again"
        else:  # no systemd at all (this container): root delegates a cgroup
            fix = (f"systemd is not this machine's init: have root delegate a cgroup v2 subtree "
                   f"to {name} (mkdir /sys/fs/cgroup/{name} && chown -R {name} "
                   f"/sys/fs/cgroup/{name})")
        assert section["memory"].endswith(f"fix: {fix}"), section["memory"]
    else:
        assert section["memory"].startswith("2048 MiB for the sandbox as a whole ("), section
    assert section["processes"].startswith("64 processes beyond the user's own")
    assert section["network"] == "none: a network namespace of its own with loopback only"
    assert re.search(r"^  terminal +runs here \(started in [\d.]+ s\)$", done.stdout, re.M)
    assert re.search(r"^  os +data-only", done.stdout, re.M)
    for piece, program in (("bubblewrap", "bwrap"), ("mkfs.ext4", "mkfs.ext4")):
        found = shutil.which(program, path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        line = next(line for line in lines if line.startswith(f"  {piece} ("))
        assert line.endswith(f"present: {found}" if found else "(needs root)"), line
    assert "not installed" not in done.stdout and "UNBOUNDED" not in done.stdout
    listed = run_as_user(["agentworld", "domains"], work, timeout=120)
    assert listed.returncode == 0, listed.stderr[-2000:]
    text = " ".join(listed.stdout.split())
    assert ("bound: disk: 256 MiB and 16384 inodes per episode (a tmpfs in the sandbox's own "
            "user and mount namespaces)") in text
    assert "unavailable" not in text and "not installed" not in text and "NOT BOUNDED" not in text
