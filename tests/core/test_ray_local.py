"""The Ray executor's own local cluster (issue 43, low item): every server it starts listens on
loopback only, and its session directory sits in a private directory another user cannot enter.

Before: ``ray.init()`` (the executor's ``connect(None)``) bound the GCS, raylets and workers to
every interface and made ``/tmp/ray/session_*`` mode 0777 without the sticky bit.
"""

from __future__ import annotations

import ipaddress
import json
import os
import stat
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")
from agentworld.core.ray_collect import connect  # noqa: E402
from as_user import SKIP, run_as_user, user_dir  # noqa: E402

LIST = """
import errno, json, os, sys
try:
    os.listdir(sys.argv[1])
    print(json.dumps("ok"))
except OSError as exc:
    print(json.dumps(errno.errorcode[exc.errno]))
"""


def listening(root: int) -> list[str]:
    """Addresses the TCP sockets of ``root`` and its descendants listen on."""
    pids = {root, *(p.pid for p in psutil.Process(root).children(recursive=True))}
    return [c.laddr.ip for c in psutil.net_connections("inet")
            if c.status == psutil.CONN_LISTEN and c.pid in pids]


def is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return (mapped or address).is_loopback


def test_the_local_cluster_listens_on_loopback_with_private_files(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    if ray.is_initialized():
        ray.shutdown()
    module, started = connect(None)
    try:
        assert started

        @ray.remote
        def square(x: int) -> int:
            return x * x

        assert ray.get([square.remote(i) for i in range(3)]) == [0, 1, 4]
        addresses = listening(os.getpid())
        assert len(addresses) >= 3, addresses  # gcs, raylet, a worker at least
        assert all(is_loopback(ip) for ip in addresses), addresses
        session = Path(ray._private.worker._global_node.get_session_dir_path())
        private = session.parent.parent
        info = private.stat()
        assert private.name.startswith("agentworld-ray-")
        assert (stat.S_IMODE(info.st_mode), info.st_uid) == (0o700, os.geteuid())
        assert os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") is None  # put back
        if SKIP is None and os.geteuid() == 0:
            done = run_as_user([LIST, str(session)], user_dir(), timeout=60)
            assert json.loads(done.stdout) == "EACCES", done.stderr[-2000:]
    finally:
        module.shutdown()
