"""One episode's root directory, shared by the environments that run a sandboxed shell on it.

The command-line terminal (:class:`~agentworld.domains.terminal.env.TerminalEnv`), the
interactive terminal (``agentworld-domain-tty``) and environments built on them reset the same
way: draw or validate the task (:func:`episode_task`), then make a fresh root directory with
``mkdtemp`` (private name, mode 0755 so the sandbox's user can enter it), give it a bounded file
system of its own where the machine allows it (:mod:`agentworld.domains.terminal.disk`), and
write the task's files into it in the order that makes directories list sorted
(:mod:`agentworld.domains.terminal.roots`). :meth:`EpisodeRoot.close` unmounts and deletes it.
"""

from __future__ import annotations

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
from agentworld.domains.terminal.roots import default_root_parent, listing_order
from agentworld.domains.terminal.task_data import validate_task


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


def bounded_disk(root: Path, limits: Limits) -> MountedRoot | None:
    """The episode root's own bounded file system, or ``None`` where the user accepted an
    unbounded disk (:func:`agentworld.domains.terminal.disk.require`).

    Raises:
        UnboundedSandboxError: the disk cannot be bounded here and the user did not accept it.
    """
    missing = disk_support() if limits.disk_bytes > 0 else "Limits.disk_bytes is 0"
    if missing is not None:
        require("disk", missing)
        return None
    return mount_root(root, root.parent, limits.disk_bytes, limits.disk_inodes)


class EpisodeRoot:
    """A fresh episode root: ``path`` (the host directory mounted as the agent's home) and
    ``disk`` (its bounded file system, ``None`` where unbounded). Made by :meth:`make`."""

    def __init__(self, path: Path, disk: MountedRoot | None = None) -> None:
        self.path: Path | None = path
        self.disk = disk

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
            root.path.chmod(0o755)
            root.disk = bounded_disk(root.path, limits)
            if task is not None:
                order = LISTING_ORDER if root.disk is not None else listing_order(str(parent))
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
            if self.path is not None:
                path, self.path = self.path, None
                remove_tree(path)
