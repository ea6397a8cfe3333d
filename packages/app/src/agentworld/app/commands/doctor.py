"""``agentworld doctor``: what runs here, for this user on this machine, and what to do about
what does not.

Three parts, one line per item, each missing piece with the one command that fixes it:

* the terminal sandbox: its kind and which bounds hold (disk, memory, processes, network), as
  the domains that run in it describe them (``sandbox`` and ``bound: ...`` facts of
  ``describe()``, :mod:`agentworld.domains.terminal.bounds`);
* every installed domain: whether its real environment starts here (each is made, reset once
  and closed: the reason printed is the environment's own one-line error), or data-only;
* optional pieces: bubblewrap, Chromium, Ray, ``mkfs.ext4``, found by absolute path (an
  ordinary user's ``PATH`` has no ``/usr/sbin``).
"""

from __future__ import annotations

import getpass
import importlib.metadata
import importlib.util
import os
import shutil
import socket
import time

from rich.markup import escape

from agentworld.app.commands.root import app, console
from agentworld.core import plugins
from agentworld.core.domain_base import domain_hooks

STANDARD_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
CHROMIUM = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_VAR = "AGENTWORLD_CHROMIUM"


def find_program(name: str) -> str | None:
    """Absolute path of executable ``name`` on ``PATH`` or in :data:`STANDARD_DIRS`."""
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(STANDARD_DIRS))


def apt(package: str) -> str:
    """The command that installs Debian/Ubuntu ``package``, saying it needs root for a user."""
    return f"apt-get install {package}" if os.geteuid() == 0 else \
        f"sudo apt-get install {package} (needs root)"


def optional_pieces() -> list[tuple[str, str | None, str, str]]:
    """``(name, where it is or None, what it is for, the command that installs it)`` for
    bubblewrap, Chromium, Ray and ``mkfs.ext4``."""
    chromium = os.environ.get(CHROMIUM_VAR) or next(
        (p for p in map(find_program, CHROMIUM) if p), None)
    ray = None
    if importlib.util.find_spec("ray") is not None:
        ray = f"ray {importlib.metadata.version('ray')}"
    return [
        ("bubblewrap", find_program("bwrap"), "the terminal sandbox (else unshare is used)",
         apt("bubblewrap")),
        ("Chromium", chromium, "the web domain", apt("chromium")),
        ("Ray", ray, "collect --executor ray", "pip install 'agentworld-core[ray]'"),
        ("mkfs.ext4", find_program("mkfs.ext4"),
         "root's episode disks (ext4; other users get a tmpfs)", apt("e2fsprogs")),
    ]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def domain_status(name: str) -> tuple[str, dict[str, str]]:
    """``(status line, describe() facts)`` of domain ``name``: its real environment is made,
    reset once and closed."""
    try:
        domain = plugins.get_domain(name)
    except Exception as exc:  # noqa: BLE001 -- a broken plugin is reported, the rest go on
        return f"broken: {_first_line(exc)}", {}
    try:
        facts = dict(domain.describe())
    except Exception:  # noqa: BLE001 -- facts are optional here
        facts = {}
    if not domain_hooks(domain).has_environment:
        return "data-only (trained and measured from recorded rows)", facts
    start = time.monotonic()
    env = None
    try:
        env = domain.make_env()
        env.reset(seed=0)
    except Exception as exc:  # noqa: BLE001 -- the environment's own reason is the answer
        return f"does not run here: {_first_line(exc)}", facts
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:  # noqa: BLE001, S110 -- closing a failed env is best effort
                pass
    return f"runs here (started in {time.monotonic() - start:.1f} s)", facts


@app.command("doctor")
def doctor_cmd() -> None:
    """Say what runs here for this user: the terminal sandbox and which bounds hold, which
    domains start, which optional pieces are present, and the one command that fixes each
    missing piece."""
    console.print(f"agentworld doctor: user {escape(getpass.getuser())} (uid {os.geteuid()}) "
                  f"on {escape(socket.gethostname())}", soft_wrap=True)
    statuses = {name: domain_status(name) for name in plugins.names("domain")}
    sandboxes: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for name, (_, facts) in statuses.items():
        shown = tuple((k, v) for k, v in facts.items() if k == "sandbox" or k.startswith("bound: "))
        if any(k == "sandbox" for k, _ in shown):
            sandboxes.setdefault(shown, []).append(name)
    for shown, users in sandboxes.items():
        console.print(f"sandbox ({', '.join(users)}):", soft_wrap=True)
        for key, value in shown:
            console.print(f"  {key.removeprefix('bound: ')}: {escape(value)}", soft_wrap=True)
    console.print("domains:")
    width = max(map(len, statuses), default=0)
    for name, (status, _) in statuses.items():
        console.print(f"  {name:<{width}}  {escape(status)}", soft_wrap=True)
    console.print("optional pieces:")
    for piece, where, purpose, fix in optional_pieces():
        state = f"present: {where}" if where else f"missing; fix: {fix}"
        console.print(f"  {piece} ({purpose}): {escape(state)}", soft_wrap=True)
