"""Terminal output: collecting raw pty bytes, cleaning them into observation text.

Carriage returns are resolved (``\\r\\n`` -> ``\\n``; a line rewritten with a
bare ``\\r`` keeps only its last version, as the screen would), ANSI escape
sequences and other control characters (except tab and newline) are removed,
invalid UTF-8 is replaced, and the result is cut to a byte budget with a
truncation marker line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TRUNCATION_MARK = "[output truncated after {limit} bytes]"

_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL / ST
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS/SOS/PM/APC strings
    r"|\x1b[@-Z\\-_]"  # two-byte escapes
    r"|\x1b[()#][0-9A-Za-z]"  # charset selection
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _resolve_cr(line: str) -> str:
    if "\r" not in line:
        return line
    parts = line.split("\r")
    visible = parts[-1]
    # A final bare "\r" (cursor back without new text) keeps the previous text.
    return visible if visible else next((p for p in reversed(parts) if p), "")


def clean_output(raw: bytes, limit: int) -> tuple[str, bool]:
    """Observation text for raw terminal bytes.

    Args:
        raw: Bytes read from the pty (before the prompt).
        limit: Most bytes (UTF-8) of cleaned text to keep.

    Returns:
        ``(text, truncated)``; when truncated, ``text`` is the first ``limit``
        bytes cut back to a line end when one is near, followed by the
        marker line ``[output truncated after LIMIT bytes]``.
    """
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    text = _ANSI.sub("", text)
    text = "\n".join(_resolve_cr(line) for line in text.split("\n"))
    text = _CONTROL.sub("", text)
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    head = data[:limit].decode("utf-8", errors="ignore")
    cut = head.rfind("\n")
    if cut >= limit // 2:
        head = head[: cut + 1]
    elif not head.endswith("\n"):
        head += "\n"
    return head + TRUNCATION_MARK.format(limit=limit) + "\n", True


@dataclass(slots=True)
class CommandResult:
    """What one command line did.

    Attributes:
        output: Cleaned output (may contain ``^C`` and a bracketed note).
        prompt: The prompt line shown afterwards.
        exit_code: Exit status of the command (130 after an interrupt).
        cwd: Absolute working directory inside the sandbox afterwards.
        timed_out: The command ran past the wall-clock limit.
        restarted: The shell died or hung and a new one was started.
        truncated: The output was cut to the byte limit.
    """

    output: str
    prompt: str
    exit_code: int
    cwd: str
    timed_out: bool = False
    restarted: bool = False
    truncated: bool = False

    @property
    def text(self) -> str:
        """The observation text: output followed by the prompt line."""
        return self.output + self.prompt


class OutputCollector:
    """Raw pty output: the first ``keep`` bytes, plus a tail (4-16 KiB) searched for markers.

    Args:
        keep: Bytes kept of the output that left the tail (the rest is dropped).
    """

    def __init__(self, keep: int) -> None:
        self.keep, self.head, self.tail = keep, bytearray(), bytearray()

    def feed(self, chunk: bytes) -> None:
        """Append ``chunk``; keep memory bounded however much arrives."""
        self.tail += chunk
        if len(self.tail) > 16384:
            move = self.tail[:-4096]
            del self.tail[:-4096]
            self.head += move[: max(0, self.keep - len(self.head))]
