"""``McpDomain``: the mcp domain as the framework sees it."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any

from agentworld.core.call_rationales import Signatures, call_rationale
from agentworld.core.domain_base import DomainBase
from agentworld.core.types import Action, Episode, Observation, Step, Task
from agentworld.domains.mcp import catalog, checks, scorer
from agentworld.domains.mcp.calls import listing, parse_call, parse_signature
from agentworld.domains.mcp.client import ServerError
from agentworld.domains.mcp.consistency import consistency_turns
from agentworld.domains.mcp.env import McpEnv
from agentworld.domains.mcp.explore.mcp import ExplorerTaskSampler
from agentworld.domains.mcp.options import McpEnvOptions
from agentworld.domains.mcp.policies import make_policies
from agentworld.domains.mcp.prompt import known_tools, system_prompt, tool_definitions
from agentworld.domains.mcp.servers import SERVERS
from agentworld.domains.mcp.tasks import KINDS, McpTaskSampler
from agentworld.domains.mcp.transcript import verify_transcript


class McpDomain(DomainBase):
    """The ``mcp`` domain: real stdio MCP servers through the official SDK
    (:class:`~agentworld.domains.mcp.env.McpEnv`)."""

    name = "mcp"
    version = "0.1.0"
    env_options = McpEnvOptions

    def system_prompt(self, task: Task | None) -> str:
        """Role, the task's server's tool definitions (JSON schemas from ``list_tools``) and
        its set-up calls (:func:`agentworld.domains.mcp.prompt.system_prompt`)."""
        return system_prompt(task)

    def make_env(self, **kwargs: Any) -> McpEnv:
        """A real :class:`McpEnv`; ``kwargs`` go to its constructor (:attr:`env_options`, which
        ``collect --set`` gives: ``server="CMD ARGS"`` collects from any stdio MCP server,
        ``timeout_s``, ``max_steps``; from Python also ``tasks``, a sampler)."""
        return McpEnv(**kwargs)

    def tasks(self) -> McpTaskSampler:
        """The seeded task sampler over our servers."""
        return McpTaskSampler()

    def for_environment(self, options: dict[str, Any]) -> DomainBase | None:
        """With ``options["server"]`` a server that is not ours: the domain whose tasks are
        synthesised from that server's tool list
        (:class:`ExplorerDomain`); else ``None``."""
        server = options.get("server")
        if not server or server in SERVERS:
            return None
        return ExplorerDomain(server, float(options.get("timeout_s") or 10.0))

    def policies(self) -> dict[str, Any]:
        """Fresh ``{"scripted": ScriptedExpert, "random": RandomPolicy}``."""
        return make_policies()

    def score(self, predicted: str, reference: Observation) -> float:
        """JSON field F1, else line F1, in [0, 1] (:func:`agentworld.domains.mcp.scorer.score`)."""
        return scorer.score(predicted, reference.text)

    def action_type(self, action: Action) -> str:
        """The tool name of the call, ``malformed`` when the action is not a tool call."""
        parsed = parse_call(action)
        return "malformed" if isinstance(parsed, str) else parsed[0]

    def command_families(self, action: Action) -> set[str]:
        """``{tool name}`` (out-of-distribution hold-outs by tool)."""
        return {self.action_type(action)}

    def consistency_turns(self, episode: Episode) -> list[int]:
        """Turns that depend on state an earlier turn changed
        (:func:`agentworld.domains.mcp.consistency.consistency_turns`)."""
        return consistency_turns(episode)

    def explain(
        self,
        step: Step,
        previous_state: dict[str, Any] | None,
        history: Sequence[tuple[str, str]] = (),
    ) -> str:
        """The call, its check against the server's tool listing and the earlier turns that
        made or showed what it refers to (:func:`agentworld.core.call_rationales.call_rationale`).
        The listing is the episode's initial observation (``history[0]``); at the first step,
        the one recorded with the state at reset (``previous_state["listing"]``), else the
        listing of one of our servers named by ``previous_state["server"]``. A server that data
        names is never started: without a recorded listing its calls get no schema check."""
        return call_rationale(step.action.text, history,
                              listed_tools(history[0][1] if history else first_listing(previous_state)))

    def explain_text(
        self, action: str, observation: str, history: Sequence[tuple[str, str]] = ()
    ) -> str:
        """:meth:`explain` from text alone: the listing is ``history[0]``'s observation, or
        ``observation`` at the first step."""
        return call_rationale(action, history, listed_tools(history[0][1] if history else observation))

    def initial_observation(self, task: Task | None) -> str:
        """The tool listing the real environment shows at reset for ``task``'s server
        (``notes`` without a task), from :func:`~agentworld.domains.mcp.prompt.known_tools`.

        Raises:
            ValueError: the task names a server that is neither ours nor configured by the
                operator and records no ``setup["tools"]`` (nothing is started).
        """
        server = (task.setup.get("server") if task else None) or "notes"
        tools = known_tools(task, server)
        if tools is None:
            raise catalog.UntrustedServerError(
                f"mcp task {task.id if task else '?'!r} names server {server!r:.120}, which is "
                f"neither one of ours ({', '.join(SERVERS)}) nor configured by the operator, and "
                "records no setup['tools']: its tool listing is unknown (the server is not started)")
        return listing(catalog.label(server), tools)

    def verify(self, observation: str, task: Task | None) -> tuple[float, bool] | None:
        """``(1.0, True)`` / ``(0.0, False)`` when every condition of the task's check is an
        answer a response text shows; ``None`` for checks on the server's state."""
        conditions = task.check.get("all") if task is not None else None
        if not conditions or any("answer" not in c for c in conditions):
            return None
        ok = checks.holds(task.check, None, observation)  # type: ignore[union-attr]
        return (1.0, True) if ok else (0.0, False)

    def verify_transcript(
        self, task: Task | None, transcript: Sequence[tuple[str, str]]
    ) -> tuple[float, bool] | None:
        """The task's check re-derived from a simulated ``[(call, response), ...]`` transcript
        (:func:`agentworld.domains.mcp.transcript.verify_transcript`, with the tool definitions
        of the task's server when it is one of ours); ``None`` when it cannot be decided from
        one."""
        server = task.setup.get("server") if task is not None else None
        tools = list(tool_definitions(server)) if server in SERVERS else None
        return verify_transcript(task, transcript, tools)

    def describe(self) -> dict[str, str]:
        """Facts for ``agentworld domains``."""
        return {
            "environment": "real MCP servers over stdio (official mcp SDK "
                           f"{importlib.metadata.version('mcp')}); any stdio server with "
                           "make_env(server='CMD ARGS')",
            "servers": ", ".join(SERVERS) + " (python -m agentworld.domains.mcp.servers.NAME)",
            "action": '{"name": TOOL, "arguments": {...}} -> the raw tool response',
            "tasks": ", ".join(KINDS) + "; on a server not ours (--set server=...), explore "
                     "tasks written from its own tools (agentworld.domains.mcp.explore)",
            "policies": "scripted, random, llm (with AGENTWORLD_LLM_BASE_URL)",
        }


