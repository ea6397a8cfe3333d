"""The README's quickstart figures are checkable: step budgets in the README match quickstart.toml,
and bench/quickstart_figures.py reads the README's table and flags figures a run does not give."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _figures():
    spec = importlib.util.spec_from_file_location("quickstart_figures", ROOT / "bench" / "quickstart_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["quickstart.toml", "quickstart-full.toml"])
def test_quickstart_budgets_are_steps_and_the_readme_states_them(name):
    config = tomllib.loads(files("agentworld.app").joinpath(name).read_text())
    readme = (ROOT / "README.md").read_text()
    for stage in ("cpt", "sft"):
        assert "time_budget_s" not in config[stage], f"[{stage}] must not stop on wall-clock time"
        steps = config[stage]["max_steps"]
        assert re.search(rf"{steps:,} optimizer steps `{stage}`|`{stage}` {steps:,} optimizer steps",
                         readme), f"README must state {name} [{stage}] max_steps = {steps:,}"


def test_the_full_table_is_found_apart_from_the_default_one():
    figures = _figures()
    readme = (ROOT / "README.md").read_text()
    default = figures.readme_table(readme)
    full = figures.readme_table(readme, figures.FULL_HEADER)
    assert default[0] == full[0] and default[1] != full[1]


def test_readme_table_parses_and_a_matching_run_is_current():
    figures = _figures()
    splits, rows = figures.readme_table((ROOT / "README.md").read_text())
    assert splits[:2] == ["in distribution", "out of distribution"]
    assert set(figures.ROWS) <= set(rows)
    stated = {}
    for label, cells in rows.items():
        for column, cell in zip(splits, cells):
            match = re.match(r"\**(\d+\.\d+)", cell)
            if match is not None:  # "–": the split has no such steps
                stated[(label, figures.split_key(column))] = float(match.group(1))
    metrics: dict = {}
    for (label, split), value in stated.items():
        table = metrics.setdefault(figures.ROWS[label], {"model": {}})["model"]
        table[split] = {"exact_match": {"mean": value + 0.001}}
    rows_out = figures.compare((ROOT / "README.md").read_text(), metrics, 0.005)
    assert len(rows_out) == len(stated) and all(abs(m - s) < 0.002 for _, _, s, m in rows_out)
    first = next(iter(stated))
    metrics[figures.ROWS[first[0]]]["model"][first[1]]["exact_match"]["mean"] -= 0.1
    off = [r for r in figures.compare((ROOT / "README.md").read_text(), metrics, 0.005)
           if abs(r[3] - r[2]) > 0.005]
    assert [(r[0], r[1]) for r in off] == [first]
