"""Rationales built from the real structured state change of a step.

Used as SFT reasoning: a short paragraph saying what the command did to the
working directory, the files and the exit status, computed from
``Observation.state`` (``cwd``, ``exit_code``, ``files``) before and after.
"""

from __future__ import annotations

from typing import Any

from agentworld.core.types import Step
from agentworld.domains.terminal.prompt import display_cwd, split_prompt

_MAX_NAMES = 4


def _names(paths: list[str]) -> str:
    shown = ", ".join(paths[:_MAX_NAMES])
    return shown + (f" and {len(paths) - _MAX_NAMES} more" if len(paths) > _MAX_NAMES else "")


def explain(step: Step, previous_state: dict[str, Any] | None) -> str:
    """A short rationale for ``step`` given the state before it.

    Args:
        step: The transition (its observation must carry ``state``; without it
            only the output is described).
        previous_state: ``Observation.state`` before the step (``None`` at an
            unknown start: file changes are then not described).
    """
    before = previous_state or {}
    after = step.observation.state or {}
    command = step.action.text.strip() or "(empty line)"
    output, _ = split_prompt(step.observation.text)
    n = len(output.splitlines())
    parts = [
        f"The command `{command}` "
        + (f"prints {n} line{'s' * (n != 1)} of output." if n else "prints nothing.")
    ]
    if step.info.get("timed_out"):
        parts.append("It does not finish in time, so it is interrupted with Ctrl-C.")
    old_files: dict[str, str] = before.get("files") or {}
    new_files: dict[str, str] = after.get("files") or {}
    if previous_state is not None and "files" in after:
        added = sorted(set(new_files) - set(old_files))
        removed = sorted(set(old_files) - set(new_files))
        changed = sorted(
            p
            for p in set(old_files) & set(new_files)
            if old_files[p] != new_files[p] and new_files[p] != "<dir>"
        )
        for label, paths in (("creates", added), ("removes", removed), ("modifies", changed)):
            if paths:
                parts.append(f"It {label} {_names(paths)}.")
        if not (added or removed or changed):
            parts.append("No file changes.")
    if "cwd" in after:
        old_cwd, new_cwd = before.get("cwd"), after["cwd"]
        if old_cwd and old_cwd != new_cwd:
            old_shown, new_shown = display_cwd(old_cwd), display_cwd(new_cwd)
            parts.append(f"The working directory changes from {old_shown} to {new_shown}.")
        else:
            parts.append(f"The working directory stays {display_cwd(new_cwd)}.")
    code = after.get("exit_code")
    if code is not None:
        parts.append(
            "It succeeds (exit status 0), so the prompt has no status marker."
            if code == 0
            else f"It fails with exit status {code}, so the prompt starts with [{code}]."
        )
    return " ".join(parts)
