"""Judge prompts of the bench: a system prompt per domain (ours, or a directory the user gives)
and the user message of one judged turn.

The user message carries what the public ``eval.py`` gives its judge (the history of earlier
turns, the current action, the extracted prediction, the reference without its marker), in
our words, plus the "World Model Output Diagnostics" that the public GUI judge prompts refer
to (:func:`agentworld.core.answers.diagnostics`) for android, web and os. It asks for the
benchmark's answer contract (a JSON object in ``<final_evaluation>``).
"""

from __future__ import annotations

from pathlib import Path

from agentworld.core.answers import GUI_DOMAINS, diagnostics, extract_observation
from agentworld.rewards.bench.data import Row
from agentworld.rewards.rubrics import GENERIC_RUBRIC, RUBRICS, read_prompt_file

FOCUS = {
    "mcp": "The environment is a tool server: check the result's structure (JSON fields, "
    "types), the values the call implies, and errors for invalid arguments.",
    "search": "The environment is a search and browsing toolset: check result titles, URLs, "
    "snippets and page text against the reference; invented sources are factual errors.",
    "terminal": "The environment is a Linux terminal: check exact command output, error "
    "wording, the prompt line and the working directory.",
    "swe": "The environment is a repository workspace: check file contents, line numbers, "
    "edit confirmations and test output exactly.",
    "android": "The environment is an Android screen: check the active app and screen, "
    "dialogs, focused and selected controls, typed text and list position.",
    "web": "The environment is a web page: check the page, the accessibility tree nodes near "
    "the action, form values, and any navigation the action caused.",
    "os": "The environment is a desktop: check the active window, dialogs, selected elements "
    "and the contents the action changed.",
}
GUI_NOTE = (
    "For this graphical domain the user message also lists World Model Output Diagnostics of "
    "the raw answer: lower format and quality when the raw answer has no closed "
    "<predicted_observation> block (response_end_tag_count 0), several of them, or much "
    "speculative text around the final observation; score facts on the extracted observation."
)
ANSWER_CONTRACT = """Score the simulated observation against the real one on five dimensions, each an integer from 1 (very poor: wrong or missing) to 5 (excellent: an agent could not tell it from the real one): format, factuality, consistency, realism, quality. You may reason first. End with exactly this block:
<final_evaluation>
```json
{"strengths": ["..."], "weaknesses": ["..."], "scores": {"format": N, "factuality": N, "consistency": N, "realism": N, "quality": N}}
```
</final_evaluation>"""


def default_prompt(domain: str) -> str:
    """Our judge system prompt for ``domain``: its rubric, the domain's focus, and for GUI
    domains how to use the diagnostics."""
    parts = [RUBRICS.get(domain, GENERIC_RUBRIC)]
    if domain in FOCUS:
        parts.append(FOCUS[domain])
    if domain in GUI_DOMAINS:
        parts.append(GUI_NOTE)
    return "\n\n".join(parts)


def load_prompts(domains: list[str], directory: str | Path | None = None) -> dict[str, str]:
    """Judge system prompts for ``domains``: ours, or from ``directory`` laid out as the public
    ``prompts/`` (``DIR/<domain>/judge_system_prompt.txt``) or flat (``DIR/<domain>.txt``).

    Raises:
        FileNotFoundError: ``directory`` lacks a domain's prompt; the message names both paths.
    """
    if directory is None:
        return {d: default_prompt(d) for d in domains}
    root, prompts = Path(directory), {}
    for d in domains:
        nested, flat = root / d / "judge_system_prompt.txt", root / f"{d}.txt"
        path = nested if nested.is_file() else flat if flat.is_file() else None
        if path is None:
            raise FileNotFoundError(f"no judge prompt for domain {d!r} in {root}: expected "
                                    f"{nested} or {flat}")
        prompts[d] = read_prompt_file(path)
    return prompts


def user_message(row: Row, answer: str) -> str:
    """The judged case: history, current action, extracted prediction, reference, diagnostics
    (GUI domains) and the answer contract."""
    t = row.turn - 1
    parts = []
    history = "\n\n".join(f"{p}\n{r}" for p, r in zip(row.traj.prompts[:t], row.traj.responses[:t]))
    if history:
        parts.append(f"# Earlier turns of this interaction\n\n{history}")
    parts.append(f"# Current action\n\n{row.traj.prompts[t]}")
    predicted = extract_observation(answer) or "No output"
    parts.append(f"# Simulated observation (world model)\n```\n{predicted}\n```")
    parts.append(f"# Real observation (ground truth)\n```\n{row.reference}\n```")
    if row.domain in GUI_DOMAINS:
        lines = "\n".join(f"- {k}: {v}" for k, v in diagnostics(answer).items())
        parts.append(f"# World Model Output Diagnostics\n{lines}")
    parts.append(ANSWER_CONTRACT)
    return "\n\n".join(parts)
