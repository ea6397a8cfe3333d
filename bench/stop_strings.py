"""`serve-openai` under a request with thousands of stop strings (issue 30, item 1).

    uv run python bench/stop_strings.py                    # ~1 min on 2 CPU cores
    uv run python bench/stop_strings.py --stops 20000 --max-tokens 128

What it times, on a real uvicorn server over a tiny random Qwen3 checkpoint with the test
tokenizer (byte-level BPE, built in a temporary directory): one greedy request whose ``stop``
list holds ``--stops`` strings (all junk but one, a piece of the greedy answer near its end, so
the stop is found late), and an unrelated 8-token request sent 1 s later. It prints the HTTP
status of the attack (400 once the server bounds ``stop``), the server process's CPU time
during the attack (seconds; the client's share is small: it only waits) and the unrelated
request's latency (seconds).
"""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

from agentworld.sim.backends.hf import HFBackend
from agentworld.sim.server import HFChatModel, serve_in_thread

ROOT = Path(__file__).resolve().parents[1]
SYSTEM = {"role": "system", "content": "You simulate a Linux terminal.\n\n$ "}


def post(port: int, body: dict) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        connection.request(
            "POST",
            "/v1/chat/completions",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stops", type=int, default=20000, help="stop strings in the attack")
    parser.add_argument("--max-tokens", type=int, default=128, help="attack completion limit")
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT / "tests" / "sim"), str(ROOT / "tests")]
    from conftest import save_checkpoint  # tests/sim/conftest.py: the tests' tiny checkpoint

    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = save_checkpoint(Path(tmp), "qwen3")
        world_model = HFBackend().load(str(checkpoint), max_new_tokens=args.max_tokens)
        with serve_in_thread(HFChatModel(world_model), "tiny", max_wait_s=0.01) as server:
            base = {"model": "tiny", "messages": [SYSTEM], "temperature": 0}
            _, free = post(server.port, {**base, "max_tokens": args.max_tokens})
            assert "choices" in free, free
            text = free["choices"][0]["message"]["content"]
            stop = text[-4:]  # found late: near the end of the greedy answer
            junk = [f"~{i:06d}~" for i in range(args.stops - 1)]
            attack = {**base, "max_tokens": args.max_tokens, "stop": [*junk, stop]}
            size = len(json.dumps(attack))
            result: dict = {}

            def run_attack() -> None:
                result["status"], result["body"] = post(server.port, attack)

            cpu_before, started = cpu_s(), time.monotonic()
            thread = threading.Thread(target=run_attack)
            thread.start()
            time.sleep(1.0)
            sent = time.monotonic()
            status, _ = post(server.port, {**base, "max_tokens": 8})
            latency = time.monotonic() - sent
            thread.join()
            wall, cpu = time.monotonic() - started, cpu_s() - cpu_before
    answer = result["body"]
    outcome = (
        answer["error"]["message"][:100]
        if result["status"] != 200
        else repr(answer["choices"][0]["message"]["content"][-20:])
    )
    print(f"attack: {args.stops} stop strings, {size} bytes -> HTTP {result['status']}: {outcome}")
    print(f"server CPU during the attack: {cpu:.2f} s (wall {wall:.2f} s)")
    print(f"unrelated 8-token request sent 1 s later: HTTP {status} in {latency:.3f} s")


if __name__ == "__main__":
    main()
