"""Coverage of a tool environment by collected episodes: how many responses are not errors,
which listed tools answered without an error at least once, how many distinct response shapes
were seen. Written into each episode's ``metadata["coverage"]`` by collection and summed per
server for the collect summary (:func:`coverage_lines`).

An error is a step whose ``info["is_error"]`` is true, whose response is an error object
(:func:`is_error_value`), or whose text reads as an error
(:func:`is_error_text`: servers such as ``mcp-server-sqlite`` answer ``Error: ...`` without
the ``isError`` flag).
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from collections.abc import Iterable, Sequence
from typing import Any

from agentworld.core.types import Episode, Step

_ERROR = re.compile(
    r"\s*(?:\w+\s)?(?:error|exception|traceback|failed|failure|invalid|unknown tool|not found|"
    r"no such|cannot|could not|denied|refused)\b|[\w.]*(?:Error|Exception):", re.IGNORECASE)
_LISTED_TOOL = re.compile(r"^- ([\w.:/-]+)\(", re.MULTILINE)
_SERVER = re.compile(r"^Connected to MCP server '([^']+)'")


def is_error_text(text: str) -> bool:
    """Whether a response text reads as an error: its first line starts with an error word
    (``Error``, ``Error executing tool``, ``Invalid``, ``Unknown tool``, ``No such``,
    ``Traceback``, ...) or names an exception (``ValueError:``)."""
    first = text.lstrip().split("\n", 1)[0]
    return _ERROR.match(first) is not None


_FAILED = frozenset({"error", "failed", "failure", "fail"})


def is_error_value(value: Any) -> bool:
    """Whether a parsed response (:func:`parse_response`) is an error report the server sent
    as data: an object with a non-empty ``error``, ``"result"``/``"status"`` of ``"error"`` or
    ``"failed"``, or ``"success"``/``"ok"`` false (``mcp-text-editor`` answers a hash
    mismatch ``{"result": "error", "reason": ...}`` without the error flag)."""
    if not isinstance(value, dict):
        return False
    flags = (value.get("result"), value.get("status"))
    return bool(value.get("error")) or value.get("success") is False \
        or value.get("ok") is False or any(isinstance(f, str) and f.lower() in _FAILED
                                           for f in flags)


def is_error_step(step: Step) -> bool:
    """Whether ``step`` is an error: ``info["is_error"]`` (mcp) or ``info["error"]`` (search,
    swe), :func:`is_error_text`, or :func:`is_error_value` of the response."""
    text = step.observation.text
    return bool(step.info.get("is_error") or step.info.get("error")) or \
        is_error_text(text) or is_error_value(parse_response(text))


def parse_response(text: str) -> Any:
    """A response text as a value: JSON, else a Python literal (``[{'name': 't'}]``, as some
    servers print), else ``None``."""
    body = text.strip()
    if not body or body[0] not in "[{\"'0123456789-tfnTFN":
        return None
    try:
        return json.loads(body)
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        return ast.literal_eval(body) if len(body) < 200_000 else None
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def response_shape(text: str) -> str:
    """A response's shape: the key/type skeleton of its value (``{a:str,b:[{id:int}]}``) when it
    parses (:func:`parse_response`), else the text's line labels with digits as ``0`` (first
    8 lines; the words before a ``:``, or the line's first word)."""
    value = parse_response(text)
    if value is not None or text.strip() in ("null", "None"):
        return _skeleton(value)
    labels = []
    for line in text.strip().splitlines()[:8]:
        head = line.split(":", 1)[0] if ":" in line[:40] else (line.split() or [""])[0]
        labels.append(re.sub(r"\d+", "0", head.strip())[:40])
    return "text:" + "|".join(labels)


def _skeleton(value: Any, depth: int = 0) -> str:
    if depth > 4:
        return "..."
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_skeleton(v, depth + 1)}" for k, v in sorted(
            value.items(), key=lambda kv: str(kv[0]))[:20]) + "}"
    if isinstance(value, list | tuple):
        kinds = sorted({_skeleton(v, depth + 1) for v in value[:20]})
        return "[" + "|".join(kinds) + "]"
    return type(value).__name__


