"""The interactive terminal on real programs in the real sandbox: one environment walks through
the python3 REPL, less, vi, top, a sleep interrupted by C-c, tmux key names, a malformed
action and an exiting shell; then nothing of it survives close() (issue 33)."""

from __future__ import annotations

import os
import uuid

import pytest
from agentworld.core.types import Action
from agentworld.domains.tty.env import TtyEnv
from agentworld.domains.tty.keys import render_action
from sandboxes import needs_sandbox

pytestmark = needs_sandbox


def marked(marker: str) -> list[int]:
    """Host pids of processes whose command line holds ``marker``."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture(scope="module")
def env():
    e = TtyEnv()
    e.reset()
    yield e
    e.close()


def keys(env: TtyEnv, *items: tuple[str, float]) -> tuple[str, dict]:
    obs, _, _, _, info = env.step(Action(text=render_action(list(items))))
    return obs.text, info


def rows(text: str) -> list[str]:
    return text.split("\n")


def test_programs_keys_and_errors_in_one_episode(env):
    state = env.privileged_state()
    assert state["program"] == "bash" and state["alternate"] is False
    # the python3 REPL: a name set in one step is read in the next
    screen, _ = keys(env, ("python3\n", 0.5))
    assert rows(screen)[-1] == ">>>" and env.privileged_state()["program"] == "python3"
    screen, _ = keys(env, ("x = 6 * 7\n", 0.1), ("print(x)\n", 0.1))
    assert rows(screen)[-3:] == [">>> print(x)", "42", ">>>"]
    screen, _ = keys(env, ("C-d", 0.2))
    assert rows(screen)[-1] == "user@sandbox:~$" and env.privileged_state()["program"] == "bash"

    # less draws on the alternate screen; q brings the shell's screen back
    keys(env, ("seq 100 > n.txt; printf 'a\\nb\\nc\\n' > f.txt\n", 0.1))
    screen, _ = keys(env, ("less n.txt", 0.05), ("Enter", 0.3))
    assert rows(screen)[:3] == ["1", "2", "3"] and rows(screen)[-1] == "n.txt"
    assert env.privileged_state()["alternate"] is True
    screen, _ = keys(env, ("/50\n", 0.2))
    assert rows(screen)[0] == "50"
    screen, _ = keys(env, ("q", 0.1))
    assert "user@sandbox:~$ less n.txt" in rows(screen) and rows(screen)[-1] == "user@sandbox:~$"
    assert rows(screen)[3:6] == [">>> x = 6 * 7", ">>> print(x)", "42"]  # the REPL, kept

    # vi: append a line, write, quit; cat shows it
    screen, _ = keys(env, ("vi f.txt\n", 0.4))
    assert rows(screen)[:4] == ["a", "b", "c", "~"] and '"f.txt"' in rows(screen)[-1]
    keys(env, ("G", 0.05), ("o", 0.05), ("hello", 0.05), ("Escape", 0.05), (":wq\n", 0.3))
    screen, _ = keys(env, ("cat f.txt\n", 0.1))
    assert rows(screen)[-5:] == ["a", "b", "c", "hello", "user@sandbox:~$"]

    # tmux key names: Up recalls the last command line, C-c drops it
    screen, _ = keys(env, ("Up", 0.1))
    assert rows(screen)[-1] == "user@sandbox:~$ cat f.txt"
    screen, _ = keys(env, ("C-c", 0.1))
    assert rows(screen)[-2:] == ["user@sandbox:~$ cat f.txt^C", "user@sandbox:~$"]

    # top: its own screen, with the sandbox's three processes (init, bash, top)
    screen, _ = keys(env, ("top\n", 1.0))
    assert rows(screen)[0].startswith("top - ") and "Tasks:   3 total" in screen
    screen, _ = keys(env, ("q", 0.2))
    assert rows(screen)[-1] == "user@sandbox:~$" and env.privileged_state()["program"] == "bash"

    # a running sleep, interrupted by C-c
    screen, info = keys(env, ("sleep 100\n", 0.3))
    assert rows(screen)[-1] == "user@sandbox:~$ sleep 100" and info["seconds"] < 3
    assert env.privileged_state()["program"] == "sleep"
    screen, _ = keys(env, ("C-c", 0.2))
    assert rows(screen)[-3:] == ["user@sandbox:~$ sleep 100", "^C", "user@sandbox:~$"]

    # a malformed action changes nothing and gets the environment's error text
    obs, _, _, _, info = env.step(Action(text='[{"keystrokes": 5, "duration": 0.1}]'))
    assert obs.text == f"ERROR: {info['error']}\n\n{screen}"
    assert info["error"] == "action[0].keystrokes must be a string, got 5"
    obs, _, _, _, info = env.step("ls -la")
    assert obs.text.startswith("ERROR: action is not JSON") and info["error"]

    # the shell exits: a new one starts on a fresh screen
    screen, info = keys(env, ("exit\n", 0.2))
    assert info["restarted"] and screen == "user@sandbox:~$"


def test_no_process_survives_close():
    marker = f"aw-tty-{uuid.uuid4().hex[:8]}"
    env = TtyEnv()
    env.reset()
    root = env.root
    keys(env, (f"(trap '' INT HUP TERM; exec -a {marker} sleep 999) &\n", 0.2),
         (f"nohup bash -c 'exec -a {marker} sleep 999' > /dev/null 2>&1 &\n", 0.2),
         (f"exec -a {marker} sleep 999\n", 0.3))  # fmt: skip
    assert len(marked(marker)) == 3
    env.close()
    assert marked(marker) == [] and not root.exists()
