"""MiniWoB++ task pages (``http://miniwob.test``), as the ``miniwob`` PyPI package ships them.

The Farama ``miniwob`` wheel holds every task page with its JavaScript (``miniwob/html/``,
MIT licence); they are served from there as static files, offline, by the apps' server.
Install the extra ``agentworld-domain-web[miniwob]``; without it the host answers 404 and
the MiniWoB task kinds are not offered (:func:`html_dir` is ``None``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from agentworld.domains.web.apps.world import World


def html_dir() -> Path | None:
    """The ``html`` folder of the installed ``miniwob`` package, ``None`` without it."""
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "html"
    return path if (path / "core" / "core.js").is_file() else None


def routes(world_of: Callable[[], World]) -> list[BaseRoute]:
    """Static files of the MiniWoB++ pages (the world is not used: a page's state is its own)."""
    folder = html_dir()
    if folder is None:
        missing = PlainTextResponse("MiniWoB++ pages are not installed: pip install "
                                    "'agentworld-domain-web[miniwob]'", status_code=404)
        return [Route("/{path:path}", lambda request: missing)]
    return [Mount("/", StaticFiles(directory=folder))]
