"""Collection on Ray (issue 35, item 1): ``collect(..., executor="ray")`` on a local cluster
started here gives the episodes the in-process collection gives; a worker killed mid-episode
loses nothing recorded (its episode runs again once, marked, and each index is in the part file
once); a rerun resumes from the part file; an unreachable cluster is a one-line error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
from agentworld.core.collect import collect  # noqa: E402

HERE = Path(__file__).parent
EXAMPLE_SRC = HERE.parents[1] / "examples" / "agentworld-domain-echo" / "src"
MIX = {"random": 1.0}
N = 12


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster of 2 CPUs whose workers import the test domains."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), str(EXAMPLE_SRC), *([before] if before else [])])
    sys.path[:0] = [str(HERE), str(EXAMPLE_SRC)]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             _node_ip_address="127.0.0.1")
    try:
        yield
    finally:
        ray.shutdown()
        if before is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = before


def content(episodes) -> list[dict]:
    """Episodes without their random ids and the retry marker."""
    out = []
    for e in episodes:
        row = e.model_dump(mode="json", exclude={"id"})
        row["metadata"].pop("retried", None)
        out.append(row)
    return out


def kill_when_hung(runs: Path) -> threading.Thread:
    """A thread that SIGKILLs the worker process that writes ``runs/hung``."""

    def watch() -> None:
        deadline = time.monotonic() + 120
        while not (runs / "hung").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(int((runs / "hung").read_text()), signal.SIGKILL)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_ray_collects_the_in_process_episodes_exactly_once_after_a_worker_dies(
    cluster, tmp_path: Path
) -> None:
    from ray_domains import RecordingEcho

    (tmp_path / "threads").mkdir()
    (tmp_path / "ray").mkdir()
    here = collect(RecordingEcho(tmp_path / "threads"), N, policies=MIX, seed=3, workers=2)
    domain = RecordingEcho(tmp_path / "ray", hang_seed=3 + 5)  # episode 5 hangs once
    part = tmp_path / "out.part"
    watcher = kill_when_hung(domain.runs)
    episodes = collect(domain, N, policies=MIX, seed=3, workers=2, part=str(part),
                       executor="ray")
    watcher.join()
    assert content(episodes) == content(here)
    assert [e.metadata.get("retried") for e in episodes] == [None] * 5 + [1] + [None] * 6
    assert domain.runs_of(3 + 5) == 2 and all(domain.runs_of(3 + i) == 1 for i in range(N)
                                              if i != 5)
    lines = part.read_text().splitlines()[1:]
    assert sorted(json.loads(line)["index"] for line in lines) == list(range(N))  # once each

    kept = part.read_text().splitlines()[: 1 + 4]  # the header and 4 episodes survive a "crash"
    part.write_text("\n".join(kept) + "\n")
    done = {json.loads(line)["index"] for line in kept[1:]}
    before = [domain.runs_of(3 + i) for i in range(N)]
    resumed = collect(RecordingEcho(tmp_path / "ray"), N, policies=MIX, seed=3, workers=3,
                      part=str(part), executor="ray")  # 3 workers on 2 CPUs: 2 actors
    assert content(resumed) == content(here)
    ran = [domain.runs_of(3 + i) - before[i] for i in range(N)]
    assert ran == [0 if i in done else 1 for i in range(N)]  # only the missing episodes ran


def test_an_unknown_executor_and_an_unreachable_cluster_are_one_line_errors(
    tmp_path: Path
) -> None:
    from agentworld.core import plugins

    with pytest.raises(ValueError, match="executor must be one of threads, ray; got 'dask'"):
        collect(plugins.get_domain("terminal"), 1, policies={"scripted": 1}, executor="dask")
    out = tmp_path / "eps.jsonl"
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("RAY_ADDRESS", None)
    result = subprocess.run(
        [str(Path(sys.executable).parent / "agentworld"), "collect", "--domain", "terminal",
         "--episodes", "2", "--policy", "scripted=1", "--out", str(out), "--executor", "ray",
         "--ray-address", "127.0.0.1:1"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert result.returncode == 2
    line = result.stderr.strip().splitlines()[-1]  # errors go to stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert line.startswith("error: no Ray cluster at '127.0.0.1:1' (ConnectionRefusedError")
    assert line.endswith("start one with `ray start --head`, or give no address for a local cluster")
    assert not out.exists() and not Path(f"{out}.part").exists()
