"""The explorer on an MCP server that is not one of ours: tasks synthesised from the server's own
tool list (:class:`ExplorerTaskSampler`) and the policy that plays them (:class:`ExplorerPolicy`).

``agentworld collect --domain mcp --set server='CMD ARGS'`` with a server that is not ours
collects with these (:meth:`agentworld.domains.mcp.domain.McpDomain.for_environment`): the
``scripted`` policy follows each task's chain, the ``random`` one explores the same tools in a
random order, both with schema-driven arguments (:mod:`agentworld.domains.mcp.explore`).
"""

from __future__ import annotations

import functools
import random
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentworld.core.domain_base import PolicyBase
from agentworld.core.errors import EnvironmentUnavailableError
from agentworld.core.types import Action, Observation, Task
from agentworld.domains.mcp import catalog
from agentworld.domains.mcp.calls import parse_call, tool_action
from agentworld.domains.mcp.client import ServerConnection, ServerError
from agentworld.domains.mcp.explore.explorer import ToolExplorer, chains, goal_text

KIND = "explore"
"""The kind of an explorer task."""


@functools.lru_cache(maxsize=16)
def server_listing(server: str, timeout_s: float = 20.0) -> tuple[tuple[dict[str, Any], ...],
                                                                  tuple[dict[str, Any], ...],
                                                                  tuple[dict[str, Any], ...]]:
    """``(tools, resources, prompts)`` a server lists (wire form), from one start of it in a
    private directory, once per process.

    Raises:
        ServerError: the server does not start.
        UntrustedServerError: ``server`` is neither ours nor configured by the operator.
    """
    root = Path(tempfile.mkdtemp(prefix="agentworld-mcp-explore-"))
    try:
        conn = ServerConnection(catalog.command(server, root / "data"), root, timeout_s)
        try:
            tools = tuple(conn.start())
            return tools, tuple(conn.resources), tuple(conn.prompts)
        finally:
            conn.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


class ExplorerTaskSampler:
    """Tasks of one server from its own tool list: each a goal text for one call chain
    (:func:`~agentworld.domains.mcp.explore.explorer.chains`), cycled in a seeded order.

    A task is ``Task(kind="explore", setup={"server": CMD, "tools": [...], "params": {"chain":
    [...], "resources": [...], "prompts": [...]}}, check={})`` (no check: free play).

    Args:
        server: The server's command line, configured by the operator (trusted here).
        timeout_s: Seconds the server may take to start and list its tools.
    """

    kinds = (KIND,)

    def __init__(self, server: str, timeout_s: float = 20.0) -> None:
        catalog.trust(server)
        self.server, self.timeout_s = server, timeout_s

    def sample(self, n: int, *, seed: int) -> list[Task]:
        """``n`` tasks of seed ``seed`` (starts the server once per process to list its tools).

        Raises:
            EnvironmentUnavailableError: the server does not start, or lists no tools (one
                line naming the command and the last line the server wrote on stderr).
        """
        label = catalog.label(self.server)
        try:
            tools, resources, prompts = server_listing(self.server, max(self.timeout_s, 20.0))
        except ServerError as exc:
            head, _, tail = str(exc).partition("; its stderr ends:")
            last = [line.strip() for line in tail.splitlines() if line.strip()][-1:]
            raise EnvironmentUnavailableError(
                f"mcp server {label!r} cannot be collected from: {head.splitlines()[0]}"
                + (f"; its stderr ends: {last[0][:300]}" if last else "")
                + f" (check --set server={self.server!r:.200})") from None
        if not tools:
            raise EnvironmentUnavailableError(
                f"mcp server {label!r} lists no tools, so there is nothing to call "
                f"(server={self.server!r:.200})")
        found = chains(tools)
        rng = random.Random(f"mcp-explore-tasks-{seed}")
        order = rng.sample(range(len(found)), len(found))
        out = []
        for i in range(n):
            chain = found[order[i % len(order)]]
            out.append(Task(
                id=f"mcp-explore-{seed}-{i}-{'-'.join(chain)}"[:160], domain="mcp",
                instruction=goal_text(label, chain, tools), kind=KIND,
                setup={"server": self.server, "tools": list(tools),
                       "params": {"chain": chain, "resources": list(resources),
                                  "prompts": list(prompts)}}))
        return out


def is_explorer_task(task: Task | None) -> bool:
    """Whether ``task`` is an explorer task (kind ``explore`` with recorded tools)."""
    return task is not None and task.kind == KIND and isinstance(task.setup.get("tools"), list)


class ExplorerPolicy(PolicyBase):
    """Plays an explorer task: its chain first (``follow_chain``), then exploration
    (:class:`~agentworld.domains.mcp.explore.explorer.ToolExplorer`); ``None`` (stop) for any
    other task.

    Args:
        seed: Seed; :meth:`reset` re-seeds.
        follow_chain: Call the task's chain first (else only explore).
    """

    name = "explorer"

    def __init__(self, seed: int = 0, follow_chain: bool = True) -> None:
        self.follow_chain = follow_chain
        self.reset(seed)

    def reset(self, seed: int | None) -> None:
        """Re-seed and forget the episode."""
        self.seed = 0 if seed is None else seed
        self._explorer: ToolExplorer | None = None
        self._seen = 0

    def act(self, task: Task | None, history: Sequence[Observation | Action]) -> Action | None:
        """The next call of the episode, ``None`` when it is done or ``task`` is no explorer
        task."""
        if not is_explorer_task(task):
            return None
        assert task is not None
        if len(history) <= 1 or self._explorer is None:
            params = task.setup.get("params") or {}
            self._explorer = ToolExplorer(
                task.setup["tools"], self.seed, str(task.setup.get("server") or ""),
                chain=params.get("chain", []) if self.follow_chain else (),
                resources=params.get("resources", []), prompts=params.get("prompts", []))
            self._seen = 1
        explorer = self._explorer
        made = sum(isinstance(h, Action) for h in history)
        while self._seen < len(history):
            item = history[self._seen]
            if isinstance(item, Observation) and isinstance(history[self._seen - 1], Action):
                parsed = parse_call(history[self._seen - 1])  # type: ignore[arg-type]
                explorer.observe(None if isinstance(parsed, str) else parsed, item.text)
            self._seen += 1
        call = explorer.next_call(made)
        return None if call is None else tool_action(*call)
