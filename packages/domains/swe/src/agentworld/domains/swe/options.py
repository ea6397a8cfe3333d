"""``SweEnvOptions``: what ``agentworld collect --domain swe --set KEY=VALUE`` may give
:class:`~agentworld.domains.swe.env.SweEnv` (:mod:`agentworld.core.options`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import PlainSerializer, model_validator

from agentworld.core.options import EnvOptions, Field

#: A path option: given and checked as a path, passed on (and recorded) as its string.
PathOption = Annotated[Path, PlainSerializer(str, return_type=str)]


class SweEnvOptions(EnvOptions):
    """Options of the swe domain's real environment.

    Attributes:
        max_steps: Tool calls before the episode is truncated.
        sandbox: Sandbox kind of the terminal it runs in (default: the detected one).
        repo: The user's own git repository of a Python project
            (:mod:`agentworld.domains.swe.user_repo`), whose library modules are mutated and
            whose tests grade; one that is not a git repository, has no Python module or no
            tests, or declares an invalid requirement, is refused here, before any file is
            written. Its declared dependencies (and pytest, when its tests use it) are
            installed once, as wheels, in a cached venv mounted read-only at /opt/venv
            (:mod:`agentworld.domains.swe.user_env`).
        test_cmd: The repository's test command, run in the sandbox in its root (default:
            ``pytest -v`` when the tests use pytest, else unittest discovery); its log in
            unittest's verbose or ``pytest -v``'s format.
    """

    max_steps: int = Field(30, ge=1)
    sandbox: Literal["bubblewrap", "unshare"] | None = None
    repo: PathOption | None = None
    test_cmd: str | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _usable_repo(self) -> SweEnvOptions:
        if self.test_cmd is not None and self.repo is None:
            raise ValueError("test_cmd= needs repo=PATH (the built-in projects run their own)")
        if self.repo is not None:
            from agentworld.domains.swe.user_repo import check_repo

            object.__setattr__(self, "repo", check_repo(self.repo, self.test_cmd))
        return self
