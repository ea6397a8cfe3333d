"""A file system of bounded size and inode count for each episode root.

An episode root on the host's own file system lets one command fill the host's disk
(``fallocate -l 2G``; ``RLIMIT_FSIZE`` bounds single files only) or its inodes (200,000 empty
files in seconds). Where the caller is root and loop devices work, each root is its own ext4
file system, made in a sparse image file and loop-mounted over the root directory
(:func:`mount_root`): ``Limits.disk_bytes`` bytes and ``Limits.disk_inodes`` inodes at most,
``nosuid,nodev``. It looks as a user's home on ext4 does (directories of 4,096 bytes). It is
made without hashed directory indexes (``mke2fs(8)``, ``-O ^dir_index``), so a directory
lists its entries in creation order, a removed entry's slot being reused: ``find`` and
``ls -U`` list the same on every machine, and a task's set-up, created in name order
(:func:`agentworld.domains.terminal.fs.apply_setup` with :data:`LISTING_ORDER`), lists
sorted. The directories of an episode hold a few thousand entries at most, where a linear
directory costs nothing. Making and mounting it takes about 20 ms (``bench/sandbox_cost.py``).

A caller that is not root gets a tmpfs of the same size and inode count in a user and mount
namespace of its own instead (:mod:`agentworld.domains.terminal.nstmpfs`). Where neither can be
made (no loop devices for root, no user namespaces), a sandbox is refused with a one-line error
naming what is missing and the fix, unless the user accepts per-file limits only by setting
``AGENTWORLD_TERMINAL_UNBOUNDED=disk`` (:func:`require`). Programs are found by absolute path
(:func:`agentworld.domains.terminal.tools.find_tool`: ``mkfs.ext4`` is in ``/usr/sbin``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import tempfile
from pathlib import Path

from agentworld.core.errors import EnvironmentUnavailableError
from agentworld.domains.terminal.tools import find_tool, install_command

UNBOUNDED_ENV = "AGENTWORLD_TERMINAL_UNBOUNDED"  # comma-separated: disk, memory
LISTING_ORDER = "oldest_first"  # how a directory of these file systems lists (roots.listing_order)
_MKFS = (
    "mkfs.ext4", "-q", "-F", "-b", "4096", "-m", "0", "-O", "^has_journal,^dir_index",
    "-E", "root_owner=0:0,lazy_itable_init=1",
)  # fmt: skip


class UnboundedSandboxError(EnvironmentUnavailableError):
    """A sandbox would run without a bound the user did not give up; the message says which
    and how to accept that."""


def accepted_unbounded() -> set[str]:
    """The bounds the user gave up in ``$AGENTWORLD_TERMINAL_UNBOUNDED`` (``disk``,
    ``memory``)."""
    return {p.strip().lower() for p in os.environ.get(UNBOUNDED_ENV, "").split(",") if p.strip()}


def require(bound: str, missing: str, fix: str) -> None:
    """Refuse a sandbox without ``bound`` (``"disk"``) unless the user accepted that.

    Args:
        bound: The bound that cannot hold (``"disk"``).
        missing: Why, in words.
        fix: The one command that makes it hold (saying so when it needs root).

    Raises:
        UnboundedSandboxError: one line naming ``missing``, ``fix`` and the variable that
            accepts running without the bound.
    """
    if bound not in accepted_unbounded():
        raise UnboundedSandboxError(
            f"the terminal sandbox cannot bound its {bound} here ({missing}); fix: {fix}; "
            f"or set {UNBOUNDED_ENV}={bound} to accept per-file limits only"
        )


@functools.cache
def disk_support() -> str | None:
    """Why an ext4 file system of its own cannot be made here for each episode root, or
    ``None`` when it can (checked once per process by making and mounting one). A caller that
    is not root gets a tmpfs in namespaces of its own instead
    (:mod:`agentworld.domains.terminal.nstmpfs`)."""
    if os.geteuid() != 0:
        return "not root: loop mounts need root"
    missing = [t for t in ("mkfs.ext4", "mount", "umount") if find_tool(t) is None]
    if missing:
        return f"{', '.join(missing)} not installed ({install_command(missing[0])})"
    with tempfile.TemporaryDirectory(prefix="agentworld-disk-probe-") as tmp:
        target = Path(tmp, "root")
        target.mkdir()
        try:
            mounted = mount_root(target, Path(tmp), 16 << 20, 256)
        except OSError as exc:
            return str(exc)
        mounted.unmount()
    return None


class MountedRoot:
    """A loop-mounted file system over an episode root; :meth:`unmount` removes it."""

    def __init__(self, target: Path, image: Path) -> None:
        self.target, self.image = target, image

    def unmount(self) -> None:
        """Unmount (lazily, should a process still hold it) and delete the image. Idempotent."""
        if self.image.exists():
            unmount(self.target)
            self.image.unlink(missing_ok=True)


def mount_root(target: Path, image_dir: Path, size_bytes: int, inodes: int) -> MountedRoot:
    """Make an ext4 file system of ``size_bytes`` bytes and ``inodes`` inodes in a new sparse
    image under ``image_dir`` and mount it over the empty directory ``target`` (``nosuid``,
    ``nodev``), keeping ``target``'s mode; ``lost+found`` is removed.

    Raises:
        OSError: making or mounting the file system failed (the message says which and why);
            nothing is left behind then.
    """
    fd, name = tempfile.mkstemp(prefix="agentworld-disk-", suffix=".img", dir=image_dir)
    image = Path(name)
    try:
        os.ftruncate(fd, size_bytes)
    finally:
        os.close(fd)
    mode = target.stat().st_mode & 0o7777
    try:
        _run([*_MKFS, "-N", str(inodes), str(image)])
        _run(["mount", "-o", "loop,nosuid,nodev", str(image), str(target)])
    except OSError:
        image.unlink(missing_ok=True)
        raise
    mounted = MountedRoot(target, image)
    try:
        os.rmdir(target / "lost+found")
        os.chmod(target, mode)
    except OSError:
        mounted.unmount()
        raise
    return mounted


def mount_tmpfs(target: Path, size_bytes: int) -> None:
    """Mount a private tmpfs of ``size_bytes`` over the empty directory ``target``
    (``nosuid,nodev``, mode 0700): the sandbox's identity files then sit at the root of a file
    system of their own, so ``/proc/self/mountinfo`` inside the sandbox shows ``/passwd``, not
    the host path of the session directory.

    Raises:
        OSError: the mount failed (the message says why).
    """
    _run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes},mode=0700,nosuid,nodev",
          "tmpfs", str(target)])  # fmt: skip


def unmount(target: Path | str) -> None:
    """``umount -l`` ``target``; errors (not mounted) are ignored."""
    with contextlib.suppress(OSError):
        _run(["umount", "-l", str(target)])


def mounts_under(path: str) -> list[str]:
    """Mount points at or below ``path`` (``/proc/self/mountinfo``), deepest first."""
    found = []
    prefix = path.rstrip("/") + "/"
    with contextlib.suppress(OSError), open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == path or point.startswith(prefix):
                found.append(point)
    return sorted(found, key=len, reverse=True)


def _run(argv: list[str]) -> None:
    argv = [find_tool(argv[0]) or argv[0], *argv[1:]]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise OSError(f"{os.path.basename(argv[0])} failed: {said[-1] if said else f'exit {done.returncode}'}")