def server_label(episode: Episode) -> str:
    """The server an episode ran against: the name its initial listing shows (``Connected to
    MCP server 'NAME'``), else its recorded state's ``server`` (a command line as its program's
    file name), else the domain."""
    match = _SERVER.match(episode.initial_observation.text)
    if match:
        return match.group(1)
    state = episode.initial_observation.state
    server = state.get("server") if isinstance(state, dict) else None
    if isinstance(server, str) and server.strip():
        try:
            argv = shlex.split(server)
        except ValueError:
            argv = server.split()
        return argv[0].rsplit("/", 1)[-1] if argv else server
    return episode.domain


def listed_tools(initial_text: str) -> list[str]:
    """The tool names of a listing observation (lines ``- name(...)``), in order."""
    return _LISTED_TOOL.findall(initial_text)


def episode_coverage(episode: Episode) -> dict[str, Any] | None:
    """``{"server", "transitions", "non_error", "non_error_share", "tools_listed",
    "tools_ok", "tools_error_only", "shapes"}`` of one episode of a tool environment (its steps
    carry ``info["tool"]``); ``None`` for another environment or an episode without steps.
    ``tools_ok``/``tools_error_only``: sorted tool names; ``shapes``: distinct response shapes
    (:func:`response_shape`) of the non-error responses."""
    steps = episode.steps
    if not steps or not any("tool" in s.info for s in steps):
        return None
    ok: set[str] = set()
    failed: set[str] = set()
    shapes: set[str] = set()
    good = 0
    for step in steps:
        tool = step.info.get("tool")
        if is_error_step(step):
            if isinstance(tool, str):
                failed.add(tool)
            continue
        good += 1
        if isinstance(tool, str):
            ok.add(tool)
            shapes.add(f"{tool}:{response_shape(step.observation.text)}")
    return {"server": server_label(episode), "transitions": len(steps), "non_error": good,
            "non_error_share": round(good / len(steps), 4),
            "tools_listed": len(listed_tools(episode.initial_observation.text)),
            "tools_ok": sorted(ok), "tools_error_only": sorted(failed - ok),
            "shapes": len(shapes)}


def summarize(episodes: Iterable[Episode]) -> dict[str, dict[str, Any]]:
    """Coverage per server over ``episodes``: ``{server: {"episodes", "transitions",
    "non_error_share", "tools_listed", "tools_ok" (names), "tool_share", "shapes"}}``, from
    :func:`episode_coverage` (episodes without one are left out)."""
    out: dict[str, dict[str, Any]] = {}
    seen_shapes: dict[str, set[str]] = {}
    for episode in episodes:
        cov = episode_coverage(episode)
        if cov is None:
            continue
        row = out.setdefault(cov["server"], {"episodes": 0, "transitions": 0, "non_error": 0,
                                             "tools_listed": set(), "tools_ok": set()})
        row["episodes"] += 1
        row["transitions"] += cov["transitions"]
        row["non_error"] += cov["non_error"]
        row["tools_listed"] |= set(listed_tools(episode.initial_observation.text))
        row["tools_ok"] |= set(cov["tools_ok"])
        seen_shapes.setdefault(cov["server"], set()).update(
            f"{s.info.get('tool')}:{response_shape(s.observation.text)}"
            for s in episode.steps if not is_error_step(s))
    for server, row in out.items():
        listed = row["tools_listed"] | row["tools_ok"]
        row["non_error_share"] = round(row["non_error"] / max(1, row["transitions"]), 4)
        row["tools_ok"] = sorted(row["tools_ok"])
        row["tools_listed"] = len(listed)
        row["tool_share"] = round(len(row["tools_ok"]) / max(1, len(listed)), 4)
        row["shapes"] = len(seen_shapes.get(server, set()))
    return out


def coverage_lines(episodes: Sequence[Episode]) -> list[str]:
    """One summary line per server (:func:`summarize`): ``coverage NAME: 0.83 of 120
    transitions not errors; 10/12 tools answered without error; 31 response shapes``."""
    return [f"coverage {server}: {row['non_error_share']:.2f} of {row['transitions']} "
            f"transitions not errors; {len(row['tools_ok'])}/{row['tools_listed']} tools "
            f"answered without error; {row['shapes']} response shapes"
            for server, row in summarize(episodes).items()]
