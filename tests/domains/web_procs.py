"""Helpers for the web tests: processes tagged by an environment variable (a browser, its
renderers and Playwright's driver inherit it from the Python process that started them)."""

from __future__ import annotations

import os

TAG_VAR = "AGENTWORLD_TEST_TAG"


def tagged(tag: str, exclude: int | None = None) -> list[tuple[int, str]]:
    """``(pid, command line)`` of live processes whose environment holds ``TAG_VAR=tag``
    (zombies and ``exclude`` left out)."""
    needle = f"{TAG_VAR}={tag}".encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == exclude:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                out.append((int(name), f.read().replace(b"\0", b" ").decode(errors="replace")[:120]))
        except OSError:
            continue
    return out
