"""One episode's root directory, shared by the environments that run a sandboxed shell on it.

The command-line terminal (:class:`~agentworld.domains.terminal.env.TerminalEnv`), the
interactive terminal (``agentworld-domain-tty``) and environments built on them reset the same
way: draw or validate the task (:func:`episode_task`), then make a fresh root directory with
``mkdtemp`` (private name, mode 0700: only its owner, the sandbox's uid once the sandbox
chowns it, can enter it; another local user reads the mount point's name in the mount table
but can neither list it nor hold it busy as a working directory), give it a bounded file
system of its own (:func:`bounded_disk`: an ext4 image for root,
:mod:`agentworld.domains.terminal.disk`; a tmpfs in namespaces of its own for any other user,
:mod:`agentworld.domains.terminal.nstmpfs`), and
write the task's files into it in the order that makes directories list sorted
(:mod:`agentworld.domains.terminal.roots`). :meth:`EpisodeRoot.close` unmounts and deletes it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from agentworld.core.protocols import TaskSampler
from agentworld.core.types import Task
from agentworld.domains.terminal.disk import (
    LISTING_ORDER,
    MountedRoot,
    disk_support,
    mount_root,
    require,
)
from agentworld.domains.terminal.fs import apply_setup, remove_tree
from agentworld.domains.terminal.limits import Limits
from agentworld.domains.terminal.nstmpfs import NamespaceTmpfs, namespace_tmpfs_support
from agentworld.domains.terminal.roots import default_root_parent, listing_order
from agentworld.domains.terminal.sandbox import userns_fix
from agentworld.domains.terminal.task_data import validate_task
from agentworld.domains.terminal.tools import install_command


def episode_task(
    options: dict[str, Any] | None, sampler: TaskSampler | None, rng: np.random.Generator
) -> Task | None:
    """The task of an episode: ``options["task"]`` (a :class:`Task` or its dict), else one
    drawn from ``sampler`` with a seed from ``rng`` (the env's ``np_random``), else ``None``.

    Raises:
        pydantic.ValidationError: ``options["task"]`` is a dict that is not a task.
        ValueError: the task's set-up or check data is malformed (the message names the field,
            :mod:`agentworld.domains.terminal.task_data`).
    """
    task = (options or {}).get("task")
    if task is not None and not isinstance(task, Task):
        task = Task.model_validate(task)
    if task is None and sampler is not None:
        task = sampler.sample(1, seed=int(rng.integers(2**31)))[0]
    if task is not None:
        validate_task(task.setup, task.check)
    return task


def disk_kind() -> str | None:
    """The file system each episode root gets here: ``"ext4"`` (root with loop devices),
    ``"tmpfs"`` (any other user, in namespaces of its own), or ``None`` (neither can be made:
    see :func:`disk_missing`)."""
    if disk_support() is None:
        return "ext4"
    if os.geteuid() != 0 and namespace_tmpfs_support() is None:
        return "tmpfs"
    return None


def disk_missing() -> tuple[str, str]:
    """``(why no bounded episode disk can be made here, the one command that fixes it)``."""
    if os.geteuid() == 0:
        missing = disk_support() or ""
        return missing, install_command("mkfs.ext4") if "not installed" in missing else (
            "modprobe loop (loop devices; a container needs them passed in)")
    return f"no tmpfs in a user namespace: {namespace_tmpfs_support()}", userns_fix()


def bounded_disk(root: Path, limits: Limits) -> MountedRoot | NamespaceTmpfs | None:
    """The episode root's own bounded file system (:func:`disk_kind`), or ``None`` where the
    user accepted an unbounded disk (:func:`agentworld.domains.terminal.disk.require`).

    Raises:
        UnboundedSandboxError: the disk cannot be bounded here and the user did not accept it.
        OSError: making the file system failed.
    """
    kind = disk_kind() if limits.disk_bytes > 0 else None
    if kind == "ext4":
        return mount_root(root, root.parent, limits.disk_bytes, limits.disk_inodes)
    if kind == "tmpfs":
        return NamespaceTmpfs(root, limits.disk_bytes, limits.disk_inodes)
    missing, fix = disk_missing() if limits.disk_bytes > 0 else ("Limits.disk_bytes is 0", "")
    require("disk", missing, fix or "leave Limits.disk_bytes at its default")
    return None


_TMPFS_ORDER: list[str | None] = []


def tmpfs_order(probe: Path) -> str | None:
    """How a tmpfs lists a directory's entries (measured once per process, in ``probe``, the
    first namespace tmpfs root; see :func:`agentworld.domains.terminal.roots.listing_order`)."""
    if not _TMPFS_ORDER:
        _TMPFS_ORDER.append(listing_order.__wrapped__(str(probe)))
    return _TMPFS_ORDER[0]


class EpisodeRoot:
    """A fresh episode root: ``path`` (the host directory mounted as the agent's home) and
    ``disk`` (its bounded file system, ``None`` where unbounded). Made by :meth:`make`."""

    def __init__(self, path: Path, disk: MountedRoot | NamespaceTmpfs | None = None) -> None:
        self.path: Path | None = path
        self.disk = disk
        self._dir: Path | None = path  # the host directory, removed on close

    @classmethod
    def make(
        cls, prefix: str, parent: str | Path | None, limits: Limits, task: Task | None
    ) -> EpisodeRoot:
        """A new root under ``parent`` (default :func:`default_root_parent`, else the system
        temporary directory) named ``prefix`` + a random suffix, with ``task``'s files.

        Raises:
            UnboundedSandboxError: see :func:`bounded_disk`.
            OSError: the directory or its file system cannot be made; nothing is left behind.
        """
        parent = parent or default_root_parent() or tempfile.gettempdir()
        root = cls(Path(tempfile.mkdtemp(prefix=prefix, dir=parent)))
        try:
            root.path.chmod(0o700)  # the sandbox's uid owns it; no one else enters
            root.disk = bounded_disk(root.path, limits)
            if isinstance(root.disk, NamespaceTmpfs):
                root.path = root.disk.path  # the files, as the host reaches them
            if task is not None:
                if isinstance(root.disk, NamespaceTmpfs):
                    order = tmpfs_order(root.path)
                elif root.disk is not None:
                    order = LISTING_ORDER
                else:
                    order = listing_order(str(parent))
                apply_setup(root.path, task.setup, order)
        except BaseException:
            root.close()  # no root is left behind
            raise
        return root

    def close(self) -> None:
        """Unmount the root's file system and delete the directory. Idempotent."""
        try:
            if self.disk is not None:
                disk, self.disk = self.disk, None
                disk.unmount()
        finally:
            self.path = None
            if self._dir is not None:
                path, self._dir = self._dir, None
                remove_tree(path)
