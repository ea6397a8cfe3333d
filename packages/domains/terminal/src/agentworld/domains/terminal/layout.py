"""The file system a sandboxed shell sees, and how each sandbox kind builds it.

The view is a new root (a small read-only tmpfs) holding only what a shell needs:

* ``/usr`` and the top-level ``/bin``, ``/sbin``, ``/lib*`` (symlinks into ``/usr`` on a
  merged-``/usr`` system, read-only binds otherwise), read-only;
* the pieces of ``/etc`` listed in :data:`ETC` that exist on the host (the dynamic linker's
  cache, alternatives, locale, time zone, terminfo, ...), read-only; symlinks are copied as
  symlinks; ``passwd``, ``group``, ``hostname`` and ``hosts`` are the sandbox's own;
* private, size-limited tmpfs at ``/tmp``, ``/var/tmp``, ``/run`` and ``/dev/shm``, with the
  host's input directory for long action lines read-only at ``/run/agentworld``;
* a minimal ``/dev`` (``null``, ``zero``, ``full``, ``random``, ``urandom``, ``tty``, a new
  ``devpts`` instance), a ``/proc`` of the sandbox's own pid namespace;
* ``/home`` (read-only, fixed date) with the episode root bound writable at ``/home/agent``.

Nothing else of the host is mounted: no ``/work``, no host ``/home``, ``/root``, ``/tmp``,
``/var`` or ``/run``, so neither other checkouts, other episodes' roots nor host unix sockets
can be reached. The same :class:`Mount` plan is turned into bubblewrap arguments
(:func:`bwrap_args`) or into the script the ``unshare`` fallback runs as the root of its user
namespace before it switches to the new root with ``pivot_root`` and detaches the host's tree
(:mod:`agentworld.domains.terminal.newroot`), as bubblewrap itself does (bubblewrap's
``bubblewrap.c``, ``setup_newroot``).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from agentworld.domains.terminal.prompt import HOME

# /etc entries a shell and the usual command-line tools read (when present on the host).
ETC = (
    "alternatives", "bash.bashrc", "debian_version", "gai.conf", "host.conf", "inputrc",
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "locale.alias", "locale.conf", "localtime",
    "magic", "magic.mime", "mime.types", "mtab", "nsswitch.conf", "os-release", "perl",
    "profile", "protocols", "python3", "services", "shells", "terminfo", "timezone", "vim",
    "xattr.conf",
)  # fmt: skip
TOP = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr")
OWN_ETC = ("passwd", "group", "hostname", "hosts")  # written by write_identity
SMALL_TMPFS = 1 << 20  # bytes: /run and the new root itself
OPT = "/opt"  # where extra read-only binds go (plan's ro_binds)


@dataclass(frozen=True, slots=True)
class Mount:
    """One step of building the sandbox's root.

    Attributes:
        kind: ``"ro"`` (read-only bind), ``"rw"`` (writable bind), ``"symlink"``,
            ``"tmpfs"``, ``"dev"`` or ``"proc"``.
        dest: Absolute path inside the sandbox.
        source: Host path (binds) or link target (symlinks); empty otherwise.
        size: tmpfs size, bytes (``tmpfs`` only).
    """

    kind: str
    dest: str
    source: str = ""
    size: int = 0


def plan(root: Path, meta: Path, tmp_bytes: int,
         ro_binds: tuple[tuple[str, str], ...] = ()) -> list[Mount]:
    """The mounts that build the sandbox's view of the file system, in order.

    Args:
        root: The episode root (bound writable at ``/home/agent``).
        meta: The identity directory (:func:`~agentworld.domains.terminal.sandbox.write_identity`).
        tmp_bytes: Size of each private tmpfs (``/tmp``, ``/var/tmp``, ``/dev/shm``), bytes.
        ro_binds: ``(host directory, path inside)`` pairs bound read-only, each inside under
            :data:`OPT` (a host program's own tree, such as the swe domain's per-repository
            Python environment).

    Raises:
        ValueError: a path inside that is not a normalised absolute path under :data:`OPT`.
    """
    steps: list[Mount] = []
    for name in TOP:
        path = Path("/", name)
        if path.is_symlink():
            steps.append(Mount("symlink", str(path), os.readlink(path)))
        elif path.is_dir():
            steps.append(Mount("ro", str(path), str(path)))
    for name in ETC:
        path = Path("/etc", name)
        if path.is_symlink():
            steps.append(Mount("symlink", str(path), os.readlink(path)))
        elif path.exists():
            steps.append(Mount("ro", str(path), str(path)))
    steps += [Mount("ro", f"/etc/{name}", str(meta / name)) for name in OWN_ETC]
    steps += [Mount("dev", "/dev"), Mount("proc", "/proc")]
    steps += [Mount("tmpfs", d, size=tmp_bytes) for d in ("/tmp", "/var/tmp", "/dev/shm")]
    steps.append(Mount("tmpfs", "/run", size=SMALL_TMPFS))
    steps.append(Mount("ro", "/run/agentworld", str(meta / "input")))
    steps += [Mount("ro", "/home", str(meta / "home")), Mount("rw", HOME, str(root))]
    for source, dest in ro_binds:
        if os.path.normpath(dest) != dest or not dest.startswith(OPT + "/"):
            raise ValueError(f"read-only bind inside the sandbox at {dest!r}: give a normalised "
                             f"absolute path under {OPT}/")
        steps.append(Mount("ro", dest, str(source)))
    return steps


def bwrap_args(steps: list[Mount]) -> list[str]:
    """bubblewrap options building ``steps`` (bubblewrap's root is a tmpfs of its own; it is
    made read-only at the end)."""
    args: list[str] = []
    for step in steps:
        if step.kind == "ro":
            args += ["--ro-bind", step.source, step.dest]
        elif step.kind == "rw":
            args += ["--bind", step.source, step.dest]
        elif step.kind == "symlink":
            args += ["--symlink", step.source, step.dest]
        elif step.kind == "tmpfs":
            args += ["--size", str(step.size), "--tmpfs", step.dest]
        else:
            args += [f"--{step.kind}", step.dest]
    return [*args, "--remount-ro", "/"]


def plan_json(steps: list[Mount]) -> str:
    """``steps`` as the JSON list :mod:`agentworld.domains.terminal.newroot` reads."""
    return json.dumps([asdict(step) for step in steps])
