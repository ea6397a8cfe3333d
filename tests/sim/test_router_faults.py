"""Faults behind the router (issue 35): two real ``agentworld serve-openai`` processes behind
the real sglang-router. A replica that stalls (SIGSTOP: it neither answers nor closes its
connections) leaves the rotation by the router's health check, and episodes go on on the other
one; a replica killed mid-episode (SIGKILL) loses no turn: the router retries the request, which
carries the whole episode, on the replica that is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from agentworld.sim.backends.openai_client import OpenAIWorldModel
from agentworld.sim.server.router import free_port, is_healthy, routed

SYSTEM = "You simulate a Linux terminal. Predict the output of each command."
ACTIONS = ["ls", "pwd", "cat notes.md", "echo hi", "whoami", "date"]
CHECK_S = 1  # the router's health-check interval and timeout in this test


@contextmanager
def replicas(checkpoint: Path, logs: Path, n: int = 2) -> Iterator[list[subprocess.Popen]]:
    """``n`` ``serve-openai`` processes of ``checkpoint`` on loopback (``.url`` set on each)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("AGENTWORLD_API_KEY", None)
    procs = []
    try:
        for i in range(n):
            port = free_port("127.0.0.1")
            command = [sys.executable, "-c", "from agentworld.app.cli import main; main()",
                       "serve-openai", "--model", str(checkpoint), "--port", str(port),
                       "--device", "cpu", "--served-model-name", "wm", "--max-wait-ms", "1"]
            proc = subprocess.Popen(command, stdout=(logs / f"replica{i}.log").open("wb"),
                                    stderr=subprocess.STDOUT, env=env)
            proc.url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
            procs.append(proc)
        deadline = time.monotonic() + 180
        for proc in procs:
            while not is_healthy(f"{proc.url}/health"):  # type: ignore[attr-defined]
                assert proc.poll() is None and time.monotonic() < deadline, (
                    (logs / "replica0.log").read_text()[-2000:])
                time.sleep(0.2)
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)  # a stopped process does not act on SIGTERM
                proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def episode(
    client: OpenAIWorldModel, task: str, before_turn: dict | None = None
) -> tuple[list[float], list[str | None]]:
    """One closed-loop episode of :data:`ACTIONS` (``before_turn[k]()`` runs before turn k);
    the seconds each turn took, and which server process answered it."""
    history = [{"role": "system", "content": f"{SYSTEM} Task: {task}"}]
    took, served_by = [], []
    for turn, action in enumerate(ACTIONS):
        (before_turn or {}).get(turn, lambda: None)()
        history.append({"role": "user", "content": action})
        start = time.monotonic()
        (prediction,) = client.predict([history])
        took.append(time.monotonic() - start)
        served_by.append(prediction.served_by)
        history.append({"role": "assistant", "content": prediction.text})
    assert len(history) == 1 + 2 * len(ACTIONS)
    return took, served_by


def test_a_stalled_replica_leaves_the_rotation_and_a_killed_one_loses_no_turn(
    qwen3_dir: Path, tmp_path: Path
) -> None:
    pytest.importorskip("sglang_router")
    with replicas(qwen3_dir, tmp_path) as (first, second), routed(
        [first.url, second.url], policy="round_robin", log=tmp_path / "router.log",  # type: ignore[attr-defined]
        health_check_interval_s=CHECK_S, health_check_timeout_s=CHECK_S,
        health_failure_threshold=2,
    ) as base_url:
        # retries=0: what the client sees is what the router did
        client = OpenAIWorldModel("wm", base_url=base_url, max_tokens=8, timeout=60, retries=0)
        warm, warm_by = episode(client, "warm up both")  # round-robin: both replicas answer
        assert max(warm) < 30 and len(set(warm_by)) == 2

        os.kill(first.pid, signal.SIGSTOP)  # stalled: the port still accepts, nothing answers
        time.sleep(2 * CHECK_S + CHECK_S + 3)  # two failed checks, each timing out, and a margin
        stalled, stalled_by = episode(client, "one replica stalled")
        # A turn sent to the stalled replica would wait for the 60 s client timeout.
        assert max(stalled) < 10, stalled
        (second_id,) = set(stalled_by)  # every turn answered by the replica left

        os.kill(first.pid, signal.SIGCONT)
        time.sleep(2 * CHECK_S + 3)  # two good checks put it back (sglang-router's default)
        # Killed between turns 2 and 3: with the first replica out of the rotation, its turns
        # would fail (the client does not retry); the router's retry lands them on the first.
        killed, killed_by = episode(
            client, "one replica killed", {3: lambda: (second.kill(), second.wait())}
        )
        assert max(killed) < 10, killed
        (first_id,) = set(warm_by) - {second_id}
        assert killed_by[3:] == [first_id] * (len(ACTIONS) - 3)  # the survivor took them all
        client.close()
