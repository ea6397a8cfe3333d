"""Lazy package exports (PEP 562): a package's public names imported on first use, so that
importing the package (to register its plugins or Gymnasium ids) stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``package.<exports[name]>`` and
    returns its ``name``.

    Raises (from the returned function):
        AttributeError: ``name`` is not one of ``exports``.
    """

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return vars(importlib.import_module(f"{package}.{exports[name]}"))[name]

    return __getattr__
