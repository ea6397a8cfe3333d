"""A program on a pseudo-terminal inside a sandbox, and everything that kills it.

The shared piece of the terminal domain's :class:`~agentworld.domains.terminal.shell.Shell`
(command lines in, output out) and of the interactive terminal of ``agentworld-domain-tty``
(keystrokes in, the screen out): the sandbox's identity files (a private ``mkdtemp``
directory, on a tmpfs of its own where mounts are allowed), the cgroup that bounds the
sandbox's memory and processes, the ``pexpect`` child started with the resource limits, and
:meth:`SandboxPty.kill`, which ends every process of the sandbox from the host (the pid
namespace's init through a pidfd, the cgroup's processes, the process Python started). The
kernel's parent-death signals end them when the Python process dies, SIGKILL included
(:mod:`agentworld.domains.terminal.sandbox`).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

import pexpect
from agentworld.domains.terminal.cgroup import (
    SandboxCgroup,
    make_cgroup,
    memory_bound,
    systemd_scope,
)
from agentworld.domains.terminal.disk import disk_support, mount_tmpfs, unmount
from agentworld.domains.terminal.limits import Limits, sandbox_preexec
from agentworld.domains.terminal.nstmpfs import holder_of
from agentworld.domains.terminal.procstate import pidfd
from agentworld.domains.terminal.reaper import namespace_processes
from agentworld.domains.terminal.roots import session_dir
from agentworld.domains.terminal.safefs import chown_tree
from agentworld.domains.terminal.sandbox import (
    detect_sandbox,
    inside_uid,
    sandbox_argv,
    sandbox_uid,
    write_identity,
)

IDENTITY_TMPFS_BYTES = 1 << 20  # the identity files and long actions (shell.ACTION_FILE)


class SandboxPty:
    """One sandbox for an episode root; :meth:`spawn` starts (or restarts) its program.

    Args:
        root: Writable episode root, mounted as the home directory; chowned to the sandbox
            uid at each spawn when running as root.
        limits: Resource limits (:class:`~agentworld.domains.terminal.limits.Limits`).
        sandbox: Sandbox kind (default :func:`~agentworld.domains.terminal.sandbox.detect_sandbox`).
        ro_binds: ``(host directory, path under /opt)`` pairs bound read-only
            (:func:`~agentworld.domains.terminal.sandbox.sandbox_argv`).

    Raises:
        RuntimeError: no sandbox can run here.
    """

    def __init__(self, root: Path, limits: Limits | None = None, sandbox: str | None = None,
                 ro_binds: tuple[tuple[str, str], ...] = ()) -> None:
        self.root, self.limits, self.ro_binds = Path(root), limits or Limits(), ro_binds
        self.kind = sandbox or detect_sandbox()
        self.uid = sandbox_uid()
        # The identity files sit on a tmpfs of their own (root with mounts, or in the holder's
        # namespace of a root on a namespace tmpfs), so mountinfo inside shows no host path.
        self._meta_dir = Path(tempfile.mkdtemp(prefix="agentworld-id-", dir=session_dir()))
        self.meta = self._meta_dir  # where the host writes them (shell.ACTION_FILE too)
        self._meta_mounted = disk_support() is None  # root with mounts: a tmpfs of its own
        holder = holder_of(self.root)
        if self._meta_mounted:
            mount_tmpfs(self._meta_dir, IDENTITY_TMPFS_BYTES)
        elif holder is not None:
            self.meta = holder.mount_tmpfs(self._meta_dir, IDENTITY_TMPFS_BYTES)
        write_identity(self.meta, self.uid, inside_uid(self.kind))
        self.child: pexpect.spawn | None = None
        self._cgroup: SandboxCgroup | None = None
        self._init_fd: int | None = None  # pidfd of the sandbox's pid 1, once pinned

    def spawn(
        self,
        command: list[str] | None = None,
        *,
        dimensions: tuple[int, int] = (50, 200),
        echo: bool = False,
        env: dict[str, str] | None = None,
    ) -> pexpect.spawn:
        """Kill what runs, then start ``command`` (default: the terminal domain's interactive
        bash) in the sandbox on a new pty of ``dimensions`` (rows, columns).

        Args:
            command: argv run inside the sandbox.
            dimensions: (rows, columns) of the terminal.
            echo: whether the pty echoes what is typed (``False``: the shell domain's
                observations hold no command echo).
            env: variables set inside besides (or replacing) the sandbox's own
                (:func:`~agentworld.domains.terminal.sandbox.sandbox_argv`).

        The sandbox's memory is bounded as a whole by a cgroup of its own where one can be
        made, else by a systemd user scope, else per process only
        (:func:`~agentworld.domains.terminal.cgroup.memory_bound`). A root on a namespace tmpfs
        (:mod:`agentworld.domains.terminal.nstmpfs`) is bound from inside its holder's
        namespaces.

        Raises:
            OSError: the root's namespace tmpfs is gone (its holder ended).
        """
        self.kill()
        if os.geteuid() == 0:
            chown_tree(self.root, self.uid)  # iterative: a restart may meet any tree
        holder = holder_of(self.root)
        if holder is not None and not holder.alive():
            raise OSError(f"the episode's file system at {self.root} is gone (its holder ended)")
        argv = sandbox_argv(self.kind, holder.directory if holder else self.root, self._meta_dir,
                            self.uid, self.limits, command=command, env=env,
                            ro_binds=self.ro_binds)  # fmt: skip
        self._cgroup = make_cgroup(self.limits.sandbox_memory_bytes, self.limits.nproc)
        prefix = []  # systemd-run talks to the user's manager on the host: outermost
        if self._cgroup is None and memory_bound() == "systemd":
            prefix += systemd_scope(self.limits.sandbox_memory_bytes, self.limits.nproc)
        if holder is not None:
            prefix += holder.enter
        argv = prefix + argv
        join = self._cgroup.join if self._cgroup is not None else None
        self.child = pexpect.spawn(
            argv[0],
            argv[1:],
            echo=echo,
            dimensions=dimensions,
            cwd="/" if holder is not None else str(self.root),
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            preexec_fn=sandbox_preexec(self.kind, self.limits, self.uid, join),
        )
        # pexpect sleeps 50 ms before each send and 100 ms around close by default.
        self.child.delaybeforesend = None
        self.child.delayafterclose = self.child.delayafterterminate = 0.01
        self.child.ptyproc.delayafterclose = self.child.ptyproc.delayafterterminate = 0.01
        return self.child

    def pin_init(self) -> None:
        """Hold a pidfd of the sandbox's pid 1 (call once the program is up), so
        :meth:`kill` reaches it even if the agent's processes reuse its pid number."""
        assert self.child is not None
        self._init_fd = pidfd(namespace_processes(self.child.pid)[0])

    def kill(self) -> None:
        """Kill the whole sandbox from the host: its pid 1 (the kernel then kills every process
        of the pid namespace, whatever they did to their parent-death signals), the processes
        of its cgroup, then the process Python started. Idempotent."""
        if self._init_fd is not None:
            fd, self._init_fd = self._init_fd, None
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except OSError:
                pass  # gone already
            finally:
                os.close(fd)
        if self._cgroup is not None:
            self._cgroup.kill()
        if self.child is not None:
            try:
                self.child.kill(signal.SIGKILL)
                self.child.close(force=True)
            except (OSError, pexpect.ExceptionPexpect):
                pass
            self.child = None
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None

    def close(self) -> None:
        """Kill the sandbox and delete its identity files. Idempotent."""
        self.kill()
        if self._meta_mounted:
            unmount(self._meta_dir)
            self._meta_mounted = False
        shutil.rmtree(self._meta_dir, ignore_errors=True)  # a holder's tmpfs ends with it


__all__ = ["IDENTITY_TMPFS_BYTES", "SandboxPty"]
