"""The sglang-router that ``routed()`` starts dies with its driver (issue 43, low item).

Before: the router ran in a session of its own and was stopped only when the ``with`` block
exited, so a driver killed with SIGKILL left it running (listening, holding its port). A real
driver process starts the real router over a real loopback server, is SIGKILLed, and the router
must be gone within seconds.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time

import pytest

psutil = pytest.importorskip("psutil")
pytestmark = pytest.mark.skipif(importlib.util.find_spec("sglang_router") is None,
                                reason="sglang-router is not installed")

DRIVER = """
import http.server, sys, threading, time
from agentworld.sim.server.router import routed

class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"model_path": "wm", "is_generation": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
threading.Thread(target=server.serve_forever, daemon=True).start()
with routed([f"http://127.0.0.1:{server.server_port}"], start_s=120) as url:
    print(url, flush=True)
    time.sleep(600)
"""


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_the_router_dies_when_its_driver_is_killed():
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    routers: list[psutil.Process] = []
    try:
        url = driver.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), driver.stderr.read()
        port = int(url.removesuffix("/v1").rpartition(":")[2])
        routers = [psutil.Process(c.pid) for c in psutil.net_connections("inet")
                   if c.status == psutil.CONN_LISTEN and c.laddr.port == port]
        assert len(routers) == 1 and routers[0].ppid() == driver.pid
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=10)
        deadline = time.monotonic() + 5
        while alive(routers[0]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(routers[0]), "the router outlived its SIGKILLed driver"
    finally:
        driver.kill()
        driver.wait()
        for router in routers:
            if alive(router):
                router.kill()
