"""A cache-aware router in front of several OpenAI-compatible world-model servers.

A simulated episode sends its whole history every step, so a step is cheap only on the
server that already holds the episode's prefix in its KV cache. With several replicas
(``agentworld serve-openai``, vLLM or SGLang), a round-robin balancer spreads an episode's
turns over all of them and each turn recomputes most of its prompt; a cache-aware router
keeps an approximate radix tree of the prompts each replica has seen and sends a request
where its longest prefix is, unless the load is too uneven.

We do not write that router: :func:`routed` runs SGLang's (``sglang-router``, the
``router`` extra; https://github.com/sgl-project/sglang, ``sgl-router``) as a subprocess
on loopback and yields its ``/v1`` URL, which any ``openai`` backend client
(:class:`~agentworld.sim.backends.openai_client.OpenAIWorldModel`) takes as ``base_url``.
Which serving engine fits which architecture is in ``docs/serving.md``.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

#: Routing policies of sglang-router worth comparing here (it has more, e.g. ``power_of_two``).
Policy = Literal["cache_aware", "round_robin", "random"]
_PR_SET_PDEATHSIG = 1  # prctl(2)


class RouterUnavailableError(RuntimeError):
    """sglang-router is not installed, or it did not start."""


def free_port(host: str) -> int:
    """A TCP port on ``host`` that is free when asked (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def is_healthy(url: str) -> bool:
    """Whether ``GET url`` answers 200 within 2 s."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def routed(
    worker_urls: Sequence[str],
    *,
    policy: Policy = "cache_aware",
    host: str = "127.0.0.1",
    port: int = 0,
    start_s: float = 60.0,
    log: Path | None = None,
    cache_threshold: float | None = None,
    balance_abs_threshold: int | None = None,
    balance_rel_threshold: float | None = None,
    health_check_interval_s: int = 2,
    health_check_timeout_s: int = 2,
    health_failure_threshold: int = 2,
    request_timeout_s: int | None = None,
    max_retries: int | None = None,
) -> Iterator[str]:
    """Run sglang-router over ``worker_urls`` for the ``with`` block; yield its ``/v1`` URL.

    Args:
        worker_urls: Server roots, e.g. ``["http://127.0.0.1:8001", "http://127.0.0.1:8002"]``
            (no ``/v1``); each must answer ``GET /health``.
        policy: ``"cache_aware"`` (longest cached prefix, load-balanced),
            ``"round_robin"`` or ``"random"``.
        host: Interface the router binds (loopback by default).
        port: Its TCP port; ``0`` picks a free one.
        start_s: Longest wait for the router to answer ``GET /health`` (seconds).
        log: File for the router's output (default: discarded).
        cache_threshold: ``cache_aware``: the matched fraction of a request's text above
            which it goes to the replica with the longest match; below it, to the replica
            with the least cached text (sglang-router's default: 0.3). A system prompt shared
            by every episode is most of a first request: set the threshold above its share,
            or new episodes all pile onto the first replica.
        balance_abs_threshold: ``cache_aware`` ignores the cache and picks the least loaded
            replica when the in-flight requests of the busiest and the idlest differ by more
            than this (default 64) ...
        balance_rel_threshold: ... and the busiest has more than this times the idlest's
            (default 1.5).
        health_check_interval_s: Seconds between the router's ``GET /health`` of each
            replica. sglang-router's default (60 s, with 3 failures of 5 s each) keeps a
            stalled replica in the rotation for minutes; these defaults take one out within
            about ``interval * failures + timeout`` = 6 s, and back after 2 answers.
        health_check_timeout_s: Seconds a health check waits for its answer.
        health_failure_threshold: Consecutive failed checks that take a replica out.
        request_timeout_s: Seconds a request may take before the router gives up on it and
            retries it elsewhere (sglang-router's default: 1800). A request already on a
            replica that stalls waits this long; set it above your longest generation.
        max_retries: Attempts per request on a failure (a refused connection, a 5xx; default
            5, with backoff). A simulator's request carries its whole episode, so a replica
            that dies mid-episode loses nothing: the retry runs the same turn elsewhere.

    On exit the router gets SIGTERM (10 s to stop, then SIGKILL); its process group goes
    with it, so nothing is left running. Should the driver die without exiting the block
    (SIGKILL, out of memory), the kernel kills the router too (:func:`die_with_parent`; the
    router runs in its own process, the Rust router inside it).

    Raises:
        ValueError: ``worker_urls`` is empty or holds a URL that is not ``http(s)://``; a
            health, timeout or retry setting is not a whole number >= 1.
        RouterUnavailableError: sglang-router is not installed (``pip install
            'agentworld-sim[router]'``), or it exited or did not answer in ``start_s``.
    """
    if not worker_urls:
        raise ValueError("routed() needs at least one worker URL, got none")
    for url in worker_urls:
        if not url.startswith(("http://", "https://")) or url.rstrip("/").endswith("/v1"):
            raise ValueError(f"worker URL {url!r}: give the server root, e.g. http://127.0.0.1:8000")
    for name, value in (("health_check_interval_s", health_check_interval_s),
                        ("health_check_timeout_s", health_check_timeout_s),
                        ("health_failure_threshold", health_failure_threshold),
                        ("request_timeout_s", request_timeout_s), ("max_retries", max_retries)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"routed(): {name} must be a whole number >= 1, got {value!r}")
    if importlib.util.find_spec("sglang_router") is None:
        raise RouterUnavailableError(
            "sglang-router is not installed: pip install 'agentworld-sim[router]'"
        )
    port = port or free_port(host)
    command = [
        sys.executable, "-m", "sglang_router.launch_router", "--host", host, "--port", str(port),
        "--policy", policy, "--log-level", "warn", "--worker-urls", *worker_urls,
        # its Prometheus exporter takes a fixed port (29000) unless told otherwise
        "--prometheus-host", host, "--prometheus-port", str(free_port(host)),
    ]  # fmt: skip
    for flag, value in (
        ("--cache-threshold", cache_threshold),
        ("--balance-abs-threshold", balance_abs_threshold),
        ("--balance-rel-threshold", balance_rel_threshold),
        ("--health-check-interval-secs", health_check_interval_s),
        ("--health-check-timeout-secs", health_check_timeout_s),
        ("--health-failure-threshold", health_failure_threshold),
        ("--request-timeout-secs", request_timeout_s),
        ("--retry-max-retries", max_retries),
    ):
        if value is not None:
            command += [flag, str(value)]
    out = log.open("wb") if log is not None else subprocess.DEVNULL
    process = subprocess.Popen(
        command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        env=dict(os.environ), preexec_fn=die_with_parent(os.getpid()),
    )  # fmt: skip
    root = f"http://{host}:{port}"
    try:
        deadline = time.monotonic() + start_s
        while not is_healthy(f"{root}/health"):
            if process.poll() is not None:
                raise RouterUnavailableError(
                    f"sglang-router exited with status {process.returncode}"
                    + (f"; its output is in {log}" if log is not None else "")
                )
            if time.monotonic() > deadline:
                raise RouterUnavailableError(f"sglang-router did not answer in {start_s:g} s")
            time.sleep(0.1)
        yield f"{root}/v1"
    finally:
        _stop(process)
        if log is not None:
            out.close()  # type: ignore[union-attr]


def die_with_parent(parent: int) -> Callable[[], None]:
    """A ``preexec_fn`` that gives the child the kernel's parent-death signal, SIGKILL
    (``prctl(PR_SET_PDEATHSIG)``, kept across ``exec``), so it dies with the thread that
    started it, however that ends; a child whose parent ``parent`` died before the signal was
    set kills itself."""

    def apply() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return apply


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the router's process group, SIGKILL after 10 s."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
