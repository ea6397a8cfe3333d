"""``TtyDomain``: the interactive terminal as the framework sees it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentworld.core.domain_base import DomainBase
from agentworld.core.types import Action, Episode, Observation, Step, Task
from agentworld.domains.terminal.bounds import describe_bounds
from agentworld.domains.terminal.fs import FILE_CONDITIONS, output_holds
from agentworld.domains.terminal.prompt import HOME
from agentworld.domains.terminal.sandbox import detect_sandbox
from agentworld.domains.terminal.state_text import render_setup
from agentworld.domains.tty import analysis
from agentworld.domains.tty.env import TtyEnv
from agentworld.domains.tty.keys import MAX_DURATION_S
from agentworld.domains.tty.options import TtyEnvOptions
from agentworld.domains.tty.policies import make_policies
from agentworld.domains.tty.screen import COLUMNS, ROWS
from agentworld.domains.tty.tasks import KINDS, TtyTaskSampler

FIRST_SCREEN = "user@sandbox:~$"
SYSTEM_PROMPT = f"""You simulate an interactive Linux terminal ({COLUMNS} columns x {ROWS} rows, xterm) in a sandbox: bash with
readline, user `user`, home {HOME} (shown as `~`), prompt `user@sandbox:~$ `, no network; python3, less, vi (vim),
top and the usual tools are installed.
Each user message is a JSON list of keystroke items {{"keystrokes": "...", "duration": seconds}}: the text is
typed as is ("\\n" is Enter) unless it is a whole tmux key name (C-c, C-d, Escape, Enter, Tab, Up, Down, ...);
after each item the terminal runs for its duration (at most {MAX_DURATION_S:g} s).
Reply with the visible screen after the keys: every row as the terminal shows it (typed text echoed, program
output, full-screen programs as drawn), trailing spaces and trailing empty rows removed. A malformed list
changes nothing: reply `ERROR: ` and what is wrong, a blank line, then the unchanged screen."""


class TtyDomain(DomainBase):
    """The ``tty`` domain: keystrokes into a sandboxed interactive bash, the screen out."""

    name = "tty"
    version = "0.1.0"
    env_options = TtyEnvOptions
    history_window = 3  # the screen carries most of the state; three turns bound the prompt

    def system_prompt(self, task: Task | None) -> str:
        """The world-model system prompt, with the task's initial files when it has any."""
        if task is None or not task.setup:
            return SYSTEM_PROMPT
        return f"{SYSTEM_PROMPT}\n\n{render_setup(task.setup)}"

    def make_env(self, **kwargs: Any) -> TtyEnv:
        """A real :class:`~agentworld.domains.tty.env.TtyEnv` (``kwargs`` go to it).

        Raises:
            RuntimeError: no sandbox (bubblewrap or unshare) works here.
        """
        detect_sandbox()
        return TtyEnv(**kwargs)

    def tasks(self) -> TtyTaskSampler:
        """The seeded task sampler (kinds :data:`~agentworld.domains.tty.tasks.KINDS`)."""
        return TtyTaskSampler()

    def policies(self) -> dict[str, Any]:
        """Fresh ``scripted`` and ``random`` policies, plus ``llm`` with
        ``$AGENTWORLD_LLM_BASE_URL`` (:func:`~agentworld.domains.tty.policies.make_policies`)."""
        return make_policies()

    def score(self, predicted: str, reference: Observation) -> float:
        """Screen fidelity in [0, 1] (:func:`agentworld.domains.tty.analysis.score`)."""
        return analysis.score(predicted, reference)

    def action_type(self, action: Action) -> str:
        """The program an action starts, ``command``, ``keys``, ``text`` or ``invalid``
        (:func:`agentworld.domains.tty.analysis.action_type`)."""
        return analysis.action_type(action)

    def command_families(self, action: Action) -> set[str]:
        """What the action types: programs, commands, ``key:NAME``, ``text``
        (:func:`agentworld.domains.tty.analysis.action_words`)."""
        return analysis.command_families(action)

    def consistency_turns(self, episode: Episode) -> list[int]:
        """Steps whose screen depends on the episode's own writes, assignments and typed lines
        (:func:`agentworld.domains.tty.analysis.consistency_turns`)."""
        return analysis.consistency_turns(episode)

    def explain(self, step: Step, previous_state: dict[str, Any] | None,
                history: Sequence[tuple[str, str]] = ()) -> str:  # fmt: skip
        """Keys, program, cursor and files changed by ``step``
        (:func:`agentworld.domains.tty.analysis.explain`)."""
        return analysis.explain(step, previous_state, history)

    def explain_text(self, action: str, observation: str,
                     history: Sequence[tuple[str, str]] = ()) -> str:  # fmt: skip
        """The rationale from the previous screen's text
        (:func:`agentworld.domains.tty.analysis.explain_text`)."""
        return analysis.explain_text(action, observation, history)

    def empty_observation(self, previous: str) -> str:
        """The screen after an Enter that prints nothing: ``previous`` with its last row shown
        again below it (a fresh prompt); the ``empty`` baseline."""
        rows = previous.split("\n")
        return f"{previous}\n{rows[-1].rstrip()}" if previous else FIRST_SCREEN

    def initial_observation(self, task: Task | None) -> str:
        """The first screen of every episode: the prompt alone, ``user@sandbox:~$``."""
        return FIRST_SCREEN

    def verify(self, observation: str, task: Task | None) -> tuple[float, bool] | None:
        """``(1.0, True)`` when a check on the screen alone holds on ``observation``, else
        ``(0.0, False)``; ``None`` when the check reads files (no screen shows them)."""
        check = task.check if task is not None else None
        if not check or any(key in check for key in FILE_CONDITIONS):
            return None
        return (1.0, True) if output_holds(check, observation, HOME) else (0.0, False)

    def describe(self) -> dict[str, str]:
        try:
            sandbox = detect_sandbox()
        except RuntimeError as exc:
            sandbox = f"unavailable ({exc})"
        return {
            "environment": f"real: interactive bash on a {COLUMNS}x{ROWS} pty in the terminal "
                           "domain's sandbox; screen rendered by pyte",
            "sandbox": sandbox,
            **describe_bounds(),
            "actions": "JSON list of {keystrokes, duration} (AgentWorldBench terminal rows), "
                       "tmux key names",
            "tasks": ", ".join(KINDS),
            "policies": ", ".join(make_policies()),
        }
