"""Optional dependencies of the kernel, imported on first use with an error that names the extra.

``agentworld-core`` needs only pluggy, pydantic and fsspec. Five features need more:

- ``parquet`` (pyarrow): reading and writing ``.parquet`` datasets (:mod:`agentworld.core.dataformats`);
- ``stats`` (scipy, numpy): confidence intervals of evaluation scores (:mod:`agentworld.core.intervals`);
- ``gym`` (gymnasium): the free-text space of vector environments (:mod:`agentworld.core.gymvec`);
- ``ray`` (ray): collection on a Ray cluster (:mod:`agentworld.core.ray_collect`);
- ``retrieval`` (bm25s): the retrieval-only baseline ``nearest`` (:mod:`agentworld.core.nearest`).

The application (``agentworld-app``) installs the first two and ``retrieval``; every domain with a real
environment installs gymnasium.
"""

from __future__ import annotations

import importlib
from types import ModuleType

EXTRAS = {"parquet": ("pyarrow",), "stats": ("scipy", "numpy"), "gym": ("gymnasium",),
          "ray": ("ray",), "retrieval": ("bm25s",)}
IN_APP = ("parquet", "stats", "retrieval")  # the extras agentworld-app installs
APP_INCLUDES = " (or agentworld-app, which includes it)"


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` (a module of the ``extra``'s packages) for ``purpose``.

    Raises:
        ModuleNotFoundError: the package is not installed; the message names the feature and the
            install command, e.g. ``pip install 'agentworld-core[parquet]'``.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is None or e.name.split(".")[0] not in EXTRAS[extra]:
            raise
        raise ModuleNotFoundError(
            f"{purpose} needs {e.name.split('.')[0]}, which is not installed: "
            f"pip install 'agentworld-core[{extra}]'{APP_INCLUDES if extra in IN_APP else ''}",
            name=e.name,
        ) from e