class ExplorerDomain(McpDomain):
    """:class:`McpDomain` on a server that is not one of ours: its tasks are synthesised from
    ``server``'s own tool list (:class:`~agentworld.domains.mcp.explore.mcp.ExplorerTaskSampler`,
    never our servers' tasks); its ``scripted`` and ``random`` policies play them as explorers.
    It lives beside :class:`McpDomain`, whose :meth:`~McpDomain.for_environment` builds it.

    Args:
        server: The operator's command line of the server.
        timeout_s: Seconds the server may take to start and list its tools (at least 20).
    """

    def __init__(self, server: str, timeout_s: float = 20.0) -> None:
        self.server, self.timeout_s = server, timeout_s

    def tasks(self) -> ExplorerTaskSampler:
        """Tasks from the server's own tool list."""
        return ExplorerTaskSampler(self.server, self.timeout_s)


def first_listing(state: dict[str, Any] | None) -> str:
    """The tool listing before an episode's first step from its state at reset: the recorded
    ``listing``, else that of one of our servers; ``""`` when neither (a server named by
    data, or no state: no schema check)."""
    state = state if isinstance(state, dict) else {}
    if isinstance(state.get("listing"), str):
        return state["listing"]
    server = state.get("server")
    if server not in SERVERS:
        return ""
    try:
        return listing(server, list(tool_definitions(server)))
    except (ServerError, OSError):
        return ""


def listed_tools(text: str) -> Signatures | None:
    """The tools of a listing observation (:func:`agentworld.domains.mcp.calls.listing`) as
    :data:`~agentworld.core.call_rationales.Signatures`; ``None`` when ``text`` is no listing."""
    if not text.startswith("Connected to MCP server"):
        return None
    return dict(t for t in map(parse_signature, text.splitlines()[1:]) if t is not None)
