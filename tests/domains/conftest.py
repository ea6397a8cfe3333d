"""Fixtures for the tests that drive real sandboxed bash in every sandbox kind here."""

from __future__ import annotations

import pytest
from agentworld.domains.terminal.env import TerminalEnv
from agentworld.domains.terminal.sandbox import Limits
from sandboxes import SANDBOXES


@pytest.fixture(params=SANDBOXES)
def sandbox_kind(request) -> str:
    """Each sandbox kind that works on this machine in turn (none: the test is skipped)."""
    return request.param


@pytest.fixture
def env(sandbox_kind):
    """A reset :class:`TerminalEnv` in ``sandbox_kind`` with a 1.5 s command timeout."""
    e = TerminalEnv(limits=Limits(command_timeout_s=1.5), sandbox=sandbox_kind)
    e.reset()
    yield e
    e.close()
