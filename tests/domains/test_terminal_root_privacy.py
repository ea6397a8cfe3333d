"""Another local user and a live episode (issue 43, low items): root's episode roots cannot be
entered or pinned, and an ordinary user's sandbox shows no host path in its mount table.

Before: each episode root was a 0755 mount point whose name the host's mount table shows, so
uid 1000 listed a live episode's files and could hold it busy with ``cd`` (the lazily unmounted
root then kept its loop device and deleted image); a non-root sandbox's ``/proc/self/mountinfo``
named the host's session directory (``/tmp/agentworld-run-<pid>-...``) as the source of
``/etc/passwd``, ``/home`` and ``/run/agentworld``. Real sandboxes, real second user
(tests/as_user.py).
"""

from __future__ import annotations

import json
import os

import pytest
from agentworld.core.types import Action
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.limits import Limits
from as_user import SKIP, run_as_user, user_dir
from sandboxes import SANDBOXES, needs_sandbox

pytestmark = pytest.mark.skipif(SKIP is not None, reason=f"no second local user: {SKIP}")

ENTER = """
import errno, json, os, sys
out = {}
for name, call in (("ls", os.listdir), ("cd", os.chdir)):
    try:
        call(sys.argv[1])
        out[name] = "ok"
    except OSError as exc:
        out[name] = errno.errorcode[exc.errno]
print(json.dumps(out))
"""

MOUNTS = r"""
import json
from agentworld.core.types import Action
from agentworld.domains.terminal.env import TerminalEnv
env = TerminalEnv()
env.reset()
run = lambda text: env.step(Action(text=text))[0].text
host = "grep -c -e agentworld- -e /tmp/ -e /work -e /home/c /proc/self/mountinfo || true"
out = {"host": run(host),
       "passwd": run("awk '$5 == \"/etc/passwd\" {print $4, $9}' /proc/self/mountinfo"),
       "who": run("id -un; ls -ld ~ | cut -c1-10"),
       "long": run("x=" + "a" * 5000 + "; echo ${#x}")}
env.close()
print(json.dumps(out))
"""


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="the episode roots of root")
def test_another_user_cannot_enter_or_pin_roots_episode_root():
    """uid 1000 gets EACCES listing or entering a live episode root of root's (before: 0755)."""
    env = TerminalEnv(limits=Limits(command_timeout_s=10))
    env.reset()
    try:
        root = str(env.root)
        assert env.step(Action(text="touch mine; ls"))[0].text == "mine\nuser@sandbox:~$ "
        done = run_as_user([ENTER, root], user_dir(), timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads(done.stdout) == {"ls": "EACCES", "cd": "EACCES"}
        assert os.stat(root).st_mode & 0o777 == 0o700
    finally:
        env.close()


@pytest.mark.parametrize("kind", [k.split()[0] for k in SANDBOXES])
def test_an_ordinary_users_sandbox_shows_no_host_path(kind):
    """As uid 1000, under each sandbox kind: the mount table inside names no host directory; the
    identity files come from a tmpfs of their own (``/passwd``); long actions still pass."""
    env = {"AGENTWORLD_TERMINAL_SANDBOX": "bwrap" if kind == "bubblewrap" else kind}
    done = run_as_user([MOUNTS], user_dir(), timeout=180, env=env)
    if "no tmpfs in a user namespace" in done.stderr:
        pytest.skip("no user namespaces here")
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    prompt = "\nuser@sandbox:~$ "
    assert out == {"host": "0" + prompt, "passwd": "/passwd tmpfs" + prompt,
                   "who": "user\ndrwx------" + prompt, "long": "5000" + prompt}
