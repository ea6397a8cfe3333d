"""A local Ray cluster that only this machine and this user reach.

``ray.init()`` with no address starts a cluster whose GCS, raylet, workers and agents listen on
every interface (Ray resolves ``_node_ip_address="127.0.0.1"`` to the machine's outward address
on Linux, ``ray._private.services.resolve_ip_for_localhost``), and whose session directory
(``/tmp/ray/session_*``) Ray makes mode 0777 without the sticky bit, so another local user
could replace its files. :func:`init_local` starts it with every server on loopback (Ray's own
single-machine mode, ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, set only while the cluster starts
so its processes inherit it) and its temporary directory under a fresh ``mkdtemp`` directory
(mode 0700): Ray's 0777 directories sit inside one that no one else can enter. The directory is
removed at exit, after the cluster is shut down.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray's node address is loopback


def init_local(ray: Any, **options: Any) -> Path:
    """``ray.init(**options)`` as a new local cluster bound to 127.0.0.1, without the dashboard,
    its temporary files under a private directory.

    Args:
        ray: The ``ray`` module.
        options: Further ``ray.init`` keywords (``num_cpus``, ``log_to_driver``...).

    Returns:
        The private directory (mode 0700) holding Ray's temporary directory (``<it>/ray``).

    Raises:
        Whatever ``ray.init`` raises.
    """
    from ray._private import ray_constants

    private = Path(tempfile.mkdtemp(prefix="agentworld-ray-"))
    atexit.register(_remove, ray, private)
    before_env, before = os.environ.get(LOOPBACK_ENV), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[LOOPBACK_ENV] = "0"  # the cluster's processes start with it
    ray_constants.ENABLE_RAY_CLUSTER = False  # the driver's import of Ray read it already
    try:
        ray.init(_node_ip_address="127.0.0.1", _temp_dir=str(private / "ray"),
                 include_dashboard=False, **options)
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before
        if before_env is None:
            os.environ.pop(LOOPBACK_ENV, None)
        else:
            os.environ[LOOPBACK_ENV] = before_env
    return private


def _remove(ray: Any, private: Path) -> None:
    """At exit: shut the cluster down (Ray's own exit hook runs after ours), then delete."""
    ray.shutdown()
    shutil.rmtree(private, ignore_errors=True)
