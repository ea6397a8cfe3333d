"""``TerminalEnvOptions``: what ``agentworld collect --domain terminal --set KEY=VALUE`` may give
:class:`~agentworld.domains.terminal.env.TerminalEnv` (:mod:`agentworld.core.options`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from agentworld.core.options import EnvOptions, Field
from agentworld.domains.terminal.state_text import HOME_STATE_CHARS
from pydantic import PlainSerializer, field_validator, model_validator

#: A path option: given and checked as a path, passed on (and recorded) as its string.
PathOption = Annotated[Path, PlainSerializer(str, return_type=str)]


class TerminalEnvOptions(EnvOptions):
    """Options of the terminal's real environment.

    Attributes:
        max_steps: Steps before the episode is truncated.
        sandbox: Sandbox kind (default: the detected one, ``AGENTWORLD_TERMINAL_SANDBOX``).
        root_parent: Host directory under which episode roots are made (default: a private
            temporary directory).
        render_mode: ``"ansi"``: ``render()`` returns the last screen text.
        commands: A shell history (bash, zsh extended) or a list of command lines, replayed
            by the ``history`` policy (:mod:`agentworld.domains.terminal.history`); a missing
            file, or one without a command line the sandbox can run, is refused here.
        home: A folder copied into every episode's home (:mod:`agentworld.domains.terminal.
            user_home`; no link followed, bounded); a missing, empty or too large one is
            refused here.
        home_state_chars: With ``home``: characters the world model's description of each
            episode's initial home may hold (every folder is listed, files' text shown whole,
            smallest first, while it fits; the others say how many bytes are not shown:
            :mod:`agentworld.domains.terminal.state_text`).
    """

    max_steps: int = Field(50, ge=1)
    sandbox: Literal["bubblewrap", "unshare"] | None = None
    root_parent: str | None = None
    render_mode: Literal["ansi"] | None = None
    commands: PathOption | None = None
    home: PathOption | None = None
    home_state_chars: int = Field(HOME_STATE_CHARS, ge=0)

    @model_validator(mode="after")
    def _with_home(self) -> TerminalEnvOptions:
        if "home_state_chars" in self.model_fields_set and self.home is None:
            raise ValueError("home_state_chars bounds the description of a home folder: "
                             "give home=DIR too")
        return self

    @field_validator("commands")
    @classmethod
    def _runnable(cls, commands: Path | None) -> Path | None:
        if commands is None:
            return None
        from agentworld.domains.terminal.history import read_history

        history = read_history(commands)  # ValueError: not a file
        if not history.commands:
            raise ValueError(f"commands {str(commands)!r} holds no command line the sandbox "
                             f"can run ({history.summary()})")
        return commands.resolve()

    @field_validator("home")
    @classmethod
    def _copyable(cls, home: Path | None) -> Path | None:
        if home is None:
            return None
        from agentworld.domains.terminal.user_home import read_home

        read_home(home)  # ValueError: not a folder, empty, too large
        return home.resolve()
