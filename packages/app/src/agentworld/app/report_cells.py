"""Markdown cells and tables of ``report.md`` (:mod:`agentworld.app.report` and the sections of
:mod:`agentworld.app.report_baselines`)."""

from __future__ import annotations

from agentworld.core.evaluate import MetricStat


def cell(s: MetricStat | None, ci: bool = True) -> str:
    """``mean [ci_low, ci_high]`` to three decimals (``mean`` alone without ``ci``); ``-`` for
    none."""
    if s is None:
        return "-"
    return f"{s.mean:.3f} [{s.ci_low:.3f}, {s.ci_high:.3f}]" if ci else f"{s.mean:.3f}"


def esc(text: str) -> str:
    """``text`` for a table cell: ``|`` escaped, newlines as spaces."""
    return text.replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table's lines (cells escaped), then an empty line."""
    lines = ["| " + " | ".join(map(esc, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(esc, r)) + " |" for r in rows]
    return lines + [""]
