"""Host programs the sandbox needs, found by absolute path.

An ordinary user's ``PATH`` on Debian and Ubuntu leaves out ``/usr/sbin`` and ``/sbin``, where
``pivot_root``, ``mkfs.ext4`` and ``nsenter`` may live; looking them up on ``PATH`` alone
reported installed programs as missing (issue 46, item 1). :func:`find_tool` searches ``PATH``,
then the standard directories, and returns an absolute path, which is what the sandbox's
command lines then name.
"""

from __future__ import annotations

import os
import shutil

STANDARD_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
#: Debian/Ubuntu package of each program (for the one command that installs a missing one).
PACKAGES = {
    "bwrap": "bubblewrap", "unshare": "util-linux", "mount": "mount", "umount": "mount",
    "pivot_root": "util-linux", "nsenter": "util-linux", "mkfs.ext4": "e2fsprogs",
    "systemd-run": "systemd", "sh": "dash", "cat": "coreutils",
}  # fmt: skip


def find_tool(name: str) -> str | None:
    """The absolute path of executable ``name`` on ``PATH`` or in :data:`STANDARD_DIRS`, or
    ``None`` when there is none."""
    found = shutil.which(name)
    if found is not None:
        return os.path.abspath(found)
    return shutil.which(name, path=os.pathsep.join(STANDARD_DIRS))


def install_command(name: str) -> str:
    """The one command that installs program ``name`` on Debian/Ubuntu; it needs root, which the
    text says when the caller is not root (``"sudo apt-get install bubblewrap (needs root)"``)."""
    package = PACKAGES.get(name, name)
    if os.geteuid() == 0:
        return f"apt-get install {package}"
    return f"sudo apt-get install {package} (needs root)"
