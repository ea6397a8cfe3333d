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
'''


def run(env: TerminalEnv, text: str):
    obs, _, _, _, info = env.step(Action(text=text))
    return obs.text, info


def test_tiocsti_through_the_32_bit_entry_is_refused(env):
    """``int $0x80`` with eax=54 (ioctl on i386) is refused like the 64-bit ioctl: nothing is
    typed into the terminal, and the whole 32-bit entry answers ``EPERM``."""
    text, _ = run(env, f"python3 - <<'EOF'\n{INT80}\nEOF")
    assert text.startswith("ioctl [-1] getpid -1\n"), text  # -EPERM for every call
    text, _ = run(env, "echo next")
    assert text == "next\nuser@sandbox:~$ ", text
    assert "INJ42" not in text and env._shell._token.decode() not in text
