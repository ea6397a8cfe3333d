"""Attacks on the shell's channel (issue 43, item 4), tried for real in every sandbox kind
this machine offers: typing into the terminal through the 32-bit system call entry, a forged
prompt followed by the builtin ``read``, output modes that hide the prompt marker, floods of
partial markers, and a ``$PWD`` that names another directory.
"""

from __future__ import annotations

import time

from agentworld.core.types import Action
from agentworld.domains.terminal.env import TerminalEnv

# i386 ``ioctl(fd, TIOCSTI, &c)`` (system call 54 of the 32-bit table) through ``int $0x80``,
# run from a 64-bit Python: machine code in a page below 4 GiB (``MAP_32BIT``: the 32-bit entry
# sees only the low halves of the registers). Each call returns the kernel's answer
# (``-errno`` on failure); ``getpid`` (20) shows whether the 32-bit entry runs at all.
INT80 = '''
import ctypes, os, struct
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
page = libc.mmap(None, 4096, 7, 0x22 | 0x40, -1, 0)  # rwx, private anonymous, MAP_32BIT
def int80(nr, ebx, ecx, edx):
    code = b"\\x53"  # push rbx (callee-saved)
    for op, value in ((0xB8, nr), (0xBB, ebx), (0xB9, ecx), (0xBA, edx)):
        code += bytes([op]) + struct.pack("<I", value)  # mov e?x, imm32
    code += b"\\xcd\\x80\\x5b\\xc3"  # int $0x80; pop rbx; ret
    ctypes.memmove(page, code, len(code))
    return ctypes.CFUNCTYPE(ctypes.c_int)(page)()
tty = os.open("/dev/tty", os.O_RDWR)
answers = set()
for byte in b"echo INJ$((6*7))\\n":
    ctypes.memmove(page + 512, bytes([byte]), 1)
    answers.add(int80(54, tty, 0x5412, page + 512))
print("ioctl", sorted(answers), "getpid", int80(20, 0, 0, 0))
x32 = ctypes.CDLL(None, use_errno=True)
print("x32 getpid", x32.syscall(0x40000000 | 39), ctypes.get_errno())
'''


def run(env: TerminalEnv, text: str):
    obs, _, _, _, info = env.step(Action(text=text))
    return obs.text, info


def test_tiocsti_through_the_32_bit_entry_is_refused(env):
    """``int $0x80`` with eax=54 (ioctl on i386) is refused like the 64-bit ioctl: nothing is
    typed into the terminal, and the whole 32-bit entry answers ``EPERM``, as do x32 calls."""
    text, _ = run(env, f"python3 - <<'EOF'\n{INT80}\nEOF")
    assert text.startswith("ioctl [-1] getpid -1\nx32 getpid -1 1\n"), text  # EPERM each
    text, _ = run(env, "echo next")
    assert text == "next\nuser@sandbox:~$ ", text
    assert "INJ42" not in text and env._shell._token.decode() not in text


# Prints a prompt exactly as the shell would (its own PROMPT_COMMAND, then PS1 expanded), then
# answers every later action from the builtin ``read``: the shell itself, in the foreground,
# blocked in ``read`` on its terminal, as at a real prompt.
FORGE_READ = (
    'eval "$PROMPT_COMMAND"; printf "%s" "${PS1@P}"; '
    'while IFS= read -r line; do echo "fake: $line"; eval "$PROMPT_COMMAND"; '
    'printf "%s" "${PS1@P}"; done'
)


def test_a_forged_prompt_then_read_does_not_end_the_step(env):
    """A prompt printed by a builtin followed by the builtin ``read`` is not the shell's
    prompt: the step runs to its timeout, and the next action runs in the real shell."""
    text, info = run(env, FORGE_READ)
    assert info["timed_out"], text
    text, info = run(env, "echo next")
    assert text == "next\nuser@sandbox:~$ ", text
    text, info = run(env, "false")
    assert text == "[1] user@sandbox:~$ " and info["exit_code"] == 1, text


def test_olcuc_does_not_hide_the_prompt_or_leak_the_token(env):
    """``stty olcuc`` (the terminal shows lower case as upper case) turns the marker to upper
    case too: the step still ends at the prompt, and the token is not in the observation."""
    token = env._shell._token.decode()
    text, info = run(env, "stty olcuc; echo hello")
    assert not info["timed_out"] and token.upper() not in text.upper(), text
    assert text == "HELLO\nUSER@SANDBOX:~$ ", text
    text, info = run(env, "stty -olcuc; cd /tmp; echo back")
    assert text == "back\nuser@sandbox:/tmp$ ", text


def test_partial_markers_cost_little_host_cpu(env):
    """A megabyte of marker beginnings that never end (the token is in ``$PS1``) costs the
    host a linear scan, not one regex search per beginning per chunk."""
    flood = 'P="${PS1%%:*}:1:0:" python3 -c \'import os; print(os.environ["P"] * 40000)\''
    before = time.process_time()
    text, info = run(env, flood)
    spent = time.process_time() - before
    assert not info["timed_out"] and info["exit_code"] == 0, text
    assert text.endswith("user@sandbox:~$ ") and info["output_truncated"]
    assert spent < 0.5, f"host CPU {spent:.2f} s for 1 MB of partial markers"


def test_pwd_does_not_change_the_prompt(env):
    """The prompt line shows ``$PWD`` only while it names the working directory (a symlink
    to it, as bash shows it); otherwise the real directory."""
    text, _ = run(env, "mkdir -p a/b && cd a/b")
    assert text == "user@sandbox:~/a/b$ ", text
    text, _ = run(env, "PWD=/etc")
    assert text == "user@sandbox:~/a/b$ ", text
    text, _ = run(env, "cd / && PWD=/home/agent/a/b")
    assert text == "user@sandbox:/$ ", text
    text, _ = run(env, "cd ~ && ln -s a/b link && cd link")
    assert text == "user@sandbox:~/link$ " and env.privileged_state()["cwd"] == "/home/agent/a/b"
    text, _ = run(env, "PWD=$'/home/agent/\\x1e'; false")
    assert text == "[1] user@sandbox:~/a/b$ ", text
