"""The fidelity of an :class:`~agentworld.core.evaluate.EvalResult` as rich tables on the console.

The eval stage prints them; :mod:`agentworld.app.report` writes the same figures to files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:  # the eval stage imports the evaluator lazily
    from agentworld.core.evaluate import EvalResult


def print_fidelity(result: EvalResult, console: Console) -> None:
    """Print mean fidelity per model and metric: all transitions, then those with non-empty
    real output; then, with more than one split or an in-episode consistency subset, the
    splits side by side."""
    for title, table_data, n in (
        ("held-out fidelity (mean)", result.overall, result.num_transitions),
        ("held-out fidelity, non-empty real output (mean)", result.nonempty, result.num_nonempty),
    ):
        if not table_data:
            continue
        table = Table(title=f"{title}, n={n}")
        table.add_column("model")
        for metric in result.metrics:
            table.add_column(metric, justify="right")
        for model, per_metric in table_data.items():
            table.add_row(model, *(f"{per_metric[m].mean:.3f}" for m in result.metrics))
        console.print(table)
    if len(result.splits) > 1 or result.num_consistency:
        _print_splits(result, console)


def _print_splits(result: EvalResult, console: Console) -> None:
    """Print exact match (else the main metric) per split side by side, with the in-episode
    consistency subset of each split."""
    metric = "exact_match" if "exact_match" in result.metrics else result.main_metric
    table = Table(
        title=f"{metric} by split (in-episode consistency: output depends on earlier steps)"
    )
    table.add_column("subset")
    table.add_column("n", justify="right")
    for model in result.models:
        table.add_column(model, justify="right")
    for split, sizes in result.splits.items():
        for label, groups, n in ((split, result.by_split, sizes["transitions"]),
                                 (f"{split}, non-empty", result.by_split_nonempty, sizes["nonempty"]),
                                 (f"{split}, consistency", result.by_split_consistency,
                                  sizes["consistency"])):
            if n:
                table.add_row(label, str(n), *(f"{groups[m][split][metric].mean:.3f}"
                                               for m in result.models))
    console.print(table)
