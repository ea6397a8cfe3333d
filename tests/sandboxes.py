"""Which terminal sandboxes this machine runs, for the tests that start real sandboxed bash.

``SANDBOXES``: every kind that works here (bubblewrap, the ``unshare`` fallback), for tests
that must show the same behaviour in each; ``needs_sandbox``: skip a test where the default
kind (:func:`~agentworld.domains.terminal.sandbox.detect_sandbox`) cannot run.
"""

from __future__ import annotations

import pytest
from agentworld.domains.terminal.sandbox import SANDBOX_ENV_VAR, detect_sandbox


def _kinds() -> list[str]:
    """The sandbox kinds that work here (``detect_sandbox`` restricted to each in turn)."""
    kinds = []
    for wanted in ("bwrap", "unshare"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(SANDBOX_ENV_VAR, wanted)
            try:
                kinds.append(detect_sandbox.__wrapped__())
            except RuntimeError:
                pass
    return kinds


def _default_works() -> bool:
    try:
        detect_sandbox()
    except RuntimeError:  # pragma: no cover - depends on the machine
        return False
    return True


SANDBOXES = _kinds()
HAVE_SANDBOX = _default_works()
needs_sandbox = pytest.mark.skipif(not HAVE_SANDBOX, reason="no bubblewrap/unshare sandbox here")
