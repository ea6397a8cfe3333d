"""The kernel's optional features name their extra when its package is missing."""

from __future__ import annotations

import sys

import pytest

from agentworld.core import dataformats, extras
from agentworld.core.intervals import interval


def test_parquet_without_pyarrow_names_the_extra(monkeypatch, tmp_path) -> None:
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if not installed
    target = tmp_path / "rows.parquet"
    with pytest.raises(ModuleNotFoundError, match=r"rows\.parquet needs pyarrow.*agentworld-core\[parquet\]"):
        dataformats.write_rows(str(target), [{"a": 1}])
    assert not target.exists()
    dataformats.write_rows(str(tmp_path / "rows.jsonl"), [{"a": 1}])  # JSONL needs no extra


def test_intervals_without_scipy_name_the_extra(monkeypatch) -> None:
    for name in [m for m in sys.modules if m == "scipy" or m.startswith("scipy.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "scipy", None)
    with pytest.raises(ModuleNotFoundError, match=r"agentworld-core\[stats\]"):
        interval([0.0, 1.0, 1.0])
    assert interval([0.5]) == (0.0, 1.0)  # one non-binary score needs no library


def test_an_unrelated_missing_module_is_not_renamed() -> None:
    with pytest.raises(ModuleNotFoundError) as err:
        extras.require("agentworld_no_such_module", "parquet", "nothing")
    assert "agentworld-core[" not in str(err.value)


def test_nearest_without_bm25s_names_the_extra(monkeypatch) -> None:
    from agentworld.core.nearest import NearestWorldModel
    from agentworld.core.types import Action, Episode, Observation, Step

    for name in [m for m in sys.modules if m == "bm25s" or m.startswith("bm25s.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "bm25s", None)
    episode = Episode(id="e", domain="toy", initial_observation=Observation(text="$ "),
                      steps=[Step(action=Action(text="ls"), observation=Observation(text="a\n$ "))])
    with pytest.raises(ModuleNotFoundError, match=r"nearest needs bm25s.*agentworld-core\[retrieval\]"):
        NearestWorldModel([episode])
    with pytest.raises(ValueError, match="at least one step"):
        NearestWorldModel([episode.model_copy(update={"steps": []})])
